"""Marshmallow schemas of A2A 1.0 requests (ProtoJSON), for both 1.0 bindings.

ProtoJSON leaves default values out and may send them: an empty string for
an id is "not given". Unknown members are ignored (a newer client may send
more). ``ListTasksQuery``/``GetTaskQuery`` read the same requests from REST
query strings, where every value is a string.
"""

import base64
import binascii
from datetime import timezone
from typing import Any, Dict, Optional

from marshmallow import (
    EXCLUDE, Schema, ValidationError, fields, pre_load, validate,
    validates_schema,
)

from ...validation import (NON_EMPTY, Id, IdParams, BoundedInteger, Shortcut,
                           StrictBoolean, StrictInteger, Text, member_alone, plain_id,
                           storable)
from .convert import STORED_STATES

#: ListTasks pageSize: default and most (docs/protocol.md, ListTasks).
PAGE_SIZE_DEFAULT = 50
PAGE_SIZE_MAX = 100
_NOT_NEGATIVE = validate.Range(min=0, error="must be 0 or more.")
_PAGE_SIZE = validate.Range(min=1, max=PAGE_SIZE_MAX,
                            error="must be between 1 and %d." % PAGE_SIZE_MAX)


_EMPTY_IS_ABSENT = frozenset(("tenant", "contextId", "taskId", "status",
                              "pageToken", "filename", "mediaType"))


#: ListTasks ``status`` values that filter nothing: the enum's default, and
#: what @a2a-js/sdk 1.3's JSON-RPC client sends when no status is asked for.
_NO_STATUS = ("TASK_STATE_UNSPECIFIED", "UNRECOGNIZED")


class UtcDateTime(fields.AwareDateTime):
    """A timestamp with its offset, read as UTC: one whose UTC time falls
    outside years 1-9999 (``0001-01-01T00:00+14:00``) is refused, not an
    overflow further on."""

    def _deserialize(self, value, attr, data, **kwargs):
        moment = super()._deserialize(value, attr, data, **kwargs)
        try:
            return moment.astimezone(timezone.utc)
        except (OverflowError, ValueError):
            raise ValidationError("must be a time between the years 1 and "
                                  "9999 in UTC.") from None


class _Request(Schema):
    class Meta:
        unknown = EXCLUDE

    tenant = Text()

    @pre_load
    def _protojson(self, data, **kwargs):
        """ProtoJSON as a parser reads it: the proto field name
        (``message_id``) names the same field as its JSON name (``messageId``,
        which wins when both are sent); a message's default is null, an id's
        or a filter's ""."""
        if not isinstance(data, dict):
            return data
        loaded = {}
        for key, value in data.items():
            if "_" in key:
                key = _camel(key)
                if key in data:
                    continue
            if value is None or (value == "" and key in _EMPTY_IS_ABSENT) or (
                    key == "status" and value in _NO_STATUS):
                continue
            loaded[key] = value
        return loaded


def _camel(name):
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


class PartSchema(_Request):
    """A 1.0 ``Part``: exactly one of text, raw, url, data."""

    text = Text()
    raw = Text()
    url = Text()
    data = fields.Dict()  # 0.3 clients read the same parts: objects only
    metadata = fields.Dict()
    filename = Text()
    mediaType = Text()

    @validates_schema
    def _one_content(self, data, **kwargs):
        given = [name for name in ("text", "raw", "url", "data") if name in data]
        if len(given) != 1:
            raise ValidationError(
                "a part must have exactly one of text, raw, url and data.")
        if "raw" in data:
            try:
                base64.b64decode(data["raw"], validate=True)
            except (binascii.Error, ValueError):
                raise ValidationError("not valid base64.", "raw") from None


def _text_alone(part: Any) -> Optional[Dict[str, str]]:
    """A part that is text alone (``{"text": ...}``), the common one, read as
    PartSchema loads it, without the load's machinery; None for any other
    part (the schema decides)."""
    if type(part) is dict and len(part) == 1:
        text = part.get("text")
        if type(text) is str and storable(text):
            return {"text": text}
    return None


