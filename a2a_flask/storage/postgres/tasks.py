"""The request path of ``PostgresStorage``: a turn (start, claim, finish, fail
when stale), cancel, and the reads of a task and of its history.

Every state change is one conditional UPDATE whose row count (or RETURNING
row) is checked. The usual paths are one statement each, so one round trip
and their own transaction: a new task (retry record + task + message), a
finished turn (task + status message + artifacts), a read (task + artifacts
+ last messages). Timestamps and the stale cutoff come from the database's
clock, so servers with skewed clocks agree.
"""

import json
import time

from ..base import (
    STALE_TURN_TEXT, ContextMismatchError, RememberedKeyRevokedError, MessageIdReusedError,
    TaskEndedError, NoSuchTaskError, TaskNotWaitingError, TaskRecord, TurnStart,
)
from ..common import delivery_fingerprint, dumps, new_id, retry_digests
from ...messages import agent_message, text_part
from .changes import notify_changes
from .connection import is_storage_failure

#: The database's clock as an A2A timestamp (UTC, milliseconds, Z).
NOW = """to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"""
TERMINAL_SQL = "('canceled', 'completed', 'failed', 'rejected')"
WAITING_SQL = "('auth-required', 'input-required')"
BIGINT_MAX = 2 ** 63 - 1


def stale_cutoff_sql(seconds):
    """The stale-turn cutoff on the database's clock, as an A2A timestamp."""
    return ("to_char((now() - interval '%d seconds') AT TIME ZONE 'UTC',"
            " 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')" % int(seconds))


def history_limit(history_length):
    """``LIMIT`` for the last ``history_length`` messages (NULL: all)."""
    return None if history_length is None else min(int(history_length), BIGINT_MAX)


# The start of a turn is acknowledged to nobody: its commit need not wait for
# the disk. The turn's outcome is (synchronous_commit on), and flushing its
# commit flushes the WAL before it, this start included; a crash before then
# loses only a turn nobody was told of. A retry that finds the start
# (``_SEEN``) is answered, so it flushes first: txid_current() gives its
# statement a commit record, which waits for the disk as any other.
# (A start acknowledged by itself, e.g. a queued background turn, must not
# take this path.)
_UNFLUSHED = "SET LOCAL synchronous_commit TO off"

# The caller's API key taken on trust (``remembered_key``, auth.authenticate) is
# still live: NULL when there is none to check.
KEY_IS_LIVE = ("(%(key)s::text IS NULL OR EXISTS (SELECT FROM a2a_api_keys"
               " WHERE key_hash = %(key)s AND revoked_at IS NULL))")

# A new task: its retry record, the task and its first message, one statement
# (its own transaction, made unflushed by set_config(..., true), read at its
# commit). An existing (owner, agent, messageId) inserts nothing and returns
# no seq.
_START_NEW = (
    "WITH d AS (INSERT INTO a2a_deliveries (owner, agent, message_id,"
    " fingerprint, task_id) SELECT %(owner)s, %(agent)s, %(mid)s, %(fp)s, %(id)s"
    " WHERE " + KEY_IS_LIVE +
    " ON CONFLICT DO NOTHING RETURNING task_id),"
    " t AS (INSERT INTO a2a_tasks (id, agent, owner, context_id, state,"
    " updated_at, created_at, metadata) SELECT %(id)s, %(agent)s, %(owner)s,"
    " %(ctx)s, 'working', " + NOW + ", " + NOW + ", %(meta)s FROM d RETURNING id)"
    " INSERT INTO a2a_messages (task_id, context_id, owner, agent, role,"
    " message_id, body) SELECT id, %(ctx)s, %(owner)s, %(agent)s, %(role)s,"
    " %(mid)s, %(body)s FROM t,"
    " set_config('synchronous_commit', 'off', true) RETURNING seq")  # _UNFLUSHED

_SEEN = (
    "SELECT d.fingerprint, d.task_id, t.context_id, txid_current()"
    " FROM a2a_deliveries d"
    " JOIN a2a_tasks t ON t.id = d.task_id"
    " WHERE d.owner = %s AND d.agent = %s AND d.message_id = %s")

_INSERT_MESSAGE = (
    "INSERT INTO a2a_messages (task_id, context_id, owner, agent, role,"
    " message_id, body) VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING seq")

