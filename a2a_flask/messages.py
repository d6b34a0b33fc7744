"""Messages and parts in their stored form (A2A 0.3-shaped JSON objects:
``kind``, ``messageId``, ``parts``...), as the storage keeps them and the
bindings convert them: the schemas that check a caller's message and an
agent's parts, and ``agent_message``, the one place an agent's message is
made; and ``new_id``, the ids the service makes (tasks, contexts, messages,
artifacts), here below the storage, which takes it too."""

import base64
import binascii
import collections
import os
import time
from typing import Any, Deque, Dict, List, Optional

from marshmallow import (
    INCLUDE, Schema, ValidationError, fields, post_load, validate, validates_schema,
)

from .validation import NON_EMPTY, Id, Shortcut, Text, plain_id, storable

#: base64url's 64 characters in ASCII order: the text of an id sorts as its
#: bytes do, so ids made later sort later.
_SORTED_B64 = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
    b"-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")


#: Random parts not used yet, drawn from ``os.urandom`` 256 at a time:
#: each call lets the interpreter's lock go, and under gthread each let-go
#: is a turn between threads (docs/benchmarks.md); a send makes four ids.
#: A deque's ``popleft`` and ``extend`` (of a list) are atomic: no part is
#: taken twice.
#: Emptied in a forked child (gunicorn's workers), which must never make
#: the ids its parent or a sibling makes.
_RANDOM_PARTS: Deque[bytes] = collections.deque()
os.register_at_fork(after_in_child=_RANDOM_PARTS.clear)


def _random_part() -> bytes:
    try:
        return _RANDOM_PARTS.popleft()
    except IndexError:
        drawn = os.urandom(16 * 256)
        _RANDOM_PARTS.extend([drawn[at:at + 16] for at in range(16, len(drawn), 16)])
        return drawn[:16]


def new_id(prefix: str) -> str:
    """An opaque, unguessable id (128 random bits) with a readable prefix.

    The random part follows the time in milliseconds, so that new rows land at
    the end of the indexes instead of on random pages: inserts stay cheap and
    local however many millions of tasks the database holds. Six bits per
    character (30 after the prefix, not 44 hex digits): an id is stored up to
    ten times per task (rows, indexes, message bodies).
    """
    raw = (time.time_ns() // 1000000).to_bytes(6, "big") + _random_part()
    return prefix + base64.urlsafe_b64encode(raw).translate(
        _SORTED_B64).decode("ascii").rstrip("=")


#: A message, part or artifact in its stored form: a plain JSON object.
JSONObject = Dict[str, Any]


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
    """A text part."""

    kind = Text(required=True)
    text = Text(required=True)


class FileContentSchema(_StoredSchema):
    """A file: exactly one of ``bytes`` (base64) and ``uri``."""

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
                raise ValidationError("not valid base64.", "bytes") from None


class FilePartSchema(_PartSchema):
    """A file part."""

    kind = Text(required=True)
    file = fields.Nested(FileContentSchema, required=True)


class DataPartSchema(_PartSchema):
    """A data part (a JSON object)."""

    kind = Text(required=True)
    data = fields.Dict(required=True)


PART_SCHEMAS = {
    "text": TextPartSchema(),
    "file": FilePartSchema(),
    "data": DataPartSchema(),
}


def _text_alone(part: JSONObject) -> Optional[JSONObject]:
    """A part that is text alone, the common one (a caller's, an agent's
    reply), read as TextPartSchema loads it, without the load's machinery;
    None for any other part (the schemas decide)."""
    text = part.get("text")
    if part.get("kind") == "text" and type(text) is str and len(part) == 2 \
            and storable(text):
        return {"kind": "text", "text": text}
    return None


class PartField(fields.Field):
    """A part, checked by the schema its ``kind`` names."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, dict):
            raise ValidationError("a part must be an object.")
        common = _text_alone(value)
        if common is not None:
            return common
        kind = value.get("kind")
        schema = PART_SCHEMAS.get(kind) if isinstance(kind, str) else None
        if schema is None:
            raise ValidationError({"kind": ['must be one of "text", "file", "data".']})
        return schema.load(value)


def _plain_message(message: Any) -> Optional[JSONObject]:
    """A caller's message of text parts alone, with its ids (the common
    one), read as StoredMessageSchema loads it, in the load's order of
    members; None for any other message (the schema decides)."""
    if type(message) is not dict or not _PLAIN_MESSAGE_MEMBERS.issuperset(message) \
            or message.get("role") != "user" or message.get("kind", "message") != "message":
        return None
    parts = message.get("parts")
    if type(parts) is not list or not parts:
        return None
    read = [_text_alone(part) if type(part) is dict else None for part in parts]
    if None in read:
        return None
    loaded: JSONObject = {"kind": "message"} if "kind" in message else {}
    loaded["role"] = "user"
    loaded["parts"] = read
    for name in ("messageId", "contextId", "taskId"):
        if name in message:
            if not plain_id(message[name]):
                return None
            loaded[name] = message[name]
    return loaded if "messageId" in loaded else None


_PLAIN_MESSAGE_MEMBERS = frozenset(("kind", "role", "parts", "messageId", "contextId", "taskId"))


class StoredMessageSchema(_StoredSchema, Shortcut):
    """A caller's message, stored and shown as sent (a plain one read
    without the load: ``_plain_message``)."""

    class Meta:
        unknown = INCLUDE  # other members: stored as sent

    kind = Text(validate=validate.Equal("message", error='must be "message".'))
    role = Text(
        required=True, validate=validate.Equal("user", error='must be "user".')
    )
    parts = fields.List(PartField(), required=True, validate=NON_EMPTY)
    messageId = Id(required=True, validate=NON_EMPTY)
    contextId = Id(allow_none=True, validate=NON_EMPTY)
    taskId = Id(allow_none=True, validate=NON_EMPTY)
    metadata = fields.Dict(allow_none=True)
    # Stored and shown as sent: they must be what the A2A schema says they are.
    extensions = fields.List(Text())
    referenceTaskIds = fields.List(Id())

    shortcut = staticmethod(_plain_message)


def text_part(text: str) -> JSONObject:
    return {"kind": "text", "text": text}


def agent_message(parts: List[JSONObject], task_id: Optional[str] = None,
                  context_id: Optional[str] = None,
                  metadata: Optional[JSONObject] = None) -> JSONObject:
    """A new message of the agent (a status message, a reply) with ``parts``;
    ``taskId``/``contextId`` when given, ``metadata`` when not empty."""
    return new_message("agent", new_id("msg_"), parts, task_id, context_id, metadata)


def new_message(role: str, message_id: str, parts: List[JSONObject],
                task_id: Optional[str] = None, context_id: Optional[str] = None,
                metadata: Optional[JSONObject] = None) -> JSONObject:
    """A message (0.3 form) of ``role`` (the agent's, or a client's ``user``
    message); ``taskId``/``contextId`` when given, ``metadata`` when not empty."""
    message: JSONObject = {"kind": "message", "role": role, "messageId": message_id,
               "parts": parts}
    if task_id is not None:
        message["taskId"] = task_id
    if context_id is not None:
        message["contextId"] = context_id
    if metadata:
        message["metadata"] = metadata
    return message
