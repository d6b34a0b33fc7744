"""Listing, operating (``flask a2a tasks`` / ``flask a2a db``) and bulk copy
of ``PostgresStorage``. Deletions run in small transactions (one statement
per batch), so that they are safe while the service runs.

Backup: a PostgreSQL database is backed up with PostgreSQL's own tool,
``pg_dump`` (``pg_dump --format=custom``, restored with ``pg_restore``), or
with the server's continuous archiving; ``backup`` runs ``pg_dump`` when it
is installed and says so clearly when it is not.
"""

import json
import os
import shutil
import subprocess
from typing import Dict, Iterable, Iterator, List, Optional

import psycopg

from ..base import StoredTaskPage, TaskRecord
from ..common import (
    PRUNE_BATCH, encode_cursor, exported_batch, history_limit, import_rows, reassign_owner,
    record_reader, where_clause,
)
from ..listing import TaskListing
from ..records import OVERHEAD
from .changes import notify_changes
from ..states import TERMINAL_SQL
from .tasks import NOW

_COLUMNS = ("id, context_id, agent, owner, state, updated_at, status_message,"
            " metadata, created_at")


#: A row of ``_COLUMNS`` as a record (its status message stored whole).
_record = record_reader(lambda row: json.loads(row[6]))


# The page's tasks with, in the same statement, their artifacts and their
# last messages when asked for (a subquery each, on their task index).
_ARRAYS = (
    " CASE WHEN %(artifacts)s THEN ARRAY(SELECT body FROM a2a_artifacts a"
    " WHERE a.task_id = t.id ORDER BY seq) END,"
    " CASE WHEN %(history)s::bigint IS DISTINCT FROM 0 THEN ARRAY(SELECT body FROM"
    " (SELECT body, seq FROM a2a_messages m WHERE m.task_id = t.id ORDER BY seq"
    " DESC LIMIT %(history)s::bigint) h ORDER BY seq) END")
_LIST = "SELECT " + _COLUMNS + "," + _ARRAYS + " FROM a2a_tasks t"
# What a task's answer takes, from the stored JSON (octet_length reads the
# length, not the body), plus room for the task's own members.
_TASK_BYTES = (
    "octet_length(coalesce(t.status_message, '')) +"
    " octet_length(coalesce(t.metadata, '')) + CASE WHEN %(artifacts)s THEN"
    " (SELECT coalesce(sum(octet_length(body)), 0) FROM a2a_artifacts a"
    " WHERE a.task_id = t.id) ELSE 0 END + CASE WHEN %(history)s::bigint"
    " IS DISTINCT FROM 0 THEN (SELECT coalesce(sum(octet_length(body)), 0) FROM"
    " (SELECT body FROM a2a_messages m WHERE m.task_id = t.id ORDER BY seq DESC"
    " LIMIT %(history)s::bigint) h) ELSE 0 END + 256")


# A budgeted page's last messages: only those that fit in the budget, newest
# first, sized as _TASK_BYTES sizes them before any body is read (the first
# task's history may not fit; the others' do, or they are not on the page);
# and how many of the last %(history)s there are.
_ARRAYS_WITHIN = (
    " CASE WHEN %(artifacts)s THEN ARRAY(SELECT body FROM a2a_artifacts a"
    " WHERE a.task_id = t.id ORDER BY seq) END,"
    " CASE WHEN %(history)s::bigint IS DISTINCT FROM 0 THEN ARRAY(SELECT m.body"
    " FROM (SELECT seq, sum(octet_length(body)) OVER (ORDER BY seq DESC) AS running"
    " FROM (SELECT seq, body FROM a2a_messages WHERE task_id = t.id ORDER BY seq"
    " DESC LIMIT %(history)s::bigint) x) h JOIN a2a_messages m ON m.seq = h.seq"
    " WHERE h.running <= %(budget)s ORDER BY m.seq) END")
