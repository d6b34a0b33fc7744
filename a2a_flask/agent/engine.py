"""The turn engine: runs an agent function on a ``Turn`` and stores what it
returned (a reply, a question, a refusal, or a failure naming no internals)."""

import logging
from typing import Callable

from ..ids import new_id
from ..messages import agent_message, text_part
from .api import Reply, _StatusReply

log = logging.getLogger("a2a_flask")

FAILED_TEXT = "The agent could not complete this task because of an internal error."


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
        return result.state, agent_message(result.parts, turn.task_id, turn.context_id, result.metadata), []
    raise TypeError(
        "agent %r returned %r; return a str, Reply, InputRequired, AuthRequired "
        "or Reject" % (turn.agent.name, type(result).__name__))


def _failure(turn):
    """The outcome of a turn that failed: no internals, no artifacts."""
    return "failed", agent_message([text_part(FAILED_TEXT)], turn.task_id, turn.context_id), []


def store_outcome(turn, state, message, artifacts=()):
    """Store the outcome of a turn run in a request (conditional on the task
    being ``working``): its timestamp, or None when it was discarded."""
    return turn._store.finish_turn(turn.task_id, turn.caller.id, turn.agent.name,
                                  state, message, artifacts)


def run_turn(turn, store: Callable = store_outcome):
    """Run the agent on ``turn`` and store the outcome with
    ``store(turn, state, message, artifacts)`` (the worker passes its own,
    which stores only while it holds the turn).

    Returns (state, status message, artifacts, timestamp) as stored, or None
    when the task was canceled meanwhile and the outcome discarded.
    """
    try:
        state, message, artifacts = _outcome(turn, turn.agent.func(turn))
    except Exception:
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