# A turn's outcome: only if the task is still working; then its status message
# joins the history and its artifacts are appended, in the same statement.
_FINISH = (
    "WITH u AS (UPDATE a2a_tasks SET state = %(state)s, status_message = %(body)s,"
    " updated_at = " + NOW + " WHERE id = %(id)s AND state = 'working'"
    " RETURNING updated_at, context_id),"
    " m AS (INSERT INTO a2a_messages (task_id, context_id, owner, agent, role,"
    " message_id, body) SELECT %(id)s, u.context_id, %(owner)s, %(agent)s,"
    " %(role)s, %(mid)s, %(body)s FROM u WHERE %(body)s::text IS NOT NULL),"
    " a AS (INSERT INTO a2a_artifacts (task_id, artifact_id, body)"
    " SELECT %(id)s, x.artifact_id, x.body FROM u, unnest(%(aids)s::text[],"
    " %(abodies)s::text[]) WITH ORDINALITY AS x(artifact_id, body, n) ORDER BY x.n)"
    " SELECT updated_at FROM u")


def _read_sql(cutoff, any_owner=False):
    """One statement reads one state of the task: its row (with whether its
    turn is stale), its artifacts and its last messages."""
    owner = "" if any_owner else " AND owner = %(owner)s AND agent = %(agent)s"
    return (
        "WITH t AS (SELECT context_id, state, status_message, updated_at, metadata,"
        " owner, agent, created_at, (state = 'working' AND updated_at < " + cutoff +
        # a queued or leased turn is never stale: leases decide (no write here)
        " AND NOT EXISTS (SELECT FROM a2a_turns WHERE task_id = %(id)s))"
        " AS stale FROM a2a_tasks WHERE id = %(id)s" + owner +
        " AND " + KEY_IS_LIVE + ")"
        " SELECT 0 AS part, 0::bigint AS seq, context_id, state, status_message,"
        " updated_at, metadata, owner, agent, created_at, stale FROM t"
        " UNION ALL SELECT 1, seq, body, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL"
        " FROM a2a_artifacts WHERE task_id = %(id)s AND EXISTS (SELECT FROM t)"
        " UNION ALL (SELECT 2, seq, body, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
        " NULL FROM a2a_messages WHERE task_id = %(id)s AND EXISTS (SELECT FROM t)"
        " ORDER BY seq DESC LIMIT %(limit)s::bigint)"
        " ORDER BY 1, 2")


def task_for_message(conn, owner, agent, task_id, context_id, lock=False):
    """(state, context id) of the task a message names (its row locked with
    ``lock``): NoSuchTaskError, or ContextMismatchError when the message
    names another context."""
    row = conn.execute(
        "SELECT state, context_id FROM a2a_tasks WHERE id = %s AND owner = %s"
        " AND agent = %s" + (" FOR UPDATE" if lock else ""),
        (task_id, owner, agent)).fetchone()
    if row is None:
        raise NoSuchTaskError(task_id)
    if context_id is not None and context_id != row[1]:
        raise ContextMismatchError(task_id, row[1])
    return row


