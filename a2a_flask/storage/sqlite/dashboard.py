"""The operator's page's read of ``SqliteStorage`` (``operator_view``).

What it costs: one walk of the index ``a2a_tasks_state`` (owner, agent,
state, updated_at, id), which holds every column the counts need, so no
table row is read for them. Its (owner, agent, state) groups are found by
skipping from one to the next (a seek each, not a walk); each group is then
counted as index ranges by ``updated_at``: older than the last hour, each
minute of it, later. So the counts and the turns per minute are one pass,
with no sort (a ``GROUP BY`` on the minute's text sorts every row it
counts). The failures are the newest keys of each failed group (the same
index, newest first), the groups merged as their keys are stepped
through, so no more keys are read than are shown, then the rows shown. The
slowest turns are looked for among the newest ``SLOWEST_SAMPLE`` keys of the
last hour (the same index, merged so), whose rows are then read for their
``created_at``; the user messages of the slowest few are counted
(``a2a_messages_task``). The queue and the workers read ``a2a_turns``,
which holds live turns only, and ``a2a_workers``, one row per claimer. No
index is added: each would cost every send.
"""

import heapq
import itertools
import os
from datetime import timedelta

from ..base import OperatorView
from ..common import (
    NOT_ENDED, SLOWEST_SAMPLE, now_iso, queue_and_workers, queue_by_caller,
    slowest_turns, with_tenant)
from .admin import _COLUMNS, _record

#: Ids per ``IN (...)``: SQLite 3.31 takes 999 variables a statement.
_CHUNK = 500

#: "YYYY-MM-DDTHH:MM": a timestamp's minute, as text.
_MINUTE = 16

#: From one (owner, agent, state) group of the state index to the next: a
#: seek each. A row value ``(owner, agent, state) > (?, ?, ?)`` is not one:
#: SQLite seeks on owner and walks the rest.
_FIRST_GROUP = ("SELECT owner, agent, state FROM a2a_tasks"
                " ORDER BY owner, agent, state LIMIT 1")
_NEXT_GROUP = tuple(
    "SELECT owner, agent, state FROM a2a_tasks WHERE %s"
    " ORDER BY owner, agent, state LIMIT 1" % where for where in (
        "owner = ? AND agent = ? AND state > ?",
        "owner = ? AND agent > ?",
        "owner > ?"))

#: Bounds that hold every stored timestamp: text sorts after '' and before
#: any BLOB (SQLite's order of storage classes).
_LOWEST, _HIGHEST = "", b""


def _groups(conn):
    """Every (owner, agent, state) of the tasks, in index order."""
    groups = []
    row = conn.execute(_FIRST_GROUP).fetchone()
    while row is not None:
        groups.append(tuple(row))
        for columns, sql in zip((3, 2, 1), _NEXT_GROUP):
            row = conn.execute(sql, groups[-1][:columns]).fetchone()
            if row is not None:
                break
    return groups


def _newest(cursors, limit):
    """The ``limit`` newest (updated_at, id) of ``cursors`` (each newest
    first), read only as far as needed; the cursors are closed."""
    try:
        return list(itertools.islice(heapq.merge(*cursors, reverse=True), limit))
    finally:
        for cursor in cursors:
            cursor.close()


def _slots(now, hour_ago):
    """[(minute or None, from, until)]: the whole range of ``updated_at``,
    cut at the last hour's minutes. None: not a minute of the last hour
    (older, or later than ``now``'s minute)."""
    slots = [(None, _LOWEST, now_iso(hour_ago))]
    start = hour_ago.replace(second=0, microsecond=0)
    while start <= now:
        end = start + timedelta(minutes=1)
        slots.append((now_iso(start)[:_MINUTE], slots[-1][2], now_iso(end)))
        start = end
    slots.append((None, slots[-1][2], _HIGHEST))
    return slots


