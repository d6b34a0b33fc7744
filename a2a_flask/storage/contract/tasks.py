"""The storage contract, tasks: a turn of a send (start, finish), reading,
canceling and listing a caller's tasks, and what the Turn API reads."""

import abc
from typing import List, Optional, Sequence

from ..records import Artifact, Message, StoredTaskPage, TaskRecord, TurnStart


class TaskStorage(abc.ABC):
    """Tasks: a turn of a send, reading, canceling and listing them.

    ``tenant`` (A2A_TENANTS; '' where a call names none): every task, retry
    record and queued turn belongs to one, and a call of one tenant never
    reads, continues, cancels, lists or replays another's: to it they do not
    exist. A message is its task's; a conversation (``context_history``)
    holds its tenant's tasks only."""

    # -- a turn of a send ---------------------------------------------------

    @abc.abstractmethod
    def start_turn(self, owner: str, agent: str, message: Message,
                   context_id: Optional[str] = None,
                   task_id: Optional[str] = None,
                   metadata: Optional[dict] = None,
                   remembered_key: Optional[str] = None,
                   max_stored_bytes: Optional[int] = None,
                   tenant: str = "") -> TurnStart:
        """Record an incoming user message and mark its task ``working``, in
        one transaction.

        - ``remembered_key`` (the hash of the caller's API key, taken on trust as in
          ``get_task``): nothing is written unless that key is live, checked
          in the same statement or transaction; ``RememberedKeyRevokedError`` otherwise.

        - ``max_stored_bytes`` (A2A_MAX_STORED_BYTES_PER_CALLER; None: no
          quota): a message that is not a replay is refused with
          ``QuotaReachedError``, nothing written, when the owner's stored
          tasks (their messages, artifacts and metadata as stored, counted
          by the schema's triggers as they are written and deleted) take
          that many bytes or more. Concurrent sends are not serialized for
          it: the count may pass the quota by what those in flight write.
        - SQLite: under A2A_MIN_FREE_DISK_BYTES of free disk, a message that
          is not a replay is refused with ``StorageReserveError``.
        - Retry record first: (owner, agent, messageId) with a fingerprint of
          the message (``common.delivery_fingerprint``: without ``kind`` nor
          the task's own ids, as ``import_tasks`` computes it from the
          history). Seen with the same fingerprint: nothing is written
          and ``TurnStart(replayed=True)`` names the task it went to. Seen
          with a different one: ``MessageIdReusedError``, nothing written.
        - ``task_id`` None: a new task (``created=True``) in ``context_id``
          (a new context id when None), state ``working``.
        - ``task_id`` given: claim it with ONE conditional UPDATE
          (``... SET state='working' WHERE id AND owner AND agent AND state IN
          WAITING_STATES``) whose row count is checked; 0 rows: read why and
          raise ``NoSuchTaskError`` / ``ContextMismatchError`` /
          ``TaskNotWaitingError``,
          rolling back the retry record. Of two continuations racing for one
          waiting task, exactly one wins; the other gets ``TaskNotWaitingError``
          (state ``working``).
        - The stored message gets ``kind="message"``, ``taskId``, ``contextId``.
        """

    @abc.abstractmethod
    def finish_turn(self, task_id: str, owner: str, agent: str, state: str,
                    status_message: Optional[Message] = None,
                    artifacts: Sequence[Artifact] = (),
                    max_artifact_bytes: Optional[int] = None,
                    start: Optional[TurnStart] = None) -> Optional[str]:
        """Store a turn's outcome with ``UPDATE ... WHERE id AND state =
        'working'``; the status message joins the history and the artifacts
        are appended, in the same transaction, only if that row count is 1.
        Returns the status timestamp, or None when the task left ``working``
        meanwhile (canceled; stale-failed): the outcome is discarded.
        ``max_artifact_bytes``: the task's artifacts, these included, may
        count at most that many bytes (``records.stored_artifact_bytes``),
        a condition of the same UPDATE; over it, ``ArtifactsFullError`` and
        nothing is stored.
        A backend may keep a refused outcome aside and store it on the next
        ``get_task`` (SQLite does); it then raises the storage failure.

        ``start``: what ``start_turn`` returned for this turn. A backend whose
        start may be lost in a crash although its outcome is not (PostgreSQL
        commits it unflushed) stores the start again, in the outcome's
        transaction, when its retry record is missing: a live send is never
        answered "no such task", and its messageId never runs twice."""

    @abc.abstractmethod
    def withdraw_turn(self, task_id: str, owner: str, agent: str,
                      message_id: str, tenant: str = "") -> bool:
        """Undo the start of a new task whose turn never reached an outcome
        (the storage failed under the agent's own read): its retry record
        (owner, agent, ``message_id``, ``tenant``), its messages and the task
        itself are deleted, in one transaction, only if the task is still
        ``working`` (``DELETE ... WHERE id AND owner AND agent AND state = 'working'``,
        its row count checked). "Nothing was stored" is then true, and a
        retry of the same messageId runs the turn afresh. False when the
        task left ``working`` meanwhile (canceled): nothing is deleted."""

    @abc.abstractmethod
    def get_task(self, task_id: str, owner: str, agent: str,
                 history_length: Optional[int] = None,
                 remembered_key: Optional[str] = None,
                 max_bytes: Optional[int] = None,
                 tenant: str = "") -> TaskRecord:
        """The task of this (owner, agent, tenant) with its artifacts and its last
        ``history_length`` messages (all when None, none when 0), read as of
        one moment; ``NoSuchTaskError`` otherwise.

        ``max_bytes``: only the newest of those messages that fit in that
        many bytes beside the task's status message, artifacts and metadata
        are read, measured in SQL on the stored JSON (``OVERHEAD`` more per
        message and artifact, ``FIXED_BYTES`` for the task; storage.records),
        newest first: the rest of the history is never fetched.
        ``history_omitted`` is how many were left out. A ``working`` task whose turn
        began longer than the stale-turn limit ago is failed first
        (``fail_stale_turn``) and returned failed.

        ``remembered_key``: the hash of the caller's API key, which this process
        found live earlier: the task is read only if that key is still live,
        checked in the same statement (``NoSuchTaskError`` otherwise, and the
        caller then checks the key on its own: auth.confirm). A revoked key
        reads nothing, without a lookup of its own on every call."""

    @abc.abstractmethod
    def fail_stale_turn(self, task_id: str) -> bool:
        """Fail ``task_id`` if it is ``working`` and was last updated before
        the stale cutoff (the storage's clock minus the stale-turn limit):
        one conditional UPDATE; the ``STALE_TURN_TEXT`` agent message joins
        the history when the row count is 1. True when it was failed."""

    @abc.abstractmethod
    def cancel_task(self, task_id: str, owner: str, agent: str,
                    tenant: str = "") -> None:
        """``UPDATE ... SET state='canceled' WHERE id AND owner AND agent AND
        state NOT IN TERMINAL_STATES``; 0 rows: ``NoSuchTaskError`` or
        ``TaskEndedError`` (with the terminal state found). Racing a
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
                        limit: Optional[int] = None,
                        tenant: str = "") -> List[Message]:
        """Messages of a conversation (all its tasks of this owner, agent and
        tenant),
        oldest first; bounded as ``task_history``."""

    @abc.abstractmethod
    def message_seq(self, task_id: str, message_id: str, role: str) -> Optional[int]:
        """The position (``before_seq``) of the task's latest message with
        this id and role, None when it has none: for a ``TurnStart`` whose
        ``message_seq`` was not read."""

    @abc.abstractmethod
    def task_state(self, task_id: str) -> Optional[str]:
        """The task's state, None when there is no such task."""


    @abc.abstractmethod
    def progress(self, task_id: str, status_message: Message) -> bool:
        """Set a ``working`` task's status message (not its history; the
        timestamp moves): ``UPDATE ... WHERE id AND state = 'working'``.
        False when the task is no longer working."""

    @abc.abstractmethod
    def note_metadata(self, task_id: str, metadata: dict) -> bool:
        """Replace a ``working`` task's metadata with what its running agent
        records (``turn.call`` notes the remote tasks it started, so that a
        retried turn continues them): ``UPDATE ... WHERE id AND state =
        'working'``. False when the task is no longer working."""

    # -- listing -----------------------------------------------------------------

    @abc.abstractmethod
    def list_tasks(self, owner: Optional[str] = None, agent: Optional[str] = None,
                   context_id: Optional[str] = None, state: Optional[str] = None,
                   updated_after: Optional[str] = None, limit: int = 50,
                   cursor: Optional[str] = None,
                   history_length: Optional[int] = 0,
                   include_artifacts: bool = False,
                   max_bytes: Optional[int] = None,
                   tenant: Optional[str] = None) -> StoredTaskPage:
        """Tasks matching every filter given (None: any; ``tenant`` '' is
        the tasks of no tenant), newest
        ``updated_at`` first, ties by id descending; ``limit`` per page.

        ``max_bytes``: the page also ends before the task that would take
        its tasks (as ``records.page_size`` counts them; the stored JSON on
        PostgreSQL) over this many bytes, with a ``next_cursor`` for the
        rest; its first task is there whatever its size. Tasks past the
        budget are not read into memory.

        Paging is a keyset on (updated_at, id) with an index: ``cursor`` is the
        opaque text of ``next_cursor`` from the previous page (None on the last
        page). A page costs the same at any depth. ``history_length`` 0 leaves
        ``history`` empty ([]); None reads all of it; ``include_artifacts``
        False leaves ``artifacts`` empty. A malformed cursor is ``ValueError``.
        """

    def count_tasks(self, owner: Optional[str] = None, agent: Optional[str] = None,
                    context_id: Optional[str] = None, state: Optional[str] = None,
                    updated_after: Optional[str] = None,
                    tenant: Optional[str] = None) -> int:
        """How many tasks match the filters of ``list_tasks`` (A2A 1.0
        ListTasks' ``totalSize``). This default pages through them; a backend
        overrides it with one COUNT over the listing index."""
        count, cursor = 0, None
        while True:
            page = self.list_tasks(owner, agent, context_id, state, updated_after,
                                   limit=1000, cursor=cursor, tenant=tenant)
            count += len(page.tasks)
            if page.next_cursor is None:
                return count
            cursor = page.next_cursor
