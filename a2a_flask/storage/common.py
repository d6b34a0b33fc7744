"""Helpers every backend shares: the ids the service makes (``new_id``,
defined in ``messages.py``), timestamps, digests, list cursors, the rows of
a bulk import, a task's record and list filters, the batch and retry
sizes, and statements alike in both backends but for the driver's
placeholder."""

import base64
import hashlib
import json
import time
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..messages import new_id  # noqa: F401  (the backends take it here)
from .records import Message, TaskRecord

#: Tasks ``prune`` deletes (and ``cancel_tasks`` cancels) per transaction:
#: few, so that a deletion is safe while the service runs (a writer waits at
#: most one batch).
PRUNE_BATCH = 100
#: Tries to store a turn's outcome the storage refused (busy, full,
#: read-only, a connection a restarted server broke: the next try takes a
#: new one): ONE policy for a turn run in a request (``finish_turn``) and for
#: a worker's (``finish_queued_turn``). Each try may wait the busy timeout.
FINISH_ATTEMPTS = 3
#: The pause after failed try n of storing an outcome is n times this: a
#: full or read-only disk refuses at once, without the busy timeout's wait.
FINISH_PAUSE_SECONDS = 0.1
#: The columns of an API key, in ``KeyRow``'s order.
KEY_COLUMNS = ("id, prefix, label, scope, created_at, last_used_at, revoked_at,"
               " operator, tenant")


#: The largest integer both backends take (SQLite's and PostgreSQL's bigint).
BIGINT_MAX = 2 ** 63 - 1


class Dialect:
    """What the shared mixins (``listing``, ``credential_reads``, ``turns``,
    ``history``) ask of a backend's connections class about its SQL."""

    #: How a statement marks a parameter, positional and named.
    MARK: str
    NAMED: str

    def _marked(self, sql: str) -> str:
        """``sql`` written with ``?`` marks, in the backend's marks."""
        return sql.replace("?", self.MARK)


def history_limit(history_length: Optional[int]) -> Optional[int]:
    """``LIMIT`` for the last ``history_length`` messages (None: all)."""
    return None if history_length is None else min(int(history_length), BIGINT_MAX)


def pause_before_retry(attempt: int) -> None:
    """Wait before the try after failed try ``attempt`` of ``FINISH_ATTEMPTS``."""
    time.sleep(FINISH_PAUSE_SECONDS * attempt)


#: (the UTC second, its text up to the milliseconds) of the last ``now_iso``:
#: most calls fall in the second of the one before, and strftime costs more
#: than the rest of the function.
_LAST_SECOND: Tuple[Optional[Tuple[int, ...]], str] = (None, "")


