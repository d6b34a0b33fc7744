"""The writes of the request path of ``SqliteStorage``: a turn (start, claim,
fail when stale); its outcome is in ``outcomes``, the reads in ``reading``,
a cancel in ``storage/turns.py``.

Every state change is one conditional UPDATE whose row count is checked:
correctness does not rest on the writers' lock.

A turn run in the request starts and ends with ONE statement each (INSERTs
into the views of triggers.SINGLE_STATEMENT_WRITES, whose triggers make
those checks and RAISE what refuses): a transaction of several statements
held the write lock while its thread waited for the interpreter between
them, under gthread's many threads, and every writer waited behind it
(docs/benchmarks.md). The queue's start (``enqueue_turn``) and the rarer
writes stay short ``BEGIN IMMEDIATE`` transactions.
"""

import logging
import sqlite3
import time

from ..errors import StorageBusyError
from ..base import (
    STALE_TURN_TEXT, ContextMismatchError,
    MessageIdReusedError, NoSuchTaskError, QuotaReachedError,
    RememberedKeyRevokedError, StorageReserveError, TaskNotWaitingError, TurnStart,
)
from ..common import (
    delivery_fingerprint, dumps, new_id,
)
from ...messages import agent_message, text_part
from .outcomes import OutcomeWrites, message_body, stored_fingerprint
from .triggers import TURN_START_COLUMNS
from ..states import WAITING_STATES

log = logging.getLogger("a2a_flask")

