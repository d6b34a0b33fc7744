"""The request path of ``SqliteStorage``: a turn (start, claim, finish, fail
when stale), cancel, and the reads of a task and of its history.

Every state change is one conditional UPDATE whose row count is checked:
correctness does not rest on the writers' lock.
"""

import json
import logging
import time

from ..errors import StorageUnavailableError
from ..base import (
    STALE_TURN_TEXT, ContextMismatchError, RememberedKeyRevokedError, MessageIdReusedError,
    TaskEndedError, NoSuchTaskError, TaskNotWaitingError, TaskRecord, TurnStart,
)
from ..common import delivery_fingerprint, dumps, new_id, retry_digests
from ...messages import agent_message, text_part
from .file import is_storage_failure

log = logging.getLogger("a2a_flask")

_TERMINAL_SQL = "('canceled', 'completed', 'failed', 'rejected')"
_WAITING_SQL = "('auth-required', 'input-required')"

# A message is stored once, in a2a_messages, without the ids that its row's
# columns hold (messageId, taskId, contextId; an artifact without its
# artifactId) nor its constant "kind": "message": a task's status message is
# its row's status_seq, a pointer into its history, not a second copy
# (schema v5).
_ROW_IDS = ("kind", "messageId", "taskId", "contextId")


def message_body(message, task_id, context_id):
    """The stored JSON of ``message``, in the history of task ``task_id``."""
    if message.get("taskId") == task_id and message.get("contextId") == context_id:
        return dumps({k: v for k, v in message.items() if k not in _ROW_IDS})
    return dumps({k: v for k, v in message.items()
                  if k not in ("kind", "messageId")})


def load_message(body, task_id, context_id, message_id):
    """A message as stored by ``message_body`` (or whole, before v5)."""
    message = json.loads(body)
    if "kind" not in message:
        message = dict({"kind": "message"}, **message)
    message.setdefault("messageId", message_id)
    if "taskId" not in message:
        message["taskId"] = task_id
        message["contextId"] = context_id
    return message


def artifact_body(artifact):
    return dumps({k: v for k, v in artifact.items() if k != "artifactId"})


def load_artifact(body, artifact_id):
    artifact = json.loads(body)
    if "artifactId" in artifact:  # stored before v5
        return artifact
    return dict({"artifactId": artifact_id}, **artifact)


def stored_fingerprint(digest):
    """A message's fingerprint as a2a_deliveries keeps it (v5): the first 128
    bits of the SHA-256, as bytes (16 bytes, not 64 hex digits); enough to
    tell a retry of one caller's message from a different message."""
    return bytes.fromhex(digest[:32])