_HISTORY_COUNT = (
    " CASE WHEN %(history)s::bigint IS DISTINCT FROM 0 THEN (SELECT count(*)"
    " FROM (SELECT FROM a2a_messages m WHERE m.task_id = t.id"
    " LIMIT %(history)s::bigint) c) ELSE 0 END")


def _budgeted(where):
    """A page under ``%(budget)s`` bytes in one statement: the sizes of the
    page's tasks first, the bodies then only of those that fit (the first
    whatever its size, its history only as far as it fits); the last
    columns say how many tasks matched and how many messages each has."""
    sized = ("SELECT t.id, t.updated_at, " + _TASK_BYTES + " AS size"
             " FROM a2a_tasks t" + where_clause(where) +
             " ORDER BY t.updated_at DESC, t.id DESC LIMIT %(limit)s")
    running = ("SELECT id, size, sum(size) OVER (ORDER BY updated_at DESC, id DESC)"
               " AS used, count(*) OVER () AS listed FROM (" + sized + ") p")
    columns = ", ".join("t." + name.strip() for name in _COLUMNS.split(","))
    return ("SELECT " + columns + "," + _ARRAYS_WITHIN + ", r.listed," +
            _HISTORY_COUNT + " FROM (" + running +
            ") r JOIN a2a_tasks t ON t.id = r.id"
            " WHERE r.used <= %(budget)s OR r.used = r.size"
            " ORDER BY t.updated_at DESC, t.id DESC")


