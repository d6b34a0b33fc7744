"""The records the storage contract takes and returns, and what they weigh.

The records are plain classes with slots, no behaviour beyond equality and
a repr. Their sizes (the bytes a stored message, artifact or task takes in
an answer) are here too, beside the records they measure: ``rough_size`` is
cheap (the strings of the parts, no JSON is written) and used to keep the
exact measure off the hot path: JSON escaping can make a text at most six
times longer (a control character as ``\\u0001``), so a task whose rough
size is under an eighth of a budget fits it. ``size`` is exact: the length
of the compact JSON.
"""

import json
from typing import Any, Dict, Optional, Tuple

Message = Dict[str, Any]   # a message in its stored form
Artifact = Dict[str, Any]  # an artifact in its stored form


class TaskRecord:
    """A task as stored. ``history`` and ``artifacts`` are lists of stored-form
    dicts (``history`` oldest first, possibly clamped: see ``get_task``);
    ``history`` is None where an operation does not read it (``list_tasks``
    without ``history_length``)."""

    __slots__ = ("id", "context_id", "agent", "owner", "state", "updated_at",
                 "status_message", "artifacts", "history", "metadata",
                 "created_at", "history_omitted", "tenant")

    def __init__(self, id, context_id, agent, owner, state, updated_at,
                 status_message=None, artifacts=(), history=None, metadata=None,
                 created_at=None):
        self.id = id
        self.context_id = context_id
        self.agent = agent
        self.owner = owner
        self.state = state
        self.updated_at = updated_at
        self.status_message = status_message
        self.artifacts = list(artifacts) if artifacts is not None else None
        self.history = history
        self.metadata = metadata
        self.created_at = created_at
        #: How many older messages (of the last ``history_length``) a read
        #: within a byte budget left out of ``history`` (``get_task``).
        self.history_omitted = 0
        #: The task's tenant ('' for none), as ``export_tasks`` reads it for
        #: ``import_tasks``; '' elsewhere (a call knows its tenant).
        self.tenant = ""

    def __eq__(self, other):
        return (isinstance(other, TaskRecord)
                and all(getattr(self, k) == getattr(other, k)
                        for k in self.__slots__))

    def __repr__(self):
        return "TaskRecord(%s, %s, %s)" % (self.id, self.agent, self.state)


class TurnStart:
    """What ``start_turn`` did: which task, and whether it was a retry."""

    __slots__ = ("task_id", "context_id", "message", "message_seq", "created",
                 "replayed", "metadata", "tenant")

    def __init__(self, task_id, context_id, message=None, message_seq=None,
                 created=False, replayed=False, metadata=None, tenant=""):
        self.task_id = task_id
        self.context_id = context_id
        #: The user message as stored (with taskId and contextId).
        self.message = message
        #: Its position in the task's history: ``task_history(before_seq=)``;
        #: None when the start did not read it (SQLite's start of a new
        #: task: ``Storage.message_seq`` finds it, should a turn need it).
        self.message_seq = message_seq
        #: True when the task was created by this message (no earlier history).
        self.created = created
        #: True when this messageId was seen before: nothing was written.
        self.replayed = replayed
        #: A new task's metadata as stored (for ``finish_turn(start=)``).
        self.metadata = metadata
        #: The tenant the task belongs to ('' none): where a start lost by
        #: a crash is stored again (``finish_turn(start=)``).
        self.tenant = tenant


class ClaimedTurn:
    """A background turn leased to a worker by ``claim_turns``."""

    __slots__ = ("task_id", "context_id", "owner", "agent", "message",
                 "message_seq", "metadata", "attempts", "retry", "trace_context",
                 "tenant")

    def __init__(self, task_id, context_id, owner, agent, message, message_seq,
                 metadata=None, attempts=1, retry=False, trace_context=None,
                 tenant=""):
        self.task_id = task_id
        self.context_id = context_id
        self.owner = owner
        self.agent = agent
        #: The user message as stored, and its position in the history.
        self.message = message
        self.message_seq = message_seq
        self.metadata = metadata
        #: 1 on the first claim; more when an expired lease re-queued it.
        self.attempts = attempts
        self.retry = retry
        #: The W3C trace context given to ``enqueue_turn`` (text), or None.
        self.trace_context = trace_context
        #: The tenant the turn was sent in ('' for none).
        self.tenant = tenant

    def __repr__(self):
        return "ClaimedTurn(%s, %s, attempt %d)" % (self.task_id, self.agent,
                                                    self.attempts)


class StoredTaskPage:
    """One page of ``list_tasks``: ``next_cursor`` is None on the last page."""

    __slots__ = ("tasks", "next_cursor")

    def __init__(self, tasks, next_cursor=None):
        self.tasks = tasks
        self.next_cursor = next_cursor


class KeyRow:
    """An API key as stored (its hash, never its secret). ``scope`` is the
    stored text: ``"*"`` or a JSON list of agent names. ``operator``: the
    key opens the operator's page (its scope may still be no agent).
    ``tenant``: the one tenant the key acts in, None for none."""

    __slots__ = ("id", "prefix", "label", "scope", "created_at", "last_used_at",
                 "revoked_at", "operator", "tenant")

    def __init__(self, id, prefix, label, scope, created_at, last_used_at=None,
                 revoked_at=None, operator=False, tenant=None):
        self.id = id
        self.prefix = prefix
        self.label = label
        self.scope = scope
        self.created_at = created_at
        self.last_used_at = last_used_at
        self.revoked_at = revoked_at
        self.operator = bool(operator)
        self.tenant = tenant

    def astuple(self) -> Tuple[Any, ...]:
        return tuple(getattr(self, k) for k in self.__slots__)