class TaskOperations:
    """Mixed into ``SqliteStorage`` (needs ``transaction``/``connection``)."""

    #: Tries to store a turn's outcome before keeping it aside (each try waits
    #: up to the busy timeout for another writer).
    FINISH_ATTEMPTS = 3

    def start_turn(self, owner, agent, message, context_id=None, task_id=None,
                   metadata=None, queue=None, remembered_key=None):
        """See ``Storage.start_turn``. ``queue`` (``enqueue_turn``): its
        ``admit(conn)`` runs once the message is known not to be a replay,
        and its ``add(conn, start, follow_up)`` once the message is stored,
        in the same transaction; with it, a message to a task whose
        background turn is queued or running is a follow-up."""
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
                    " fingerprint, task_id) VALUES (?, ?, ?, ?, ?)"
                    " ON CONFLICT DO NOTHING",
                    (owner, agent, message_id, digest, task_id)).rowcount:
                seen = conn.execute(
                    "SELECT fingerprint, task_id FROM a2a_deliveries"
                    " WHERE owner = ? AND agent = ? AND message_id = ?",
                    (owner, agent, message_id)).fetchone()
                task = conn.execute(
                    "SELECT id, context_id FROM a2a_tasks WHERE id = ?",
                    (seen[1],)).fetchone()
                if task is None or seen[0] not in [
                        stored_fingerprint(digest)
                        for digest in retry_digests(message, *task)]:
                    raise MessageIdReusedError(message_id)
                return TurnStart(task[0], task[1], replayed=True)

            if queue is not None:
                queue.admit(conn)
            follow_up = False
            if not created:
                context_id, follow_up = self._claim_waiting_task(
                    conn, owner, agent, task_id, context_id, now,
                    follow_up=queue is not None)
            else:
                context_id = context_id or new_id("ctx_")
                conn.execute(
                    "INSERT INTO a2a_tasks (id, agent, owner, context_id, state,"
                    " updated_at, created_at, metadata)"
                    " VALUES (?, ?, ?, ?, 'working', ?, ?, ?)",
                    (task_id, agent, owner, context_id, now, now,
                     dumps(metadata) if metadata else None),
                )
            stored = dict(message, kind="message", taskId=task_id,
                          contextId=context_id)
            seq = self._insert_message(conn, task_id, context_id, owner, agent,
                                       stored)
            start = TurnStart(task_id, context_id, stored, seq, created=created)
            if queue is not None:
                queue.add(conn, start, follow_up)
        return start

    def _claim_waiting_task(self, conn, owner, agent, task_id, context_id, now,
                            follow_up=False):
        """One conditional UPDATE claims the task: (its context id, False).
        When it changes no row, a read says why (and the transaction rolls
        back), unless ``follow_up`` and the task is working on a queued
        turn: (its context id, True), the message queues behind it."""
        match_context = "" if context_id is None else " AND context_id = :context"
        if conn.execute(
                "UPDATE a2a_tasks SET state = 'working', updated_at = :now"
                " WHERE id = :id AND owner = :owner AND agent = :agent"
                " AND state IN %s%s" % (_WAITING_SQL, match_context),
                {"now": now, "id": task_id, "owner": owner, "agent": agent,
                 "context": context_id}).rowcount:
            if context_id is not None:
                return context_id, False
            return conn.execute("SELECT context_id FROM a2a_tasks WHERE id = ?",
                                (task_id,)).fetchone()[0], False
        row = conn.execute(
            "SELECT state, context_id FROM a2a_tasks"
            " WHERE id = ? AND owner = ? AND agent = ?",
            (task_id, owner, agent)).fetchone()
        if row is None:
            raise NoSuchTaskError(task_id)
        state, task_context = row
        if context_id is not None and context_id != task_context:
            raise ContextMismatchError(task_id, task_context)
        if follow_up and state == "working" and conn.execute(
                "SELECT 1 FROM a2a_turns WHERE task_id = ?", (task_id,)).fetchone():
            return task_context, True
        raise TaskNotWaitingError(task_id, state, task_context)

    def finish_turn(self, task_id, owner, agent, state, status_message=None,
                    artifacts=()):
        """See ``Storage.finish_turn``. A write the file refuses (busy past
        the busy timeout, read-only, full) is tried ``FINISH_ATTEMPTS`` times;
        then the outcome is kept in a file beside the database
        (``<database>-outcomes/<task id>.json``), stored by the next
        ``get_task`` of that task, and the storage error is raised."""
        for attempt in range(1, self.FINISH_ATTEMPTS + 1):
            try:
                return self._store_outcome(task_id, owner, agent, state,
                                           status_message, artifacts)
            except StorageUnavailableError:
                raise  # the file was deleted or replaced: nowhere to keep it
            except Exception as exc:
                if not is_storage_failure(exc):
                    raise
                failure = self.failed(exc)
                if attempt < self.FINISH_ATTEMPTS:
                    time.sleep(0.1 * attempt)  # a full or read-only disk fails at once
                    continue
                if self._kept.keep(task_id, {
                        "owner": owner, "agent": agent, "state": state,
                        "status_message": status_message,
                        "artifacts": list(artifacts)}):
                    failure.kept_task_id = task_id
                raise failure from exc

    def _store_outcome(self, task_id, owner, agent, state, status_message,
                       artifacts):
        """One transaction: the conditional outcome. Its timestamp, or None."""
        now = self._now()
        with self.transaction() as conn:
            if not self._write_outcome(conn, task_id, owner, agent, state,
                                       status_message, artifacts, now):
                return None
        return now

    def _write_outcome(self, conn, task_id, owner, agent, state, status_message,
                       artifacts, now):
        """The outcome, conditional on ``working``; False when it was not."""
        # The status message's seq, known before it is inserted (the
        # write lock is ours): the row points at it in the same UPDATE.
        seq = None if status_message is None else self._next_seq(conn)
        if not conn.execute(
                "UPDATE a2a_tasks SET state = ?, status_message = NULL,"
                " status_seq = ?, updated_at = ?"
                " WHERE id = ? AND state = 'working'",
                (state, seq, now, task_id)).rowcount:
            return False
        if status_message is not None:
            self._insert_message(conn, task_id, status_message["contextId"],
                                 owner, agent, status_message, seq)
        if artifacts:
            conn.executemany(
                "INSERT INTO a2a_artifacts (task_id, artifact_id, body)"
                " VALUES (?, ?, ?)",
                [(task_id, a["artifactId"], artifact_body(a))
                 for a in artifacts])
        return True

    def _store_kept_outcome(self, task_id):
        """Store an outcome kept aside by ``finish_turn``; True if there was one."""
        outcome = self._kept.read(task_id)
        if outcome is None:
            return False
        self._store_outcome(task_id, outcome["owner"], outcome["agent"],
                            outcome["state"], outcome["status_message"],
                            outcome["artifacts"])
        self._kept.remove(task_id)
        log.info("stored the kept outcome of task %s", task_id)
        return True

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

    # -- reading -------------------------------------------------------------

    def get_task(self, task_id, owner, agent, history_length=None,
                 remembered_key=None):
        """See ``Storage.get_task``; a ``working`` task whose outcome was kept
        aside (the file refused it) gets it stored here."""
        task = self._read_task(task_id, owner, agent, history_length, remembered_key)
        if task.state != "working":
            return task
        if self._store_kept_outcome(task_id):
            return self._read_task(task_id, owner, agent, history_length)
        if task.updated_at < self._stale_cutoff() and not self._queued(task_id):
            self.fail_stale_turn(task_id)  # or another worker just did
            task = self._read_task(task_id, owner, agent, history_length)
        return task

    def _queued(self, task_id):
        """A queued or leased turn: never stale (leases decide), and known
        without the write transaction of ``fail_stale_turn``, which every
        poll of a long-queued task would otherwise open."""
        return self.connection().execute(
            "SELECT 1 FROM a2a_turns WHERE task_id = ?", (task_id,)).fetchone() is not None

    def fail_stale_turn(self, task_id):
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

    # One statement reads one state of the file: the task row, its artifacts
    # and its last messages as of the same moment, whatever other workers
    # write meanwhile (and one statement costs less than a transaction of four).
    _READ_TASK = (
        "SELECT 0, 0, context_id, state, status_message, updated_at, metadata"
        " FROM a2a_tasks WHERE id = :id AND owner = :owner AND agent = :agent"
        " AND (:key IS NULL OR EXISTS (SELECT 1 FROM a2a_api_keys"
        " WHERE key_hash = :key AND revoked_at IS NULL))"
        " UNION ALL SELECT 1, seq, body, artifact_id, NULL, NULL, NULL"
        " FROM a2a_artifacts WHERE task_id = :id"
        " UNION ALL SELECT * FROM (SELECT 2, seq, body, message_id, NULL, NULL,"
        " NULL FROM a2a_messages WHERE task_id = :id ORDER BY seq DESC"
        " LIMIT :limit)"
        " UNION ALL SELECT 3, m.seq, m.body, m.message_id, NULL, NULL, NULL"
        " FROM a2a_tasks t JOIN a2a_messages m ON m.seq = t.status_seq"
        " WHERE t.id = :id"
        " ORDER BY 1, 2")

    def _read_task(self, task_id, owner, agent, history_length, remembered_key=None):
        limit = -1 if history_length is None else min(history_length, 2 ** 63 - 1)
        rows = self.connection().execute(self._READ_TASK, {
            "id": task_id, "owner": owner, "agent": agent, "limit": limit,
            "key": remembered_key,
        }).fetchall()
        if not rows or rows[0][0] != 0:
            raise NoSuchTaskError(task_id)
        _, _, context_id, state, status_message, updated_at, metadata = rows[0]
        status = None
        if status_message is not None:  # a copy in the row
            status = load_message(status_message, task_id, context_id, None)
        elif rows[-1][0] == 3:
            status = load_message(rows[-1][2], task_id, context_id, rows[-1][3])
        return TaskRecord(
            task_id, context_id, agent, owner, state, updated_at, status,
            [load_artifact(row[2], row[3]) for row in rows if row[0] == 1],
            [load_message(row[2], task_id, context_id, row[3])
             for row in rows if row[0] == 2],
            json.loads(metadata) if metadata else None)

    def _history(self, sql, args, before_seq, limit):
        if before_seq is not None:
            sql += " AND seq < ?"
            args.append(before_seq)
        if limit is None:
            rows = self.connection().execute(sql + " ORDER BY seq", args).fetchall()
        else:
            rows = self.connection().execute(
                sql + " ORDER BY seq DESC LIMIT ?", args + [limit]).fetchall()[::-1]
        return [load_message(*row) for row in rows]

    def task_history(self, task_id, before_seq=None, limit=None):
        return self._history(
            "SELECT body, task_id, context_id, message_id FROM a2a_messages"
            " WHERE task_id = ?",
            [task_id], before_seq, limit)

    def context_history(self, owner, agent, context_id, before_seq=None,
                        limit=None):
        return self._history(
            "SELECT body, task_id, context_id, message_id FROM a2a_messages"
            " WHERE context_id = ? AND owner = ? AND agent = ?", [context_id, owner, agent],
            before_seq, limit)

    def task_state(self, task_id):
        row = self.connection().execute(
            "SELECT state FROM a2a_tasks WHERE id = ?", (task_id,)).fetchone()
        return row[0] if row else None

    def task_states(self, task_ids):
        found = dict.fromkeys(task_ids)
        ids = list(found)
        conn = self.connection()
        for start in range(0, len(ids), 500):  # SQLite's bound on parameters
            chunk = ids[start:start + 500]
            found.update(conn.execute(
                "SELECT id, state FROM a2a_tasks WHERE id IN (%s)"
                % ", ".join("?" * len(chunk)), chunk).fetchall())
        return found

    def change_marker(self):
        # Changes when another connection (of any process) commits: a read of
        # the WAL index in shared memory, no table is touched.
        return self.connection().execute("PRAGMA data_version").fetchone()[0]

    # -- cancel --------------------------------------------------------------

    def cancel_task(self, task_id, owner, agent):
        with self.transaction() as conn:
            if conn.execute(
                    "UPDATE a2a_tasks SET state = 'canceled', status_message ="
                    " NULL, status_seq = NULL, updated_at = ? WHERE id = ? AND owner = ? AND"
                    " agent = ? AND state NOT IN %s" % _TERMINAL_SQL,
                    (self._now(), task_id, owner, agent)).rowcount:
                # A queued background turn never starts; a running one sees
                # turn.canceled and its outcome is discarded.
                conn.execute("DELETE FROM a2a_turns WHERE task_id = ? AND"
                             " worker IS NULL", (task_id,))
                return
            row = conn.execute(
                "SELECT state FROM a2a_tasks WHERE id = ? AND owner = ?"
                " AND agent = ?", (task_id, owner, agent)).fetchone()
        if row is None:
            raise NoSuchTaskError(task_id)
        raise TaskEndedError(task_id, row[0])
