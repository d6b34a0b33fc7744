"""Durable storage of tasks, messages and artifacts in one SQLite file.

Safe under several gunicorn worker processes at once: WAL journal, a busy
timeout, short ``BEGIN IMMEDIATE`` write transactions (so a writer takes the
lock up front instead of failing to upgrade a read lock), and state changes
made by conditional updates, so a terminal state is never overwritten.

Writers of this package queue on an advisory file lock (``<database>-lock``)
before ``BEGIN IMMEDIATE``: the kernel wakes the next writer the moment the
lock is free, where SQLite's busy handler sleeps 1, 2, 5, 10... ms between
tries, which idled workers and made the slowest answers slow.

The API speaks tasks and messages; rows and SQL stay in this module.
"""

import errno
import hashlib
import json
import logging
import os
import secrets
import sqlite3
import threading
import urllib.parse

import time
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone

import sqlite_utils

from . import errors
from .migrations import migrate
from .sqlitefile import (
    KeptOutcomes, ProcessWriteLock, file_identity, is_storage_failure, rollback,
    storage_failure,
)

log = logging.getLogger("a2a_flask")

TERMINAL_STATES = frozenset(("completed", "canceled", "failed", "rejected"))
WAITING_STATES = frozenset(("input-required", "auth-required"))
STALE_TURN_TEXT = ("The agent stopped before finishing this turn: its worker "
                   "process ended. Send a new message with this contextId to "
                   "try again.")


