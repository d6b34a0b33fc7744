"""Blocking means blocking (A2A 1.0 section 3.2.2): a blocking send to a
background agent answers only a terminal or interrupted state, however long
the turn takes, without holding a database transaction while it waits; 0.3
and 1.0, JSON-RPC and HTTP+JSON. A2A_BLOCKING_WAIT_SECONDS is an operator's
opt-in cap. In one process, with ``Worker`` in a thread; through gunicorn
with the shipped configuration: tests/servers/test_server_waiting.py."""

import sqlite3
import threading
import time

import pytest

from a2a_flask import InputRequired, Reply
from a2a_flask.worker import Worker
from helpers import Rpc, message, wait_until

#: Past the cap every blocking send had before (10 s): a send answered
#: before this is answered by a cap, not by the turn.
LONGER_THAN_THE_OLD_CAP = 10.5


def _register(a2a):
    gate = a2a.gate = threading.Event()
    a2a.started = []

    def gated(turn):
        a2a.started.append(turn.task_id)
        gate.wait(60)
        return Reply("done " + turn.text)

    a2a.add_agent("gated", gated, background=True)
    a2a.add_agent("asks", lambda turn: InputRequired("which one?"), background=True)

    def asks_first(turn):
        if not turn.history:
            return InputRequired("which one?")
        gate.wait(60)
        return Reply("done " + turn.text)

    a2a.add_agent("asks_first", asks_first, background=True)


@pytest.fixture
def service(make_app):
    def build(**config):
        app, a2a = make_app(_register, **config)
        runner = Worker(app.extensions["a2a"], threads=8, grace=5)
        thread = threading.Thread(target=runner.run, daemon=True)
        thread.start()
        service.stops.append((a2a, runner, thread))
        return app, a2a
    service.stops = []
    yield build
    for a2a, runner, thread in service.stops:
        a2a.gate.set()
        runner.stop()
        thread.join(10)


def _v03(app, blocking):
    configuration = {} if blocking is None else {"configuration": {"blocking": blocking}}
    answer = Rpc(app.test_client(), agent="gated").result(
        "message/send", dict({"message": message("a")}, **configuration))
    return answer["status"]["state"]


def _v10_jsonrpc(app, return_immediately):
    params = {"message": message("b", version="1.0")}
    if return_immediately is not None:
        params["configuration"] = {"returnImmediately": return_immediately}
    answer = Rpc(app.test_client(), agent="gated", version="1.0").result("SendMessage", params)
    return answer["task"]["status"]["state"]


def _v10_rest(app, return_immediately):
    body = {"message": message("c", version="1.0")}
    if return_immediately is not None:
        body["configuration"] = {"returnImmediately": return_immediately}
    status, answer = Rpc(app.test_client(), agent="gated", version="1.0").rest(
        "POST", "/message:send", body)
    assert status == 200, answer
    return answer["task"]["status"]["state"]


CALLS = [(_v03, None), (_v03, True), (_v10_jsonrpc, None), (_v10_jsonrpc, False),
         (_v10_rest, None), (_v10_rest, False)]


def test_a_blocking_send_waits_for_the_outcome_however_long_the_turn(service, tmp_path):
    app, a2a = service()
    answers = [None] * len(CALLS)

    def call(i, send, blocking):
        answers[i] = send(app, blocking)

    threads = [threading.Thread(target=call, args=(i,) + c) for i, c in enumerate(CALLS)]
    for thread in threads:
        thread.start()
    began = time.monotonic()
    while len(a2a.started) < len(CALLS):
        assert time.monotonic() - began < 30, "the worker did not start the turns"
        time.sleep(0.05)
    # Nobody holds a transaction while waiting: the write lock is free.
    host = sqlite3.connect(str(tmp_path / "a2a.sqlite3"), timeout=0,
                           isolation_level=None)
    host.execute("BEGIN IMMEDIATE")
    host.execute("COMMIT")
    host.close()
    time.sleep(max(LONGER_THAN_THE_OLD_CAP - (time.monotonic() - began), 0))
    assert answers == [None] * len(CALLS)  # all still waiting
    a2a.gate.set()
    for thread in threads:
        thread.join(30)
    assert answers == ["completed"] * 2 + ["TASK_STATE_COMPLETED"] * 4


def test_an_interrupted_turn_answers_the_blocking_send(service):
    app, _ = service()
    assert Rpc(app.test_client(), agent="asks").send("x")["status"]["state"] \
        == "input-required"
    status, answer = Rpc(app.test_client(), agent="asks", version="1.0").rest(
        "POST", "/message:send", {"message": message("y", version="1.0")})
    assert answer["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


def test_non_blocking_sends_answer_working_at_once(service):
    app, a2a = service()
    assert _v03(app, False) == "working"
    assert _v10_jsonrpc(app, True) == "TASK_STATE_WORKING"
    assert _v10_rest(app, True) == "TASK_STATE_WORKING"


@pytest.mark.parametrize("send, blocking", CALLS[::2])
def test_an_operators_cap_answers_working_when_it_runs_out(service, send, blocking):
    app, _ = service(A2A_BLOCKING_WAIT_SECONDS=1)
    assert send(app, blocking) in ("working", "TASK_STATE_WORKING")


@pytest.mark.parametrize("value", ["", "none", None])
def test_no_cap_is_the_default_and_can_be_spelled(make_app, value):
    app, _ = make_app(A2A_BLOCKING_WAIT_SECONDS=value)
    assert app.extensions["a2a"].settings.blocking_wait_seconds is None


def _follow_up_v03(app, task_id):
    task = Rpc(app.test_client(), agent="asks_first").send("two", taskId=task_id)
    return task["status"]["state"], task["status"]["message"]["parts"][0]["text"]


def _follow_up_v10(app, task_id):
    task = Rpc(app.test_client(), agent="asks_first", version="1.0").result("SendMessage", {
        "message": message("two", taskId=task_id, version="1.0")})["task"]
    return task["status"]["state"], task["status"]["message"]["parts"][0]["text"]


@pytest.mark.parametrize("follow_up, done", [
    (_follow_up_v03, "completed"), (_follow_up_v10, "TASK_STATE_COMPLETED")])
def test_a_blocking_follow_up_answers_once_its_own_turn_ran(
        service, monkeypatch, follow_up, done):
    """The process's watcher read the task interrupted for the first send's
    waiter; the follow-up queued its turn and began waiting before that read
    woke anyone: its answer is its own turn's outcome, not the task still
    working on it."""
    app, a2a = service()
    storage, waits = app.extensions["a2a"].storage, app.extensions["a2a"].task_waits
    read, woken, found = threading.Event(), threading.Event(), []
    real_states = storage.task_states

    def states_then_pause(task_ids):
        states = real_states(task_ids)
        if not read.is_set() and "input-required" in states.values():
            found.extend(task_ids)
            read.set()
            woken.wait(30)  # the follow-up queues and waits meanwhile
        return states

    monkeypatch.setattr(storage, "task_states", states_then_pause)
    first = threading.Thread(target=lambda: Rpc(
        app.test_client(), agent="asks_first").send("one"))
    first.start()
    assert read.wait(30)
    answers = []
    second = threading.Thread(target=lambda: answers.append(
        follow_up(app, found[0])))
    second.start()
    wait_until(lambda: len(waits._waiting.get(found[0], ())) == 2,
               what="both sends waiting")
    woken.set()
    second.join(2)  # before: answered at once, the task working on its turn
    a2a.gate.set()
    for thread in (first, second):
        thread.join(30)
    assert answers == [(done, "done two")]
