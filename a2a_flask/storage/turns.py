"""The writes of a task's turn written once for both backends: a turn's
progress and metadata notes, a withdrawal, a cancel, and giving up on
background turns (``release_turns``, ``expire_leases``). Each backend gives
only its dialect: how it marks a parameter (``MARK``, ``NAMED``, a list:
``_among``), its clock (``_now_term``), what clears a status message
(``STATUS_CLEARED``), how it locks the rows it reads (``LOCKED_TASK``,
``LOCKED_TURNS``), one statement as its own write (``_write_one``), what a
committed change tells waiters (``_changed``) and how it fails a working
task (``_fail_working``)."""

from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from .common import Dialect, dumps
from .errors import NoSuchTaskError, TaskEndedError
from .records import Artifact, Message, TurnStart
from .states import ATTEMPTS_EXHAUSTED_TEXT, LEASE_EXPIRED_TEXT, TERMINAL_SQL


class QueuedTurn(NamedTuple):
    """What ``enqueue_turn`` was given (see ``QueueStorage.enqueue_turn``)."""

    owner: str
    agent: str
    message: Message
    context_id: Optional[str]
    task_id: Optional[str]
    metadata: Optional[dict]
    retry: bool
    status_message: Optional[Message]
    queue_limit: Optional[int]
    trace_context: Optional[str]
    live_key: Optional[str]
    max_stored_bytes: Optional[int]
    #: A caller of two tenants is two callers: its own quota and turns.
    tenant: str