def now_iso(moment: Optional[datetime] = None) -> str:
    """ISO 8601 UTC with milliseconds and ``Z``, as A2A timestamps are."""
    global _LAST_SECOND
    now = moment or datetime.now(timezone.utc)
    second = (now.year, now.month, now.day, now.hour, now.minute, now.second)
    last = _LAST_SECOND
    if last[0] == second:
        return last[1] + "%03dZ" % (now.microsecond // 1000)
    text = now.strftime("%Y-%m-%dT%H:%M:%S.")
    if now.year < 1000:  # strftime writes year 5 as "5": compared as text, wrong
        text = "%04d%s" % (now.year, text[text.index("-"):])
    _LAST_SECOND = (second, text)
    return text + "%03dZ" % (now.microsecond // 1000)


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def fingerprint(message: Dict[str, Any]) -> str:
    """A stable digest of a message, to tell a retry from a different message."""
    canonical = json.dumps(message, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def delivery_fingerprint(message: Dict[str, Any], task_id: Optional[str],
                         context_id: Optional[str]) -> str:
    """The fingerprint of a delivery (retry record) of ``message`` to task
    ``task_id`` in ``context_id``: of the message without the members its
    stored form does not keep as sent (``kind``, always ``"message"``;
    ``taskId``/``contextId`` when absent, null or those of the task), so that
    the same digest comes from the message as a client sends it and from the
    message as a task's history keeps it (``import_tasks``). A ``taskId`` or
    ``contextId`` naming another task or context stays: a different message."""
    return fingerprint({k: v for k, v in message.items()
                        if k != "kind" and not (
                            k == "taskId" and v in (None, task_id)) and not (
                            k == "contextId" and v in (None, context_id))})


def encode_cursor(updated_at: str, task_id: str) -> str:
    """The opaque ``next_cursor`` of ``list_tasks``: the keyset (updated_at, id)."""
    text = "%s|%s" % (updated_at, task_id)
    return base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii")


def decode_cursor(cursor: str) -> Tuple[str, str]:
    """(updated_at, id) of a cursor; ``ValueError`` when it is not ours."""
    try:
        updated_at, task_id = base64.urlsafe_b64decode(
            cursor.encode("ascii")).decode("utf-8").split("|")
    except (UnicodeError, ValueError, TypeError) as exc:
        raise ValueError("not a cursor of this list") from exc
    if "\x00" in updated_at or "\x00" in task_id:  # no backend stores one
        raise ValueError("not a cursor of this list")
    return updated_at, task_id


def import_rows(records, deliveries=True):
    """The rows ``import_tasks`` inserts for whole tasks: (tasks, messages,
    artifacts, retry records), in the column order of the tables."""
    tasks, messages, artifacts, retries = [], [], [], []
    for task in records:
        tasks.append((task.id, task.agent, task.owner, task.context_id,
                      task.state, dumps(task.status_message)
                      if task.status_message else None, task.updated_at,
                      task.created_at or task.updated_at,
                      dumps(task.metadata) if task.metadata else None,
                      task.tenant))
        for message in task.history or ():
            messages.append((task.id, task.context_id, task.owner,
                             task.agent, message["role"],
                             message["messageId"], dumps(message)))
            if deliveries and message["role"] == "user":
                retries.append((task.owner, task.agent, message["messageId"],
                                delivery_fingerprint(message, task.id,
                                                     task.context_id),
                                task.id, task.tenant))
        artifacts.extend((task.id, a["artifactId"], dumps(a))
                         for a in task.artifacts or ())
    return tasks, messages, artifacts, retries


def user_row(user: Sequence[Any]) -> Tuple[Any, ...]:
    """An exported user as ``import_credentials`` inserts it: name, password
    hash, created_at, operator flag, tenant (False and None when an older
    export has none)."""
    name, password_hash, created_at = user[:3]
    return (name, password_hash, created_at, bool(user[3:4] and user[3]),
            user[4] if len(user) > 4 else None)


def task_record(row: Sequence[Any], status_message: Optional[Message],
                history: Optional[List[Message]] = None,
                artifacts: Sequence[Dict[str, Any]] = ()) -> TaskRecord:
    """The record of a task row (id, context_id, agent, owner, state,
    updated_at, status message, metadata, created_at: both backends select
    them in this order), its status message already read back from the
    backend's own stored form."""
    (task_id, context_id, agent, owner, state, updated_at, _, metadata,
     created_at) = row[:9]
    return TaskRecord(task_id, context_id, agent, owner, state, updated_at,
                      status_message, artifacts, history,
                      json.loads(metadata) if metadata else None, created_at)


def record_reader(status: Callable[[Sequence[Any]], Message]
                  ) -> Callable[..., TaskRecord]:
    """A backend's ``record(row, history=None, artifacts=())``: the record of
    a task row (``task_record``'s columns), its status message, when the
    row has one, read back by ``status(row)`` from the backend's stored form."""
    def record(row: Sequence[Any], history: Optional[List[Message]] = None,
               artifacts: Sequence[Dict[str, Any]] = ()) -> TaskRecord:
        return task_record(row, status(row) if row[6] else None, history, artifacts)
    return record


def task_filters(named: Callable[[str], str], owner: Optional[str],
                 agent: Optional[str], context_id: Optional[str],
                 state: Optional[str], updated_after: Optional[str],
                 tenant: Optional[str] = None, state_term: str = "state",
                 task_id: Optional[str] = None) -> Tuple[List[str], Dict[str, Any]]:
    """The WHERE terms and named parameters of ``list_tasks``' filters (and
    ``cancel_tasks``', which may name one task).
    ``named(name)``: the driver's placeholder for a named parameter;
    ``state_term``: how the state is compared when a context is given (the
    context's index then serves, not the state's: SQLite's ``+state``)."""
    where: List[str] = []
    params: Dict[str, Any] = {}
    for column, term, value in (
            ("tenant", "tenant", tenant), ("owner", "owner", owner),
            ("agent", "agent", agent), ("context_id", "context_id", context_id),
            ("state", state_term if context_id else "state", state),
            ("after", "updated_at", updated_after), ("task_id", "id", task_id)):
        if value is not None:
            where.append("%s %s %s" % (term, ">" if column == "after" else "=",
                                       named(column)))
            params[column] = value
    return where, params


def where_clause(where: Sequence[str]) -> str:
    """`` WHERE`` and the terms joined by AND, or "" without any."""
    return " WHERE " + " AND ".join(where) if where else ""


def exported_batch(rows: Sequence[Sequence[Any]],
                   record: Callable[..., TaskRecord],
                   history: Dict[str, List[Message]],
                   artifacts: Dict[str, List[Dict[str, Any]]],
                   tenants: Dict[str, str]) -> List[TaskRecord]:
    """A batch of ``export_tasks``: the records of task ``rows`` (read by
    the backend's ``record(row, history, artifacts)``) with their history,
    artifacts and tenant, by task id."""
    records = [record(row, history.get(row[0], []), artifacts.get(row[0], []))
               for row in rows]
    for task in records:
        task.tenant = tenants.get(task.id, "")
    return records


def reassign_owner(conn: Any, mark: str, from_owner: str, to_owner: str) -> int:
    """``Storage.reassign_tasks`` in the caller's transaction on ``conn``
    (``mark``: the driver's placeholder); the number of tasks moved. Each
    UPDATE is conditional on the old owner: a second run moves nothing."""
    def run(sql: str, args: Sequence[Any]) -> int:
        return conn.execute(sql.replace("?", mark), args).rowcount

    run("UPDATE a2a_deliveries SET owner = ? WHERE owner = ? AND NOT EXISTS"
        " (SELECT 1 FROM a2a_deliveries d WHERE d.owner = ? AND d.agent ="
        " a2a_deliveries.agent AND d.message_id = a2a_deliveries.message_id"
        " AND d.tenant = a2a_deliveries.tenant)",
        (to_owner, from_owner, to_owner))
    for table in ("a2a_messages", "a2a_turns"):
        run("UPDATE " + table + " SET owner = ? WHERE owner = ?", (to_owner, from_owner))
    return run("UPDATE a2a_tasks SET owner = ? WHERE owner = ?", (to_owner, from_owner))


#: Seconds a claimer's heartbeat row is kept unseen (a killed claimer's):
#: far past any lease, so that /health can still say how long ago.
WORKER_ROWS_KEPT_SECONDS = 7 * 24 * 3600


class WriteHealth:
    """Whether this process's writes work, for ``/health``: the outcome of its
    last write, and when none was tried for ``PROBE_SECONDS``, of one write
    that changes nothing. A load balancer then stops sending calls to a
    process whose writes fail (disk full, read-only, file deleted) while its
    reads still work.

    ``reason(exc)`` is the backend's: a few words for a failed write, or None
    when ``exc`` says nothing about writes (busy: someone else writes)."""

    PROBE_SECONDS = 5.0

    def __init__(self, reason: Callable[[BaseException], Optional[str]]) -> None:
        self._reason = reason
        self._problem: Optional[str] = None
        self._at: Optional[float] = None  # monotonic time of the last outcome; None: none yet

    def succeeded(self) -> None:
        self._problem, self._at = None, time.monotonic()

    def failed(self, exc: BaseException) -> None:
        reason = self._reason(exc)
        if reason is not None:
            self._problem, self._at = reason, time.monotonic()

    def problem(self, probe: Callable[[], object]) -> Optional[str]:
        """None while writes work, else why not. ``probe()`` makes one write,
        whose transaction reports its outcome here."""
        if self._at is None or time.monotonic() - self._at >= self.PROBE_SECONDS:
            try:
                probe()
            except Exception as exc:
                if self._reason(exc) is None:
                    self._at = time.monotonic()  # busy: asked again later
        return self._problem


#: The slowest turns of the operator's page are looked for among the newest
#: this many tasks whose turn ended in the last hour: a bounded read (no
#: index orders tasks by how long they took, and one would cost every send).
SLOWEST_SAMPLE = 1000
#: The slowest turns the operator's page lists.
SLOWEST_SHOWN = 10
#: Task states whose turn did not end by itself: not counted as turns' times.
NOT_ENDED = ("working", "canceled")


def _moment(text: str) -> datetime:
    # fromisoformat: a tenth of strptime's time, for a thousand rows a call.
    return datetime.fromisoformat(text[:-1] if text.endswith("Z") else text)


def turn_seconds(created_at: str, updated_at: str) -> float:
    """Seconds from a task's creation to its last change (ISO texts)."""
    return max(0.0, (_moment(updated_at) - _moment(created_at)).total_seconds())


def slowest_turns(rows: Sequence[Tuple[Any, ...]],
                  several_turns: Callable[[Sequence[str]], Any],
                  limit: int = SLOWEST_SHOWN) -> list:
    """The ``limit`` slowest of ``rows`` ((id, agent, owner, tenant, state,
    created_at, updated_at)), slowest first, leaving out the tasks
    ``several_turns(ids)`` names (more than one user message: their
    creation is not their last turn's start). Asked of the slowest first,
    a few at a time: most reads stop at the first batch."""
    ranked = sorted(rows, key=lambda row: (turn_seconds(row[5], row[6]),
                                           row[6], row[0]), reverse=True)
    found: list = []
    step = max(2 * limit, 1)
    for start in range(0, len(ranked), step):
        batch = ranked[start:start + step]
        several = set(several_turns([row[0] for row in batch]))
        found += [row for row in batch if row[0] not in several]
        if len(found) >= limit:
            break
    return found[:limit]


def queue_and_workers(conn: Any) -> Tuple[int, Optional[str], list, list, list]:
    """The operator's page's queue and workers read on ``conn`` (the same
    SQL on both backends): the depth and oldest queued time, the queued
    turns per (tenant, owner), each claimer's (worker, latest lease, turns)
    and each heartbeat's (id, seen_at)."""
    depth, oldest = conn.execute(
        "SELECT count(*), min(queued_at) FROM a2a_turns"
        " WHERE worker IS NULL").fetchone()
    queued = conn.execute(
        "SELECT tenant, owner, count(*) FROM a2a_turns WHERE worker IS NULL"
        " GROUP BY tenant, owner").fetchall()
    leases = [tuple(row) for row in conn.execute(
        "SELECT worker, max(lease_expires), count(*) FROM a2a_turns"
        " WHERE worker IS NOT NULL GROUP BY worker ORDER BY worker")]
    workers = [tuple(row) for row in conn.execute(
        "SELECT id, seen_at FROM a2a_workers ORDER BY id")]
    return depth, oldest, queued, leases, workers


def queue_by_caller(rows: Sequence[Tuple[str, str, int]]) -> Tuple[dict, dict]:
    """Queued turns per (tenant, owner) rows as ({owner: n}, {tenant:
    {owner: n}}): the operator's page's queue, across tenants and by one."""
    callers: Dict[str, int] = {}
    tenants: Dict[str, Dict[str, int]] = {}
    for tenant, owner, count in rows:
        callers[owner] = callers.get(owner, 0) + count
        tenants.setdefault(tenant, {})[owner] = count
    return callers, tenants


def with_tenant(record: Any, tenant: str) -> Any:
    """``record`` (a ``TaskRecord``) with its ``tenant`` set."""
    record.tenant = tenant or ""
    return record
