"""A process's SQLite connections are bounded (MAX_CONNECTIONS): a thread
past the bound waits for one handed back, within A2A_BUSY_TIMEOUT_MS, then
gets "the storage is busy" with nothing stored; an agent holds none while it
waits on something else after reading the storage."""

import threading

import pytest

from a2a_flask.agent.api import Reply
from a2a_flask.storage.errors import StorageBusyError
from a2a_flask.storage.sqlite import SqliteStorage
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