class TurnWrites(Dialect):
    """Mixed into each backend's ``TaskOperations``."""

    # The backend's (its connections class, later in the storage's bases).
    #: The assignments that leave a task without a status message.
    STATUS_CLEARED: str
    #: What a SELECT adds to lock the task it reads, and the turns given up
    #: on (those another worker holds locked are skipped).
    LOCKED_TASK: str
    LOCKED_TURNS: str
    #: The task named by its id is the caller's (named parameters owner,
    #: agent, tenant), written so that only the primary key finds the row.
    OWNED: str

    # transaction(); _now_term(params): the storage's clock in a statement
    # of named ``params`` (it may add one for it); _write_one(sql, params):
    # one statement, its own transaction, its row count; _changed(conn):
    # tells the waiters of other processes once ``conn`` commits;
    # _fail_working(conn, task_id, owner, agent, text): True when it did;
    # _among(column, values, params): "column is one of values", its
    # parameters added to the named ``params``.
    transaction: Callable[[], Any]
    _one: Callable[..., Any]
    _among: Callable[[str, List[Any], Dict[str, Any]], str]
    _now_term: Callable[[Dict[str, Any]], str]
    _write_one: Callable[[str, Dict[str, Any]], int]
    _changed: Callable[[Any], None]
    _fail_working: Callable[[Any, str, str, str, str], bool]
    # _enqueue(turn): ``enqueue_turn``; _settle_turn(conn, task_id, owner,
    # agent, state, status_message, artifacts, max_artifact_bytes): the
    # outcome of a dequeued turn, its timestamp or None (not working).
    _enqueue: Callable[[QueuedTurn], TurnStart]
    _settle_turn: Callable[..., Optional[str]]
    # _renew(worker, task_ids, lease_seconds): the ids of those still held.
    _renew: Callable[[str, List[str], float], List[str]]
    # _seen(worker): a live claimer's heartbeat row written (and the rows of
    # those unseen for WORKER_ROWS_KEPT_SECONDS deleted).
    _seen: Callable[[str], bool]

    def enqueue_turn(self, owner: str, agent: str, message: Message,
                     context_id: Optional[str] = None, task_id: Optional[str] = None,
                     metadata: Optional[dict] = None, retry: bool = False,
                     status_message: Optional[Message] = None, queue_limit: Optional[int] = None,
                     trace_context: Optional[str] = None,
                     live_key: Optional[str] = None,
                     max_stored_bytes: Optional[int] = None,
                     tenant: str = "") -> TurnStart:
        return self._enqueue(QueuedTurn(
            owner, agent, message, context_id, task_id, metadata, retry,
            status_message, queue_limit, trace_context, live_key,
            max_stored_bytes, tenant))

    def renew_leases(self, worker: str, task_ids: Sequence[str],
                     lease_seconds: float) -> List[str]:
        task_ids = list(task_ids)
        if not task_ids:
            return []
        held = set(self._renew(worker, task_ids, lease_seconds))
        return [task_id for task_id in task_ids if task_id in held]

    def finish_queued_turn(self, task_id: str, worker: str, owner: str, agent: str, state: str,
                           status_message: Optional[Message] = None,
                           artifacts: Sequence[Artifact] = (),
                           max_artifact_bytes: Optional[int] = None) -> Optional[str]:
        with self.transaction() as conn:
            if not conn.execute(self._marked(
                    "DELETE FROM a2a_turns WHERE task_id = ? AND worker = ?"),
                    (task_id, worker)).rowcount:
                return None  # the lease was lost: another outcome stands
            return self._settle_turn(conn, task_id, owner, agent, state,
                                     status_message, artifacts, max_artifact_bytes)

    def note_worker(self, worker: str, alive: bool = True) -> bool:
        if alive:
            return self._seen(worker)
        return bool(self._write_one("DELETE FROM a2a_workers WHERE id = " +
                                    self.NAMED % "id", {"id": worker}))

    def progress(self, task_id: str, status_message: Message) -> bool:
        params = {"id": task_id, "body": dumps(status_message)}
        return bool(self._write_one(
            "UPDATE a2a_tasks SET status_message = %s, updated_at = %s WHERE id = %s"
            " AND state = 'working'" % (self.NAMED % "body", self._now_term(params),
                                        self.NAMED % "id"), params))

    def note_metadata(self, task_id: str, metadata: dict) -> bool:
        return bool(self._write_one(
            "UPDATE a2a_tasks SET metadata = %s WHERE id = %s AND state = 'working'"
            % (self.NAMED % "metadata", self.NAMED % "id"),
            {"id": task_id, "metadata": dumps(metadata)}))

    def _owned_task(self) -> str:
        """The task named ``id`` if it is the caller's (``OWNED``)."""
        return "id = %s AND %s" % (self.NAMED % "id", self.OWNED)

    def cancel_task(self, task_id: str, owner: str, agent: str, tenant: str = "") -> None:
        params = {"id": task_id, "owner": owner, "agent": agent, "tenant": tenant}
        mine = self._owned_task()
        with self.transaction() as conn:
            if conn.execute(
                    "UPDATE a2a_tasks SET state = 'canceled', %s, updated_at = %s"
                    " WHERE %s AND state NOT IN %s" % (
                        self.STATUS_CLEARED, self._now_term(params), mine,
                        TERMINAL_SQL), params).rowcount:
                # A queued background turn never starts (a claim drops it
                # anyway); a running one sees turn.canceled and its outcome
                # is discarded.
                conn.execute(self._marked("DELETE FROM a2a_turns WHERE task_id = ?"
                                          " AND worker IS NULL"), (task_id,))
                self._changed(conn)  # its blocking sends answer
                return
            # A new statement: the state as it is now, after whoever won.
            row = conn.execute("SELECT state FROM a2a_tasks WHERE " + mine,
                               params).fetchone()
        if row is None:
            raise NoSuchTaskError(task_id)
        raise TaskEndedError(task_id, row[0])

    def withdraw_turn(self, task_id: str, owner: str, agent: str,
                      message_id: str, tenant: str = "") -> bool:
        """See ``Storage.withdraw_turn``."""
        params = {"id": task_id, "owner": owner, "agent": agent, "tenant": tenant}
        with self.transaction() as conn:
            if conn.execute(
                    "SELECT 1 FROM a2a_tasks WHERE %s AND state = 'working'%s"
                    % (self._owned_task(), self.LOCKED_TASK),
                    params).fetchone() is None:
                return False  # the row is locked: it stays so below
            # Before the task: SQLite's triggers read its owner (stored bytes).
            for table in ("a2a_artifacts", "a2a_messages"):
                conn.execute(self._marked("DELETE FROM " + table + " WHERE task_id = ?"),
                             (task_id,))
            conn.execute(self._marked("DELETE FROM a2a_tasks WHERE id = ?"), (task_id,))
            conn.execute(self._marked(
                "DELETE FROM a2a_deliveries WHERE owner = ? AND agent = ?"
                " AND message_id = ? AND tenant = ? AND task_id = ?"),
                (owner, agent, message_id, tenant, task_id))
        return True

    def expire_leases(self, max_attempts: int = 3) -> List[Tuple[str, str]]:
        params: Dict[str, Any] = {}
        expired = "worker IS NOT NULL AND lease_expires < " + self._now_term(params)
        # A plain read first: idle workers take no write lock.
        if self._one("SELECT 1 FROM a2a_turns WHERE " + expired + " LIMIT 1",
                     params) is None:
            return []
        return self._give_up(expired, params, max_attempts)

    def release_turns(self, worker: str, task_ids: Sequence[str],
                      max_attempts: int = 3,
                      failed_text: Optional[str] = None) -> List[Tuple[str, str]]:
        task_ids = list(task_ids)
        if not task_ids:
            return []
        params = {"worker": worker}
        return self._give_up("worker = %s AND %s" % (
            self.NAMED % "worker", self._among("task_id", task_ids, params)),
            params, max_attempts, failed_text)

    def _give_up(self, where: str, args: Dict[str, Any], max_attempts: int,
                 failed_text: Optional[str] = None) -> List[Tuple[str, str]]:
        """Re-queue (retry agents with attempts left) or fail the turns
        matching ``where`` (in the backend's marks); rows locked
        (``LOCKED_TURNS``: PostgreSQL skips those another worker is on),
        each change conditional on the row as read."""
        done = []
        with self.transaction() as conn:
            rows = conn.execute(
                "SELECT task_id, worker, owner, agent, retry, attempts FROM"
                " a2a_turns WHERE " + where + " ORDER BY seq" + self.LOCKED_TURNS,
                args).fetchall()
            for task_id, worker, owner, agent, retry, attempts in rows:
                if retry and attempts < max_attempts:
                    if conn.execute(self._marked(
                            "UPDATE a2a_turns SET worker = NULL, lease_expires ="
                            " NULL WHERE task_id = ? AND worker = ?"),
                            (task_id, worker)).rowcount:
                        done.append((task_id, "requeued"))
                    continue
                if not conn.execute(self._marked(
                        "DELETE FROM a2a_turns WHERE task_id = ? AND worker = ?"),
                        (task_id, worker)).rowcount:
                    continue
                text = (ATTEMPTS_EXHAUSTED_TEXT % attempts if retry
                        else failed_text or LEASE_EXPIRED_TEXT)
                if self._fail_working(conn, task_id, owner, agent, text):
                    done.append((task_id, "failed"))
                conn.execute(self._marked("DELETE FROM a2a_turns WHERE task_id = ?"
                                          " AND worker IS NULL"), (task_id,))  # its follow-ups
            if done:
                self._changed(conn)  # failed, or claimable again
        return done
