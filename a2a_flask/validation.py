"""Marshmallow pieces every layer's schemas share: strict scalar fields, and
turning a ValidationError into the A2A error (or sentence) that names the
first offending field."""

from marshmallow import Schema, ValidationError, fields, validate
from typing import Any, Dict, List, Optional, Tuple

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


def id_alone(params: Any) -> Optional[Dict[str, str]]:
    """``params`` that are an ``Id`` alone (``{"id": ...}``, the common
    params of tasks/get and tasks/cancel) as ``IdParams`` loads them; None
    for any others."""
    if type(params) is dict and len(params) == 1:
        task_id = params.get("id")
        if type(task_id) is str and 0 < len(task_id) <= MAX_ID_CHARS and storable(task_id):
            return {"id": task_id}
    return None


class IdParams(Schema):
    """The params of a call on one task, by its ``id``: when they are the id
    alone they are read without the load's machinery (``id_alone``, a few
    microseconds a call, docs/benchmarks.md); any others go to the load,
    which decides and words the errors."""

    id = Id(required=True, validate=NON_EMPTY)

    def load(self, data: Any, *, many: Any = None, partial: Any = None,
             unknown: Any = None) -> Any:
        if many is None and partial is None and unknown is None:
            common = id_alone(data)
            if common is not None:
                return common
        return super().load(data, many=many, partial=partial, unknown=unknown)


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
