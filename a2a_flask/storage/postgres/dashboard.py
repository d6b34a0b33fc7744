"""The operator's page's read of ``PostgresStorage`` (``operator_view``).

What it costs: the counts are one pass over the tasks' state index (an
index-only scan where the visibility map allows); the turns per minute and
the failures and the candidates for the slowest turns are ranges of
``a2a_tasks_updated`` (the tasks changed in the last hour, and in the last
24 hours newest first until enough are found); the user messages of the
slowest few are counted (``a2a_messages_task``). The queue and the workers
read ``a2a_turns``, which holds live turns only, and ``a2a_workers``, one
row per claimer. All in one read-only REPEATABLE READ transaction: one
moment.
"""

from ..base import OperatorView
from ..common import (
    NOT_ENDED, SLOWEST_SAMPLE, queue_and_workers, queue_by_caller, slowest_turns,
    with_tenant)
from .admin import _COLUMNS, _record


def _utc_text(expression):
    """``expression`` (a timestamptz) as the storage's ISO text."""
    return ("to_char((%s) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
            % expression)


class DashboardOperations:
    """Mixed into ``PostgresStorage``."""

    def operator_view(self, failure_limit: int = 50) -> OperatorView:
        with self.connection() as conn:
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ,"
                             " READ ONLY")
                now, hour_ago, day_ago = conn.execute(
                    "SELECT %s, %s, %s" % (
                        _utc_text("now()"), _utc_text("now() - interval '1 hour'"),
                        _utc_text("now() - interval '1 day'"))).fetchone()
                tasks = {}
                for agent, state, count in conn.execute(
                        "SELECT agent, state, count(*) FROM a2a_tasks"
                        " GROUP BY agent, state"):
                    tasks.setdefault(agent, {})[state] = count
                turns = [tuple(row) for row in conn.execute(
                    "SELECT agent, substr(updated_at, 1, 16) AS minute, count(*)"
                    " FROM a2a_tasks WHERE updated_at >= %s AND state <> 'working'"
                    " GROUP BY agent, minute ORDER BY agent, minute", (hour_ago,))]
                failures = conn.execute(
                    "SELECT " + _COLUMNS + ", tenant FROM a2a_tasks WHERE"
                    " updated_at >= %s AND state = 'failed'"
                    " ORDER BY updated_at DESC, id DESC LIMIT %s",
                    (day_ago, failure_limit)).fetchall()
                ended = [tuple(row) for row in conn.execute(
                    "SELECT id, agent, owner, tenant, state, created_at, updated_at"
                    " FROM a2a_tasks WHERE updated_at >= %s AND state <> ALL(%s)"
                    " ORDER BY updated_at DESC, id DESC LIMIT %s",
                    (hour_ago, list(NOT_ENDED), SLOWEST_SAMPLE))]
                slowest = slowest_turns(ended, lambda batch: [
                    row[0] for row in conn.execute(
                        "SELECT task_id FROM a2a_messages WHERE task_id = ANY(%s)"
                        " AND role = 'user' GROUP BY task_id HAVING count(*) > 1",
                        (list(batch),))])
                depth, oldest, queued, leases, workers = queue_and_workers(conn)
                version, size = conn.execute(
                    "SELECT (SELECT max(version) FROM a2a_schema_version),"
                    " pg_database_size(current_database())").fetchone()
        callers, by_tenant = queue_by_caller(queued)
        return OperatorView(now, tasks, turns, depth, oldest, callers, leases,
                            [with_tenant(_record(row), row[-1]) for row in failures],
                            {"backend": "postgresql", "schema_version": version,
                             "database_bytes": size},
                            queue_tenants=by_tenant, workers=workers,
                            slowest=slowest, slowest_of=len(ended))