class DashboardOperations:
    """Mixed into ``SqliteStorage``."""

    def operator_view(self, failure_limit: int = 50) -> OperatorView:
        now = self.clock()
        hour_ago = now - timedelta(hours=1)
        day_ago = now_iso(now - timedelta(days=1))
        slots = _slots(now, hour_ago)
        count_slots = (
            "WITH slots(minute, since, until) AS (VALUES %s)"
            " SELECT minute, (SELECT count(*) FROM a2a_tasks WHERE owner = ?"
            " AND agent = ? AND state = ? AND updated_at >= slots.since"
            " AND updated_at < slots.until) FROM slots"
            % ", ".join(["(?, ?, ?)"] * len(slots)))
        bounds = [value for slot in slots for value in slot]
        conn = self.connection()
        # One read transaction: every number as of one moment (WAL: it
        # blocks no writer).
        conn.execute("BEGIN")
        try:
            tasks = {}
            turns = {}
            # Each group's keys, newest first, left open for _newest.
            failed_groups = []
            ended_groups = []
            for owner, agent, state in _groups(conn):
                states = tasks.setdefault(agent, {})
                recent = 0
                for minute, count in conn.execute(
                        count_slots, bounds + [owner, agent, state]):
                    states[state] = states.get(state, 0) + count
                    if count and minute is not None and state != "working":
                        turns[agent, minute] = turns.get((agent, minute), 0) + count
                        recent += count
                if recent and state not in NOT_ENDED:
                    # Index keys only; the group's count says there are some.
                    ended_groups.append(conn.execute(
                        "SELECT updated_at, id FROM a2a_tasks WHERE owner = ?"
                        " AND agent = ? AND state = ? AND updated_at >= ?"
                        " ORDER BY updated_at DESC, id DESC LIMIT ?",
                        (owner, agent, state, slots[0][2], SLOWEST_SAMPLE)))
                if state == "failed":
                    failed_groups.append(conn.execute(
                        "SELECT updated_at, id FROM a2a_tasks WHERE owner = ?"
                        " AND agent = ? AND state = 'failed' AND updated_at >= ?"
                        " ORDER BY updated_at DESC, id DESC LIMIT ?",
                        (owner, agent, day_ago, failure_limit)))
            shown = [task_id for _, task_id in _newest(failed_groups, failure_limit)]
            failures = sorted(
                conn.execute("SELECT %s, tenant FROM a2a_tasks WHERE id IN (%s)" % (
                    _COLUMNS, ", ".join("?" * len(shown))), shown).fetchall()
                if shown else [],
                key=lambda row: (row[5], row[0]), reverse=True)
            ended = []
            ids = [task_id for _, task_id in _newest(ended_groups, SLOWEST_SAMPLE)]
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start:start + _CHUNK]
                ended += [tuple(row) for row in conn.execute(
                    "SELECT id, agent, owner, tenant, state, created_at, updated_at"
                    " FROM a2a_tasks WHERE id IN (%s)" % ", ".join("?" * len(chunk)),
                    chunk)]
            slowest = slowest_turns(ended, lambda batch: [row[0] for row in conn.execute(
                "SELECT task_id FROM a2a_messages WHERE role = 'user' AND task_id"
                " IN (%s) GROUP BY task_id HAVING count(*) > 1"
                % ", ".join("?" * len(batch)), batch)])
            depth, oldest, queued, leases, workers = queue_and_workers(conn)
            version = conn.execute(
                "SELECT version FROM a2a_schema_version").fetchone()
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")
        callers, by_tenant = queue_by_caller(queued)
        return OperatorView(
            now_iso(now), tasks,
            sorted((agent, minute, count) for (agent, minute), count in turns.items()),
            depth, oldest, callers, leases,
            [with_tenant(_record(row[:-1]), row[-1]) for row in failures],
            {"backend": "sqlite", "schema_version": version[0] if version else None,
             "file_bytes": _size(self.path), "wal_bytes": _size(self.path + "-wal")},
            queue_tenants=by_tenant, workers=workers, slowest=slowest,
            slowest_of=len(ended))


def _size(path):
    """The size of the file at ``path`` (0 when there is none: no WAL yet)."""
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0