class _Part(fields.Nested):
    """A part, loaded by PartSchema (text alone: ``_text_alone``)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(PartSchema, **kwargs)

    def _deserialize(self, value, attr, data, partial=None, **kwargs):
        common = _text_alone(value)
        if common is not None:
            return common
        return super()._deserialize(value, attr, data, partial=partial, **kwargs)


def _plain_message(message: Any) -> Optional[Dict[str, Any]]:
    """A caller's message of text parts alone, with its ids (the common
    one), read as MessageSchema loads it, in the load's order of members;
    None for any other message (the schema decides)."""
    if type(message) is not dict or not _PLAIN_MESSAGE_MEMBERS.issuperset(message) \
            or message.get("role") != "ROLE_USER":
        return None
    parts = message.get("parts")
    if type(parts) is not list or not parts:
        return None
    read = [_text_alone(part) for part in parts]
    if None in read or not plain_id(message.get("messageId")):
        return None
    loaded: Dict[str, Any] = {"messageId": message["messageId"], "role": "ROLE_USER",
                              "parts": read}
    for name in ("contextId", "taskId"):
        if name in message:
            if not plain_id(message[name]):  # "" too: the load's "not given"
                return None
            loaded[name] = message[name]
    return loaded


_PLAIN_MESSAGE_MEMBERS = frozenset(("messageId", "role", "parts", "contextId", "taskId"))


class MessageSchema(_Request, Shortcut):
    """A 1.0 ``Message`` from a caller (a plain one read without the load:
    ``_plain_message``)."""

    messageId = Id(required=True, validate=NON_EMPTY)
    role = Text(required=True, validate=validate.Equal(
        "ROLE_USER", error='must be "ROLE_USER".'))
    parts = fields.List(_Part(), required=True, validate=NON_EMPTY)
    contextId = Id()
    taskId = Id()
    metadata = fields.Dict()
    extensions = fields.List(Text())
    referenceTaskIds = fields.List(Id())

    shortcut = staticmethod(_plain_message)


class SendConfigurationSchema(_Request):
    """1.0 ``SendMessageConfiguration``."""

    acceptedOutputModes = fields.List(Text())
    historyLength = StrictInteger(validate=_NOT_NEGATIVE)
    # A background agent answers at once; a synchronous one ends its turn
    # inside the call either way (service.send).
    returnImmediately = StrictBoolean()
    taskPushNotificationConfig = fields.Raw()


class SendMessageRequest(_Request, Shortcut):
    """1.0 ``SendMessageRequest``; a plain message alone is read without
    the load (``MessageSchema.shortcut``)."""

    message = fields.Nested(MessageSchema, required=True)
    configuration = fields.Nested(SendConfigurationSchema)
    metadata = fields.Dict()

    @staticmethod
    def shortcut(data: Any) -> Optional[Dict[str, Any]]:
        return member_alone(data, "message", _plain_message)


class GetTaskRequest(_Request, IdParams):
    """1.0 ``GetTaskRequest``."""

    historyLength = StrictInteger(validate=_NOT_NEGATIVE)


class CancelTaskRequest(_Request, IdParams):
    """1.0 ``CancelTaskRequest``."""

    metadata = fields.Dict()


class ListTasksRequest(_Request):
    """1.0 ``ListTasksRequest``."""

    contextId = Id()
    status = Text(validate=validate.OneOf(
        list(STORED_STATES), error="must be one of TASK_STATE_SUBMITTED, "
        "TASK_STATE_WORKING, TASK_STATE_INPUT_REQUIRED, TASK_STATE_COMPLETED, "
        "TASK_STATE_CANCELED, TASK_STATE_FAILED, TASK_STATE_REJECTED, "
        "TASK_STATE_AUTH_REQUIRED."))
    pageSize = StrictInteger(validate=_PAGE_SIZE)
    pageToken = Text()
    historyLength = StrictInteger(validate=_NOT_NEGATIVE)
    statusTimestampAfter = UtcDateTime(format="iso")
    includeArtifacts = StrictBoolean()


class _QueryBoolean(fields.Boolean):
    truthy = {"true"}
    falsy = {"false"}


class GetTaskQuery(GetTaskRequest):
    """``GetTaskRequest`` from a query string (HTTP+JSON)."""

    historyLength = BoundedInteger(strict=False, validate=_NOT_NEGATIVE)  # type: ignore[assignment]


class ListTasksQuery(ListTasksRequest):
    """``ListTasksRequest`` from a query string (HTTP+JSON)."""

    pageSize = BoundedInteger(strict=False, validate=_PAGE_SIZE)  # type: ignore[assignment]
    historyLength = BoundedInteger(strict=False, validate=_NOT_NEGATIVE)  # type: ignore[assignment]
    includeArtifacts = _QueryBoolean()  # type: ignore[assignment]


SEND_MESSAGE = SendMessageRequest()
GET_TASK = GetTaskRequest()
CANCEL_TASK = CancelTaskRequest()
LIST_TASKS = ListTasksRequest()
GET_TASK_QUERY = GetTaskQuery()
LIST_TASKS_QUERY = ListTasksQuery()
