"""Listing, operating (``flask a2a tasks`` / ``flask a2a db``) and bulk copy
of ``SqliteStorage``. Deletions run in small transactions, so that they are
safe while the service runs: a worker waits at most one batch for the lock.
"""

import os
import sqlite3
from typing import Dict, Iterable, Iterator, List, Optional

from ..base import NoSuchTaskError, StoredTaskPage, TaskRecord
from ..common import (
    PRUNE_BATCH, encode_cursor, exported_batch, import_rows, reassign_owner, record_reader,
    where_clause,
)
from ..listing import TaskListing
from ..records import page_size
from ..states import TERMINAL_SQL
from .outcomes import artifact_body, message_body, stored_fingerprint
from .reading import load_artifact, load_message

# The status message: its copy in the row (one not in the history), else
# the history message the row points at.
_COLUMNS = ("id, context_id, agent, owner, state, updated_at,"
            " coalesce(status_message, (SELECT body FROM a2a_messages"
            " WHERE seq = status_seq)), metadata, created_at,"
            " (SELECT message_id FROM a2a_messages WHERE seq = status_seq)")


#: A row of ``_COLUMNS`` as a record: its status message in SQLite's stored
#: form (the row's copy, or the history's, with its ids).
_record = record_reader(lambda row: load_message(row[6], row[0], row[1], row[9]))


def _stored_once(records, tasks, messages, artifacts):
    """``import_rows``'s rows as SQLite stores them (see tasks.py): bodies
    without the row's ids, and a status message found in the history pointed
    at (the (task id, messageId) returned) rather than copied into the row."""
    statuses = []
    for index, task in enumerate(records):
        status = task.status_message
        if status is not None and status in (task.history or ()):
            statuses.append((task.id, status["messageId"]))
            tasks[index] = tasks[index][:5] + (None,) + tasks[index][6:]
    sent = [(task, message) for task in records for message in task.history or ()]
    messages = [row[:6] + (message_body(message, task.id, task.context_id),)
                for row, (task, message) in zip(messages, sent)]
    made = [artifact for task in records for artifact in task.artifacts or ()]
    artifacts = [row[:2] + (artifact_body(artifact),)
                 for row, artifact in zip(artifacts, made)]
    return tasks, messages, artifacts, statuses


