"""Marshmallow pieces every layer's schemas share: strict scalar fields, and
turning a ValidationError into the A2A error (or sentence) that names the
first offending field."""

from marshmallow import Schema, ValidationError, fields, validate
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import errors

NON_EMPTY = validate.Length(min=1, error="must not be empty.")


#: The largest integer a param may hold (a signed 32-bit integer, as the
#: A2A proto's int32 fields): any more is refused, never overflows a column.
INT_MAX = 2 ** 31 - 1


def storable(text: str) -> bool:
    """Whether every backend can store ``text``: no NUL character (a
    PostgreSQL text value cannot hold one). ``Text``'s rule, and the
    shortcuts' that read a common call without a schema's load."""
    return "\x00" not in text


class Text(fields.String):
    """A string that every backend can store (``storable``)."""

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        if not storable(text):
            raise ValidationError("must not contain a NUL character.")
        return text


#: The longest id a caller may give (messageId, contextId, taskId, the ids of
#: tasks/get and tasks/cancel...), in characters: the same on both backends,
#: and short enough for a PostgreSQL index entry even in 4-byte characters.
MAX_ID_CHARS = 256


class Id(Text):
    """An id a caller gives: at most ``MAX_ID_CHARS`` characters."""

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        if len(text) > MAX_ID_CHARS:
            raise ValidationError("must be at most %d characters long (an id); "
                                  "this one has %d." % (MAX_ID_CHARS, len(text)))
        return text


def plain_id(value: Any) -> bool:
    """Whether ``value`` is an id as ``Id`` loads it (a string of 1 to
    ``MAX_ID_CHARS`` characters, storable), checked without a field."""
    return type(value) is str and 0 < len(value) <= MAX_ID_CHARS and storable(value)


def member_alone(params: Any, name: str,
                 read: Callable[[Any], Any]) -> Optional[Dict[str, Any]]:
    """``params`` that are one member ``name``, as ``read`` reads its value
    (None: not a common one); None for any other params."""
    if type(params) is dict and len(params) == 1 and name in params:
        value = read(params[name])
        if value is not None:
            return {name: value}
    return None


def id_alone(params: Any) -> Optional[Dict[str, str]]:
    """``params`` that are an ``Id`` alone (``{"id": ...}``, the common
    params of tasks/get and tasks/cancel) as ``IdParams`` loads them; None
    for any others."""
    if type(params) is dict and len(params) == 1 and plain_id(params.get("id")):
        return {"id": params["id"]}
    return None


class Shortcut(Schema):
    """A schema that reads the common form of its input without the load's
    machinery (``shortcut``: a few microseconds where the load takes tens,
    docs/benchmarks.md); any other input goes to the load, which decides and
    words the errors. A shortcut takes only input the load takes as it is,
    and returns what the load returns."""

    @staticmethod
    def shortcut(data: Any, /) -> Optional[Dict[str, Any]]:
        """``data`` as the load reads it when it is the common form; None
        for any other."""
        return None

    def load(self, data: Any, *, many: Any = None, partial: Any = None,
             unknown: Any = None) -> Any:
        # Not many (marshmallow 3.0's Nested passes False), not partial.
        if not many and not partial and unknown is None:
            common = self.shortcut(data)
            if common is not None:
                return common
        return super().load(data, many=many, partial=partial, unknown=unknown)


class IdParams(Shortcut):
    """The params of a call on one task, by its ``id``: read without the
    load when they are the id alone (``id_alone``)."""

    id = Id(required=True, validate=NON_EMPTY)
    shortcut = staticmethod(id_alone)


class BoundedInteger(fields.Integer):
    """An integer up to INT_MAX; read from a query string (``strict`` off)
    it may be a numeral."""

    def _deserialize(self, value, attr, data, **kwargs):
        number = super()._deserialize(value, attr, data, **kwargs)
        if number > INT_MAX:
            raise ValidationError("must be at most %d." % INT_MAX)
        return number


class StrictInteger(BoundedInteger):
    """An integer that is really one: no bools, no floats, no strings."""

    def __init__(self, **kwargs):
        super().__init__(strict=True, **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, bool):
            raise ValidationError("Not a valid integer.")
        return super()._deserialize(value, attr, data, **kwargs)


class StrictBoolean(fields.Boolean):
    """A JSON boolean only: no 1, "true" or "yes"."""

    truthy = {True}
    falsy = {False}


def flatten_errors(messages: Any, path: str = "") -> List[Tuple[str, str]]:
    """Marshmallow's nested error dict as a list of (``a.b[0].c``, text)."""
    if isinstance(messages, dict):
        found = []
        for key, value in messages.items():
            if key == "_schema":
                sub = path
            elif isinstance(key, int):
                sub = "%s[%d]" % (path, key)
            else:
                sub = "%s.%s" % (path, key) if path else str(key)
            found.extend(flatten_errors(value, sub))
        return found
    if isinstance(messages, list) and messages and not isinstance(messages[0], str):
        return [pair for item in messages for pair in flatten_errors(item, path)]
    texts = messages if isinstance(messages, list) else [messages]
    return [(path, str(text)) for text in texts]


def load_params(schema: Any, params: Any) -> Any:
    """Validated params, or ``InvalidParams`` naming the first bad field."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise errors.InvalidParamsError("params must be an object.", data={"field": "params"})
    try:
        return schema.load(params)
    except ValidationError as exc:
        problems = flatten_errors(exc.messages)
        field, text = problems[0]
        raise errors.InvalidParamsError(
            "Invalid params: %s: %s" % (field or "params", text),
            data={"field": field or "params",
                  "errors": {f or "params": t for f, t in problems}},
        ) from exc
