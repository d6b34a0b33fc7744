"""The stored forms of messages and artifacts in SQLite, and of
a message's retry fingerprint."""

import json
from typing import Any, Dict

from ..common import dumps

# A message is stored once, in a2a_messages, without the ids that its row's
# columns hold (messageId, taskId, contextId; an artifact without its
# artifactId) nor its constant "kind": "message": a task's status message is
# its row's status_seq, a pointer into its history, not a second copy.
_ROW_IDS = ("kind", "messageId", "taskId", "contextId")


def message_body(message: Dict[str, Any], task_id: str, context_id: str) -> str:
    """The stored JSON of ``message``, in the history of task ``task_id``."""
    if message.get("taskId") == task_id and message.get("contextId") == context_id:
        return dumps({k: v for k, v in message.items() if k not in _ROW_IDS})
    return dumps({k: v for k, v in message.items()
                  if k not in ("kind", "messageId")})


def load_message(body: str, task_id: str, context_id: str, message_id: str) -> Dict[str, Any]:
    """A message as stored by ``message_body``, or whole (a status message
    absent from the history, kept in its task row)."""
    message = json.loads(body)
    if "kind" not in message:
        message = dict({"kind": "message"}, **message)
    message.setdefault("messageId", message_id)
    if "taskId" not in message:
        message["taskId"] = task_id
        message["contextId"] = context_id
    return message


def artifact_body(artifact: Dict[str, Any]) -> str:
    return dumps({k: v for k, v in artifact.items() if k != "artifactId"})


def load_artifact(body: str, artifact_id: str) -> Dict[str, Any]:
    return dict({"artifactId": artifact_id}, **json.loads(body))


def stored_fingerprint(digest: str) -> bytes:
    """A message's fingerprint as a2a_deliveries keeps it: the first 128
    bits of the SHA-256, as bytes (16 bytes, not 64 hex digits); enough to
    tell a retry of one caller's message from a different message."""
    return bytes.fromhex(digest[:32])
