"""The turn engine: runs an agent function on a ``Turn`` and stores what it
returned (a reply, a question, a refusal, or a failure naming no internals)."""

import logging
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..messages import agent_message, new_id, text_part
from ..storage.base import ARTIFACTS_FULL_TEXT, ArtifactsFullError
from ..storage.records import may_exceed, rough_size, size
from .api import Reply, _StatusReply

if TYPE_CHECKING:  # pragma: no cover
    from .api import Turn

log = logging.getLogger("a2a_flask")

FAILED_TEXT = "The agent could not complete this task because of an internal error."
#: The failed status of a turn whose output is over A2A_MAX_TURN_OUTPUT_BYTES.
TOO_LARGE_TEXT = ("The agent's answer was too large to keep: %d bytes, more than "
                  "the %d bytes one turn may write (A2A_MAX_TURN_OUTPUT_BYTES). "
                  "Nothing of it was stored.")


class TurnReadFailed(Exception):
    """The storage failed under one of the agent's own reads (``turn.recent()``
    ...): the turn did not run to an outcome, through nobody's fault but the
    storage's. ``failure``: the ``StorageUnavailableError``. Nothing of an
    outcome was stored; what becomes of the turn's start is the runner's
    call (``service.send`` withdraws it, the worker releases the turn)."""

    def __init__(self, failure):
        super().__init__(failure)
        self.failure = failure


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
        message = agent_message(result.parts, turn.task_id, turn.context_id, result.metadata)
        artifacts = [_artifact({"parts": result.parts}, "response")]
        artifacts += [_artifact(spec) for spec in result.artifacts]
        return "completed", message, artifacts
    if isinstance(result, _StatusReply):
        message = agent_message(result.parts, turn.task_id, turn.context_id, result.metadata)
        return result.state, message, []
    raise TypeError(
        "agent %r returned %r; return a str, Reply, InputRequired, AuthRequired "
        "or Reject" % (turn.agent.name, type(result).__name__))


def _failure(turn):
    """The outcome of a turn that failed: no internals, no artifacts."""
    return "failed", agent_message([text_part(FAILED_TEXT)], turn.task_id, turn.context_id), []


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
    return "failed", agent_message([text_part(TOO_LARGE_TEXT % (written, limit))],
                                   turn.task_id, turn.context_id), []


def store_outcome(turn: "Turn", state: str, message: Dict[str, Any],
                  artifacts: Sequence[Dict[str, Any]] = ()) -> Optional[str]:
    """Store the outcome of a turn run in a request (conditional on the task
    being ``working``): its timestamp, or None when it was discarded."""
    return turn._store.finish_turn(turn.task_id, turn.caller.id, turn.agent.name,
                                  state, message, artifacts,
                                  max_artifact_bytes=turn.max_artifact_bytes,
                                  start=turn._start)


def run_turn(turn: "Turn", store: Callable = store_outcome, tracing: Any = None,
             max_output_bytes: Optional[int] = None,
             max_artifact_bytes: Optional[int] = None,
             call_agent: Optional[Callable] = None
             ) -> Optional[Tuple[str, Dict[str, Any], List[Dict[str, Any]], str]]:
    """Run the agent on ``turn`` and store the outcome with
    ``store(turn, state, message, artifacts)`` (the worker passes its own,
    which stores only while it holds the turn); ``tracing``: the app's
    spans, one around the agent's own work.

    A storage failure under one of the agent's reads raises
    ``TurnReadFailed`` instead of failing the task (the agent did not fail).

    Returns (state, status message, artifacts, timestamp) as stored, or None
    when the task was canceled meanwhile and the outcome discarded. An
    outcome over ``max_output_bytes`` (A2A_MAX_TURN_OUTPUT_BYTES) fails the
    turn instead, and so does one whose artifacts would bring the task's
    over ``max_artifact_bytes`` (``store`` passes it on to the storage, which
    checks it as it writes: ``ArtifactsFullError``). ``call_agent``: what
    ``turn.call`` runs (``extension.call_agent``).
    """
    turn.max_output_bytes = max_output_bytes
    turn.max_artifact_bytes = max_artifact_bytes
    turn._call_agent = call_agent
    try:
        if tracing is None:
            result = turn.agent.func(turn)
        else:
            with tracing.agent_span(turn):
                result = turn.agent.func(turn)
        state, message, artifacts = _outcome(turn, result)
        too_large = _too_large(turn, message, artifacts, max_output_bytes)
        if too_large is not None:
            state, message, artifacts = too_large
    except Exception:
        if turn._storage_failure is not None:
            # An outage, not the agent's failure: no traceback blaming it
            # (the storage logged the failure), and no failed task for good.
            log.warning("agent %r could not read task %s: the storage is "
                        "unavailable; the turn stops there", turn.agent.name,
                        turn.task_id)
            raise TurnReadFailed(turn._storage_failure) from None
        # The caller gets a failed task naming no internals; the log gets why.
        log.exception("agent %r failed on task %s", turn.agent.name, turn.task_id)
        state, message, artifacts = _failure(turn)
    except BaseException:
        # The worker is being stopped mid-turn (gunicorn's --timeout raises
        # SystemExit in it): fail the task, or it would stay working for ever.
        log.exception("agent %r interrupted on task %s", turn.agent.name,
                      turn.task_id)
        store(turn, *_failure(turn))
        raise
    try:
        timestamp = store(turn, state, message, artifacts)
    except ArtifactsFullError as full:
        log.warning("agent %r answered task %s with artifacts that would bring "
                    "its artifacts to %d bytes, over the %d a task may hold: "
                    "the turn failed", turn.agent.name, turn.task_id, full.total,
                    full.limit)
        state, artifacts = "failed", []
        message = agent_message([text_part(ARTIFACTS_FULL_TEXT % (full.total, full.limit))],
                                turn.task_id, turn.context_id)
        timestamp = store(turn, state, message)
    except (TypeError, ValueError):  # e.g. a datetime in a data part: not JSON
        log.exception("agent %r answered task %s with something that is not "
                      "JSON", turn.agent.name, turn.task_id)
        state, message, artifacts = _failure(turn)
        timestamp = store(turn, state, message)
    if timestamp is None:
        log.info("task %s was canceled while agent %r ran; its result is discarded",
                 turn.task_id, turn.agent.name)
        return None
    return state, message, artifacts, timestamp
