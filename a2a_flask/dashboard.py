"""The operator's page's data (``A2A_DASHBOARD``): what ``GET
PREFIX/dashboard/`` answers as JSON, built from the storage's one read
(``Storage.operator_view``), the keys and the process's settings; and its
two actions. Version-neutral: states by their stored (A2A 0.3) names.

Workers are the claimers holding a lease on a running turn (there is no
heartbeat of their own in storage): a worker that runs nothing is not seen,
and its last sign of life is its newest lease's renewal (the expiry less
``A2A_WORKER_LEASE_SECONDS``).
"""

import logging
import os
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional

from .errors import OperatorActionError
from .logs import clean
from .storage.base import TaskRecord

if TYPE_CHECKING:  # pragma: no cover
    from .app_state import AppState

log = logging.getLogger("a2a_flask.dashboard")

#: The minutes of ``turns_per_minute``, oldest first.
MINUTES = 60
#: The failures shown: the newest of the last 24 hours.
FAILURES = 50
#: A status text is cut to this many characters: the task link has it all.
TEXT_CHARS = 500


def parse_time(text: str) -> datetime:
    """A stored timestamp (``2026-01-02T03:04:05.678Z``) as an aware datetime."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)


def _seconds(now: datetime, then: Optional[str]) -> Optional[float]:
    if then is None:
        return None
    return round(max(0.0, (now - parse_time(then)).total_seconds()), 1)


def status_text(task: TaskRecord) -> str:
    """The text parts of a task's status message, joined (cut)."""
    message = task.status_message or {}
    text = " ".join(part.get("text", "") for part in message.get("parts") or ()
                    if isinstance(part, dict) and part.get("kind") == "text")
    return text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS] + "..."


def _turns_per_minute(view, now: datetime, agents) -> Dict[str, List[int]]:
    minutes = [(now - timedelta(minutes=MINUTES - 1 - i)).strftime("%Y-%m-%dT%H:%M")
               for i in range(MINUTES)]
    index = {minute: i for i, minute in enumerate(minutes)}
    counts = {agent: [0] * MINUTES for agent in agents}
    for agent, minute, count in view.turns:
        if minute in index:
            counts.setdefault(agent, [0] * MINUTES)[index[minute]] += count
    return counts


def _settings(app_state, environ) -> Dict[str, Any]:
    s = app_state.settings
    return {
        "server": environ.get("SERVER_SOFTWARE"),
        "multithread": bool(environ.get("wsgi.multithread")),
        "multiprocess": bool(environ.get("wsgi.multiprocess")),
        "pid": os.getpid(),
        "url_prefix": s.url_prefix,
        "auth": s.auth,
        "worker_lease_seconds": s.worker_lease_seconds,
        "worker_max_attempts": s.worker_max_attempts,
        "queue_limit_per_caller": s.queue_limit_per_caller,
        "stale_turn_seconds": s.stale_turn_seconds,
        "blocking_wait_seconds": s.blocking_wait_seconds,
        "max_content_length": s.max_content_length,
        "max_answer_bytes": s.max_answer_bytes,
        "max_turn_output_bytes": s.max_turn_output_bytes,
        "busy_timeout_ms": s.busy_timeout_ms,
        "retention": s.retention,
    }


def dashboard_data(app_state: "AppState", environ: Mapping[str, Any]) -> Dict[str, Any]:
    """The JSON object of ``GET PREFIX/dashboard/`` (docs/reference/routes.md)."""
    view = app_state.storage.operator_view(FAILURES)
    now = parse_time(view.now)
    agents = app_state.extension.agents
    names = sorted(set(agents) | set(view.tasks))
    per_minute = _turns_per_minute(view, now, names)
    lease = app_state.settings.worker_lease_seconds
    workers = []
    for worker, expires, running in view.leases:
        renewed = parse_time(expires) - timedelta(seconds=lease)
        workers.append({"id": worker, "running": running,
                        "last_seen_seconds": round(max(
                            0.0, (now - renewed).total_seconds()), 1)})
    return {
        "now": view.now,
        "agents": {name: {"tasks": dict(sorted(view.tasks.get(name, {}).items())),
                          "turns_per_minute": per_minute[name],
                          "background": bool(name in agents
                                             and agents[name].background)}
                   for name in names},
        "queue": {"depth": view.queue_depth,
                  "oldest_seconds": _seconds(now, view.queue_oldest),
                  "callers": dict(sorted(view.queue_callers.items()))},
        "workers": workers,
        # What "workers" is made of: claimers holding a lease right now.
        "workers_from": "leases",
        "failures": [{"task_id": task.id, "agent": task.agent,
                      "caller": task.owner, "at": task.updated_at,
                      "text": status_text(task)} for task in view.failures],
        "keys": [{"id": key.id, "label": key.label, "scope": key.scope_text,
                  "operator": key.operator, "created_at": key.created_at,
                  "last_used_at": key.last_used_at, "revoked_at": key.revoked_at}
                 for key in app_state.credentials.keys()],
        "storage": view.storage,
        "settings": _settings(app_state, environ),
    }


def cancel_task(app_state: "AppState", operator: str, task_id: str) -> TaskRecord:
    """Cancel one task, as ``flask a2a tasks cancel --task``; logged with
    the operator. ``OperatorActionError`` (404, 409) when it cannot be."""
    storage = app_state.storage
    canceled = storage.cancel_tasks(task_id=task_id)
    if not canceled:
        found = storage.show_task(task_id)
        if found is None:
            raise OperatorActionError("No task %s." % task_id, http_status=404,
                                      data={"task_id": task_id})
        raise OperatorActionError("Task %s is %s already: nothing to cancel."
                                  % (task_id, found.state), http_status=409,
                                  data={"task_id": task_id, "state": found.state})
    log.warning("operator %s canceled task %s (agent %s, caller %s)",
                clean(operator), clean(task_id), clean(canceled[0].agent),
                clean(canceled[0].owner))
    return canceled[0]


def cancel_caller(app_state: "AppState", operator: str, caller: str) -> List[TaskRecord]:
    """Cancel every working task of ``caller`` (its queued turns never start,
    its running ones see ``turn.canceled``), as ``flask a2a tasks cancel
    --caller CALLER --state working``; logged with the operator."""
    canceled = app_state.storage.cancel_tasks(owner=caller, states=["working"])
    log.warning("operator %s canceled %d working tasks of caller %s",
                clean(operator), len(canceled), clean(caller))
    return canceled
