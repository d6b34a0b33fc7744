"""The storage contract: what the service asks of a backend, and what each
operation guarantees. ``storage/sqlite`` and ``storage/postgres`` implement it.

Rules every backend keeps:

- **Stored form.** Messages, parts and artifacts are kept and returned exactly
  as given (today's A2A 0.3-shaped JSON dicts: ``kind``, ``messageId``,
  ``parts``...). The storage never converts them; bindings convert at the edge.
- **Conditional updates.** Every state change is one UPDATE whose WHERE clause
  states the state it leaves (``state = 'working'``, ``state IN
  WAITING_STATES``, ``state NOT IN TERMINAL_STATES``) and whose row count is
  checked: correctness never depends on one writer at a time. A terminal state
  is never overwritten.
- **The storage's clock.** Timestamps (``updated_at``, ``created_at``) and the
  stale-turn cutoff are decided inside the storage (PostgreSQL: the database's
  clock, so servers with skewed clocks agree); the service passes none.
  Timestamps are ISO 8601 UTC text with milliseconds and ``Z``
  (``2026-01-02T03:04:05.678Z``), which sort as text.
- **Errors.** Outcomes the caller caused are the ``StorageError`` subclasses
  of ``storage/errors.py``, with structured fields and no wire wording
  (bindings word them).
  Failures of the storage itself (busy, full, unreachable) are raised as
  ``a2a_flask.errors.StorageBusy`` / ``StorageFull`` / ``StorageUnavailable``
  (with ``data={"retry": True}``): nothing was stored, the call may be retried.
- **Ownership.** Every per-caller read and write is keyed by (owner, agent):
  another caller's task is ``TaskNotFound``, never "forbidden".
"""

import abc
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

# The states and the errors are part of the contract (re-exported here).
from .errors import (  # noqa: F401
    ContextMismatch, KeyNotFound, KeyNotLive, MessageIdReused, QueueFull, SchemaError,
    StorageError, TaskNotCancelable, TaskNotFound, TaskNotWaiting, UserExists,
    UserNotFound,
)
from .states import (  # noqa: F401
    ATTEMPTS_EXHAUSTED_TEXT, LEASE_EXPIRED_TEXT, QUEUED_TEXT, STALE_TURN_TEXT,
    TERMINAL_STATES, WAITING_STATES,
)

Message = Dict[str, Any]   # a message in its stored form
Artifact = Dict[str, Any]  # an artifact in its stored form


# -- records -------------------------------------------------------------------

class TaskRecord:
    """A task as stored. ``history`` and ``artifacts`` are lists of stored-form
    dicts (``history`` oldest first, possibly clamped: see ``get_task``);
    ``history`` is None where an operation does not read it (``list_tasks``
    without ``history_length``)."""

    __slots__ = ("id", "context_id", "agent", "owner", "state", "updated_at",
                 "status_message", "artifacts", "history", "metadata",
                 "created_at")

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

    def __eq__(self, other):
        return (isinstance(other, TaskRecord)
                and all(getattr(self, k) == getattr(other, k)
                        for k in self.__slots__))

    def __repr__(self):
        return "TaskRecord(%s, %s, %s)" % (self.id, self.agent, self.state)


class TurnStart:
    """What ``start_turn`` did: which task, and whether it was a retry."""

    __slots__ = ("task_id", "context_id", "message", "message_seq", "created",
                 "replayed")

    def __init__(self, task_id, context_id, message=None, message_seq=None,
                 created=False, replayed=False):
        self.task_id = task_id
        self.context_id = context_id
        #: The user message as stored (with taskId and contextId).
        self.message = message
        #: Its position in the task's history: ``task_history(before_seq=)``.
        self.message_seq = message_seq
        #: True when the task was created by this message (no earlier history).
        self.created = created
        #: True when this messageId was seen before: nothing was written.
        self.replayed = replayed


