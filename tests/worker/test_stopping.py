"""A process that stops (stopping.PROCESS: SIGTERM, a max_requests recycle,
its master gone, as the gunicorn watcher sees them) answers its blocking
sends at once with the task as it stands; in one process, with a stop of
its own (the real one under gunicorn: tests/servers/test_server_in_process_worker.py)."""

import threading
import time

import pytest

from a2a_flask import stopping, waits
from helpers import Rpc, wait_until


@pytest.fixture
def stop(monkeypatch):
    process = stopping.ProcessStop()
    monkeypatch.setattr(waits, "PROCESS", process)
    return process


def _register(a2a):
    a2a.add_agent("later", lambda turn: "done", background=True)


def test_a_stop_answers_waiting_sends_with_the_working_task(make_app, stop):
    app, _ = make_app(register=_register)
    answers = []

    def call():
        answers.append(Rpc(app.test_client()).send("hi", agent="later"))

    callers = [threading.Thread(target=call, daemon=True) for _ in range(3)]
    for thread in callers:
        thread.start()
    storage = app.extensions["a2a"].storage
    wait_until(lambda: len(app.extensions["a2a"].task_waits._waiting) == 3, 10,
               "three waiting sends")
    stopped = time.monotonic()
    stop.stop("a test")
    for thread in callers:
        thread.join(5)
    assert time.monotonic() - stopped < 2
    assert [task["status"]["state"] for task in answers] == ["working"] * 3
    assert all(storage.task_state(task["id"]) == "working" for task in answers)
    # Once stopping, a new blocking send does not wait at all.
    task = Rpc(app.test_client()).send("late", agent="later")
    assert task["status"]["state"] == "working"


def test_the_stop_runs_each_step_once_and_late_steps_at_once(stop):
    ran = []
    stop.on_stop(lambda: ran.append("early"))
    stop.stop("first")
    stop.stop("second")
    assert ran == ["early"]
    stop.on_stop(lambda: ran.append("late"))
    assert ran == ["early", "late"]
    assert stop.stopping()


def test_no_gunicorn_worker_here():
    assert stopping.gunicorn_worker() is None