class OperatorView:
    """What the operator's page shows of the storage (``operator_view``),
    every time by the storage's clock (``now``, ISO text).

    - ``tasks``: {agent: {state: number of tasks}}.
    - ``turns``: [(agent, minute, count)]: tasks whose last turn ended (a
      state other than ``working``) in that minute of the last hour
      (``YYYY-MM-DDTHH:MM``); a task counts once, at its last change.
    - ``queue_depth``, ``queue_oldest`` (when the oldest queued turn was
      queued, or None), ``queue_callers`` ({owner: turns queued}),
      ``queue_tenants`` ({tenant: {owner: turns queued}}, '' for none).
    - ``leases``: [(worker, its newest lease's expiry, turns it runs)].
    - ``workers``: [(worker, its last heartbeat)]: the claimers' rows
      (``note_worker``), idle ones included.
    - ``failures``: the newest failed tasks of the last 24 hours, newest
      first (``TaskRecord`` with the status message and ``tenant``, no
      history).
    - ``slowest``: [(task_id, agent, owner, tenant, state, created_at,
      updated_at)], slowest first: the tasks of one turn (one user message)
      that ended (a state other than ``working`` or ``canceled``) in the
      last hour, among the newest ``slowest_of`` such tasks
      (``common.SLOWEST_SAMPLE`` at most); its time is from the task's
      creation to its end (a follow-up turn's start is not stored).
    - ``storage``: {"backend", "schema_version"} and the backend's sizes
      (SQLite: ``file_bytes``, ``wal_bytes``; PostgreSQL: ``database_bytes``).
    """

    __slots__ = ("now", "tasks", "turns", "queue_depth", "queue_oldest",
                 "queue_callers", "leases", "failures", "storage",
                 "queue_tenants", "workers", "slowest", "slowest_of")

    def __init__(self, now, tasks, turns, queue_depth, queue_oldest,
                 queue_callers, leases, failures, storage=None,
                 queue_tenants=None, workers=(), slowest=(), slowest_of=0):
        self.now = now
        self.tasks = tasks
        self.turns = turns
        self.queue_depth = queue_depth
        self.queue_oldest = queue_oldest
        self.queue_callers = queue_callers
        self.leases = leases
        self.failures = failures
        self.storage = storage or {}
        self.queue_tenants = queue_tenants or {}
        self.workers = list(workers)
        self.slowest = list(slowest)
        self.slowest_of = slowest_of


# The sizes of the records above (see the module doc).

#: Bytes counted per message, part or artifact for its members besides the
#: content (ids, kind, role...): generous, so that the rough size is not low.
OVERHEAD = 256
#: Bytes an answer's task counts besides its parts (as ``answer_budget.fit``).
FIXED_BYTES = OVERHEAD + 64
#: How much longer than its rough size an object's JSON may be.
ESCAPE_FACTOR = 6


def size(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON."""
    if value is None:
        return 0
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False)
               .encode("utf-8"))


#: The members of a part that is text alone, measured without the rest.
_TEXT_ONLY = frozenset(("kind", "text"))


def _rough_parts(parts) -> int:
    total = 0
    for part in parts or ():
        total += OVERHEAD
        text = part.get("text")
        if isinstance(text, str):
            total += len(text)
            if part.keys() <= _TEXT_ONLY:  # the common part: nothing else to count
                continue
        file = part.get("file")
        if isinstance(file, dict):
            total += sum(len(v) for v in file.values() if isinstance(v, str))
        if part.get("data") is not None or part.get("metadata"):
            total += size({"d": part.get("data"), "m": part.get("metadata")})
    return total


def rough_size(item: Any) -> int:
    """A cheap measure of a stored message or artifact (see the module doc)."""
    if not item:
        return 0
    total = OVERHEAD + _rough_parts(item.get("parts"))
    if item.get("metadata"):
        total += size(item["metadata"])
    return total


def rough_task_size(record: TaskRecord) -> int:
    """``rough_size`` of what an answer shows of a ``TaskRecord``."""
    total = OVERHEAD + rough_size(record.status_message)
    total += sum(rough_size(a) for a in record.artifacts or ())
    total += sum(rough_size(m) for m in record.history or ())
    if record.metadata:
        total += size(record.metadata)
    return total


def stored_artifact_bytes(body: str) -> int:
    """What an artifact stored as ``body`` (its JSON) counts against the
    artifacts a task may hold: its UTF-8 bytes and ``OVERHEAD`` (its id and
    the members a binding adds). The backends count the stored ones alike in
    SQL: ``length(CAST(body AS BLOB)) + OVERHEAD`` / ``octet_length``."""
    return len(body.encode("utf-8")) + OVERHEAD


def most_messages(max_bytes: int, history_length: Optional[int] = None) -> int:
    """How many of a task's newest messages a read within ``max_bytes`` need
    size at most: each counts ``OVERHEAD`` at least."""
    most = max_bytes // OVERHEAD + 1
    return most if history_length is None else max(0, min(most, history_length))


def may_exceed(rough: int, budget: int) -> bool:
    """Whether something of this rough size may be over ``budget`` bytes."""
    return rough * ESCAPE_FACTOR > budget


#: Below this rough size a task is counted at ESCAPE_FACTOR times it, without
#: writing its JSON; above, its JSON is measured.
SMALL = 4096


def page_size(record: TaskRecord) -> int:
    """Bytes a listed task counts against a page's budget: at least its
    JSON (exact for a large task, a bound for a small one)."""
    rough = rough_task_size(record)
    if rough <= SMALL:
        return rough * ESCAPE_FACTOR
    return OVERHEAD + (size(record.status_message)
                       + sum(size(a) for a in record.artifacts or ())
                       + sum(size(m) for m in record.history or ())
                       + size(record.metadata))