class ClaimedTurn:
    """A background turn leased to a worker by ``claim_turns``."""

    __slots__ = ("task_id", "context_id", "owner", "agent", "message",
                 "message_seq", "metadata", "attempts", "retry", "trace_context")

    def __init__(self, task_id, context_id, owner, agent, message, message_seq,
                 metadata=None, attempts=1, retry=False, trace_context=None):
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

    def __repr__(self):
        return "ClaimedTurn(%s, %s, attempt %d)" % (self.task_id, self.agent,
                                                    self.attempts)


class TaskPage:
    """One page of ``list_tasks``: ``next_cursor`` is None on the last page."""

    __slots__ = ("tasks", "next_cursor")

    def __init__(self, tasks, next_cursor=None):
        self.tasks = tasks
        self.next_cursor = next_cursor


class KeyRow:
    """An API key as stored (its hash, never its secret). ``scope`` is the
    stored text: ``"*"`` or a JSON list of agent names."""

    __slots__ = ("id", "prefix", "label", "scope", "created_at", "last_used_at",
                 "revoked_at")

    def __init__(self, id, prefix, label, scope, created_at, last_used_at=None,
                 revoked_at=None):
        self.id = id
        self.prefix = prefix
        self.label = label
        self.scope = scope
        self.created_at = created_at
        self.last_used_at = last_used_at
        self.revoked_at = revoked_at

    def astuple(self):
        return tuple(getattr(self, k) for k in self.__slots__)


# -- the contract ----------------------------------------------------------------

