"""A process's SQLite connections are bounded (MAX_CONNECTIONS): a thread
past the bound waits for one handed back, within A2A_BUSY_TIMEOUT_MS, then
gets "the storage is busy" with nothing stored; an agent holds none while it
waits on something else after reading the storage; a thread with none takes
one for a transaction only once it holds the process's write lock."""

import threading
import time
from types import SimpleNamespace

import pytest

from a2a_flask.agent.api import Reply
from a2a_flask.storage.errors import StorageBusyError
from a2a_flask.storage.sqlite import SqliteStorage
from a2a_flask.storage.sqlite.pool import ConnectionPool, Lease
from helpers import Rpc, wait_until

OWNER, AGENT = "key:key_1", "echo"
BOUND, THREADS = 4, 64


def _message(text):
    return {"kind": "message", "role": "user", "messageId": "m-" + text,
            "parts": [{"kind": "text", "text": text}]}


def _storage(tmp_path, bound, busy_timeout_ms=5000):
    storage = SqliteStorage(str(tmp_path / "pool.sqlite3"),
                            busy_timeout_ms=busy_timeout_ms)
    storage.MAX_CONNECTIONS = bound
    storage.migrate()
    opened = []
    open_connection = storage._open

    def counted(create):
        opened.append(threading.get_ident())
        return open_connection(create)

    storage._open = counted
    return storage, opened


