"""The operator's page's data (``A2A_DASHBOARD``): what ``GET
PREFIX/dashboard/`` answers as JSON, built from the storage's one read
(``Storage.operator_view``), the keys and the process's settings; and its
two actions. Version-neutral: states by their stored (A2A 0.3) names.

Workers are the claimers of background turns (``flask a2a worker``, the
in-process claimers of ``A2A_IN_PROCESS_WORKER``): each one's heartbeat row
(written at each of its upkeeps, idle or not) and the leases it holds (its
newest lease's renewal: the expiry less ``A2A_WORKER_LEASE_SECONDS``).
"""

import logging
import os
import time
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional

from .errors import OperatorActionError
from .logs import clean
from .storage.base import TaskRecord
from .storage.common import turn_seconds

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


def _workers(view, now: datetime, lease: float) -> List[Dict[str, Any]]:
    """Every claimer with a heartbeat row or a lease, by id."""
    beats = dict(view.workers)
    leases = {worker: (expires, running) for worker, expires, running in view.leases}
    workers = []
    for worker in sorted(set(beats) | set(leases)):
        heartbeat = _seconds(now, beats.get(worker))
        renewed = None
        if worker in leases:
            renewed = round(max(0.0, (now - parse_time(leases[worker][0])
                                      + timedelta(seconds=lease)).total_seconds()), 1)
        workers.append({
            "id": worker,
            # InProcessWorker's ids end so (worker.py).
            "in_process": worker.endswith(":web"),
            "running": leases[worker][1] if worker in leases else 0,
            "last_seen_seconds": min(seen for seen in (heartbeat, renewed)
                                     if seen is not None),
            "heartbeat_seconds": heartbeat,
            "lease_renewed_seconds": renewed})
    return workers


def _unseen(app_state, workers, lease) -> Optional[int]:
    """What ``/health`` says: seconds for which no claimer was seen, when
    background agents exist and none was within twice the lease; else None."""
    if not any(agent.background for agent in app_state.reachable_agents()):
        return None
    seen = min((w["last_seen_seconds"] for w in workers), default=None)
    if seen is not None and seen <= 2 * lease:
        return None
    if seen is None:  # none ever: for as long as this app knows
        seen = time.monotonic() - app_state.started
    return int(seen)


def _slow(row) -> Dict[str, Any]:
    task_id, agent, owner, tenant, state, created_at, updated_at = row
    return {"task_id": task_id, "agent": agent, "caller": owner,
            "tenant": tenant or "", "state": state,
            "seconds": round(turn_seconds(created_at, updated_at), 3),
            "at": updated_at}


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
        # The limit in force (unset: the storage's) and, in this process,
        # the sends counted out for holding their place too long.
        "running_sends": app_state.running_sends.limit,
        "running_sends_stuck": app_state.running_sends.stuck,
    }


def dashboard_data(app_state: "AppState", environ: Mapping[str, Any]) -> Dict[str, Any]:
    """The JSON object of ``GET PREFIX/dashboard/`` (docs/reference/routes.md)."""
    view = app_state.storage.operator_view(FAILURES)
    now = parse_time(view.now)
    agents = app_state.extension.agents
    names = sorted(set(agents) | set(view.tasks))
    per_minute = _turns_per_minute(view, now, names)
    lease = app_state.settings.worker_lease_seconds
    workers = _workers(view, now, lease)
    return {
        "now": view.now,
        "agents": {name: {"tasks": dict(sorted(view.tasks.get(name, {}).items())),
                          "turns_per_minute": per_minute[name],
                          "background": bool(name in agents
                                             and agents[name].background)}
                   for name in names},
        "queue": {"depth": view.queue_depth,
                  "oldest_seconds": _seconds(now, view.queue_oldest),
                  "callers": dict(sorted(view.queue_callers.items())),
                  "tenants": {tenant: dict(sorted(callers.items()))
                              for tenant, callers in sorted(view.queue_tenants.items())}},
        "workers": workers,
        # What "workers" is made of: the claimers' heartbeat rows and leases.
        "workers_from": "heartbeats and leases",
        "workers_unseen_seconds": _unseen(app_state, workers, lease),
        "failures": [{"task_id": task.id, "agent": task.agent,
                      "caller": task.owner, "tenant": task.tenant,
                      "at": task.updated_at, "text": status_text(task)}
                     for task in view.failures],
        "slowest": [_slow(row) for row in view.slowest],
        "slowest_of": view.slowest_of,
        "tenants": sorted(app_state.known_tenants()),
        "keys": [{"id": key.id, "label": key.label, "scope": key.scope_text,
                  "operator": key.operator, "tenant": key.tenant,
                  "created_at": key.created_at, "last_used_at": key.last_used_at,
                  "revoked_at": key.revoked_at}
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
        state = storage.task_state(task_id)  # its state alone, not its history
        if state is None:
            raise OperatorActionError("No task %s." % task_id, http_status=404,
                                      data={"task_id": task_id})
        raise OperatorActionError("Task %s is %s already: nothing to cancel."
                                  % (task_id, state), http_status=409,
                                  data={"task_id": task_id, "state": state})
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