def new_id(prefix):
    """An opaque, unguessable id (128 random bits) with a readable prefix.

    The random part follows the time in milliseconds, so that new rows land at
    the end of the indexes instead of on random pages: inserts stay cheap and
    local however many millions of tasks the file holds.
    """
    return "%s%012x%s" % (prefix, time.time_ns() // 1000000, secrets.token_hex(16))


def now_iso(moment=None):
    """ISO 8601 UTC with milliseconds and ``Z``, as A2A timestamps are."""
    now = moment or datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (now.microsecond // 1000)


def dumps(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def fingerprint(message):
    """A stable digest of a message, to tell a retry from a different message."""
    canonical = json.dumps(message, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def task_view(task_id, context_id, state, timestamp, status_message, artifacts,
              history, metadata=None):
    """A Task as A2A shows it, from its parts."""
    status = {"state": state, "timestamp": timestamp}
    if status_message:
        status["message"] = status_message
    task = {"kind": "task", "id": task_id, "contextId": context_id,
            "status": status, "artifacts": artifacts, "history": history}
    if metadata:
        task["metadata"] = metadata
    return task


def clamp_history(history, limit):
    """The last ``limit`` messages (all of them when ``limit`` is None)."""
    if limit is None:
        return history
    return history[len(history) - limit:] if limit else []


class TurnStart:
    """What ``Store.start_turn`` did: which task, and whether it was a retry."""

    __slots__ = ("task_id", "context_id", "message", "message_seq", "created",
                 "replayed")

    def __init__(self, task_id, context_id, message=None, message_seq=None,
                 created=False, replayed=False):
        self.task_id = task_id
        self.context_id = context_id
        #: The user message as stored (with taskId and contextId).
        self.message = message
        self.message_seq = message_seq
        #: True when the task was created by this message (no earlier history).
        self.created = created
        #: True when this messageId was seen before: nothing was written.
        self.replayed = replayed


class Store:
    """Tasks of one SQLite file; one connection per thread, one lock per process.

    A thread's connection lives in a ``threading.local``: it is closed when its
    thread ends (the thread-local is dropped), so a server that starts a thread
    per request does not pile up connections. The lock file is opened once per
    process and closed when the Store is garbage-collected.
    """

    def __init__(self, path, busy_timeout_ms=5000, synchronous="NORMAL",
                 stale_turn_seconds=3600, auto_migrate=True):
        self.path = path
        self.busy_timeout_ms = int(busy_timeout_ms)
        self.synchronous = synchronous
        #: A turn ``working`` for longer lost its worker (killed mid-turn).
        self.stale_turn = timedelta(seconds=stale_turn_seconds)
        self._local = threading.local()
        self._writer = ProcessWriteLock(path + "-lock")
        self._kept = KeptOutcomes(path + "-outcomes")
        #: False (A2A_AUTO_MIGRATE=0): the file is opened as it is, and only
        #: ``migrate`` (``flask a2a db upgrade``) changes its schema.
        self.auto_migrate = auto_migrate
        #: The file is in place: from then on it is opened, never created
        #: (a deleted file is an outage, not a fresh empty service).
        self._ready = False
        self._last_attempt = (0.0, None)  # (monotonic time, error) of migrate

    # -- connections and transactions ----------------------------------

    def _open(self, create):
        if create:
            conn = sqlite3.connect(self.path, isolation_level=None,
                                   check_same_thread=False)
        else:
            uri = "file:%s?mode=rw" % urllib.parse.quote(os.path.abspath(self.path))
            conn = sqlite3.connect(uri, uri=True, isolation_level=None,
                                   check_same_thread=False)
        try:
            conn.execute("PRAGMA busy_timeout = %d" % self.busy_timeout_ms)
            conn.execute("PRAGMA synchronous = %s" % self.synchronous)
            identity = file_identity(self.path)
        except BaseException:
            conn.close()
            raise
        return conn, identity

    def connection(self):
        """This thread's connection, opened on first use.

        Keyed by process id too: a connection must never cross a fork (gunicorn
        --preload forks workers after the app is built).
        """
        local = self._local
        conn = getattr(local, "conn", None)
        if conn is None or local.pid != os.getpid():
            local.conn = None
            if not self._ready and self.auto_migrate:
                self._retry_migrate()
            conn, local.identity = self._open(create=not self._ready)
            self._ready = True
            local.conn, local.pid = conn, os.getpid()
        return conn

    def drop_connection(self):
        """Close this thread's connection; the next use opens a new one."""
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            try:
                conn.close()
            except sqlite3.Error:
                pass

    def failed(self, exc):
        """The A2A error for storage failure ``exc`` (logged with the path);
        this thread's connection is dropped: a connection that met a
        read-only or vanished file stays so, a new one sees the file as it is."""
        self.drop_connection()
        return storage_failure(exc, self.path)

    def check_same_file(self):
        """``StorageUnavailable`` when the database file was deleted or
        replaced since this thread opened it: a commit would go to a file
        nobody will ever open again. One stat() of the path (a few µs)."""
        expected = getattr(self._local, "identity", None)
        try:
            found = file_identity(self.path)
        except OSError:
            found = None
        if found != expected:
            self.drop_connection()
            raise errors.StorageUnavailable(
                "The storage is unavailable: the database file was deleted or "
                "replaced while the service ran; nothing was stored. The call "
                "may be retried once the file is restored.",
                data={"retry": True})

    @contextmanager
    def transaction(self):
        """A short write transaction, holding the write lock from the start.

        Commits only into the file the service was configured with: a file
        deleted or replaced meanwhile is detected before the commit.
        """
        conn = self.connection()
        with self._writer:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                self.check_same_file()
            except BaseException:
                rollback(conn)
                raise
            try:
                conn.execute("COMMIT")
            except BaseException:
                rollback(conn)
                raise

    def migrate(self):
        """Create or upgrade the schema; safe to call from every worker."""
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        if not os.path.exists(self.path) and os.path.exists(self.path + "-lock"):
            # Its lock file says it was in use: deleted under the service. An
            # empty new file would silently serve without keys and tasks.
            raise FileNotFoundError(
                errno.ENOENT, "the database file is missing but its lock file "
                "shows it was in use: restore it from a backup, or delete %s-lock "
                "to start with an empty database" % self.path, self.path)
        conn, _ = self._open(create=True)
        try:
            # WAL is a property of the file: set once, kept by every later opener.
            conn.execute("PRAGMA journal_mode = WAL")
            with self._writer:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    migrate(sqlite_utils.Database(conn))
                except BaseException:
                    rollback(conn)
                    raise
                conn.execute("COMMIT")
        finally:
            conn.close()
        self._ready = True

    def _retry_migrate(self):
        """Open the storage that was unavailable at start, at most once a second."""
        at, error = self._last_attempt
        if error is not None and time.monotonic() - at < 1.0:
            raise error
        try:
            self.migrate()
        except (sqlite3.Error, OSError) as exc:
            self._last_attempt = (time.monotonic(), exc)
            raise

    # -- a turn of message/send ------------------------------------------

    def start_turn(self, owner, agent, message, context_id=None, task_id=None,
                   metadata=None):
        """Record an incoming user message and mark its task ``working``.

        Continues ``task_id`` when given (it must be waiting for input), else
        creates a task, joining ``context_id`` when given. One short
        transaction; once it commits, other workers see the task ``working``.
        A messageId this caller already sent to this agent writes nothing and
        answers the task it went to (``replayed``).
        """
        message_id = message["messageId"]
        digest = fingerprint(message)
        now = now_iso()
        created = task_id is None
        if created:
            task_id = new_id("task_")
        with self.transaction() as conn:
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
                if seen[0] != digest:
                    raise errors.InvalidParams(
                        "message.messageId: this messageId was already used for "
                        "a different message; send a new messageId.",
                        data={"field": "message.messageId"},
                    )
                task_id = seen[1]
                context_id = conn.execute(
                    "SELECT context_id FROM a2a_tasks WHERE id = ?", (task_id,)
                ).fetchone()[0]
                return TurnStart(task_id, context_id, replayed=True)

            if not created:
                context_id = self._claim_waiting_task(
                    conn, owner, agent, task_id, context_id, now
                )
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
        return TurnStart(task_id, context_id, stored, seq, created=created)

    def _claim_waiting_task(self, conn, owner, agent, task_id, context_id, now):
        row = conn.execute(
            "SELECT state, context_id FROM a2a_tasks"
            " WHERE id = ? AND owner = ? AND agent = ?",
            (task_id, owner, agent),
        ).fetchone()
        if row is None:
            raise errors.TaskNotFound(data={"taskId": task_id})
        state, task_context = row
        if context_id is not None and context_id != task_context:
            raise errors.InvalidParams(
                "message.contextId does not match the contextId of task %s."
                % task_id,
                data={"field": "message.contextId", "taskContextId": task_context},
            )
        if state in TERMINAL_STATES:
            raise errors.InvalidParams(
                "message.taskId: task %s is %s, a terminal state, and takes no "
                "more messages; send a new message with its contextId %s to "
                "continue the conversation." % (task_id, state, task_context),
                data={"field": "message.taskId", "state": state,
                      "contextId": task_context},
            )
        if state not in WAITING_STATES:
            raise errors.InvalidParams(
                "message.taskId: task %s is %s: another request is running it "
                "now; poll tasks/get until it waits for input." % (task_id, state),
                data={"field": "message.taskId", "state": state},
            )
        conn.execute(
            "UPDATE a2a_tasks SET state = 'working', updated_at = ?"
            " WHERE id = ? AND state IN ('input-required', 'auth-required')",
            (now, task_id),
        )
        return task_context

    #: Tries to store a turn's outcome before keeping it aside (each try waits
    #: up to the busy timeout for another writer).
    FINISH_ATTEMPTS = 3

    def finish_turn(self, task_id, owner, agent, state, status_message=None,
                    artifacts=()):
        """Store the outcome of a turn, unless the task left ``working``.

        Returns the status timestamp, or None when the task was canceled
        meanwhile: the outcome is discarded, since a terminal state is never
        overwritten.

        A write the storage refuses (busy past the busy timeout, read-only,
        full) is tried ``FINISH_ATTEMPTS`` times; then the outcome is kept in
        a file beside the database (``<database>-outcomes/<task id>.json``),
        stored by the next ``get_task`` of that task (a ``tasks/get``, or the
        retry of the same message), and the storage error is raised.
        """
        for attempt in range(1, self.FINISH_ATTEMPTS + 1):
            try:
                return self._store_outcome(task_id, owner, agent, state,
                                           status_message, artifacts)
            except errors.A2AError:
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
                    failure.message = (
                        "%s The outcome of task %s is kept and is stored by the "
                        "next tasks/get of the task or a retry of the same "
                        "message (same messageId)."
                        % (failure.message.replace(" nothing was stored.", ""),
                           task_id))
                    failure.data = {"retry": True, "taskId": task_id}
                raise failure from exc

    def _store_outcome(self, task_id, owner, agent, state, status_message,
                       artifacts):
        now = now_iso()
        body = dumps(status_message) if status_message else None
        with self.transaction() as conn:
            changed = conn.execute(
                "UPDATE a2a_tasks SET state = ?, status_message = ?, updated_at = ?"
                " WHERE id = ? AND state = 'working'",
                (state, body, now, task_id),
            ).rowcount
            if not changed:
                return None
            if status_message is not None:
                self._insert_message(conn, task_id, status_message["contextId"],
                                     owner, agent, status_message, body)
            if artifacts:
                conn.executemany(
                    "INSERT INTO a2a_artifacts (task_id, artifact_id, body)"
                    " VALUES (?, ?, ?)",
                    [(task_id, a["artifactId"], dumps(a)) for a in artifacts],
                )
        return now

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
    def _insert_message(conn, task_id, context_id, owner, agent, message, body=None):
        return conn.execute(
            "INSERT INTO a2a_messages (task_id, context_id, owner, agent, role,"
            " message_id, body) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (task_id, context_id, owner, agent, message["role"],
             message["messageId"], body or dumps(message)),
        ).lastrowid

    # -- reading -----------------------------------------------------------

    def get_task(self, task_id, owner, agent, history_length=None):
        """The Task as A2A shows it; ``TaskNotFound`` if not this caller's.

        A ``working`` task whose outcome was kept aside (the storage refused
        it) gets it stored here. A task still ``working`` long after its turn
        began lost its worker (killed mid-turn): it is failed here, or it would
        stay working for ever.
        """
        task = self._read_task(task_id, owner, agent, history_length)
        status = task["status"]
        if status["state"] != "working":
            return task
        if self._store_kept_outcome(task_id):
            return self._read_task(task_id, owner, agent, history_length)
        if status["timestamp"] < self._stale_cutoff():
            self._fail_stale_turn(task_id, owner, agent, task["contextId"])
            task = self._read_task(task_id, owner, agent, history_length)
        return task

    def _stale_cutoff(self):
        return now_iso(datetime.now(timezone.utc) - self.stale_turn)

    def _fail_stale_turn(self, task_id, owner, agent, context_id):
        message = {"kind": "message", "role": "agent", "messageId": new_id("msg_"),
                   "parts": [{"kind": "text", "text": STALE_TURN_TEXT}],
                   "taskId": task_id, "contextId": context_id}
        with self.transaction() as conn:
            if conn.execute(
                    "UPDATE a2a_tasks SET state = 'failed', status_message = ?,"
                    " updated_at = ? WHERE id = ? AND state = 'working'"
                    " AND updated_at < ?",
                    (dumps(message), now_iso(), task_id, self._stale_cutoff()),
            ).rowcount:
                self._insert_message(conn, task_id, context_id, owner, agent, message)

    # One statement reads one state of the file: the task row, its artifacts
    # and its last messages as of the same moment, whatever other workers
    # write meanwhile (and one statement costs less than a transaction of four).
    _READ_TASK = (
        "SELECT 0, 0, context_id, state, status_message, updated_at, metadata"
        " FROM a2a_tasks WHERE id = :id AND owner = :owner AND agent = :agent"
        " UNION ALL SELECT 1, seq, body, NULL, NULL, NULL, NULL"
        " FROM a2a_artifacts WHERE task_id = :id"
        " UNION ALL SELECT * FROM (SELECT 2, seq, body, NULL, NULL, NULL, NULL"
        " FROM a2a_messages WHERE task_id = :id ORDER BY seq DESC LIMIT :limit)"
        " ORDER BY 1, 2")

    def _read_task(self, task_id, owner, agent, history_length):
        limit = -1 if history_length is None else min(history_length, 2 ** 63 - 1)
        rows = self.connection().execute(self._READ_TASK, {
            "id": task_id, "owner": owner, "agent": agent, "limit": limit,
        }).fetchall()
        if not rows or rows[0][0] != 0:
            raise errors.TaskNotFound(data={"taskId": task_id})
        _, _, context_id, state, status_message, updated_at, metadata = rows[0]
        return task_view(
            task_id, context_id, state, updated_at,
            json.loads(status_message) if status_message else None,
            [json.loads(row[2]) for row in rows if row[0] == 1],
            [json.loads(row[2]) for row in rows if row[0] == 2],
            json.loads(metadata) if metadata else None)

    def task_history(self, task_id, before_seq=None):
        """Messages of a task, oldest first (those before ``before_seq``)."""
        sql = "SELECT body FROM a2a_messages WHERE task_id = ?"
        args = [task_id]
        if before_seq is not None:
            sql += " AND seq < ?"
            args.append(before_seq)
        rows = self.connection().execute(sql + " ORDER BY seq", args).fetchall()
        return [json.loads(body) for (body,) in rows]

    def context_history(self, owner, agent, context_id, before_seq=None,
                        limit=None):
        """Messages of a conversation (all its tasks), oldest first; only the
        last ``limit`` of them when given (read newest first, then stopped)."""
        sql = ("SELECT body FROM a2a_messages WHERE context_id = ?"
               " AND owner = ? AND agent = ?")
        args = [context_id, owner, agent]
        if before_seq is not None:
            sql += " AND seq < ?"
            args.append(before_seq)
        if limit is None:
            rows = self.connection().execute(sql + " ORDER BY seq", args).fetchall()
        else:
            rows = self.connection().execute(
                sql + " ORDER BY seq DESC LIMIT ?", args + [limit]).fetchall()[::-1]
        return [json.loads(body) for (body,) in rows]

    def task_state(self, task_id):
        row = self.connection().execute(
            "SELECT state FROM a2a_tasks WHERE id = ?", (task_id,)
        ).fetchone()
        return row[0] if row else None

    # -- cancel --------------------------------------------------------------

    def cancel_task(self, task_id, owner, agent):
        """Cancel a task that is not terminal; ``TaskNotCancelable`` if it is."""
        with self.transaction() as conn:
            row = conn.execute(
                "SELECT state FROM a2a_tasks WHERE id = ? AND owner = ? AND agent = ?",
                (task_id, owner, agent),
            ).fetchone()
            if row is None:
                raise errors.TaskNotFound(data={"taskId": task_id})
            if row[0] in TERMINAL_STATES:
                raise errors.TaskNotCancelable(
                    "Task %s is %s, a terminal state, and cannot be canceled."
                    % (task_id, row[0]),
                    data={"taskId": task_id, "state": row[0]},
                )
            conn.execute(
                "UPDATE a2a_tasks SET state = 'canceled', status_message = NULL,"
                " updated_at = ? WHERE id = ? AND state NOT IN"
                " ('completed', 'canceled', 'failed', 'rejected')",
                (now_iso(), task_id),
            )