class TaskOperations:
    """Mixed into ``PostgresStorage`` (needs ``connection``/``transaction``)."""

    #: Tries to store a turn's outcome (a restarted server breaks the pooled
    #: connections: the next try takes a new one).
    FINISH_ATTEMPTS = 3

    def _task_sql(self):
        cutoff = stale_cutoff_sql(self.stale_turn_seconds)
        self._read_task_sql = _read_sql(cutoff)
        self._read_any_sql = _read_sql(cutoff, any_owner=True)
        self._fail_stale_sql = (
            "WITH u AS (UPDATE a2a_tasks SET state = 'failed', status_message ="
            " (%(body)s::jsonb || jsonb_build_object('contextId', context_id))::text,"
            " updated_at = " + NOW + " WHERE id = %(id)s AND state = 'working'"
            " AND updated_at < " + cutoff + " AND NOT EXISTS (SELECT FROM"
            " a2a_turns WHERE task_id = %(id)s)"  # leases decide queued turns
            " RETURNING context_id, owner, agent,"
            " status_message)"
            " INSERT INTO a2a_messages (task_id, context_id, owner, agent, role,"
            " message_id, body) SELECT %(id)s, context_id, owner, agent, 'agent',"
            " %(mid)s, status_message FROM u RETURNING seq")

    # -- a turn of a send ------------------------------------------------------

    def start_turn(self, owner, agent, message, context_id=None, task_id=None,
                   metadata=None, remembered_key=None):
        message_id = message["messageId"]
        # The message's taskId/contextId are those given (service.py): a
        # context other than the task's is refused (ContextMismatchError), which
        # rolls the retry record back.
        digest = delivery_fingerprint(message, task_id, context_id)
        if task_id is None:
            task_id = new_id("task_")
            context_id = context_id or new_id("ctx_")
            stored = dict(message, kind="message", taskId=task_id, contextId=context_id)
            with self.connection() as conn:
                row = conn.execute(_START_NEW, {
                    "owner": owner, "agent": agent, "mid": message_id,
                    "fp": digest, "id": task_id, "ctx": context_id,
                    "role": stored["role"], "body": dumps(stored),
                    "meta": dumps(metadata) if metadata else None,
                    "key": remembered_key}).fetchone()
                if row is not None:
                    return TurnStart(task_id, context_id, stored, row[0], created=True)
                self._check_live(conn, remembered_key)  # a retry, or a key revoked
                return self._replayed(conn, owner, agent, message)
        with self.transaction() as conn:
            self._check_live(conn, remembered_key)
            replayed = self._record_delivery(conn, owner, agent, message,
                                             digest, task_id)
            if replayed is not None:
                return replayed
            conn.execute(_UNFLUSHED)  # read at COMMIT: a replay above still waits
            context_id = self._claim_waiting_task(conn, owner, agent, task_id, context_id)
            stored = dict(message, kind="message", taskId=task_id, contextId=context_id)
            seq = conn.execute(_INSERT_MESSAGE, (
                task_id, context_id, owner, agent, stored["role"], message_id,
                dumps(stored))).fetchone()[0]
        return TurnStart(task_id, context_id, stored, seq)

    @staticmethod
    def _check_live(conn, remembered_key):
        if remembered_key is not None and conn.execute(
                "SELECT " + KEY_IS_LIVE, {"key": remembered_key}).fetchone()[0] is not True:
            raise RememberedKeyRevokedError()

    @classmethod
    def _record_delivery(cls, conn, owner, agent, message, digest, task_id):
        """The retry record of ``message`` to ``task_id`` (``digest``: its
        ``delivery_fingerprint``); when this messageId was seen, the replayed
        ``TurnStart`` (or ``MessageIdReusedError``)."""
        if conn.execute(
                "INSERT INTO a2a_deliveries (owner, agent, message_id,"
                " fingerprint, task_id) VALUES (%s, %s, %s, %s, %s)"
                " ON CONFLICT DO NOTHING", (owner, agent, message["messageId"],
                                            digest, task_id)).rowcount != 1:
            return cls._replayed(conn, owner, agent, message)
        return None

    @staticmethod
    def _replayed(conn, owner, agent, message):
        message_id = message["messageId"]
        seen = conn.execute(_SEEN, (owner, agent, message_id)).fetchone()
        if seen is None or seen[0] not in retry_digests(message, seen[1], seen[2]):
            raise MessageIdReusedError(message_id)
        return TurnStart(seen[1], seen[2], replayed=True)

    @staticmethod
    def _claim_waiting_task(conn, owner, agent, task_id, context_id):
        """One conditional UPDATE claims the task; when it changes no row, a
        read says why (and the transaction rolls back)."""
        row = conn.execute(
            "UPDATE a2a_tasks SET state = 'working', updated_at = " + NOW +
            " WHERE id = %(id)s AND owner = %(owner)s AND agent = %(agent)s"
            " AND state IN " + WAITING_SQL + " AND (%(ctx)s::text IS NULL OR"
            " context_id = %(ctx)s) RETURNING context_id",
            {"id": task_id, "owner": owner, "agent": agent, "ctx": context_id}).fetchone()
        if row is not None:
            return row[0]
        state, task_context = task_for_message(conn, owner, agent, task_id, context_id)
        raise TaskNotWaitingError(task_id, state, task_context)

    def finish_turn(self, task_id, owner, agent, state, status_message=None,
                    artifacts=()):
        body = dumps(status_message) if status_message else None
        params = {
            "state": state, "body": body, "id": task_id, "owner": owner, "agent": agent,
            "role": status_message["role"] if status_message else None,
            "mid": status_message["messageId"] if status_message else None,
            "aids": [a["artifactId"] for a in artifacts],
            "abodies": [dumps(a) for a in artifacts]}
        for attempt in range(1, self.FINISH_ATTEMPTS + 1):
            try:
                with self.connection() as conn:
                    row = conn.execute(_FINISH, params).fetchone()
                return row[0] if row else None
            except Exception as exc:
                cause = exc.__cause__
                if attempt == self.FINISH_ATTEMPTS or not is_storage_failure(cause):
                    raise
                time.sleep(0.1 * attempt)

    # -- reading ---------------------------------------------------------------

    def _read(self, conn, sql, task_id, owner, agent, history_length,
              remembered_key=None):
        rows = conn.execute(sql, {"id": task_id, "owner": owner, "agent": agent,
                                  "limit": history_limit(history_length),
                                  "key": remembered_key}).fetchall()
        if not rows or rows[0][0] != 0:
            return None, False
        (_, _, context_id, state, status_message, updated_at, metadata, owner,
         agent, created_at, stale) = rows[0]
        return TaskRecord(
            task_id, context_id, agent, owner, state, updated_at,
            json.loads(status_message) if status_message else None,
            [json.loads(row[2]) for row in rows if row[0] == 1],
            [json.loads(row[2]) for row in rows if row[0] == 2],
            json.loads(metadata) if metadata else None, created_at), stale

    def get_task(self, task_id, owner, agent, history_length=None,
                 remembered_key=None):
        with self.connection() as conn:
            task, stale = self._read(conn, self._read_task_sql, task_id, owner,
                                     agent, history_length, remembered_key)
            if task is None:
                raise NoSuchTaskError(task_id)
            if stale:
                self.fail_stale_turn(task_id)  # or another server just did
                task, _ = self._read(conn, self._read_task_sql, task_id, owner,
                                     agent, history_length)
        task.created_at = None  # as the SQLite backend: only show_task has it
        return task

    def fail_stale_turn(self, task_id):
        message = agent_message([text_part(STALE_TURN_TEXT)], task_id)
        with self.connection() as conn:
            return conn.execute(self._fail_stale_sql, {
                "id": task_id, "mid": message["messageId"],
                "body": dumps(message)}).fetchone() is not None

    def _history(self, sql, args, before_seq, limit):
        if before_seq is not None:
            sql += " AND seq < %s"
            args.append(before_seq)
        with self.connection() as conn:
            if limit is None:
                rows = conn.execute(sql + " ORDER BY seq", args).fetchall()
            else:
                rows = conn.execute(sql + " ORDER BY seq DESC LIMIT %s",
                                    args + [history_limit(limit)]).fetchall()[::-1]
        return [json.loads(body) for (body,) in rows]

    def task_history(self, task_id, before_seq=None, limit=None):
        return self._history("SELECT body FROM a2a_messages WHERE task_id = %s",
                             [task_id], before_seq, limit)

    def context_history(self, owner, agent, context_id, before_seq=None,
                        limit=None):
        return self._history(
            "SELECT body FROM a2a_messages WHERE context_id = %s"
            " AND owner = %s AND agent = %s", [context_id, owner, agent],
            before_seq, limit)

    def task_state(self, task_id):
        with self.connection() as conn:
            row = conn.execute("SELECT state FROM a2a_tasks WHERE id = %s",
                               (task_id,)).fetchone()
        return row[0] if row else None

    def task_states(self, task_ids):
        found = dict.fromkeys(task_ids)
        with self.connection() as conn:
            found.update(conn.execute(
                "SELECT id, state FROM a2a_tasks WHERE id = ANY(%s)",
                (list(found),)).fetchall())
        return found

    # -- cancel ------------------------------------------------------------------

    def cancel_task(self, task_id, owner, agent):
        with self.transaction() as conn:
            if conn.execute(
                    "UPDATE a2a_tasks SET state = 'canceled', status_message = NULL,"
                    " updated_at = " + NOW + " WHERE id = %s AND owner = %s AND"
                    " agent = %s AND state NOT IN " + TERMINAL_SQL,
                    (task_id, owner, agent)).rowcount:
                # A queued background turn never starts (a claim drops it
                # anyway); a running one sees turn.canceled.
                conn.execute("DELETE FROM a2a_turns WHERE task_id = %s AND"
                             " worker IS NULL", (task_id,))
                notify_changes(conn)  # its blocking sends answer
                return
            # a new statement: the state as it is now, after whoever won
            row = conn.execute(
                "SELECT state FROM a2a_tasks WHERE id = %s AND owner = %s"
                " AND agent = %s", (task_id, owner, agent)).fetchone()
        if row is None:
            raise NoSuchTaskError(task_id)
        raise TaskEndedError(task_id, row[0])
