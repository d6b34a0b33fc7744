"""The operator's page reads no task row it does not show (SQLite): each
statement ``operator_view`` runs is explained by SQLite itself, and every
read of ``a2a_tasks`` is an index's (the counts and the turns per minute
ranges of the covering state index, the rows of the failures and of the
slowest turns shown by their key),
never a scan of the table, and never sorts the rows it counts."""

import pytest

from a2a_flask.storage.sqlite import SqliteStorage
from storage_helpers import agent_reply, msg


@pytest.fixture
def sqlite_storage(tmp_path):
    # SQLite only (no skip on PostgreSQL: its planner chooses by statistics).
    storage = SqliteStorage(str(tmp_path / "plans.sqlite3"))
    storage.migrate()
    for owner in ("alice", "bob"):
        for i in range(20):
            start = storage.start_turn(owner, "echo", msg("t%d" % i))
            storage.finish_turn(start.task_id, owner, "echo",
                                "failed" if i % 4 == 0 else "completed",
                                agent_reply(start))
    storage.enqueue_turn("alice", "slow", msg("queued"))
    return storage


def test_every_read_of_the_tasks_is_an_index_s(sqlite_storage):
    storage = sqlite_storage
    seen = []
    conn = storage.connection()
    conn.set_trace_callback(seen.append)
    try:
        view = storage.operator_view()
    finally:
        conn.set_trace_callback(None)
    assert view.tasks["echo"] == {"completed": 30, "failed": 10}
    assert len(view.failures) == 10
    assert [(agent, count) for agent, _, count in view.turns] == [("echo", 40)]
    selects = [sql for sql in seen
               if sql.lstrip().upper().startswith(("SELECT", "WITH"))]
    row_reads = []
    for sql in selects:
        # SQLite before 3.36 says "SCAN TABLE x", "SEARCH TABLE x".
        plan = [row[3].replace(" TABLE ", " ", 1)
                for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
        for step in plan:
            if "a2a_tasks" in step:
                if step.startswith("SEARCH a2a_tasks USING PRIMARY KEY (id=?)"):
                    row_reads.append(sql)  # the rows shown, by their ids
                else:
                    assert "USING COVERING INDEX a2a_tasks_state" in step, (sql, plan)
            # The one-row version table, the workers' table (a row per
            # running claimer) and the minutes' constant rows (the CTE
            # "slots"; "SUBQUERY n" before 3.36) are the only ones scanned.
            assert not (step.startswith("SCAN") and "INDEX" not in step
                        and "a2a_schema_version" not in step
                        and step != "SCAN a2a_workers"
                        and "CONSTANT ROWS" not in step
                        and step != "SCAN slots"
                        and not step.startswith("SCAN SUBQUERY")), (sql, plan)
        if "FROM a2a_tasks" in sql:
            # A GROUP BY the minute's text sorts every task it counts.
            assert not any("TEMP B-TREE" in step for step in plan), (sql, plan)
    # The failures shown and the slowest turns shown, each in one read.
    assert len(row_reads) == 2, row_reads
