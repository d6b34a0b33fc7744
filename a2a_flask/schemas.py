"""Marshmallow schemas for the JSON-RPC envelope and each method's params.

Built once at import; ``load`` turns a ValidationError into the A2A error
that names the first offending field.
"""

import base64
import binascii

from marshmallow import (
    EXCLUDE, INCLUDE, Schema, ValidationError, fields, post_load, validate,
    validates_schema,
)

from . import errors


#: The largest integer a param may hold (a signed 32-bit integer, as the
#: A2A proto's int32 fields): any more is refused, never overflows a column.
INT_MAX = 2 ** 31 - 1


class Text(fields.String):
    """A string that every backend can store: no NUL character (a
    PostgreSQL text value cannot hold one)."""

    def _deserialize(self, value, attr, data, **kwargs):
        text = super()._deserialize(value, attr, data, **kwargs)
        if "\x00" in text:
            raise ValidationError("must not contain a NUL character.")
        return text


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
    truthy = {True}
    falsy = {False}


class JsonRpcId(fields.Field):
    """A JSON-RPC id: a string, an integer or null (a bool is not an integer)."""

    def _deserialize(self, value, attr, data, **kwargs):
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ValidationError("id must be a string, an integer or null.")


NON_EMPTY = validate.Length(min=1, error="must not be empty.")


class EnvelopeSchema(Schema):
    class Meta:
        unknown = EXCLUDE

    id = JsonRpcId(allow_none=True)
    method = Text(required=True)
    jsonrpc = fields.Raw(required=True, allow_none=True)
    params = fields.Raw(allow_none=True)


class StrictEnvelopeSchema(EnvelopeSchema):
    jsonrpc = fields.Raw(
        required=True,
        validate=validate.Equal("2.0", error='must be the string "2.0".'),
    )


# -- parts and messages ---------------------------------------------------------


class _StoredSchema(Schema):
    """Loads an object that is stored and shown as sent: a declared field sent
    as null is dropped, as the A2A schema has no null for them."""

    @post_load
    def _drop_nulls(self, data, **kwargs):
        return {key: value for key, value in data.items()
                if value is not None or key not in self.fields}


class _PartSchema(_StoredSchema):
    class Meta:
        unknown = INCLUDE  # stored as sent

    metadata = fields.Dict(allow_none=True)


class TextPartSchema(_PartSchema):
    kind = Text(required=True)
    text = Text(required=True)


class FileContentSchema(_StoredSchema):
    class Meta:
        unknown = INCLUDE

    bytes = Text()
    uri = Text(validate=NON_EMPTY)
    name = Text(allow_none=True)
    mimeType = Text(allow_none=True)

    @validates_schema
    def _bytes_xor_uri(self, data, **kwargs):
        if ("bytes" in data) == ("uri" in data):
            raise ValidationError("a file must have exactly one of bytes and uri.")
        if "bytes" in data:
            try:
                base64.b64decode(data["bytes"], validate=True)
            except (binascii.Error, ValueError):
                raise ValidationError("not valid base64.", "bytes")


class FilePartSchema(_PartSchema):
    kind = Text(required=True)
    file = fields.Nested(FileContentSchema, required=True)


class DataPartSchema(_PartSchema):
    kind = Text(required=True)
    data = fields.Dict(required=True)


PART_SCHEMAS = {
    "text": TextPartSchema(),
    "file": FilePartSchema(),
    "data": DataPartSchema(),
}


