"""The params of the A2A 0.3 methods, as marshmallow schemas built once at
import (``validation.load_params`` turns a failure into InvalidParamsError)."""

from marshmallow import EXCLUDE, Schema, fields, validate

from ...messages import StoredMessageSchema
from ...validation import (IdParams, Shortcut, StrictBoolean, StrictInteger, Text,
                           member_alone)


class SendConfigurationSchema(Schema):
    """``MessageSendConfiguration`` (0.3)."""

    class Meta:
        unknown = EXCLUDE

    acceptedOutputModes = fields.List(Text(), allow_none=True)
    historyLength = StrictInteger(
        allow_none=True, validate=validate.Range(min=0, error="must be 0 or more.")
    )
    blocking = StrictBoolean(allow_none=True)
    pushNotificationConfig = fields.Raw(allow_none=True)


class MessageSendParamsSchema(Shortcut):
    """``message/send`` params (0.3); a plain message alone is read without
    the load (``StoredMessageSchema.shortcut``)."""

    class Meta:
        unknown = EXCLUDE

    message = fields.Nested(StoredMessageSchema, required=True)
    configuration = fields.Nested(SendConfigurationSchema, allow_none=True)
    metadata = fields.Dict(allow_none=True)

    @staticmethod
    def shortcut(data):
        return member_alone(data, "message", StoredMessageSchema.shortcut)


class TaskIdParamsSchema(IdParams):
    """``tasks/cancel`` params (0.3)."""

    class Meta:
        unknown = EXCLUDE

    metadata = fields.Dict(allow_none=True)


class TaskQueryParamsSchema(TaskIdParamsSchema):
    """``tasks/get`` params (0.3)."""

    historyLength = StrictInteger(
        allow_none=True, validate=validate.Range(min=0, error="must be 0 or more.")
    )


MESSAGE_SEND_PARAMS = MessageSendParamsSchema()
TASK_QUERY_PARAMS = TaskQueryParamsSchema()
TASK_ID_PARAMS = TaskIdParamsSchema()
