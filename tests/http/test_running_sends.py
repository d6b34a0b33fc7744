"""The sends one process runs at once (A2A_RUNNING_SENDS, issue 31): the
others wait in order of arrival; a send gives its place back while its agent
runs, while a blocking send waits, and takes one again ahead of new sends; a
send holding its place past ``STUCK_SECONDS`` is counted out so that the
next one starts; reads are not limited. Its effect on p99 under gthread:
docs/benchmarks.md, "Running sends"."""

import threading
import time

import pytest

from a2a_flask import running
from a2a_flask.running import RunningSends
from helpers import Rpc


def _wait_for(check, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


class _Sends:
    """Threads each running one send in ``limit.held()``: ``started`` lists
    their names in the order they got a place; each ends when its gate opens."""

    def __init__(self, limit):
        self.limit, self.started, self.threads, self.gates = limit, [], [], {}

    def start(self, name, body=None):
        gate = self.gates[name] = threading.Event()

        def run():
            with self.limit.held():
                self.started.append(name)
                (body or gate.wait)()

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self.threads.append(thread)
        return thread

    def queued(self, count):
        _wait_for(lambda: len(self.limit._waiters) == count)

    def end(self, name):
        self.gates[name].set()

    def join(self):
        for name in self.gates:
            self.gates[name].set()
        for thread in self.threads:
            thread.join(5)
            assert not thread.is_alive()


@pytest.fixture
def long_stuck(monkeypatch):
    """Nothing counted out while a test orders its sends."""
    monkeypatch.setattr(running, "STUCK_SECONDS", 60.0)


def test_sends_past_the_limit_start_in_order_of_arrival(long_stuck):
    sends = _Sends(RunningSends(2))
    sends.start("a")
    sends.start("b")
    _wait_for(lambda: len(sends.started) == 2)
    for i, name in enumerate(["c", "d", "e"]):
        sends.start(name)
        sends.queued(i + 1)
    sends.end("b")
    _wait_for(lambda: len(sends.started) == 3)
    sends.end("a")
    _wait_for(lambda: len(sends.started) == 4)
    sends.end("c")
    _wait_for(lambda: len(sends.started) == 5)
    assert sends.started == ["a", "b", "c", "d", "e"]
    sends.join()
    assert sends.limit._free == 2 and not sends.limit._holders


def test_a_paused_send_takes_a_place_again_ahead_of_sends_not_started(long_stuck):
    limit = RunningSends(1)
    sends = _Sends(limit)
    in_pause, resume, order = threading.Event(), threading.Event(), []

    def pausing():
        with limit.paused():
            in_pause.set()
            resume.wait(5)
        order.append("a again")
        sends.gates["a"].wait(5)

    sends.start("a", pausing)
    in_pause.wait(5)
    sends.start("b")  # gets the place "a" gave back
    _wait_for(lambda: "b" in sends.started)
    sends.start("c")
    sends.queued(1)
    resume.set()  # "a" waits again, before "c"
    sends.queued(2)
    sends.end("b")
    _wait_for(lambda: order == ["a again"])
    assert sends.started == ["a", "b"]
    sends.join()
    assert sends.started == ["a", "b", "c"]
    assert limit.stuck == 0 and limit._free == 1


@pytest.fixture
def one_stuck():
    """A limit of one, its place held by a send that does not end until
    the test is done; afterwards the limit must be whole again (a
    counted-out send's place was replaced, not lost or doubled)."""
    limit = RunningSends(1)
    sends = _Sends(limit)
    sends.start("stuck")
    _wait_for(lambda: sends.started == ["stuck"])
    yield limit, sends
    sends.join()
    assert limit._free == 1 and not limit._holders


def test_a_send_holding_its_place_too_long_is_counted_out(one_stuck):
    limit, sends = one_stuck
    began = time.monotonic()
    sends.start("next")
    _wait_for(lambda: len(sends.started) == 2, timeout=2)
    # Once "stuck" held it STUCK_SECONDS, not until it ends.
    assert time.monotonic() - began < 10 * running.STUCK_SECONDS
    assert limit.stuck == 1


def test_a_send_arriving_counts_out_a_stuck_holder_at_once(monkeypatch, one_stuck):
    # No waiter looked yet: the arrival itself finds the holder stuck.
    limit, _ = one_stuck
    time.sleep(2 * running.STUCK_SECONDS)

    def no_waiting(*args):
        raise AssertionError("the arrival waited")

    monkeypatch.setattr(running, "_SendWaiter", no_waiting)
    with limit.held():
        assert limit.stuck == 1


def test_only_the_first_waiters_look_often_for_stuck_sends(long_stuck):
    # Hundreds of waiters each waking every 25 ms would cost a core.
    limit = RunningSends(1)
    sends = _Sends(limit)
    near, far = running.STUCK_SECONDS / 2, running.FAR_LOOK_SECONDS
    with limit.held():
        for i in range(5):
            sends.start(str(i))
            sends.queued(i + 1)
        assert [limit._look_every(w) for w in limit._waiters] == [near, near, far, far, far]
    _wait_for(lambda: sends.started == ["0"])
    assert [limit._look_every(w) for w in limit._waiters] == [near, near, far, far]
    sends.join()


def test_no_limit_runs_every_send_at_once():
    limit = RunningSends(0)
    sends = _Sends(limit)
    for name in "abcd":
        sends.start(name)
    _wait_for(lambda: len(sends.started) == 4)
    sends.join()


def test_a_send_failing_gives_its_place_back():
    limit = RunningSends(1)
    with pytest.raises(RuntimeError):
        with limit.held():
            raise RuntimeError("agent failed")
    assert limit._free == 1 and not limit._holders


def test_a_send_interrupted_while_it_takes_its_place_again_leaves_none_taken(
        monkeypatch, long_stuck):
    class Lock:
        def __init__(self):
            self.sends = 0

        def acquire(self, timeout=-1):
            self.sends += 1
            if self.sends > 1:  # the wait, not the setup
                raise KeyboardInterrupt

    class Waiter(running._SendWaiter):
        def __init__(self, *args):
            super().__init__(*args)
            self.woken = Lock()

    limit = RunningSends(1)
    sends = _Sends(limit)
    with pytest.raises(KeyboardInterrupt):
        with limit.held():
            with limit.paused():
                sends.start("b")
                _wait_for(lambda: sends.started == ["b"])
                monkeypatch.setattr(running, "_SendWaiter", Waiter)
    assert not limit._waiters
    sends.join()
    assert limit._free == 1 and not limit._holders


@pytest.mark.parametrize("backend,limit", [("sqlite", 2), ("postgres", 0)])
def test_unset_the_limit_is_the_storages(request, make_app, backend, limit):
    # PostgreSQL's sends wait on the database server: two at a time left
    # the process idle meanwhile (docs/benchmarks.md, "Running sends").
    config = {}
    if backend == "postgres":
        config["A2A_DATABASE"] = request.getfixturevalue("postgres_url")
    app, _ = make_app(**config)
    assert app.extensions["a2a"].running_sends.limit == limit
    app, _ = make_app(A2A_RUNNING_SENDS=3, **config)
    assert app.extensions["a2a"].running_sends.limit == 3


@pytest.mark.parametrize("value", [-1, "two"])
def test_the_setting_is_checked(make_app, value):
    with pytest.raises(ValueError, match="A2A_RUNNING_SENDS"):
        make_app(A2A_RUNNING_SENDS=value)


# -- through HTTP: a waiting send leaves its place to the others ------------

def _gated(a2a):
    gate = a2a.gate = threading.Event()
    a2a.running = threading.Event()

    def waits(turn):
        a2a.running.set()
        gate.wait(10)
        return "opened " + turn.text

    a2a.add_agent("waits", waits)
    a2a.add_agent("queued", lambda turn: turn.text, background=True)


@pytest.fixture
def one_at_a_time(make_app):
    app, a2a = make_app(_gated, A2A_RUNNING_SENDS=1, A2A_BLOCKING_WAIT_SECONDS=1)
    return app, a2a, app.extensions["a2a"].running_sends


def _in_thread(target):
    answers = []
    thread = threading.Thread(target=lambda: answers.append(target()), daemon=True)
    thread.start()
    return thread, answers


def test_an_agent_running_in_the_request_leaves_its_place_to_other_sends(one_at_a_time):
    app, a2a, limit = one_at_a_time
    thread, answers = _in_thread(
        lambda: Rpc(app.test_client(), agent="waits").send("hi"))
    assert a2a.running.wait(5)
    # The agent waits: another call runs at once, nobody counted out.
    echo = Rpc(app.test_client(), agent="echo").send("meanwhile")
    assert echo["status"]["state"] == "completed"
    assert limit.stuck == 0
    a2a.gate.set()
    thread.join(5)
    assert answers[0]["status"]["state"] == "completed"
    assert answers[0]["artifacts"][0]["parts"][0]["text"] == "opened hi"
    assert limit.stuck == 0 and limit._free == 1


def test_a_blocking_send_waiting_leaves_its_place_to_other_sends(one_at_a_time):
    app, _, limit = one_at_a_time
    waits, waiting = app.extensions["a2a"].task_waits, threading.Event()
    wait = waits.wait
    waits.wait = lambda *args: waiting.set() or wait(*args)
    # No worker: the blocking send waits A2A_BLOCKING_WAIT_SECONDS (1 s).
    thread, answers = _in_thread(
        lambda: Rpc(app.test_client(), agent="queued").send("hi"))
    assert waiting.wait(5)
    echo = Rpc(app.test_client(), agent="echo").send("meanwhile")
    assert echo["status"]["state"] == "completed"
    assert limit.stuck == 0
    thread.join(5)
    assert answers[0]["status"]["state"] == "working"
    assert limit.stuck == 0 and limit._free == 1


def test_a_read_does_not_wait_for_a_place(one_at_a_time):
    # Reads are short: handing places over cost them throughput
    # (docs/benchmarks.md, "Running sends").
    app, _, limit = one_at_a_time
    rpc = Rpc(app.test_client(), agent="echo")
    task = rpc.send("hi")
    holding, done = threading.Event(), threading.Event()

    def a_send_running():
        with limit.held():
            holding.set()
            done.wait(10)

    thread = threading.Thread(target=a_send_running, daemon=True)
    thread.start()
    assert holding.wait(5)
    for method in ("tasks/get", "tasks/cancel"):
        status, answer = rpc.call(method, {"id": task["id"]})
        assert status == 200 and ("result" in answer or "error" in answer)
    assert rpc.result("tasks/get", {"id": task["id"]})["status"]["state"] == "completed"
    assert limit.stuck == 0 and not limit._waiters
    done.set()
    thread.join(5)
    assert limit._free == 1


def test_only_the_sends_of_each_binding_take_a_place():
    from a2a_flask.protocol.v03 import jsonrpc as v03
    from a2a_flask.protocol.v10 import jsonrpc as v10, rest
    assert {n for n, m in v03.METHODS.items() if m.runs_turn} == {"message/send"}
    assert {n for n, m in v10.METHODS.items() if m.runs_turn} == {"SendMessage"}
    assert {r.name for r in rest.ROUTES if r.runs_turn} == {"SendMessage"}
    send = next(r for r in rest.ROUTES if r.name == "SendMessage")
    get = next(r for r in rest.ROUTES if r.name == "GetTask")
    assert rest.RestCall(send, {}).runs_turn is True
    assert rest.RestCall(get, {"id": "t"}).runs_turn is False