class PartField(fields.Field):
    """A part, checked by the schema its ``kind`` names."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, dict):
            raise ValidationError("a part must be an object.")
        kind = value.get("kind")
        schema = PART_SCHEMAS.get(kind) if isinstance(kind, str) else None
        if schema is None:
            raise ValidationError({"kind": ['must be one of "text", "file", "data".']})
        return schema.load(value)


class MessageSchema(_StoredSchema):
    class Meta:
        unknown = INCLUDE  # other members: stored as sent

    kind = Text(validate=validate.Equal("message", error='must be "message".'))
    role = Text(
        required=True, validate=validate.Equal("user", error='must be "user".')
    )
    parts = fields.List(PartField(), required=True, validate=NON_EMPTY)
    messageId = Text(required=True, validate=NON_EMPTY)
    contextId = Text(allow_none=True, validate=NON_EMPTY)
    taskId = Text(allow_none=True, validate=NON_EMPTY)
    metadata = fields.Dict(allow_none=True)
    # Stored and shown as sent: they must be what the A2A schema says they are.
    extensions = fields.List(Text())
    referenceTaskIds = fields.List(Text())


class SendConfigurationSchema(Schema):
    class Meta:
        unknown = EXCLUDE

    acceptedOutputModes = fields.List(Text(), allow_none=True)
    historyLength = StrictInteger(
        allow_none=True, validate=validate.Range(min=0, error="must be 0 or more.")
    )
    blocking = StrictBoolean(allow_none=True)
    pushNotificationConfig = fields.Raw(allow_none=True)


class MessageSendParamsSchema(Schema):
    class Meta:
        unknown = EXCLUDE

    message = fields.Nested(MessageSchema, required=True)
    configuration = fields.Nested(SendConfigurationSchema, allow_none=True)
    metadata = fields.Dict(allow_none=True)


class TaskIdParamsSchema(Schema):
    class Meta:
        unknown = EXCLUDE

    id = Text(required=True, validate=NON_EMPTY)
    metadata = fields.Dict(allow_none=True)


class TaskQueryParamsSchema(TaskIdParamsSchema):
    historyLength = StrictInteger(
        allow_none=True, validate=validate.Range(min=0, error="must be 0 or more.")
    )


# -- what agents return -------------------------------------------------------------


class AgentPartsSchema(Schema):
    """Parts an agent function gives (Reply(parts=...), artifacts): they are
    sent as they are, so they must be valid A2A parts."""

    parts = fields.List(PartField(), required=True, validate=NON_EMPTY)


class AgentArtifactSchema(AgentPartsSchema):
    class Meta:
        unknown = EXCLUDE

    artifactId = Text(validate=NON_EMPTY)
    name = Text()
    description = Text()
    metadata = fields.Dict()
    extensions = fields.List(Text())


# -- agent registration -----------------------------------------------------------


class SkillSchema(Schema):
    """An AgentSkill as given at registration; checked once, at start-up."""

    class Meta:
        unknown = EXCLUDE

    id = Text(required=True, validate=NON_EMPTY)
    name = Text(required=True, validate=NON_EMPTY)
    description = Text(required=True)
    tags = fields.List(Text(), load_default=list)
    examples = fields.List(Text())
    inputModes = fields.List(Text())
    outputModes = fields.List(Text())


ENVELOPE = EnvelopeSchema()
STRICT_ENVELOPE = StrictEnvelopeSchema()
MESSAGE_SEND_PARAMS = MessageSendParamsSchema()
TASK_QUERY_PARAMS = TaskQueryParamsSchema()
TASK_ID_PARAMS = TaskIdParamsSchema()
SKILLS = SkillSchema(many=True)
AGENT_PARTS = AgentPartsSchema()
AGENT_ARTIFACT = AgentArtifactSchema()


def load_agent_output(schema, value, what):
    """``value`` checked by ``schema``, or ValueError naming the bad field."""
    try:
        return schema.load(value)
    except ValidationError as exc:
        field, text = flatten_errors(exc.messages)[0]
        raise ValueError("%s: %s: %s" % (what, field, text)) from None


def flatten_errors(messages, path=""):
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


def load_params(schema, params):
    """Validated params, or ``InvalidParams`` naming the first bad field."""
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise errors.InvalidParams("params must be an object.", data={"field": "params"})
    try:
        return schema.load(params)
    except ValidationError as exc:
        problems = flatten_errors(exc.messages)
        field, text = problems[0]
        raise errors.InvalidParams(
            "Invalid params: %s: %s" % (field or "params", text),
            data={"field": field or "params",
                  "errors": {f or "params": t for f, t in problems}},
        )