def test_many_threads_at_once_open_at_most_the_bound(tmp_path):
    storage, opened = _storage(tmp_path, BOUND)
    start, failures = threading.Barrier(THREADS), []

    def use(n):
        try:
            start.wait()
            # No release_connection: each thread keeps its connection until
            # it ends, and its thread-local gives it back to the next one.
            began = storage.start_turn(OWNER, AGENT, _message("t%d" % n))
            storage.get_task(began.task_id, OWNER, AGENT)
            storage.task_state(began.task_id)
        except Exception as exc:  # pragma: no cover - the failure shown below
            failures.append(repr(exc))

    threads = [threading.Thread(target=use, args=(n,)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == []
    assert storage.count_tasks(owner=OWNER) == THREADS
    assert len(opened) <= BOUND  # 64 before: one per thread


def test_a_thread_past_the_bound_is_told_busy_and_nothing_is_stored(tmp_path):
    storage, _ = _storage(tmp_path, bound=1, busy_timeout_ms=200)
    holding, done = threading.Event(), threading.Event()

    def hold():  # a thread that keeps the one connection a while
        storage.task_state("none")
        holding.set()
        done.wait(60)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert holding.wait(30)
        with pytest.raises(Exception) as refused:
            storage.start_turn(OWNER, AGENT, _message("late"))
        assert isinstance(storage.failure(refused.value), StorageBusyError)
    finally:
        done.set()
        holder.join(30)
    # The holder ended: its connection came back, and the write had left nothing.
    assert storage.count_tasks() == 0
    storage.start_turn(OWNER, AGENT, _message("again"))
    assert storage.count_tasks() == 1
    assert storage.connections_in_use() == 1  # this thread's, the only one


def test_an_agent_holds_no_connection_while_it_waits_after_reading(make_app):
    read, gate = threading.Event(), threading.Event()

    def reader(turn):
        turn.history, turn.context_history, turn.recent(3), turn.canceled
        turn.progress("thinking")
        read.set()
        gate.wait(60)  # a model answering
        return Reply("read")

    app, a2a = make_app(register=lambda a2a: a2a.add_agent("reader", reader))
    storage = app.extensions["a2a"].storage
    answers = []
    caller = threading.Thread(target=lambda: answers.append(
        Rpc(app.test_client(), agent="reader").send("hi")))
    caller.start()
    try:
        assert read.wait(30)
        storage.release_connection()  # this test thread's own, if any
        assert storage.connections_in_use() == 0
    finally:
        gate.set()
        caller.join(30)
    wait_until(lambda: answers, what="the answer")
    assert answers[0]["status"]["state"] == "completed"


def test_writers_queued_for_the_write_lock_hold_no_connection(tmp_path):
    # Twelve background turns ending together (``flask a2a worker``) each
    # took a connection, then queued for the write lock with it: twelve
    # connections open for one write at a time.
    storage, opened = _storage(tmp_path, bound=16)
    writers, start, failures = 12, threading.Barrier(13), []

    def write(n):
        try:
            start.wait()
            storage.insert_user("user%d" % n, "hash")
            storage.release_connection()  # as each turn's thread does
        except Exception as exc:  # pragma: no cover - the failure shown below
            failures.append(repr(exc))

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    with storage._writer.hold():  # another write in progress
        for thread in threads:
            thread.start()
        start.wait()
        time.sleep(0.3)  # all queued behind it
        assert opened == []
    for thread in threads:
        thread.join(60)
    assert failures == []
    assert len(storage.users()) == writers
    assert len(opened) <= 2  # 12 before


def test_the_write_locks_holder_never_waits_for_a_connection(tmp_path):
    # The one connection is held by a thread that will want the write lock
    # next; the lock's holder, waiting for that connection, would hold every
    # writer of the process until the busy timeout ("the storage is busy").
    storage, opened = _storage(tmp_path, bound=1, busy_timeout_ms=1000)
    holding, go, failures = threading.Event(), threading.Event(), []

    def read_then_write():
        try:
            storage.task_state("none")  # takes the only connection
            holding.set()
            go.wait(30)
            storage.insert_user("second", "hash")
            storage.release_connection()
        except Exception as exc:  # pragma: no cover - the failure shown below
            failures.append(repr(exc))

    def write():
        try:
            storage.insert_user("first", "hash")
            storage.release_connection()
        except Exception as exc:  # pragma: no cover - the failure shown below
            failures.append(repr(exc))

    second = threading.Thread(target=read_then_write)
    second.start()
    try:
        assert holding.wait(30)
        first = threading.Thread(target=write)
        first.start()
        first.join(30)
        assert failures == []  # "database is locked" before, after the busy timeout
    finally:
        go.set()
        second.join(30)
    assert failures == []
    assert len(opened) == 2  # one past the bound, for the lock's holder
    assert storage._connection_pool()._open == 1  # closed when handed back
    assert sorted(name for name, _ in storage.users()) == ["first", "second"]


def _pool(limit):
    opened = []

    def open_connection():
        opened.append(SimpleNamespace(in_transaction=False, closed=False))
        opened[-1].close = lambda conn=opened[-1]: setattr(conn, "closed", True)
        return opened[-1], None

    return ConnectionPool(limit, open_connection, writers=1), opened


def test_a_connection_handed_back_goes_to_the_oldest_waiter():
    pool, opened = _pool(1)
    held, got = pool.take(time.monotonic() + 30), {}

    def wait(name):
        got[name] = pool.take(time.monotonic() + 30)

    first = threading.Thread(target=wait, args=("first",))
    first.start()
    wait_until(lambda: len(pool._waiters) == 1, what="the first waiter")
    second = threading.Thread(target=wait, args=("second",))
    second.start()
    wait_until(lambda: len(pool._waiters) == 2, what="the second waiter")
    pool.give_back(held)
    first.join(30)
    assert got == {"first": held}  # the second still waits
    pool.give_back(got["first"])
    second.join(30)
    assert got["second"] is held and len(opened) == 1


def test_a_thread_local_that_goes_while_its_thread_holds_the_pool_gives_back_later():
    pool, _ = _pool(1)
    leases = [Lease()]
    leases[0].pool, leases[0].entry = pool, pool.take(time.monotonic() + 30)

    def collected_while_holding():
        with pool._lock:  # as if the garbage collector ran the destructor here
            leases.pop()  # it must not wait for the lock its own thread holds

    thread = threading.Thread(target=collected_while_holding, daemon=True)
    thread.start()
    thread.join(30)
    assert not thread.is_alive()
    assert pool.in_use() == 0
    assert pool.take(time.monotonic() + 30) is not None


def test_a_forked_child_opens_its_own_connection_and_pool(tmp_path):
    # The process id is read once and again in each child os.fork makes (a
    # system call saved on every use): a child that took it for its parent's
    # would write through the parent's connection and pool.
    import os
    storage = SqliteStorage(str(tmp_path / "fork.sqlite3"))
    storage.migrate()
    storage.start_turn(OWNER, AGENT, _message("parent"))
    parents = storage.connection(), storage._connection_pool()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports by its exit code
        code = 3
        try:
            mine = storage.connection(), storage._connection_pool()
            code = 1 if mine[0] is parents[0] or mine[1] is parents[1] else 0
            if code == 0:
                storage.start_turn(OWNER, AGENT, _message("child"))
                storage.release_connection()
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.WEXITSTATUS(status) == 0
    assert storage.connection() is parents[0]  # the parent's own, untouched
    assert storage.count_tasks() == 2


def test_a_connection_taken_past_the_limit_is_closed_when_handed_back():
    pool, opened = _pool(1)
    held = pool.take(time.monotonic() + 30)
    extra = pool.take(time.monotonic(), past_limit=True)  # no wait, none idle
    assert extra is not held and len(opened) == 2
    pool.give_back(extra)
    assert opened[1].closed and pool._open == 1
    pool.give_back(held)
    assert not opened[0].closed and pool.take(time.monotonic(), past_limit=True) is held