class AdminOperations(TaskListing):
    """Mixed into ``SqliteStorage``."""

    def _task_page(self, where, params, limit, history_length, include_artifacts,
                   max_bytes):
        sql = ("SELECT %s FROM a2a_tasks%s ORDER BY updated_at DESC, id DESC"
               " LIMIT :limit" % (_COLUMNS, where_clause(where)))
        rows = self.connection().execute(sql, params).fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        tasks, used = [], 0
        for index, row in enumerate(rows):
            history, omitted = [], 0
            if history_length != 0 and max_bytes is None:
                history = self.task_history(row[0], limit=history_length)
            elif history_length != 0:  # never read beyond the budget
                history, omitted = self.history_within(row[0], history_length,
                                                       max_bytes)
            task = _record(row, history,
                           self._artifacts(row[0]) if include_artifacts else [])
            task.history_omitted = omitted
            if max_bytes is not None and tasks:
                used += page_size(task)
                if used > max_bytes or omitted:  # the rest on the next page
                    more, rows = True, rows[:index]
                    break
            elif max_bytes is not None:
                used = page_size(task)
            tasks.append(task)
        next_cursor = encode_cursor(rows[-1][5], rows[-1][0]) if more else None
        return StoredTaskPage(tasks, next_cursor)

    def _artifacts(self, task_id):
        return [load_artifact(*row) for row in self.connection().execute(
            "SELECT body, artifact_id FROM a2a_artifacts WHERE task_id = ?"
            " ORDER BY seq", (task_id,))]

    def show_task(self, task_id: str) -> Optional[TaskRecord]:
        row = self.connection().execute(
            "SELECT owner, agent, tenant, created_at FROM a2a_tasks WHERE id = ?",
            (task_id,)).fetchone()
        if row is None:
            return None
        owner, agent, tenant, created_at = row
        try:
            self.get_task(task_id, owner, agent, 0, tenant=tenant)  # fails a stale turn
            # The history row by row, not packed into one text (``_read_task``):
            # SQLite's longest string (1 GB) is less than a task may hold. One
            # read transaction: the task and its history as of one moment.
            conn = self.connection()
            conn.execute("BEGIN")
            try:
                task = self._read_task(task_id, owner, agent, 0, tenant=tenant)
                task.history = self.task_history(task_id)
            finally:
                conn.execute("COMMIT")
        except NoSuchTaskError:  # pruned since the first read: as never there
            return None
        task.created_at = created_at
        return task

    def prunable_tasks(self, cutoff: str) -> List[TaskRecord]:
        return [_record(row) for row in self.connection().execute(
            "SELECT %s FROM a2a_tasks WHERE state IN %s AND updated_at < ?"
            " ORDER BY id" % (_COLUMNS, TERMINAL_SQL), (cutoff,))]

    def prune(self, cutoff: str) -> Iterator[Dict[str, int]]:
        while True:
            with self.transaction() as conn:
                ids = [row[0] for row in conn.execute(
                    "SELECT id FROM a2a_tasks WHERE state IN %s AND updated_at < ?"
                    " LIMIT ?" % TERMINAL_SQL, (cutoff, PRUNE_BATCH))]
                if not ids:
                    return
                marks = ", ".join("?" * len(ids))
                # Only tasks still terminal and old (conditional on both),
                # then only what belongs to the tasks actually deleted.
                conn.execute("CREATE TEMP TABLE IF NOT EXISTS a2a_pruned"
                             " (id TEXT PRIMARY KEY)")
                conn.execute("DELETE FROM a2a_pruned")
                conn.execute(
                    "INSERT INTO a2a_pruned SELECT id FROM a2a_tasks WHERE id IN"
                    " (%s) AND state IN %s AND updated_at < ?"
                    % (marks, TERMINAL_SQL), ids + [cutoff])
                # Retry records are keyed by (caller, agent, messageId): found
                # through the task's user messages, by that key.
                deliveries = conn.execute(
                    "DELETE FROM a2a_deliveries WHERE task_id IN a2a_pruned AND"
                    " (owner, agent, message_id) IN (SELECT owner, agent,"
                    " message_id FROM a2a_messages WHERE task_id IN a2a_pruned"
                    " AND role = 'user')").rowcount
                messages = conn.execute(
                    "DELETE FROM a2a_messages WHERE task_id IN a2a_pruned").rowcount
                artifacts = conn.execute(
                    "DELETE FROM a2a_artifacts WHERE task_id IN a2a_pruned").rowcount
                tasks = conn.execute(
                    "DELETE FROM a2a_tasks WHERE id IN a2a_pruned").rowcount
            yield {"tasks": tasks, "messages": messages, "artifacts": artifacts,
                   "deliveries": deliveries}

    def _cancel_selected(self, where, params, states, dry_run):
        named = ["state_%d" % index for index in range(len(states))]
        where.append("state IN (%s)" % ", ".join(map(self._named, named)))
        params.update(zip(named, states))
        select = ("SELECT %s FROM a2a_tasks WHERE %s AND id > :after_id ORDER BY"
                  " id LIMIT %d" % (_COLUMNS, " AND ".join(where), PRUNE_BATCH))
        canceled, params["after_id"] = [], ""
        while True:
            if dry_run:
                rows = self.connection().execute(select, params).fetchall()
                canceled += [_record(row) for row in rows]
            else:
                with self.transaction() as conn:
                    rows = conn.execute(select, params).fetchall()
                    canceled += self._cancel_rows(conn, rows, states)
            if len(rows) < PRUNE_BATCH:
                return canceled
            params["after_id"] = rows[-1][0]

    def _cancel_rows(self, conn, rows, states):
        """Cancel the tasks of ``rows`` still in ``states``; their records."""
        ids = [row[0] for row in rows]
        marks = ", ".join("?" * len(ids))
        in_states = ", ".join("?" * len(states))
        # No RETURNING (SQLite 3.35; Ubuntu 20.04 ships 3.31): the caller's
        # BEGIN IMMEDIATE holds the write lock, so the ids read here are the
        # ones the UPDATE below changes, and its row count proves it.
        done = {task_id for (task_id,) in conn.execute(
            "SELECT id FROM a2a_tasks WHERE id IN (%s) AND state IN (%s)"
            % (marks, in_states), ids + list(states)).fetchall()}
        if done:
            changed = conn.execute(
                "UPDATE a2a_tasks SET state = 'canceled', status_message = NULL,"
                " status_seq = NULL, updated_at = ? WHERE id IN (%s) AND state IN"
                " (%s)" % (", ".join("?" * len(done)), in_states),
                [self._now()] + sorted(done) + list(states)).rowcount
            if changed != len(done):
                raise RuntimeError("canceled %d of %d tasks inside one write"
                                   " transaction" % (changed, len(done)))
        conn.executemany("DELETE FROM a2a_turns WHERE task_id = ? AND worker IS"
                         " NULL", [(task_id,) for task_id in done])
        return [_record(row) for row in rows if row[0] in done]

    def reassign_tasks(self, from_owner: str, to_owner: str) -> int:
        with self.transaction() as conn:
            return reassign_owner(conn, "?", from_owner, to_owner)

    def task_counts(self) -> Dict[str, int]:
        return dict(self.connection().execute(
            "SELECT state, count(*) FROM a2a_tasks GROUP BY state").fetchall())

    def check(self) -> List[str]:
        rows = [row[0] for row in
                self.connection().execute("PRAGMA integrity_check").fetchall()]
        return [] if rows == ["ok"] else rows

    def backup(self, target: str) -> None:
        """SQLite's backup API, in one step: one read transaction, which in
        WAL mode blocks no writer. Written beside ``target`` then renamed, so
        ``target`` is either absent or whole; the copy is a single file."""
        if os.path.exists(target):
            raise FileExistsError("%s exists: give a new path" % target)
        partial = target + ".partial"
        if os.path.exists(partial):
            os.remove(partial)
        copy = sqlite3.connect(partial)
        try:
            self.connection().backup(copy)
            copy.execute("PRAGMA journal_mode = DELETE")
        finally:
            copy.close()
        os.replace(partial, target)

    # -- bulk copy -----------------------------------------------------------

    def export_tasks(self, batch_size: int = 1000) -> Iterator[List[TaskRecord]]:
        conn, last = self.connection(), ""
        while True:
            rows = conn.execute("SELECT %s FROM a2a_tasks WHERE id > ? ORDER BY"
                                " id LIMIT ?" % _COLUMNS,
                                (last, batch_size)).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            marks = ", ".join("?" * len(rows))
            ids = [row[0] for row in rows]
            history, artifacts = {}, {}
            for task_id, context_id, body, message_id in conn.execute(
                    "SELECT task_id, context_id, body, message_id FROM"
                    " a2a_messages WHERE task_id IN (%s) ORDER BY seq" % marks,
                    ids):
                history.setdefault(task_id, []).append(
                    load_message(body, task_id, context_id, message_id))
            for task_id, body, artifact_id in conn.execute(
                    "SELECT task_id, body, artifact_id FROM a2a_artifacts"
                    " WHERE task_id IN (%s) ORDER BY seq" % marks, ids):
                artifacts.setdefault(task_id, []).append(
                    load_artifact(body, artifact_id))
            tenants = dict(conn.execute(
                "SELECT id, tenant FROM a2a_tasks WHERE id IN (%s)" % marks, ids))
            yield exported_batch(rows, _record, history, artifacts, tenants)

    def import_tasks(self, records: Iterable[TaskRecord], deliveries: bool = True) -> int:
        records = list(records)
        tasks, messages, artifacts, retries = import_rows(records, deliveries)
        tasks, messages, artifacts, statuses = _stored_once(
            records, tasks, messages, artifacts)
        retries = [row[:3] + (stored_fingerprint(row[3]),) + row[4:]
                   for row in retries]
        with self.transaction() as conn:
            conn.executemany(
                "INSERT INTO a2a_tasks (id, agent, owner, context_id, state,"
                " status_message, updated_at, created_at, metadata, tenant)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", tasks)
            conn.executemany(
                "INSERT INTO a2a_messages (task_id, context_id, owner, agent,"
                " role, message_id, body) VALUES (?, ?, ?, ?, ?, ?, ?)", messages)
            conn.executemany(
                "UPDATE a2a_tasks SET status_seq = (SELECT max(seq) FROM"
                " a2a_messages WHERE task_id = ?1 AND message_id = ?2)"
                " WHERE id = ?1", statuses)
            conn.executemany(
                "INSERT INTO a2a_artifacts (task_id, artifact_id, body)"
                " VALUES (?, ?, ?)", artifacts)
            conn.executemany(
                "INSERT INTO a2a_deliveries (owner, agent, message_id,"
                " fingerprint, task_id, tenant) VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT DO NOTHING", retries)
        return len(tasks)

