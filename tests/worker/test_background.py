"""Background agents in one process: ``message/send`` queues their turns,
``Worker`` (``flask a2a worker``) runs them in a thread here; blocking and
non-blocking sends, progress, cancel, and what stays as it was for agents
without the flag. The same through real processes: test_server_worker.py."""

import threading
import time

import pytest

from a2a_flask.demo import slow
from a2a_flask.storage.base import QUEUED_TEXT
from a2a_flask.worker import Worker
from helpers import add_gated_agent

NON_BLOCKING = {"blocking": False}


# In the compat subset: .ci/matrix runs it on every supported Python and Flask.
pytestmark = pytest.mark.compat


def _register(a2a):
    add_gated_agent(a2a)
    a2a.add_agent("slow", slow, background=True)
    a2a.add_agent("quick", lambda turn: "quick " + turn.text, background=True)


@pytest.fixture
def bg(make_rpc):
    rpc = make_rpc(_register, agent="quick", A2A_BLOCKING_WAIT_SECONDS=5)
    rpc.runtime = rpc.app.extensions["a2a"]
    return rpc


@pytest.fixture
def worker(bg):
    """A worker with 4 threads running in this process until the test ends."""
    with bg.app.app_context():
        runner = Worker(bg.runtime, threads=4, grace=5)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    yield runner
    bg.a2a.gate.set()
    runner.stop()
    thread.join(10)
    assert not thread.is_alive()


def _state_text(task):
    return task["status"]["message"]["parts"][0]["text"]


def _poll(rpc, task_id, state, agent=None, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        task = rpc.result("tasks/get", {"id": task_id}, agent=agent)
        if task["status"]["state"] == state:
            return task
        time.sleep(0.02)
    raise AssertionError("task %s never %s: %s" % (task_id, state, task))


def test_non_blocking_answers_working_and_queued_without_a_worker(bg):
    task = bg.send("hi", configuration=NON_BLOCKING)
    assert task["status"]["state"] == "working"
    assert _state_text(task) == QUEUED_TEXT
    assert [m["role"] for m in task["history"]] == ["user"]
    assert task["artifacts"] == []
    # No worker: it stays queued, the web never runs it.
    assert bg.result("tasks/get", {"id": task["id"]})["status"]["state"] == "working"


def test_blocking_without_a_worker_answers_working_after_the_wait(make_rpc):
    rpc = make_rpc(_register, agent="quick", A2A_BLOCKING_WAIT_SECONDS=0)
    assert rpc.send("hi")["status"]["state"] == "working"


def test_blocking_gets_the_outcome_in_one_call(bg, worker):
    task = bg.send("hi")
    assert task["status"]["state"] == "completed"
    assert _state_text(task) == "quick hi"
    assert [m["role"] for m in task["history"]] == ["user", "agent"]
    assert task["artifacts"][0]["parts"] == [{"kind": "text", "text": "quick hi"}]


def test_non_blocking_then_poll_to_completed(bg, worker):
    # The gated agent: a quick one may finish before the answer's read, and
    # a non-blocking send answers the task as it stands then.
    task = bg.send("hi", agent="waits", configuration=NON_BLOCKING)
    assert task["status"]["state"] == "working"
    bg.a2a.gate.set()
    done = _poll(bg, task["id"], "completed", "waits")
    assert _state_text(done) == "opened hi"


def test_progress_is_visible_then_the_outcome(bg, worker):
    task = bg.send("x", agent="waits", configuration=NON_BLOCKING)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        seen = bg.result("tasks/get", {"id": task["id"]}, agent="waits")
        if _state_text(seen) == "halfway":
            break
        time.sleep(0.02)
    assert (seen["status"]["state"], _state_text(seen)) == ("working", "halfway")
    assert [m["role"] for m in seen["history"]] == ["user"]
    bg.a2a.gate.set()
    assert _state_text(_poll(bg, task["id"], "completed", "waits")) == "opened x"


def test_cancel_of_a_running_turn_discards_its_outcome(bg, worker):
    task = bg.send("x", agent="waits", configuration=NON_BLOCKING)
    _wait_running(worker, task["id"])
    canceled = bg.result("tasks/cancel", {"id": task["id"]}, agent="waits")
    assert canceled["status"]["state"] == "canceled"
    _wait_idle(worker)
    final = bg.result("tasks/get", {"id": task["id"]}, agent="waits")
    assert final["status"]["state"] == "canceled"
    assert [m["role"] for m in final["history"]] == ["user"]


def test_cancel_of_a_queued_turn_means_it_never_runs(bg):
    task = bg.send("x", configuration=NON_BLOCKING)
    assert bg.result("tasks/cancel", {"id": task["id"]})["status"]["state"] == "canceled"
    assert bg.runtime.storage.claim_turns("w", 10, 30) == []


def test_a_continuation_is_queued_too(make_rpc):
    from a2a_flask import InputRequired

    def register(a2a):
        a2a.add_agent("ask", lambda turn: InputRequired("more?") if turn.text == "a"
                      else "got " + turn.text, background=True)
    rpc = make_rpc(register, agent="ask", A2A_BLOCKING_WAIT_SECONDS=5)
    with rpc.app.app_context():
        runner = Worker(rpc.app.extensions["a2a"], threads=1, grace=1)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    try:
        first = rpc.send("a")
        assert first["status"]["state"] == "input-required"
        second = rpc.send("b", taskId=first["id"], contextId=first["contextId"])
        assert (second["status"]["state"], _state_text(second)) == ("completed", "got b")
    finally:
        runner.stop()
        thread.join(5)


def test_an_agent_without_the_flag_completes_inside_a_non_blocking_call(bg):
    task = bg.send("hi", agent="echo", configuration=NON_BLOCKING)
    assert task["status"]["state"] == "completed"


def test_the_demo_slow_agent_reports_each_second_then_is_done(bg, worker):
    task = bg.send("wait 1 please", agent="slow")
    assert task["status"]["state"] == "completed"
    assert _state_text(task) == "done after 1 s"


def test_retry_needs_background(make_app):
    app, a2a = make_app()
    with pytest.raises(ValueError, match="retry=True needs background=True"):
        a2a.add_agent("r", lambda turn: "x", retry=True)


def test_worker_command_refuses_an_app_without_background_agents(make_app):
    app, _ = make_app()
    result = app.test_cli_runner().invoke(args=["a2a", "worker"])
    assert result.exit_code == 1, result.output
    assert "no background agent is registered" in result.output
    app2, _ = make_app(_register)
    result = app2.test_cli_runner().invoke(args=["a2a", "worker", "--agents",
                                                 "echo,quick"])
    assert result.exit_code == 1
    assert "not a background agent here: echo" in result.output


def _wait_running(worker, task_id):
    deadline = time.monotonic() + 10
    while task_id not in worker.running():
        assert time.monotonic() < deadline, "the worker never claimed it"
        time.sleep(0.01)


def _wait_idle(worker):
    deadline = time.monotonic() + 10
    while worker.running():
        assert time.monotonic() < deadline, "the worker never finished"
        time.sleep(0.01)


@pytest.mark.parametrize("key,value", [
    ("A2A_BLOCKING_WAIT_SECONDS", -1), ("A2A_WORKER_LEASE_SECONDS", 0),
    ("A2A_WORKER_MAX_ATTEMPTS", "x")])
def test_bad_background_settings_are_refused_at_init(make_app, key, value):
    with pytest.raises(ValueError, match=key):
        make_app(**{key: value})
