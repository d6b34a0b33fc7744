"""Conversion at the edge between the stored form and A2A 1.0's ProtoJSON.

The store keeps messages, parts and artifacts as A2A 0.3 shaped them
(``kind``, lowercase roles and states, ``file: {bytes|uri}``); 1.0 shows the
unified ``Part`` (``text``/``raw``/``url``/``data`` beside ``filename`` and
``mediaType``), ``ROLE_*`` and ``TASK_STATE_*``. Nothing is migrated: each
1.0 answer is converted from what is stored, each 1.0 message to it.
"""

from typing import TYPE_CHECKING, Any, Dict

if TYPE_CHECKING:  # pragma: no cover
    from ...storage.records import TaskRecord

STATES = {
    "submitted": "TASK_STATE_SUBMITTED", "working": "TASK_STATE_WORKING",
    "input-required": "TASK_STATE_INPUT_REQUIRED", "completed": "TASK_STATE_COMPLETED",
    "canceled": "TASK_STATE_CANCELED", "failed": "TASK_STATE_FAILED",
    "rejected": "TASK_STATE_REJECTED", "auth-required": "TASK_STATE_AUTH_REQUIRED",
}
#: TASK_STATE_* -> the stored (0.3) state.
STORED_STATES = {value: key for key, value in STATES.items()}
ROLES = {"user": "ROLE_USER", "agent": "ROLE_AGENT"}


def state(stored: str) -> str:
    return STATES.get(stored, "TASK_STATE_UNSPECIFIED")


# -- stored -> 1.0 ---------------------------------------------------------------

def part(stored: Dict[str, Any]) -> Dict[str, Any]:
    kind = stored.get("kind")
    if kind == "text":
        if "metadata" not in stored:  # the common case, kept short
            return {"text": stored.get("text", "")}
        out = {"text": stored.get("text", "")}
    elif kind == "file":
        file = stored.get("file") or {}
        out = {"raw": file["bytes"]} if "bytes" in file else {"url": file.get("uri", "")}
        if file.get("name"):
            out["filename"] = file["name"]
        if file.get("mimeType"):
            out["mediaType"] = file["mimeType"]
    else:
        out = {"data": stored.get("data")}
    if stored.get("metadata"):
        out["metadata"] = stored["metadata"]
    return out


def _copy(stored, out, names):
    for name in names:
        value = stored.get(name)
        if value:
            out[name] = value
    return out


def message(stored: Dict[str, Any]) -> Dict[str, Any]:
    out = {"messageId": stored["messageId"],
           "role": ROLES.get(stored.get("role", ""), "ROLE_UNSPECIFIED"),
           "parts": [part(p) for p in stored.get("parts", ())]}
    return _copy(stored, out, ("contextId", "taskId", "metadata", "extensions",
                               "referenceTaskIds"))


def artifact(stored: Dict[str, Any]) -> Dict[str, Any]:
    out = {"artifactId": stored["artifactId"],
           "parts": [part(p) for p in stored.get("parts", ())]}
    return _copy(stored, out, ("name", "description", "metadata", "extensions"))


def task(record: "TaskRecord") -> Dict[str, Any]:
    """A ``TaskRecord`` as a 1.0 Task (empty lists and maps left out)."""
    status = {"state": state(record.state), "timestamp": record.updated_at}
    if record.status_message:
        status["message"] = message(record.status_message)
    out = {"id": record.id, "contextId": record.context_id, "status": status}
    if record.artifacts:
        out["artifacts"] = [artifact(a) for a in record.artifacts]
    if record.history:
        out["history"] = [message(m) for m in record.history]
    if record.metadata:
        out["metadata"] = record.metadata
    return out


# -- 1.0 -> stored ---------------------------------------------------------------

def stored_part(loaded: Dict[str, Any]) -> Dict[str, Any]:
    """A part validated by ``schemas_v10.PartSchema``, in the stored form."""
    if "text" in loaded:
        out = {"kind": "text", "text": loaded["text"]}
    elif "data" in loaded:
        out = {"kind": "data", "data": loaded["data"]}
    else:
        file = {"bytes": loaded["raw"]} if "raw" in loaded else {"uri": loaded["url"]}
        if loaded.get("filename"):
            file["name"] = loaded["filename"]
        if loaded.get("mediaType"):
            file["mimeType"] = loaded["mediaType"]
        out = {"kind": "file", "file": file}
    if loaded.get("metadata"):
        out["metadata"] = loaded["metadata"]
    return out


def stored_message(loaded: Dict[str, Any]) -> Dict[str, Any]:
    """A user message validated by ``schemas_v10.MessageSchema``, stored form."""
    out = {"kind": "message", "role": "user", "messageId": loaded["messageId"],
           "parts": [stored_part(p) for p in loaded["parts"]]}
    return _copy(loaded, out, ("contextId", "taskId", "metadata", "extensions",
                               "referenceTaskIds"))
