"""The operator's page reads no task row it does not show (SQLite): each
statement ``operator_view`` runs is explained by SQLite itself, and every
read of ``a2a_tasks`` is an index's (the counts one pass over the covering
state index, the rest index ranges), never a scan of the table."""

import pytest

from a2a_flask.storage.sqlite import SqliteStorage
from storage_helpers import agent_reply, msg


@pytest.fixture
def sqlite_storage(storage):
    if not isinstance(storage, SqliteStorage):
        pytest.skip("SQLite's plans; PostgreSQL's planner chooses by its statistics")
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
    selects = [sql for sql in seen if sql.lstrip().upper().startswith("SELECT")]
    on_tasks = [sql for sql in selects if "FROM a2a_tasks" in sql]
    assert len(on_tasks) >= 5  # the counts, then per (caller, agent, state)
    for sql in selects:
        plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
        for step in plan:
            if "a2a_tasks" in step:
                assert ("USING COVERING INDEX a2a_tasks_state" in step
                        or step.startswith("SEARCH a2a_tasks USING INDEX a2a_tasks_state")), (
                    sql, plan)
            # The one-row version table is the only table scanned.
            assert not (step.startswith("SCAN") and "INDEX" not in step
                        and "a2a_schema_version" not in step), (sql, plan)
