"""The client's typed results, read from either protocol version, and the
user messages it sends, written in either.

Results are plain dataclasses in one version-neutral form: states and roles
as A2A 0.3 spells them (``"completed"``, ``"user"``), parts as 0.3 part
objects (``{"kind": "text", "text": ...}``), whether the agent answered in
0.3 or in 1.0 ProtoJSON (``TASK_STATE_COMPLETED``, ``ROLE_AGENT``, unified
parts); ``raw`` keeps what came on the wire. The conversion tables are the
server's own (``convert_v10``): one reading of 1.0 for both ends.
"""

import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

from ..messages import new_message, text_part
from ..protocol.v10 import convert as convert_v10

JSONObject = Dict[str, Any]

TERMINAL_STATES = frozenset({"completed", "canceled", "failed", "rejected"})
#: The task waits for the caller: a message with its ``taskId`` continues it.
INTERRUPTED_STATES = frozenset({"input-required", "auth-required"})
_ROLES = {value: key for key, value in convert_v10.ROLES.items()}


def _text(parts: List[JSONObject]) -> str:
    return "\n".join(p["text"] for p in parts if p.get("kind") == "text"
                     and isinstance(p.get("text"), str))


@dataclass
class Message:
    """An A2A message: ``role`` ``"user"`` or ``"agent"``, 0.3 ``parts``."""

    message_id: str
    role: str
    parts: List[JSONObject]
    task_id: Optional[str] = None
    context_id: Optional[str] = None
    metadata: JSONObject = field(default_factory=dict)
    raw: JSONObject = field(default_factory=dict, repr=False)

    @property
    def text(self) -> str:
        """The text parts, in order, joined with a newline."""
        return _text(self.parts)


@dataclass
class Artifact:
    """An output of a task: ``parts`` (0.3 form), ``name``, ``artifact_id``."""

    artifact_id: str
    parts: List[JSONObject]
    name: Optional[str] = None
    description: Optional[str] = None
    metadata: JSONObject = field(default_factory=dict)

    @property
    def text(self) -> str:
        return _text(self.parts)


@dataclass
class Task:
    """A task as the agent last described it."""

    id: str
    context_id: str
    state: str
    status_message: Optional[Message] = None
    timestamp: Optional[str] = None
    artifacts: List[Artifact] = field(default_factory=list)
    history: List[Message] = field(default_factory=list)
    metadata: JSONObject = field(default_factory=dict)
    raw: JSONObject = field(default_factory=dict, repr=False)

    @property
    def done(self) -> bool:
        """In a terminal state: nothing more will happen to it."""
        return self.state in TERMINAL_STATES

    @property
    def interrupted(self) -> bool:
        """Waiting for the caller (``input-required``, ``auth-required``)."""
        return self.state in INTERRUPTED_STATES

    @property
    def text(self) -> str:
        """The reply as text: the artifacts' text parts, else the status
        message's (a question, a refusal, a failure)."""
        found = "\n".join(a.text for a in self.artifacts if a.text)
        if found:
            return found
        return self.status_message.text if self.status_message else ""


@dataclass
class TaskPage:
    """One page of ``list_tasks``; ``next_page_token`` is "" on the last."""

    tasks: List[Task]
    next_page_token: str = ""
    total_size: Optional[int] = None


# -- reading ----------------------------------------------------------------

def _object(wire: Any, what: str) -> JSONObject:
    # What the far side sent, checked before it is read: a malformed answer
    # fails here (the client turns it into its TransportError), not later in
    # the caller's hands.
    if not isinstance(wire, dict):
        raise TypeError("%s is not a JSON object" % what)
    return wire


def _id(wire: JSONObject, name: str, default: Optional[str] = "") -> Any:
    value = wire.get(name, default)
    if value is not None and not isinstance(value, str):
        raise TypeError("%s is not a string" % name)
    return value


def _part(wire: JSONObject) -> JSONObject:
    _object(wire, "a part")
    if "kind" in wire:
        return wire
    return convert_v10.stored_part(wire)


def message(wire: JSONObject) -> Message:
    """A Message of either version."""
    _object(wire, "a message")
    return Message(
        message_id=_id(wire, "messageId"),
        role=_ROLES.get(wire.get("role"), wire.get("role", "")),  # type: ignore[arg-type]
        parts=[_part(p) for p in wire.get("parts") or ()],
        task_id=_id(wire, "taskId", None), context_id=_id(wire, "contextId", None),
        metadata=wire.get("metadata") or {}, raw=wire)


def artifact(wire: JSONObject) -> Artifact:
    _object(wire, "an artifact")
    return Artifact(artifact_id=wire.get("artifactId", ""),
                    parts=[_part(p) for p in wire.get("parts") or ()],
                    name=wire.get("name"), description=wire.get("description"),
                    metadata=wire.get("metadata") or {})


def task(wire: JSONObject) -> Task:
    """A Task of either version."""
    _object(wire, "a task")
    status = _object(wire.get("status") or {}, "a task's status")
    state = status.get("state", "unknown")
    state = convert_v10.STORED_STATES.get(state, state)
    if state == "TASK_STATE_UNSPECIFIED":
        state = "unknown"
    return Task(
        id=_id(wire, "id"), context_id=_id(wire, "contextId"), state=state,
        status_message=message(status["message"]) if status.get("message") else None,
        timestamp=status.get("timestamp"),
        artifacts=[artifact(a) for a in wire.get("artifacts") or ()],
        history=[message(m) for m in wire.get("history") or ()],
        metadata=wire.get("metadata") or {}, raw=wire)


def send_result(result: JSONObject) -> Union[Task, Message]:
    """What ``message/send`` / ``SendMessage`` answered: a Task or a Message
    (0.3: the object itself, with ``kind``; 1.0: ``{"task"}``/``{"message"}``)."""
    _object(result, "the answer to a send")
    if "task" in result and isinstance(result["task"], dict):
        return task(result["task"])
    if "message" in result and isinstance(result["message"], dict):
        return message(result["message"])
    if result.get("kind") == "message" or ("messageId" in result and "status" not in result):
        return message(result)
    return task(result)


def task_page(result: JSONObject) -> TaskPage:
    _object(result, "a page of tasks")
    return TaskPage(tasks=[task(t) for t in result.get("tasks") or ()],
                    next_page_token=result.get("nextPageToken") or "",
                    total_size=result.get("totalSize"))


# -- writing ----------------------------------------------------------------

def user_message(text: Optional[str] = None,
                 parts: Optional[List[JSONObject]] = None,
                 message_id: Optional[str] = None, task_id: Optional[str] = None,
                 context_id: Optional[str] = None,
                 metadata: Optional[JSONObject] = None) -> JSONObject:
    """A user message in the 0.3 form (``text``, or 0.3 ``parts``); a new
    ``messageId`` unless one is given."""
    return new_message("user", message_id or uuid.uuid4().hex,
                       list(parts) if parts is not None else [text_part(text or "")],
                       task_id, context_id, metadata)


def message_v10(message_03: JSONObject) -> JSONObject:
    """A 0.3 user message in 1.0 ProtoJSON."""
    return convert_v10.message(message_03)
