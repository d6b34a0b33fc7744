"""PostgreSQL finds a task named by its id through the primary key, with or
without statistics: every statement that reads or claims one task by id
(tasks/get's read, plain and within a byte budget, a continuation's claim,
a follow-up's locked read, a message naming another context) is explained
by PostgreSQL on a table that was never analyzed, as a fresh database is
under its first load, and no listing index (owner, agent, ..., id) serves it.

Were the caller's owner and agent compared with ``=``, such an index matches
three of the statement's terms and, before the first ANALYZE, costs the
planner as little as the key: it scans every task of the owner for one id
(docs/benchmarks.md, "PostgreSQL's first minute")."""

import json

import pytest

from a2a_flask.config import Settings
from a2a_flask.storage import open_storage
from a2a_flask.storage.base import ContextMismatchError, TaskEndedError
from storage_helpers import agent_reply, msg

LISTING_INDEXES = ("a2a_tasks_listing", "a2a_tasks_context", "a2a_tasks_state",
                   "a2a_tasks_updated")


@pytest.fixture
def filled(postgres_url, tmp_path):
    """(storage, three tasks waiting for input) among 300 of one caller."""
    storage = open_storage(Settings({"A2A_DATABASE": postgres_url,
                                     "A2A_MIN_FREE_DISK_BYTES": 0},
                                    str(tmp_path / "instance")))
    storage.migrate()
    with storage.connection() as conn:  # no statistics for this test's life
        conn.execute("ALTER TABLE a2a_tasks SET (autovacuum_enabled = off)")
    # One caller's tasks, as a single-key deployment has them.
    waiting = []
    for i in range(300):
        start = storage.start_turn("alice", "echo", msg("t%d" % i))
        storage.finish_turn(start.task_id, "alice", "echo",
                            "input-required" if i < 3 else "completed",
                            agent_reply(start))
        waiting += [start] if i < 3 else []
    with storage.connection() as conn:
        assert conn.execute("SELECT last_analyze, last_autoanalyze FROM"
                            " pg_stat_user_tables WHERE relname = 'a2a_tasks'"
                            ).fetchone() == (None, None)
    yield storage, waiting
    storage.close()


def _by_id(monkeypatch, call):
    """(what ``call()`` returned, None when it refused a context; the
    statements it ran on one task named by its id, as (sql, params))."""
    import psycopg
    seen, result = [], None
    execute = psycopg.Connection.execute

    def spy(self, query, params=None, **kwargs):
        seen.append((query, params))
        return execute(self, query, params, **kwargs)
    monkeypatch.setattr(psycopg.Connection, "execute", spy)
    try:
        result = call()
    except ContextMismatchError:
        pass
    finally:
        monkeypatch.undo()
    return result, [(sql, params) for sql, params in seen
                    if "a2a_tasks" in sql and "WHERE id = %" in sql]


def _assert_by_primary_key(storage, statements):
    assert statements
    with storage.connection() as conn:
        for sql, params in statements:
            plan = json.dumps(conn.execute("EXPLAIN (FORMAT JSON) " + sql,
                                           params).fetchone()[0])
            assert "a2a_tasks_pkey" in plan, (sql, plan)
            assert not any(index in plan for index in LISTING_INDEXES), (sql, plan)


@pytest.mark.parametrize("max_bytes", [None, 100_000])
@pytest.mark.parametrize("history", [None, 0, 3])
def test_a_read_finds_the_task_by_its_key(filled, monkeypatch, history, max_bytes):
    storage, waiting = filled
    read, statements = _by_id(monkeypatch, lambda: storage.get_task(
        waiting[0].task_id, "alice", "echo", history_length=history,
        max_bytes=max_bytes))
    assert read.state == "input-required"
    _assert_by_primary_key(storage, statements)


def test_a_continuation_claims_the_task_by_its_key(filled, monkeypatch):
    storage, tasks = filled
    waiting = tasks[1]
    started, statements = _by_id(monkeypatch, lambda: storage.start_turn(
        "alice", "echo", msg("more", "u-more"), task_id=waiting.task_id,
        context_id=waiting.context_id))
    assert started.task_id == waiting.task_id
    _assert_by_primary_key(storage, statements)


def test_a_follow_up_and_a_wrong_context_read_the_task_by_its_key(filled, monkeypatch):
    storage, tasks = filled
    waiting = tasks[2]
    queued, statements = _by_id(monkeypatch, lambda: storage.enqueue_turn(
        "alice", "echo", msg("queued", "u-queued"), task_id=waiting.task_id))
    assert queued.task_id == waiting.task_id
    _assert_by_primary_key(storage, statements)
    refused, statements = _by_id(monkeypatch, lambda: storage.start_turn(
        "alice", "echo", msg("elsewhere", "u-elsewhere"), task_id=waiting.task_id,
        context_id="another-context"))
    assert refused is None  # ContextMismatchError
    _assert_by_primary_key(storage, statements)


def test_a_cancel_finds_the_task_by_its_key(filled, monkeypatch):
    storage, waiting = filled
    _, statements = _by_id(monkeypatch, lambda: storage.cancel_task(
        waiting[0].task_id, "alice", "echo"))
    assert storage.get_task(waiting[0].task_id, "alice", "echo").state == "canceled"
    _assert_by_primary_key(storage, statements)


def test_a_refused_cancel_reads_the_state_by_its_key(filled, monkeypatch):
    storage, waiting = filled
    storage.cancel_task(waiting[1].task_id, "alice", "echo")
    ended, statements = _by_id(monkeypatch, lambda: pytest.raises(
        TaskEndedError, storage.cancel_task, waiting[1].task_id, "alice", "echo"))
    assert ended.value.state == "canceled"
    assert len(statements) == 2  # the conditional UPDATE, then the state read
    _assert_by_primary_key(storage, statements)


def test_a_withdrawal_locks_the_task_by_its_key(filled, monkeypatch):
    storage, _ = filled
    start = storage.start_turn("alice", "echo", msg("withdrawn", "u-withdrawn"))
    withdrawn, statements = _by_id(monkeypatch, lambda: storage.withdraw_turn(
        start.task_id, "alice", "echo", "u-withdrawn"))
    assert withdrawn is True
    _assert_by_primary_key(storage, statements)
