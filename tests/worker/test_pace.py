"""How often a watcher looks at the store's change marker (waits.Pace): every
BUSY_TICK for BUSY_SECONDS after a change it saw, else every TICK. A busy
worker so claims a queued turn about a millisecond after its commit, and an
idle one still looks only TICK apart (docs/benchmarks.md); and a signal that
lands inside one of those looks still stops the worker."""

import threading
import types

import pytest

from a2a_flask import waits
from a2a_flask import worker as worker_module
from a2a_flask.worker import Worker
from helpers import wait_until


def test_a_pace_is_quick_only_within_busy_seconds_of_a_change(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(waits, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    pace = waits.Pace()
    assert pace.tick() == waits.TICK  # nothing seen yet: idle
    pace.saw_change()
    assert pace.tick() == waits.BUSY_TICK
    now[0] += waits.BUSY_SECONDS - 0.01
    assert pace.tick() == waits.BUSY_TICK
    now[0] += 0.02
    assert pace.tick() == waits.TICK


class _Marker:
    """A storage whose change marker moves after ``looks`` looks."""

    def __init__(self, looks):
        self.looks, self.seen = looks, 0

    def change_marker(self):
        self.seen += 1
        return self.seen >= self.looks


class _Interrupt:
    """An event never set, recording the timeouts it is waited with."""

    def __init__(self):
        self.timeouts = []

    def wait(self, timeout):
        self.timeouts.append(timeout)
        return False


def test_a_wait_looks_at_the_pace_s_tick_and_tells_it_of_the_change():
    pace, interrupt = waits.Pace(), _Interrupt()
    waits.wait_for_change(_Marker(3), False, 60, interrupt, pace)
    assert interrupt.timeouts == [waits.TICK] * 3  # idle until the change...
    assert pace.tick() == waits.BUSY_TICK  # ...which it saw
    interrupt = _Interrupt()
    waits.wait_for_change(_Marker(2), False, 60, interrupt, pace)
    assert interrupt.timeouts == [waits.BUSY_TICK] * 2


@pytest.fixture
def quick(make_rpc):
    """(an app's client of its background agent ``quick``, a Worker of it, not running)."""
    rpc = make_rpc(lambda a2a: a2a.add_agent("quick", lambda turn: "quick " + turn.text,
                                             background=True), agent="quick")
    with rpc.app.app_context():
        return rpc, Worker(rpc.app.extensions["a2a"], threads=2, grace=5)


def test_the_dispatcher_looks_quickly_after_a_claim_and_slowly_when_idle(quick, monkeypatch):
    rpc, runner = quick
    ticks, real_wait = [], worker_module.wait_for_change

    def spy(storage, since, seconds, interrupt, pace=None):
        ticks.append(pace.tick())
        return real_wait(storage, since, min(seconds, 0.05), interrupt, pace)
    monkeypatch.setattr(worker_module, "wait_for_change", spy)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    try:
        wait_until(lambda: len(ticks) >= 2, 10, "the dispatcher's first waits")
        assert set(ticks) == {waits.TICK}  # idle: no turn claimed yet
        task = rpc.result("message/send", {"message": {
            "kind": "message", "role": "user", "messageId": "m-pace",
            "parts": [{"kind": "text", "text": "hi"}]}})
        assert task["status"]["state"] == "completed", task
        seen = len(ticks)
        wait_until(lambda: len(ticks) >= seen + 2, 10, "the dispatcher's waits after the turn")
        assert ticks[-1] == waits.BUSY_TICK  # the claim made it busy
    finally:
        runner.stop()
        thread.join(10)
    assert not thread.is_alive()


def test_a_signal_that_lands_inside_the_dispatcher_s_wait_stops_it(quick):
    """SIGTERM's handler runs on the dispatcher's own thread, maybe while
    it holds ``_wake``'s lock (inside ``Event.wait`` or ``clear``, which the
    quick pace calls a thousand times a second): the handler must not take
    that lock, and the dispatcher must still stop."""
    _, runner = quick
    handled = []

    def interrupted_inside_the_lock():
        with runner._wake._cond:  # where the dispatcher was when the signal came
            runner.stop_on_signal(15, None)
            handled.append(True)
    thread = threading.Thread(target=interrupted_inside_the_lock, daemon=True)
    thread.start()
    thread.join(5)
    assert handled == [True]  # stop() here would wait for itself for ever
    dispatcher = threading.Thread(target=runner.run, daemon=True)
    dispatcher.start()
    dispatcher.join(10)
    assert not dispatcher.is_alive()
