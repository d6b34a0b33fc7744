"""The reading side of ``PostgresStorage``: a task (its stale turn failed on
the way), its history, its state. One statement reads one state of the
task: its row, its artifacts and its last messages (or those that fit a
byte budget, sized in SQL before any body is read).
"""

import json
from typing import Any, Dict, List, Optional, Sequence

from ..base import NoSuchTaskError, TaskRecord
from ..records import FIXED_BYTES, OVERHEAD, Message, most_messages
from ..common import history_limit
from .tasks import KEY_IS_LIVE, OWNED, stale_cutoff_sql
from ..history import HistoryReads

# Within %(bytes)s: the newest messages are sized first (octet_length, no
# body read; no more of them than could fit), and only those that fit beside
# the task's status, artifacts and metadata are read. The task's row carries
# (as its seq) how many of its last %(limit)s messages there are.
_FITTING = (
    " UNION ALL SELECT 2, m.seq, m.body, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
    " NULL FROM (SELECT seq, sum(bytes) OVER (ORDER BY seq DESC) AS running FROM"
    " (SELECT seq, octet_length(body) + %(each)d AS bytes FROM a2a_messages"
    " WHERE task_id = %%(id)s AND EXISTS (SELECT FROM t) ORDER BY seq DESC"
    " LIMIT %%(scan)s::bigint) r) s JOIN a2a_messages m ON m.seq = s.seq"
    " WHERE s.running <= (SELECT %%(bytes)s::bigint - %(fixed)d"
    " - coalesce(octet_length(metadata), 0) - coalesce(octet_length(status_message)"
    " + %(each)d, 0) - (SELECT coalesce(sum(octet_length(body) + %(each)d), 0)"
    " FROM a2a_artifacts WHERE task_id = %%(id)s) FROM t)"
    % {"each": OVERHEAD, "fixed": FIXED_BYTES})
_COUNT = ("(SELECT count(*) FROM (SELECT FROM a2a_messages WHERE task_id = %(id)s"
          " LIMIT %(limit)s::bigint) c)")


def _read_sql(cutoff, any_owner=False, within=False):
    """One statement reads one state of the task: its row (with whether its
    turn is stale), its artifacts and its last messages (``within``: those
    that fit in %(bytes)s, see ``_FITTING``)."""
    owner = "" if any_owner else " AND " + OWNED
    messages = _FITTING if within else (
        " UNION ALL (SELECT 2, seq, body, NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
        " NULL FROM a2a_messages WHERE task_id = %(id)s AND EXISTS (SELECT FROM t)"
        " ORDER BY seq DESC LIMIT %(limit)s::bigint)")
    return (
        "WITH t AS (SELECT context_id, state, status_message, updated_at, metadata,"
        " owner, agent, created_at, (state = 'working' AND updated_at < " + cutoff +
        # a queued or leased turn is never stale: leases decide (no write here)
        " AND NOT EXISTS (SELECT FROM a2a_turns WHERE task_id = %(id)s))"
        " AS stale FROM a2a_tasks WHERE id = %(id)s" + owner +
        " AND " + KEY_IS_LIVE + ")"
        " SELECT 0 AS part, " + (_COUNT if within else "0") + "::bigint AS seq,"
        " context_id, state, status_message,"
        " updated_at, metadata, owner, agent, created_at, stale FROM t"
        " UNION ALL SELECT 1, seq, body, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL"
        " FROM a2a_artifacts WHERE task_id = %(id)s AND EXISTS (SELECT FROM t)"
        + messages + " ORDER BY 1, 2")


class TaskReads(HistoryReads):
    """Mixed into ``PostgresStorage`` (needs ``connection``, and
    ``TaskOperations.fail_stale_turn``)."""

    #: A history's messages, stored whole.
    MESSAGE_COLUMNS = "body"

    @staticmethod
    def _loaded(row: Sequence[Any]) -> Message:
        return json.loads(row[0])

    def _read_sqls(self):
        cutoff = stale_cutoff_sql(self.stale_turn_seconds)
        self._read_task_sql = _read_sql(cutoff)
        self._read_within_sql = _read_sql(cutoff, within=True)
        self._read_any_sql = _read_sql(cutoff, any_owner=True)

    def _read(self, conn, sql, task_id, owner, agent, history_length,
              remembered_key=None, max_bytes=None, tenant=""):
        params = {"id": task_id, "owner": owner, "agent": agent,
                  "limit": history_limit(history_length), "key": remembered_key,
                  "tenant": tenant}
        if max_bytes is not None and params["limit"] != 0:
            # No history shown (a poll's read, historyLength 0): none to size.
            sql = self._read_within_sql
            params.update(bytes=max_bytes, scan=most_messages(
                max_bytes, params["limit"]))
        rows = conn.execute(sql, params).fetchall()
        if not rows or rows[0][0] != 0:
            return None, False
        (_, count, context_id, state, status_message, updated_at, metadata, owner,
         agent, created_at, stale) = rows[0]
        task = TaskRecord(
            task_id, context_id, agent, owner, state, updated_at,
            json.loads(status_message) if status_message else None,
            [json.loads(row[2]) for row in rows if row[0] == 1],
            [json.loads(row[2]) for row in rows if row[0] == 2],
            json.loads(metadata) if metadata else None, created_at)
        if max_bytes is not None:
            task.history_omitted = count - len(task.history)
        return task, stale

    def get_task(self, task_id: str, owner: str, agent: str, history_length: Optional[int] = None,
                 remembered_key: Optional[str] = None,
                 max_bytes: Optional[int] = None, tenant: str = "") -> TaskRecord:
        with self.connection() as conn:
            task, stale = self._read(conn, self._read_task_sql, task_id, owner,
                                     agent, history_length, remembered_key, max_bytes,
                                     tenant)
            if task is None:
                raise NoSuchTaskError(task_id)
            if stale:
                self.fail_stale_turn(task_id)  # or another server just did
                task, _ = self._read(conn, self._read_task_sql, task_id, owner,
                                     agent, history_length, max_bytes=max_bytes,
                                     tenant=tenant)
        task.created_at = None  # as the SQLite backend: only show_task has it
        return task

    def task_states(self, task_ids: List[str]) -> Dict[str, Optional[str]]:
        found = dict.fromkeys(task_ids)
        with self.connection() as conn:
            found.update(conn.execute(
                "SELECT id, state FROM a2a_tasks WHERE id = ANY(%s)",
                (list(found),)).fetchall())
        return found
