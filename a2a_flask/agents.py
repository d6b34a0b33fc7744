"""What an agent is to its author: a function of a ``Turn``.

The function returns a reply (a string or ``Reply``), asks for more input
(``InputRequired`` / ``AuthRequired``) or refuses (``Reject``); an exception
fails the task. ``run_turn`` calls it with no transaction open and stores
the outcome.
"""

import logging
from typing import Any, Dict, Iterable, List, Mapping, Optional

from marshmallow import ValidationError

from . import errors
from .schemas import (
    AGENT_ARTIFACT, AGENT_PARTS, SKILLS, flatten_errors, load_agent_output,
)
from .storage.common import new_id
from .storage.sizes import may_exceed, rough_size, size

log = logging.getLogger("a2a_flask")

#: An A2A part (``{"kind": "text", "text": ...}``, file or data), a message,
#: an artifact spec: plain JSON objects.
JSONObject = Dict[str, Any]

FAILED_TEXT = "The agent could not complete this task because of an internal error."
#: The failed status of a turn whose output is over A2A_MAX_TURN_OUTPUT_BYTES.
TOO_LARGE_TEXT = ("The agent's answer was too large to keep: %d bytes, more than "
                  "the %d bytes one turn may write (A2A_MAX_TURN_OUTPUT_BYTES). "
                  "Nothing of it was stored.")


def _text_parts(text, parts):
    if parts is not None:
        # Checked here, in the agent's own call: a bad part fails the task
        # with a log line naming it, instead of an answer that breaks the schema.
        return load_agent_output(AGENT_PARTS, {"parts": list(parts)}, "parts")["parts"]
    return [{"kind": "text", "text": "" if text is None else str(text)}]


class Reply:
    """The agent's answer: the task is ``completed``.

    ``text`` or ``parts`` (A2A part objects) make the reply message and the
    artifact named ``response``; ``artifacts`` adds more, each a dict with
    ``parts`` and optionally ``name``, ``description``, ``metadata``.
    """

    state = "completed"

    def __init__(self, text: Optional[str] = None,
                 parts: Optional[Iterable[JSONObject]] = None,
                 artifacts: Iterable[Mapping[str, Any]] = (),
                 metadata: Optional[JSONObject] = None) -> None:
        self.parts = _text_parts(text, parts)
        self.artifacts = [load_agent_output(AGENT_ARTIFACT, dict(spec), "artifact")
                          for spec in artifacts]
        self.metadata = metadata


class _StatusReply:
    """A message that becomes the task's status message, without an artifact."""

    state: Optional[str] = None

    def __init__(self, text: Optional[str] = None,
                 parts: Optional[Iterable[JSONObject]] = None,
                 metadata: Optional[JSONObject] = None) -> None:
        self.parts = _text_parts(text, parts)
        self.metadata = metadata


class InputRequired(_StatusReply):
    """The agent asks a question: the task waits (``input-required``)."""

    state = "input-required"


class AuthRequired(_StatusReply):
    """The agent needs the caller to authorize something (``auth-required``)."""

    state = "auth-required"


class Reject(_StatusReply):
    """The agent refuses the task (``rejected``); the text says why."""

    state = "rejected"


