"""Storage side of operating the service: the queries behind ``GET
PREFIX/health`` and the ``flask a2a tasks`` / ``flask a2a db`` commands.

Kept apart from ``store.py`` (the request path); like it, the only place
these operations write SQL. Every function takes the app's ``Store``.
Deletions run in small transactions, so that they are safe while the service
runs: a worker waits at most one batch for the write lock.
"""

import os
import sqlite3

import sqlite_utils

from .migrations import MIGRATIONS, schema_version
from .store import TERMINAL_STATES

#: What a database that cannot be read raises.
StorageError = (sqlite3.Error, OSError)
#: Tasks deleted per transaction by ``prune``.
PRUNE_BATCH = 100

_TERMINAL_SQL = "(%s)" % ", ".join("'%s'" % s for s in sorted(TERMINAL_STATES))


def expected_version():
    """The schema version this a2a_flask works with."""
    return len(MIGRATIONS)


def schema_version_now(store):
    """The schema version of the file, by one trivial query (0: no schema)."""
    try:
        row = store.connection().execute(
            "SELECT version FROM a2a_schema_version").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        return 0
    return row[0] if row else 0


def upgrade(store):
    """Apply the migrations the file lacks: (version before, version after)."""
    before = schema_version(sqlite_utils.Database(store.connection()))
    store.migrate()
    return before, schema_version(sqlite_utils.Database(store.connection()))


def check(store):
    """(problems found by SQLite's integrity check, schema version)."""
    conn = store.connection()
    rows = [row[0] for row in conn.execute("PRAGMA integrity_check").fetchall()]
    problems = [] if rows == ["ok"] else rows
    return problems, schema_version_now(store)


def backup(store, path):
    """A consistent copy of the live file at ``path``, taken online.

    SQLite's backup API, in one step: one read transaction, which in WAL mode
    blocks no writer. Written beside ``path`` then renamed, so ``path`` is
    either absent or a whole backup; the copy is a single file (no WAL).
    """
    if os.path.exists(path):
        raise FileExistsError("%s exists: give a new path" % path)
    partial = path + ".partial"
    if os.path.exists(partial):
        os.remove(partial)
    target = sqlite3.connect(partial)
    try:
        store.connection().backup(target)
        target.execute("PRAGMA journal_mode = DELETE")
    finally:
        target.close()
    os.replace(partial, path)
    return os.path.getsize(path)


# -- tasks -------------------------------------------------------------------

_TASK_COLUMNS = ("id", "agent", "owner", "context_id", "state", "created_at",
                 "updated_at")


_TASK_KEYS = ("id", "agent", "caller", "contextId", "state", "createdAt",
              "updatedAt")


def _task_row(row):
    return dict(zip(_TASK_KEYS, row))


def list_tasks(store, agent=None, state=None, caller=None, limit=50):
    """Tasks, newest first (ids begin with their creation time, so the
    primary key orders them without a sort)."""
    sql = "SELECT %s FROM a2a_tasks" % ", ".join(_TASK_COLUMNS)
    where, args = [], []
    for column, value in (("agent", agent), ("state", state), ("owner", caller)):
        if value is not None:
            where.append("%s = ?" % column)
            args.append(value)
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY id DESC LIMIT ?"
    args.append(limit)
    return [_task_row(row) for row in store.connection().execute(sql, args)]


def show_task(store, task_id):
    """A task with its whole history and artifacts, or None."""
    conn = store.connection()
    row = conn.execute("SELECT %s FROM a2a_tasks WHERE id = ?"
                       % ", ".join(_TASK_COLUMNS), (task_id,)).fetchone()
    if row is None:
        return None
    info = _task_row(row)
    task = store.get_task(task_id, info["caller"], info["agent"])
    task.update(agent=info["agent"], caller=info["caller"],
                createdAt=info["createdAt"])
    return task


def prunable_tasks(store, cutoff):
    """Terminal tasks last updated before ``cutoff`` (ISO time), oldest id
    first: what ``prune`` would delete."""
    return [_task_row(row) for row in store.connection().execute(
        "SELECT %s FROM a2a_tasks WHERE state IN %s AND updated_at < ?"
        " ORDER BY id" % (", ".join(_TASK_COLUMNS), _TERMINAL_SQL), (cutoff,))]


def prune(store, cutoff):
    """Delete terminal tasks last updated before ``cutoff`` with their
    messages, artifacts and retry records, ``PRUNE_BATCH`` tasks per
    transaction. Yields a dict of counts per batch.

    Each batch deletes only tasks still terminal and old inside its own
    transaction, so an open task is never touched, whatever runs meanwhile.
    """
    while True:
        with store.transaction() as conn:
            ids = [row[0] for row in conn.execute(
                "SELECT id FROM a2a_tasks WHERE state IN %s AND updated_at < ?"
                " LIMIT ?" % _TERMINAL_SQL, (cutoff, PRUNE_BATCH))]
            if not ids:
                return
            marks = ", ".join("?" * len(ids))
            # Retry records are keyed by (caller, agent, messageId): found
            # through the task's user messages, by that key.
            deliveries = conn.execute(
                "DELETE FROM a2a_deliveries WHERE task_id IN (%s) AND"
                " (owner, agent, message_id) IN (SELECT owner, agent, message_id"
                " FROM a2a_messages WHERE task_id IN (%s) AND role = 'user')"
                % (marks, marks), ids + ids).rowcount
            messages = conn.execute(
                "DELETE FROM a2a_messages WHERE task_id IN (%s)" % marks,
                ids).rowcount
            artifacts = conn.execute(
                "DELETE FROM a2a_artifacts WHERE task_id IN (%s)" % marks,
                ids).rowcount
            tasks = conn.execute(
                "DELETE FROM a2a_tasks WHERE id IN (%s) AND state IN %s"
                " AND updated_at < ?" % (marks, _TERMINAL_SQL),
                ids + [cutoff]).rowcount
            if tasks != len(ids):  # cannot happen under the write lock
                raise RuntimeError("prune: %d of %d tasks changed meanwhile; "
                                   "nothing of this batch was deleted"
                                   % (len(ids) - tasks, len(ids)))
        yield {"tasks": tasks, "messages": messages, "artifacts": artifacts,
               "deliveries": deliveries}


def task_counts(store):
    """{state: number of tasks} (for the metrics)."""
    return dict(store.connection().execute(
        "SELECT state, count(*) FROM a2a_tasks GROUP BY state").fetchall())