class AdminOperations(TaskListing):
    """Mixed into ``PostgresStorage``."""

    def _task_page(self, where, params, limit, history_length, include_artifacts,
                   max_bytes):
        params.update(artifacts=bool(include_artifacts),
                      history=history_limit(history_length))
        if max_bytes is None:
            sql = (_LIST + where_clause(where) +
                   " ORDER BY updated_at DESC, id DESC LIMIT %(limit)s")
        else:
            sql = _budgeted(where)
            params["budget"] = max_bytes
        with self.connection() as conn:
            rows = conn.execute(sql, params).fetchall()
        more = len(rows) > limit or (max_bytes is not None and rows
                                     and rows[0][11] > len(rows))
        rows = rows[:limit]
        tasks = [_record(row, [json.loads(b) for b in row[10] or ()],
                         [json.loads(b) for b in row[9] or ()]) for row in rows]
        if max_bytes is not None:
            for task, row in zip(tasks, rows):
                task.history_omitted = row[12] - len(task.history)
        next_cursor = encode_cursor(rows[-1][5], rows[-1][0]) if more else None
        return StoredTaskPage(tasks, next_cursor)

    def show_task(self, task_id: str) -> Optional[TaskRecord]:
        with self.connection() as conn:
            task, stale = self._read(conn, self._read_any_sql, task_id, None, None, None)
        if task is None:
            return None
        if stale:
            created_at = task.created_at
            self.fail_stale_turn(task_id)  # or another server just did
            with self.connection() as conn:
                task, _ = self._read(conn, self._read_any_sql, task_id, None, None,
                                     None)
            if task is None:  # pruned since the first read: as never there
                return None
            task.created_at = created_at
        return task

    def prunable_tasks(self, cutoff: str) -> List[TaskRecord]:
        with self.connection() as conn:
            return [_record(row) for row in conn.execute(
                "SELECT " + _COLUMNS + " FROM a2a_tasks WHERE state IN " + TERMINAL_SQL +
                " AND updated_at < %s ORDER BY id", (cutoff,))]

    # One batch, one statement: the tasks still terminal and old (locked, so a
    # concurrent prune takes others), then what belongs to them; retry records
    # are found through the tasks' user messages, by their key.
    _PRUNE = (
        "WITH doomed AS (SELECT id FROM a2a_tasks WHERE state IN " + TERMINAL_SQL +
        " AND updated_at < %(cutoff)s LIMIT %(batch)s FOR UPDATE SKIP LOCKED),"
        " t AS (DELETE FROM a2a_tasks WHERE id IN (SELECT id FROM doomed) AND"
        " state IN " + TERMINAL_SQL + " AND updated_at < %(cutoff)s RETURNING id, owner),"
        " m AS (DELETE FROM a2a_messages WHERE task_id IN (SELECT id FROM t)"
        " RETURNING task_id, owner, agent, message_id, role),"
        " a AS (DELETE FROM a2a_artifacts WHERE task_id IN (SELECT id FROM t)"
        " RETURNING task_id, octet_length(body) + " + str(OVERHEAD) + " AS bytes),"
        # The owners' stored bytes (migrations.STORED_BYTES: no trigger on
        # this delete, which alone has the owner at hand).
        " b AS (SELECT a2a_add_stored_bytes(t.owner, -sum(a.bytes)::bigint)"
        " FROM a JOIN t ON t.id = a.task_id GROUP BY t.owner),"
        " d AS (DELETE FROM a2a_deliveries d USING m WHERE m.role = 'user' AND"
        " d.owner = m.owner AND d.agent = m.agent AND d.message_id = m.message_id"
        " AND d.task_id = m.task_id RETURNING 1)"
        " SELECT (SELECT count(*) FROM t), (SELECT count(*) FROM m),"
        " (SELECT count(*) FROM a), (SELECT count(*) FROM d),"
        " (SELECT count(*) FROM b)")

    def prune(self, cutoff: str) -> Iterator[Dict[str, int]]:
        while True:
            with self.connection() as conn:
                tasks, messages, artifacts, deliveries, _ = conn.execute(
                    self._PRUNE, {"cutoff": cutoff, "batch": PRUNE_BATCH}).fetchone()
            if not tasks:
                return
            yield {"tasks": tasks, "messages": messages, "artifacts": artifacts,
                   "deliveries": deliveries}

    def _cancel_selected(self, where, params, states, dry_run):
        params.update(states=states, batch=PRUNE_BATCH)
        where.append("state = ANY(%(states)s::text[]) AND id > %(after)s")
        select = ("SELECT " + _COLUMNS + " FROM a2a_tasks WHERE " +
                  " AND ".join(where) + " ORDER BY id LIMIT %(batch)s")
        # One batch, one statement: the tasks still open (locked), canceled,
        # and the turns no worker claimed deleted.
        cancel = (
            "WITH c AS (" + select + " FOR UPDATE SKIP LOCKED),"
            " u AS (UPDATE a2a_tasks t SET state = 'canceled', status_message ="
            " NULL, updated_at = " + NOW + " FROM c WHERE t.id = c.id AND"
            " t.state = ANY(%(states)s::text[]) RETURNING t.id),"
            " q AS (DELETE FROM a2a_turns WHERE task_id IN (SELECT id FROM u)"
            " AND worker IS NULL)"
            " SELECT c.* FROM c JOIN u ON u.id = c.id ORDER BY c.id")
        canceled, params["after"] = [], ""
        while True:
            with self.transaction() as conn:
                rows = conn.execute(select if dry_run else cancel, params).fetchall()
                if rows and not dry_run:
                    notify_changes(conn)  # their blocking sends answer
            canceled += [_record(row) for row in rows]
            if not rows:
                return canceled
            params["after"] = rows[-1][0]

    def reassign_tasks(self, from_owner: str, to_owner: str) -> int:
        with self.transaction() as conn:
            return reassign_owner(conn, "%s", from_owner, to_owner)

    def task_counts(self) -> Dict[str, int]:
        with self.connection() as conn:
            return dict(conn.execute(
                "SELECT state, count(*) FROM a2a_tasks GROUP BY state").fetchall())

    def check(self) -> List[str]:
        """A trivial query on every table (the schema version is the
        caller's to compare: ``schema_version``)."""
        problems = []
        with self.connection() as conn:
            for table in ("a2a_tasks", "a2a_messages", "a2a_artifacts",
                          "a2a_deliveries", "a2a_api_keys", "a2a_users"):
                try:
                    with conn.transaction():
                        conn.execute("SELECT 1 FROM %s LIMIT 1" % table).fetchall()
                except psycopg.errors.UndefinedTable:
                    problems.append("table %s is missing" % table)
        return problems

    def backup(self, target: str) -> None:
        """``pg_dump --format=custom`` of the database to ``target``
        (restore: ``pg_restore --dbname=URL target``); written beside it
        then renamed, so ``target`` is either absent or whole."""
        if os.path.exists(target):
            raise FileExistsError("%s exists: give a new path" % target)
        pg_dump = shutil.which("pg_dump")
        if pg_dump is None:
            raise RuntimeError(
                "a PostgreSQL database is backed up with PostgreSQL's pg_dump, "
                "which is not installed here: install the PostgreSQL client "
                "(apt-get install postgresql-client), or run pg_dump --format="
                "custom against %s from a machine that has it" % self.location)
        partial = target + ".partial"
        out = subprocess.run([pg_dump, "--format=custom", "--file", partial,
                              "--dbname", self.url], capture_output=True, text=True)
        if out.returncode != 0:
            if os.path.exists(partial):
                os.remove(partial)
            raise RuntimeError("pg_dump of %s failed: %s"
                               % (self.location, out.stderr.strip()[-500:]))
        os.replace(partial, target)

    # -- bulk copy ---------------------------------------------------------------

    def export_tasks(self, batch_size: int = 1000) -> Iterator[List[TaskRecord]]:
        last = ""
        while True:
            with self.connection() as conn:
                rows = conn.execute(
                    "SELECT " + _COLUMNS + " FROM a2a_tasks WHERE id > %s ORDER BY id"
                    " LIMIT %s", (last, batch_size)).fetchall()
                if not rows:
                    return
                last = rows[-1][0]
                ids = [row[0] for row in rows]
                history, artifacts = {}, {}
                for task_id, body in conn.execute(
                        "SELECT task_id, body FROM a2a_messages WHERE task_id ="
                        " ANY(%s) ORDER BY seq", (ids,)):
                    history.setdefault(task_id, []).append(json.loads(body))
                for task_id, body in conn.execute(
                        "SELECT task_id, body FROM a2a_artifacts WHERE task_id ="
                        " ANY(%s) ORDER BY seq", (ids,)):
                    artifacts.setdefault(task_id, []).append(json.loads(body))
                tenants = dict(conn.execute(
                    "SELECT id, tenant FROM a2a_tasks WHERE id = ANY(%s)", (ids,)))
            yield exported_batch(rows, _record, history, artifacts, tenants)

    def import_tasks(self, records: Iterable[TaskRecord], deliveries: bool = True) -> int:
        """COPY into the tables, in one transaction; retry records with ON
        CONFLICT DO NOTHING (a messageId may be known already)."""
        tasks, messages, artifacts, retries = import_rows(records, deliveries)
        with self.transaction() as conn:
            cur = conn.cursor()
            for table, rows in (("a2a_tasks (id, agent, owner, context_id, state,"
                                 " status_message, updated_at, created_at, metadata,"
                                 " tenant)",
                                 tasks),
                                ("a2a_messages (task_id, context_id, owner, agent,"
                                 " role, message_id, body)", messages),
                                ("a2a_artifacts (task_id, artifact_id, body)", artifacts)):
                with cur.copy("COPY %s FROM STDIN" % table) as copy:
                    for row in rows:
                        copy.write_row(row)
            if retries:
                cur.executemany(
                    "INSERT INTO a2a_deliveries (owner, agent, message_id,"
                    " fingerprint, task_id, tenant) VALUES (%s, %s, %s, %s, %s, %s)"
                    " ON CONFLICT DO NOTHING", retries)
        return len(tasks)