class Turn:
    """One incoming message, as the agent function sees it."""

    def __init__(self, store, agent, caller, task_id, context_id, message,
                 message_seq, metadata=None):
        self._store = store
        self.agent = agent
        #: Who sent it (``Caller``: ``id``, ``kind``, ``name``).
        self.caller = caller
        self.task_id = task_id
        self.context_id = context_id
        #: The whole incoming message (a dict), file and data parts too.
        self.message = message
        self.metadata = metadata or {}
        self._seq = message_seq
        self._history = None
        self._context_history = None
        #: A2A_MAX_TURN_OUTPUT_BYTES, set by ``run_turn``.
        self.max_output_bytes = None

    @property
    def parts(self) -> List[JSONObject]:
        return self.message["parts"]

    @property
    def text(self) -> str:
        """The text parts, in order, joined with a newline."""
        return "\n".join(p["text"] for p in self.parts if p["kind"] == "text")

    @property
    def files(self) -> List[JSONObject]:
        return [p["file"] for p in self.parts if p["kind"] == "file"]

    @property
    def data(self) -> List[Any]:
        return [p["data"] for p in self.parts if p["kind"] == "data"]

    @property
    def history(self) -> List[JSONObject]:
        """Earlier messages of this task, oldest first (read on first use)."""
        if self._history is None:
            self._history = self._store.task_history(self.task_id, before_seq=self._seq)
        return self._history

    @property
    def context_history(self) -> List[JSONObject]:
        """Earlier messages of the whole conversation (all its tasks)."""
        if self._context_history is None:
            self._context_history = self._store.context_history(
                self.caller.id, self.agent.name, self.context_id, before_seq=self._seq)
        return self._context_history

    def recent(self, count):
        """The last ``count`` earlier messages of the conversation, oldest
        first: what a long conversation costs is ``count``, not its length."""
        if count <= 0:
            return []
        if self._context_history is not None:
            return self._context_history[-count:]
        return self._store.context_history(self.caller.id, self.agent.name,
                                           self.context_id, before_seq=self._seq,
                                           limit=count)

    @property
    def canceled(self) -> bool:
        """True once the task was canceled: stop early, the result is discarded."""
        return self._store.task_state(self.task_id) == "canceled"

    def progress(self, text: str) -> bool:
        """Show ``text`` as the task's status message while it is ``working``
        (``tasks/get`` sees it; it does not join the history). False once the
        task is no longer working (canceled): stop early."""
        text = str(text)
        limit = self.max_output_bytes
        if limit is not None and len(text) * 4 > limit:  # UTF-8: 4 bytes at most
            text = text[:limit // 8] + "..."  # a progress note, not an answer
        return self._store.progress(self.task_id, _agent_message(
            self, [{"kind": "text", "text": text}]))

    def _finish(self, state, message, artifacts=()):
        """Store the outcome (conditional on ``working``); None: discarded."""
        return self._store.finish_turn(self.task_id, self.caller.id,
                                       self.agent.name, state, message, artifacts)


def _agent_message(turn, parts, metadata=None):
    message = {"kind": "message", "role": "agent", "messageId": new_id("msg_"),
               "parts": parts, "taskId": turn.task_id, "contextId": turn.context_id}
    if metadata:
        message["metadata"] = metadata
    return message


def _artifact(spec, default_name=None):
    artifact = {"artifactId": spec.get("artifactId") or new_id("art_"),
                "parts": list(spec["parts"])}
    for key in ("name", "description", "metadata", "extensions"):
        if spec.get(key) is not None:
            artifact[key] = spec[key]
    if default_name and "name" not in artifact:
        artifact["name"] = default_name
    return artifact


def _outcome(turn, result):
    """(state, status message, artifacts) for what the function returned."""
    if isinstance(result, str):
        result = Reply(result)
    if isinstance(result, Reply):
        message = _agent_message(turn, result.parts, result.metadata)
        artifacts = [_artifact({"parts": result.parts}, "response")]
        artifacts += [_artifact(spec) for spec in result.artifacts]
        return "completed", message, artifacts
    if isinstance(result, _StatusReply):
        return result.state, _agent_message(turn, result.parts, result.metadata), []
    raise TypeError(
        "agent %r returned %r; return a str, Reply, InputRequired, AuthRequired "
        "or Reject" % (turn.agent.name, type(result).__name__))


def _failure(turn):
    """The outcome of a turn that failed: no internals, no artifacts."""
    return "failed", _agent_message(turn, [{"kind": "text", "text": FAILED_TEXT}]), []


def _too_large(turn, message, artifacts, limit):
    """The failed outcome when the status message and artifacts are over
    ``limit`` bytes (None: they fit). Capped when written, so that any task,
    its history trimmed, fits an answer (A2A_MAX_ANSWER_BYTES)."""
    rough = rough_size(message) + sum(rough_size(a) for a in artifacts)
    if limit is None or not may_exceed(rough, limit):
        return None
    written = size(message) + sum(size(a) for a in artifacts)
    if written <= limit:
        return None
    log.warning("agent %r answered task %s with %d bytes, more than "
                "A2A_MAX_TURN_OUTPUT_BYTES (%d): the turn failed",
                turn.agent.name, turn.task_id, written, limit)
    return "failed", _agent_message(
        turn, [{"kind": "text", "text": TOO_LARGE_TEXT % (written, limit)}]), []


def run_turn(turn, max_output_bytes=None):
    """Run the agent on ``turn`` and store the outcome.

    Returns (state, status message, artifacts, timestamp) as stored, or None
    when the task was canceled meanwhile and the outcome discarded. An
    outcome over ``max_output_bytes`` fails the turn instead.
    """
    turn.max_output_bytes = max_output_bytes
    try:
        state, message, artifacts = _outcome(turn, turn.agent.func(turn))
        too_large = _too_large(turn, message, artifacts, max_output_bytes)
        if too_large is not None:
            state, message, artifacts = too_large
    except Exception:
        # The caller gets a failed task naming no internals; the log gets why.
        log.exception("agent %r failed on task %s", turn.agent.name, turn.task_id)
        state, message, artifacts = _failure(turn)
    except BaseException:
        # The worker is being stopped mid-turn (gunicorn's --timeout raises
        # SystemExit in it): fail the task, or it would stay working for ever.
        log.exception("agent %r interrupted on task %s", turn.agent.name,
                      turn.task_id)
        turn._finish(*_failure(turn))
        raise
    try:
        timestamp = turn._finish(state, message, artifacts)
    except (TypeError, ValueError):  # e.g. a datetime in a data part: not JSON
        log.exception("agent %r answered task %s with something that is not "
                      "JSON", turn.agent.name, turn.task_id)
        state, message, artifacts = _failure(turn)
        timestamp = turn._finish(state, message)
    if timestamp is None:
        log.info("task %s was canceled while agent %r ran; its result is discarded",
                 turn.task_id, turn.agent.name)
        return None
    return state, message, artifacts, timestamp


def _mime_matches(pattern, mime):
    if pattern in ("*/*", "*") or pattern == mime:
        return True
    kind, _, sub = pattern.partition("/")
    return sub == "*" and mime.partition("/")[0] == kind


class Agent:
    """A registered agent: its function and what its card says of it."""

    def __init__(self, name, func, description=None, skills=None,
                 extended_skills=None, input_modes=("text/plain",),
                 output_modes=("text/plain",), version="1.0.0", enabled=True,
                 card=None, background=False, retry=False):
        if not name or "/" in name:
            raise ValueError("agent name %r must be non-empty, without '/'" % name)
        if retry and not background:
            raise ValueError("agent %r: retry=True needs background=True (a turn "
                             "run inside the request is never retried)" % name)
        self.name = name
        self.func = func
        #: Turns are queued and run by ``flask a2a worker``, never in a request.
        self.background = bool(background)
        #: A turn whose worker died is queued again (else failed: at most once).
        self.retry = bool(retry)
        doc = (func.__doc__ or "").strip().splitlines()
        self.description = description or (doc[0] if doc else "Agent %s" % name)
        self.skills = self._skills(skills) or [
            {"id": name, "name": name, "description": self.description, "tags": []}]
        self.extended_skills = self._skills(extended_skills)
        self.input_modes = list(input_modes)
        self.output_modes = list(output_modes)
        self.version = version
        self.enabled = enabled
        #: Extra AgentCard fields (provider, documentationUrl, iconUrl...).
        self.card = dict(card or {})

    def _skills(self, skills):
        if not skills:
            return []
        try:
            return SKILLS.load(list(skills))
        except ValidationError as exc:
            field, text = flatten_errors(exc.messages)[0]
            raise ValueError("agent %r: invalid skill %s: %s" % (self.name, field, text))

    @property
    def has_extended_card(self):
        return bool(self.extended_skills)

    def check_accepts(self, message, accepted_output_modes):
        """``ContentTypeNotSupported`` for a message this agent cannot take."""
        text_only = all(m.startswith("text/") for m in self.input_modes)
        if text_only and not any(p["kind"] == "text" for p in message["parts"]):
            raise errors.ContentTypeNotSupported(
                "Agent %s takes text only, and the message has no text part."
                % self.name, data={"inputModes": self.input_modes})
        if accepted_output_modes and not any(
                _mime_matches(accepted, mine) or _mime_matches(mine, accepted)
                for accepted in accepted_output_modes for mine in self.output_modes):
            raise errors.ContentTypeNotSupported(
                "configuration.acceptedOutputModes shares nothing with the output "
                "modes of agent %s (%s)." % (self.name, ", ".join(self.output_modes)),
                data={"field": "configuration.acceptedOutputModes",
                      "outputModes": self.output_modes})