# What the triggers of triggers.SINGLE_STATEMENT_WRITES raise (RAISE(ABORT)).
_REFUSED_KEY = "a2a: key revoked"
_REFUSED_REPLAY = "a2a: replay"
_REFUSED_RESERVE = "a2a: reserve"
_REFUSED_QUOTA = "a2a: quota"
_REFUSED_CLAIM = "a2a: not claimed"
_WAITING_SQL = "('auth-required', 'input-required')"
class TaskOperations(OutcomeWrites):
    """Mixed into ``SqliteStorage`` (needs ``transaction``/``connection``)."""

    def start_turn(self, owner, agent, message, context_id=None, task_id=None,
                   metadata=None, queue=None, remembered_key=None,
                   max_stored_bytes=None, tenant=""):
        """See ``Storage.start_turn``. ``queue`` (``enqueue_turn``): its
        ``admit(conn)`` runs once the message is known not to be a replay,
        and its ``add(conn, start, follow_up)`` once the message is stored,
        in the same transaction; with it, a message to a task whose
        background turn is queued or running is a follow-up.

        Without ``queue`` (a turn run in the request) the start is ONE
        statement (``_start_in_one_statement``)."""
        if queue is None:
            return self._start_in_one_statement(
                owner, agent, message, context_id, task_id, metadata,
                remembered_key, max_stored_bytes, tenant)
        message_id = message["messageId"]
        now = self._now()
        created = task_id is None
        if created:
            task_id = new_id("task_")
        # The message's taskId/contextId are those given (service.py): a
        # context other than the task's is refused below (ContextMismatchError),
        # which rolls this record back.
        digest = stored_fingerprint(
            delivery_fingerprint(message, task_id, context_id))
        with self.transaction() as conn:
            if remembered_key is not None and conn.execute(
                    "SELECT 1 FROM a2a_api_keys WHERE key_hash = ? AND"
                    " revoked_at IS NULL", (remembered_key,)).fetchone() is None:
                raise RememberedKeyRevokedError()
            # Insert first: on the usual path (a new messageId) that is the
            # only statement the retry check costs.
            if not conn.execute(
                    "INSERT INTO a2a_deliveries (owner, agent, message_id,"
                    " fingerprint, task_id, tenant) VALUES (?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT DO NOTHING",
                    (owner, agent, message_id, digest, task_id, tenant)).rowcount:
                return self._replayed(conn, owner, agent, message, tenant)

            self._check_reserve()
            if max_stored_bytes is not None:
                stored = self._stored_bytes(conn, owner)
                if stored >= max_stored_bytes:
                    raise QuotaReachedError(owner, max_stored_bytes, stored)
            queue.admit(conn)
            follow_up = False
            if not created:
                context_id, follow_up = self._claim_waiting_task(
                    conn, owner, agent, task_id, context_id, now,
                    follow_up=True, tenant=tenant)
            else:
                context_id = context_id or new_id("ctx_")
                conn.execute(
                    "INSERT INTO a2a_tasks (id, agent, owner, context_id, state,"
                    " updated_at, created_at, metadata, tenant)"
                    " VALUES (?, ?, ?, ?, 'working', ?, ?, ?, ?)",
                    (task_id, agent, owner, context_id, now, now,
                     dumps(metadata) if metadata else None, tenant),
                )
            stored = dict(message, kind="message", taskId=task_id,
                          contextId=context_id)
            seq = self._insert_message(conn, task_id, context_id, owner, agent,
                                       stored)
            start = TurnStart(task_id, context_id, stored, seq, created=created,
                              tenant=tenant)
            queue.add(conn, start, follow_up)
        return start

    #: The statement of ``_start_in_one_statement`` (migrations.py).
    _START_SQL = "INSERT INTO a2a_turn_starts (%s) VALUES (%s)" % (
        ", ".join(TURN_START_COLUMNS), ", ".join("?" * len(TURN_START_COLUMNS)))

    #: Tries of a start that met a replay whose record was gone when read
    #: (withdrawn meanwhile), or a task that changed between the refusal
    #: and the read of why.
    START_ATTEMPTS = 3

    def _start_in_one_statement(self, owner, agent, message, context_id,
                                task_id, metadata, remembered_key,
                                max_stored_bytes, tenant):
        """The start as one INSERT into the view ``a2a_turn_starts``, whose
        trigger checks the key, writes the retry record, checks the reserve
        and the quota, inserts or claims the task and inserts the message,
        or writes nothing (RAISE): one ``sqlite3_step`` holds the write lock
        from the first write to the commit. A refusal's details, a replay's
        task and the message's seq are read after it, outside any write."""
        message_id = message["messageId"]
        created = task_id is None
        if created:
            task_id = new_id("task_")
            context_id = context_id or new_id("ctx_")
        digest = stored_fingerprint(
            delivery_fingerprint(message, task_id, context_id))
        # The stored body leaves out the row's ids whatever the context (outcomes.message_body).
        body = message_body(dict(message, taskId=task_id, contextId=context_id),
                            task_id, context_id)
        for attempt in range(1, self.START_ATTEMPTS + 1):
            # The connection first: it opens (or creates) the file, whose
            # disk the reserve is of.
            deadline = time.monotonic() + self.busy_timeout_ms / 1000.0
            self.write_connection(deadline)
            reserve = self.at_reserve()
            try:
                # The flags as ints: sqlite3 binds an int, a str, None as
                # they are, a bool through its adaptation protocol, whose
                # lookups fail at a cost.
                self.write_statement(self._START_SQL, (
                    owner, agent, message_id, digest, task_id, tenant,
                    remembered_key, int(reserve), max_stored_bytes, int(created),
                    context_id, self._now(),
                    dumps(metadata) if metadata and created else None,
                    message["role"], body), deadline)
            except sqlite3.IntegrityError as exc:
                refusal = str(exc)
                conn = self.connection()
                if refusal == _REFUSED_KEY:
                    raise RememberedKeyRevokedError() from None
                if refusal == _REFUSED_REPLAY:
                    replay = self._replayed(conn, owner, agent, message, tenant)
                    if replay is not None:
                        return replay
                    continue  # withdrawn since: not delivered any more
                if refusal == _REFUSED_RESERVE:
                    raise StorageReserveError() from None
                if refusal == _REFUSED_QUOTA:
                    raise QuotaReachedError(owner, max_stored_bytes,
                                            self._stored_bytes(conn, owner)) from None
                if refusal != _REFUSED_CLAIM:
                    raise
                self._why_not_claimed(conn, owner, agent, task_id, context_id,
                                      tenant, last=attempt == self.START_ATTEMPTS)
                continue
            seq = None
            if not created:
                # A continuation's context, and the seq of the message just
                # stored (the task's latest of the caller's with that id). A
                # new task's context is known, and its seq read only should
                # its turn read history before it (``Storage.message_seq``):
                # a read a send saves.
                seq, context_id = self._latest_message(task_id, message_id,
                                                       message["role"])
            stored = dict(message, kind="message", taskId=task_id,
                          contextId=context_id)
            return TurnStart(task_id, context_id, stored, seq, created=created,
                             tenant=tenant)
        # Delivered and withdrawn again at each try: retryable.
        raise StorageBusyError()

    @staticmethod
    def _stored_bytes(conn, owner):
        return conn.execute("SELECT coalesce(sum(bytes), 0) FROM a2a_stored_bytes"
                            " WHERE owner = ?", (owner,)).fetchone()[0]

    @staticmethod
    def _replayed(conn, owner, agent, message, tenant):
        """The start of a messageId delivered before (``replayed``);
        ``MessageIdReusedError`` when this message is not the one delivered
        then; None when no delivery of it is stored."""
        message_id = message["messageId"]
        seen = conn.execute(
            "SELECT fingerprint, task_id FROM a2a_deliveries"
            " WHERE owner = ? AND agent = ? AND message_id = ?"
            " AND tenant = ?",
            (owner, agent, message_id, tenant)).fetchone()
        if seen is None:
            return None
        task = conn.execute(
            "SELECT id, context_id FROM a2a_tasks WHERE id = ?",
            (seen[1],)).fetchone()
        if task is None or seen[0] != stored_fingerprint(
                delivery_fingerprint(message, *task)):
            raise MessageIdReusedError(message_id)
        return TurnStart(task[0], task[1], replayed=True)

    @staticmethod
    def _why_not_claimed(conn, owner, agent, task_id, context_id, tenant, last):
        """Raise why a continuation's claim changed no row, as read now;
        returns (try again) when the task reads as claimable, unless
        ``last``."""
        state, task_context = _task_state(conn, owner, agent, task_id, context_id, tenant)
        if state in WAITING_STATES and not last:
            return  # waiting again since the refusal
        raise TaskNotWaitingError(task_id, state, task_context)

    def _claim_waiting_task(self, conn, owner, agent, task_id, context_id, now,
                            follow_up=False, tenant=""):
        """One conditional UPDATE claims the task: (its context id, False).
        When it changes no row, a read says why (and the transaction rolls
        back), unless ``follow_up`` and the task is working on a queued
        turn: (its context id, True), the message queues behind it."""
        match_context = "" if context_id is None else " AND context_id = :context"
        if conn.execute(
                "UPDATE a2a_tasks SET state = 'working', updated_at = :now"
                " WHERE id = :id AND owner = :owner AND agent = :agent"
                " AND tenant = :tenant AND state IN %s%s"
                % (_WAITING_SQL, match_context),
                {"now": now, "id": task_id, "owner": owner, "agent": agent,
                 "context": context_id, "tenant": tenant}).rowcount:
            if context_id is not None:
                return context_id, False
            return conn.execute("SELECT context_id FROM a2a_tasks WHERE id = ?",
                                (task_id,)).fetchone()[0], False
        state, task_context = _task_state(conn, owner, agent, task_id, context_id, tenant)
        if follow_up and state == "working" and conn.execute(
                "SELECT 1 FROM a2a_turns WHERE task_id = ?", (task_id,)).fetchone():
            return task_context, True
        raise TaskNotWaitingError(task_id, state, task_context)

    def _check_reserve(self) -> None:
        """``StorageReserveError`` when the database's disk has less free
        space than A2A_MIN_FREE_DISK_BYTES: a new send stops there, so that
        the outcomes of running turns, cancels and ``tasks prune`` (which
        needs room in the WAL to free any) still have it."""
        if self.at_reserve():
            raise StorageReserveError()

    @staticmethod
    def _insert_message(conn, task_id, context_id, owner, agent, message,
                        seq=None):
        return conn.execute(
            "INSERT INTO a2a_messages (seq, task_id, context_id, owner, agent,"
            " role, message_id, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (seq, task_id, context_id, owner, agent, message["role"],
             message["messageId"],
             message_body(message, task_id, context_id))).lastrowid

    @staticmethod
    def _next_seq(conn):
        """The seq the next message will get (inside a write transaction)."""
        return conn.execute(
            "SELECT coalesce(max(seq), 0) + 1 FROM a2a_messages").fetchone()[0]

    def fail_stale_turn(self, task_id: str) -> bool:
        with self.transaction() as conn:
            row = conn.execute(
                "SELECT context_id, owner, agent FROM a2a_tasks WHERE id = ?",
                (task_id,)).fetchone()
            if row is None:
                return False
            context_id, owner, agent = row
            message = agent_message([text_part(STALE_TURN_TEXT)], task_id,
                                    context_id)
            seq = self._next_seq(conn)
            if not conn.execute(
                    "UPDATE a2a_tasks SET state = 'failed', status_message = NULL,"
                    " status_seq = ?, updated_at = ? WHERE id = ?"
                    " AND state = 'working' AND updated_at < ? AND NOT EXISTS"
                    " (SELECT 1 FROM a2a_turns WHERE task_id = a2a_tasks.id)",
                    (seq, self._now(), task_id, self._stale_cutoff()),
            ).rowcount:  # leased turns above
                return False
            self._insert_message(conn, task_id, context_id, owner, agent,
                                 message, seq)
        return True


def _task_state(conn, owner, agent, task_id, context_id, tenant):
    """(state, context id) of the caller's task, as read now: why a claim of
    it changed no row; ``NoSuchTaskError`` or ``ContextMismatchError`` when
    it is not theirs or not in ``context_id``."""
    row = conn.execute(
        "SELECT state, context_id FROM a2a_tasks"
        " WHERE id = ? AND owner = ? AND agent = ? AND tenant = ?",
        (task_id, owner, agent, tenant)).fetchone()
    if row is None:
        raise NoSuchTaskError(task_id)
    state, task_context = row
    if context_id is not None and context_id != task_context:
        raise ContextMismatchError(task_id, task_context)
    return state, task_context
