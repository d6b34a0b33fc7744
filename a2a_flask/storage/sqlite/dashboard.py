"""The operator's page's read of ``SqliteStorage`` (``operator_view``).

What it costs: the counts are one pass over the index ``a2a_tasks_state``
(owner, agent, state, updated_at, id), which holds every column they need,
so no table row is read; then, for each (owner, agent, state) group it found,
an index range (the tasks of the last hour for the turns per minute, the
failed tasks of the last 24 hours, newest first, for the failures). The
queue and the workers read ``a2a_turns``, which holds live turns only. No
index is added: each would cost every send.
"""

import os
from datetime import timedelta

from ..base import OperatorView
from ..common import now_iso
from .admin import _COLUMNS, _record

#: "YYYY-MM-DDTHH:MM": a timestamp's minute, as text.
_MINUTE = 16


class DashboardOperations:
    """Mixed into ``SqliteStorage``."""

    def operator_view(self, failure_limit: int = 50) -> OperatorView:
        now = self.clock()
        hour_ago = now_iso(now - timedelta(hours=1))
        day_ago = now_iso(now - timedelta(days=1))
        conn = self.connection()
        # One read transaction: every number as of one moment (WAL: it
        # blocks no writer).
        conn.execute("BEGIN")
        try:
            groups = conn.execute(
                "SELECT owner, agent, state, count(*) FROM a2a_tasks"
                " GROUP BY owner, agent, state").fetchall()
            tasks = {}
            for _owner, agent, state, count in groups:
                states = tasks.setdefault(agent, {})
                states[state] = states.get(state, 0) + count
            turns = {}
            failures = []
            for owner, agent, state, _count in groups:
                if state != "working":
                    for minute, count in conn.execute(
                            "SELECT substr(updated_at, 1, %d), count(*) FROM"
                            " a2a_tasks WHERE owner = ? AND agent = ? AND"
                            " state = ? AND updated_at >= ? GROUP BY 1" % _MINUTE,
                            (owner, agent, state, hour_ago)):
                        turns[agent, minute] = turns.get((agent, minute), 0) + count
                if state == "failed":
                    failures += conn.execute(
                        "SELECT %s FROM a2a_tasks WHERE owner = ? AND agent = ?"
                        " AND state = 'failed' AND updated_at >= ?"
                        " ORDER BY updated_at DESC, id DESC LIMIT ?" % _COLUMNS,
                        (owner, agent, day_ago, failure_limit)).fetchall()
            failures.sort(key=lambda row: (row[5], row[0]), reverse=True)
            depth, oldest = conn.execute(
                "SELECT count(*), min(queued_at) FROM a2a_turns"
                " WHERE worker IS NULL").fetchone()
            callers = dict(conn.execute(
                "SELECT owner, count(*) FROM a2a_turns WHERE worker IS NULL"
                " GROUP BY owner").fetchall())
            leases = [tuple(row) for row in conn.execute(
                "SELECT worker, max(lease_expires), count(*) FROM a2a_turns"
                " WHERE worker IS NOT NULL GROUP BY worker ORDER BY worker")]
            version = conn.execute(
                "SELECT version FROM a2a_schema_version").fetchone()
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
        return OperatorView(
            now_iso(now), tasks,
            sorted((agent, minute, count) for (agent, minute), count in turns.items()),
            depth, oldest, callers, leases,
            [_record(row) for row in failures[:failure_limit]],
            {"backend": "sqlite", "schema_version": version[0] if version else None,
             "file_bytes": _size(self.path), "wal_bytes": _size(self.path + "-wal")})


def _size(path):
    """The size of the file at ``path`` (0 when there is none: no WAL yet)."""
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0