class Storage(abc.ABC):
    """Tasks, messages, artifacts, retry records, keys and users.

    One instance per app; safe to share between threads and (after a fork)
    processes: connections are per thread / pooled per process, opened lazily.
    """

    #: Where the data lives, for messages to an operator (no password in it).
    location: str = ""

    # -- schema -----------------------------------------------------------

    @abc.abstractmethod
    def migrate(self) -> None:
        """Create or upgrade the schema to ``expected_version()``; safe to call
        from every worker and server at once (serialized inside)."""

    @abc.abstractmethod
    def schema_version(self) -> Optional[int]:
        """The schema version found (None: no schema yet). ``SchemaError`` or a
        storage failure when it cannot be read."""

    @abc.abstractmethod
    def expected_version(self) -> int:
        """The schema version this code writes."""

    def close(self) -> None:
        """Release this thread's / process's connections (reopened on use)."""

    @abc.abstractmethod
    def failure(self, exc: BaseException) -> Optional[Exception]:
        """The ``errors.StorageBusy`` / ``StorageFull`` / ``StorageUnavailable``
        to answer for ``exc``, an exception of this backend's driver (logged,
        with the database, at most once every 10 s per cause; this thread's
        connection is dropped so that the next use reconnects); None when
        ``exc`` is not a failure of the storage (a bug: let it propagate)."""

    # -- a turn of a send ---------------------------------------------------

    @abc.abstractmethod
    def start_turn(self, owner: str, agent: str, message: Message,
                   context_id: Optional[str] = None,
                   task_id: Optional[str] = None,
                   metadata: Optional[dict] = None,
                   live_key: Optional[str] = None) -> TurnStart:
        """Record an incoming user message and mark its task ``working``, in
        one transaction.

        - ``live_key`` (the hash of the caller's API key, taken on trust as in
          ``get_task``): nothing is written unless that key is live, checked
          in the same statement or transaction; ``KeyNotLive`` otherwise.

        - Retry record first: (owner, agent, messageId) with a fingerprint of
          the message (``common.delivery_fingerprint``: without ``kind`` nor
          the task's own ids, as ``import_tasks`` computes it from the
          history). Seen with the same fingerprint (or, recorded before, the
          digest as received: ``common.retry_digests``): nothing is written
          and ``TurnStart(replayed=True)`` names the task it went to. Seen
          with a different one: ``MessageIdReused``, nothing written.
        - ``task_id`` None: a new task (``created=True``) in ``context_id``
          (a new context id when None), state ``working``.
        - ``task_id`` given: claim it with ONE conditional UPDATE
          (``... SET state='working' WHERE id AND owner AND agent AND state IN
          WAITING_STATES``) whose row count is checked; 0 rows: read why and
          raise ``TaskNotFound`` / ``ContextMismatch`` / ``TaskNotWaiting``,
          rolling back the retry record. Of two continuations racing for one
          waiting task, exactly one wins; the other gets ``TaskNotWaiting``
          (state ``working``).
        - The stored message gets ``kind="message"``, ``taskId``, ``contextId``.
        """

    @abc.abstractmethod
    def finish_turn(self, task_id: str, owner: str, agent: str, state: str,
                    status_message: Optional[Message] = None,
                    artifacts: Sequence[Artifact] = ()) -> Optional[str]:
        """Store a turn's outcome with ``UPDATE ... WHERE id AND state =
        'working'``; the status message joins the history and the artifacts
        are appended, in the same transaction, only if that row count is 1.
        Returns the status timestamp, or None when the task left ``working``
        meanwhile (canceled; stale-failed): the outcome is discarded.
        A backend may keep a refused outcome aside and store it on the next
        ``get_task`` (SQLite does); it then raises the storage failure."""

    @abc.abstractmethod
    def get_task(self, task_id: str, owner: str, agent: str,
                 history_length: Optional[int] = None,
                 live_key: Optional[str] = None) -> TaskRecord:
        """The task of this (owner, agent) with its artifacts and its last
        ``history_length`` messages (all when None, none when 0), read as of
        one moment; ``TaskNotFound`` otherwise. A ``working`` task whose turn
        began longer than the stale-turn limit ago is failed first
        (``fail_stale_turn``) and returned failed.

        ``live_key``: the hash of the caller's API key, which this process
        found live earlier: the task is read only if that key is still live,
        checked in the same statement (``TaskNotFound`` otherwise, and the
        caller then checks the key on its own: auth.confirm). A revoked key
        reads nothing, without a lookup of its own on every call."""

    @abc.abstractmethod
    def fail_stale_turn(self, task_id: str) -> bool:
        """Fail ``task_id`` if it is ``working`` and was last updated before
        the stale cutoff (the storage's clock minus the stale-turn limit):
        one conditional UPDATE; the ``STALE_TURN_TEXT`` agent message joins
        the history when the row count is 1. True when it was failed."""

    @abc.abstractmethod
    def cancel_task(self, task_id: str, owner: str, agent: str) -> None:
        """``UPDATE ... SET state='canceled' WHERE id AND owner AND agent AND
        state NOT IN TERMINAL_STATES``; 0 rows: ``TaskNotFound`` or
        ``TaskNotCancelable`` (with the terminal state found). Racing a
        finishing turn, exactly one of the two takes effect; the terminal state
        never changes afterwards."""

    # -- reads for the Turn API -------------------------------------------------

    @abc.abstractmethod
    def task_history(self, task_id: str, before_seq: Optional[int] = None,
                     limit: Optional[int] = None) -> List[Message]:
        """Messages of a task, oldest first: those before ``before_seq``; the
        last ``limit`` only when given (read newest first, then stopped)."""

    @abc.abstractmethod
    def context_history(self, owner: str, agent: str, context_id: str,
                        before_seq: Optional[int] = None,
                        limit: Optional[int] = None) -> List[Message]:
        """Messages of a conversation (all its tasks of this owner and agent),
        oldest first; bounded as ``task_history``."""

    @abc.abstractmethod
    def task_state(self, task_id: str) -> Optional[str]:
        """The task's state, None when there is no such task."""

    # -- listing -----------------------------------------------------------------

    @abc.abstractmethod
    def list_tasks(self, owner: Optional[str] = None, agent: Optional[str] = None,
                   context_id: Optional[str] = None, state: Optional[str] = None,
                   updated_after: Optional[str] = None, limit: int = 50,
                   cursor: Optional[str] = None,
                   history_length: Optional[int] = 0,
                   include_artifacts: bool = False) -> TaskPage:
        """Tasks matching every filter given (None: any), newest
        ``updated_at`` first, ties by id descending; ``limit`` per page.

        Paging is a keyset on (updated_at, id) with an index: ``cursor`` is the
        opaque text of ``next_cursor`` from the previous page (None on the last
        page). A page costs the same at any depth. ``history_length`` 0 leaves
        ``history`` empty ([]); None reads all of it; ``include_artifacts``
        False leaves ``artifacts`` empty. A malformed cursor is ``ValueError``.
        """

    def count_tasks(self, owner: Optional[str] = None, agent: Optional[str] = None,
                    context_id: Optional[str] = None, state: Optional[str] = None,
                    updated_after: Optional[str] = None) -> int:
        """How many tasks match the filters of ``list_tasks`` (A2A 1.0
        ListTasks' ``totalSize``). This default pages through them; a backend
        overrides it with one COUNT over the listing index."""
        count, cursor = 0, None
        while True:
            page = self.list_tasks(owner, agent, context_id, state, updated_after,
                                   limit=1000, cursor=cursor)
            count += len(page.tasks)
            if page.next_cursor is None:
                return count
            cursor = page.next_cursor

    # -- operations (flask a2a tasks / db) ---------------------------------------

    @abc.abstractmethod
    def show_task(self, task_id: str) -> Optional[TaskRecord]:
        """Any owner's task with its whole history and artifacts, or None."""

    @abc.abstractmethod
    def prunable_tasks(self, cutoff: str) -> List[TaskRecord]:
        """Terminal tasks updated before ``cutoff`` (ISO time), oldest first,
        without history or artifacts: what ``prune`` would delete."""

    @abc.abstractmethod
    def prune(self, cutoff: str) -> Iterator[Dict[str, int]]:
        """Delete terminal tasks updated before ``cutoff`` with their messages,
        artifacts and retry records, in batches (one transaction each); each
        DELETE is conditional on the task still terminal and old. Yields
        ``{"tasks", "messages", "artifacts", "deliveries"}`` counts per batch."""

    @abc.abstractmethod
    def cancel_tasks(self, owner: Optional[str] = None,
                     agent: Optional[str] = None,
                     task_id: Optional[str] = None,
                     states: Optional[Sequence[str]] = None,
                     dry_run: bool = False) -> List[TaskRecord]:
        """Cancel every task matching the filters given (None: any) whose
        state is one of ``states`` (None: any state but the terminal ones),
        as ``cancel_task`` cancels one: conditional UPDATEs (the state still
        one of ``states``) in batches, one transaction each, deleting the
        turns no worker has claimed; a running turn sees ``turn.canceled``
        and its outcome is discarded. Returns the tasks canceled as they
        were (no history, no artifacts), by id; ``dry_run``: those that
        would be, with nothing changed."""

    @abc.abstractmethod
    def task_counts(self) -> Dict[str, int]:
        """{state: number of tasks}."""

    @abc.abstractmethod
    def check(self) -> List[str]:
        """Problems an integrity check found ([] when none)."""

    @abc.abstractmethod
    def backup(self, target: str) -> None:
        """A consistent copy to ``target`` (a path for SQLite), taken while
        the service runs."""

    # -- bulk copy (bench prefill, ``flask a2a db copy``) ------------------------

    @abc.abstractmethod
    def export_tasks(self, batch_size: int = 1000) -> Iterator[List[TaskRecord]]:
        """Every task, whole (history with user and agent messages, artifacts,
        metadata, created_at), in batches, oldest id first."""

    @abc.abstractmethod
    def import_tasks(self, records: Iterable[TaskRecord],
                     deliveries: bool = True) -> int:
        """Insert whole tasks as they are (ids, timestamps and states kept),
        in one transaction per call; with ``deliveries``, the retry record of
        every user message is recorded too. Returns the number of tasks.
        Fast enough for 1,000,000 tasks in batches of ~10,000."""

    @abc.abstractmethod
    def export_credentials(self) -> Tuple[List[Tuple[KeyRow, str]],
                                          List[Tuple[str, str, str]]]:
        """(every key with its hash, every user as (name, password hash,
        created_at)): hashes only, never a secret."""

    @abc.abstractmethod
    def import_credentials(self, keys: Sequence[Tuple[KeyRow, str]],
                           users: Sequence[Tuple[str, str, str]]) -> None:
        """Insert keys and users as exported (timestamps and revocations
        kept), in one transaction; an id or name already present is kept."""

    # -- keys and users (hashing policy stays in credentials.py) -----------------

    @abc.abstractmethod
    def insert_key(self, key: KeyRow, key_hash: str) -> KeyRow:
        """Store a new key under its hash; its ``created_at`` is set here."""

    @abc.abstractmethod
    def keys(self) -> List[KeyRow]:
        """Every key, oldest first."""

    @abc.abstractmethod
    def revoke_key(self, key_id: str) -> None:
        """Set ``revoked_at`` if unset (conditional UPDATE; revoking twice is
        no change); ``KeyNotFound`` when there is no such key."""

    @abc.abstractmethod
    def find_key(self, key_hash: str) -> Optional[KeyRow]:
        """The live (unrevoked) key with this hash, or None."""

    @abc.abstractmethod
    def touch_key(self, key_id: str, older_than: str) -> Optional[str]:
        """Record a use: ``last_used_at`` = now where it is NULL or older than
        ``older_than``; returns the new value, None when nothing changed."""

    @abc.abstractmethod
    def insert_user(self, name: str, password_hash: str) -> None:
        """A new built-in user; ``UserExists`` when the name is taken."""

    @abc.abstractmethod
    def users(self) -> List[Tuple[str, str]]:
        """(name, created_at) of every user, by name."""

    @abc.abstractmethod
    def has_users(self) -> bool:
        """True when there is at least one user."""

    @abc.abstractmethod
    def delete_user(self, name: str) -> None:
        """``UserNotFound`` when there is no such user."""

    @abc.abstractmethod
    def password_hash(self, name: str) -> Optional[str]:
        """The stored password hash of ``name``, or None."""

    # -- the background-turn queue (``flask a2a worker``) -------------------------
    #
    # Not abstract, so that a backend without a queue still serves agents
    # that run inside the request. A queued turn is a row of its own: queued
    # (no worker), then leased to one worker until ``lease_expires`` (the
    # storage's clock), renewed while the agent runs, deleted when the turn
    # ends. A task is ``working`` while it has turns; they run one at a time,
    # in the order received (a follow-up waits behind the turn before it).
    # ``fail_stale_turn`` leaves a task with a turn row alone (leases govern
    # it), and ``cancel_task`` deletes the turns no worker has claimed yet.
    #
    # Fairness: each turn has a round (``caller_round``): one after its
    # caller's last turn, and at most one before the oldest queued turn, so
    # a caller with nothing queued goes next; claims are in round order.
    # One caller's backlog delays another's turn by about one turn per
    # worker thread, whatever its length.

    def _no_queue(self, operation):
        return NotImplementedError(
            "%s: the %s storage backend does not implement the background-turn "
            "queue yet (Storage.%s); agents registered background=True need the "
            "SQLite backend for now." % (operation, type(self).__name__, operation))

    def enqueue_turn(self, owner: str, agent: str, message: Message,
                     context_id: Optional[str] = None,
                     task_id: Optional[str] = None,
                     metadata: Optional[dict] = None,
                     retry: bool = False,
                     status_message: Optional[Message] = None,
                     queue_limit: Optional[int] = None,
                     trace_context: Optional[str] = None) -> TurnStart:
        """``start_turn`` and, in the same transaction, a queued turn for the
        task (message seq, agent, ``retry``, 0 attempts, its caller's next
        round, ``trace_context`` kept for the worker); the task's status
        message becomes ``status_message`` (it may say it is queued; it does
        not join the history). A replay (``TurnStart.replayed``) queues
        nothing. Either both are stored or neither is.

        - ``queue_limit``: when ``owner`` already has that many turns queued
          (not claimed), ``QueueFull`` and nothing is stored (a replay is
          still answered as one).
        - ``task_id`` of a task that is ``working`` on a queued or running
          turn: a follow-up. The message joins the history and is queued as
          the task's next turn (the status message is left as it is); a
          task's turns run one at a time, in the order received.
          ``TaskNotWaiting`` for any other working task, as ``start_turn``.
        """
        raise self._no_queue("enqueue_turn")

    def claim_turns(self, worker: str, limit: int, lease_seconds: float,
                    agents: Optional[Sequence[str]] = None) -> List[ClaimedTurn]:
        """Lease up to ``limit`` queued turns (by round, then oldest first;
        only a task's oldest turn; of ``agents`` only, when given) to
        ``worker`` until now + ``lease_seconds``, each by a conditional
        UPDATE (``WHERE worker IS NULL``) whose row count is checked,
        counting an attempt: two workers never hold the same turn (SQLite:
        one short ``BEGIN IMMEDIATE``; PostgreSQL: ``FOR UPDATE SKIP
        LOCKED``). Turns of tasks no longer ``working`` are dropped, not
        claimed. Cheap when nothing is queued (a read, no write lock)."""
        raise self._no_queue("claim_turns")

    def renew_leases(self, worker: str, task_ids: Sequence[str],
                     lease_seconds: float) -> List[str]:
        """Extend ``worker``'s leases on ``task_ids`` to now + ``lease_seconds``
        (``WHERE worker = ?``); returns the task ids still held (a lease that
        expired and was taken over is not renewed)."""
        raise self._no_queue("renew_leases")

    def finish_queued_turn(self, task_id: str, worker: str, owner: str,
                           agent: str, state: str,
                           status_message: Optional[Message] = None,
                           artifacts: Sequence[Artifact] = ()) -> Optional[str]:
        """Delete ``worker``'s turn row and store the outcome exactly as
        ``finish_turn`` (conditional on ``working``), in one transaction.
        None, with nothing stored, when the worker no longer holds the turn
        (its lease expired) or the task left ``working`` (canceled).

        With follow-ups queued behind it, the task stays ``working`` (the
        status message and artifacts are stored) and the follow-ups'
        messages move after the status message in the history (each turn's
        history is what came before its message), unless ``state`` is
        ``failed`` or ``rejected``: then the task ends so and the
        follow-ups never run."""
        raise self._no_queue("finish_queued_turn")

    def expire_leases(self, max_attempts: int = 3) -> List[Tuple[str, str]]:
        """Turns whose lease expired (their worker was killed or hung): an
        agent registered ``retry=True`` is re-queued while it had fewer than
        ``max_attempts`` attempts; any other is deleted and its task failed
        (``LEASE_EXPIRED_TEXT``, or ``ATTEMPTS_EXHAUSTED_TEXT``; conditional
        on ``working``), its follow-ups with it: at most once. Returns
        ``(task_id, "requeued" | "failed")`` pairs."""
        raise self._no_queue("expire_leases")

    def release_turns(self, worker: str, task_ids: Sequence[str],
                      max_attempts: int = 3) -> List[Tuple[str, str]]:
        """What a stopping worker does with turns it cannot finish: as
        ``expire_leases`` for these turns of ``worker`` now, whatever their
        lease."""
        raise self._no_queue("release_turns")

    def progress(self, task_id: str, status_message: Message) -> bool:
        """Set a ``working`` task's status message (not its history; the
        timestamp moves): ``UPDATE ... WHERE id AND state = 'working'``.
        False when the task is no longer working."""
        raise self._no_queue("progress")
