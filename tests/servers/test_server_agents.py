"""Agents misbehaving under gunicorn: a crash, a cancel from another worker."""

import json
import os
import signal
import subprocess
import threading
import time

import pytest
import requests

from a2a_flask.agent import FAILED_TEXT
from a2a_flask.storage.base import STALE_TURN_TEXT
from helpers import message
from server_app import LATE, SECRET
from serving import assert_clean_log


def _failed_text_only(task):
    assert task["status"]["state"] == "failed"
    status_message = task["status"]["message"]
    assert status_message["role"] == "agent"
    assert status_message["parts"] == [{"kind": "text", "text": FAILED_TEXT}]


def test_crash_is_a_failed_task_and_a_logged_traceback(live_server):
    mark = live_server.log_mark()
    crash = live_server.rpc("crash")
    status, answer = crash.call("message/send", {"message": message("boom")})
    raw = crash.last_response.data.decode()
    assert status == 200
    assert "error" not in answer, answer
    task = answer["result"]
    _failed_text_only(task)
    assert task["artifacts"] == []
    assert [m["role"] for m in task["history"]] == ["user", "agent"]
    for leak in (SECRET, "Traceback", "RuntimeError", 'File "', "server_app"):
        assert leak not in raw, (leak, raw)

    got = crash.result("tasks/get", {"id": task["id"]})
    assert got == task
    raw = crash.last_response.data.decode()
    assert SECRET not in raw and "Traceback" not in raw

    # Terminal: no more messages, no cancel.
    status, error = crash.error("message/send", {"message": message(
        "again", taskId=task["id"])})
    assert (status, error["code"], error["data"]["state"]) == (200, -32602, "failed")
    status, error = crash.error("tasks/cancel", {"id": task["id"]})
    assert (status, error["code"], error["data"]["state"]) == (200, -32002, "failed")
    # The worker that ran it still serves.
    assert live_server.rpc("echo").send("still here")["status"]["state"] == "completed"

    assert live_server.wait_log(SECRET, mark)
    log = live_server.log_since(mark)
    assert "Traceback (most recent call last)" in log
    assert "RuntimeError: %s" % SECRET in log
    assert task["id"] in log
    assert "database is locked" not in log
    assert set(live_server.access_statuses(log)) <= {200}


class _Background:
    """A request run in a thread, on its own connection."""

    def __init__(self, func):
        self.answer = self.error = None
        self.started = time.monotonic()
        self.thread = threading.Thread(target=self._run, args=(func,))
        self.thread.start()

    def _run(self, func):
        try:
            self.answer = func()
        except BaseException as exc:
            self.error = exc
        self.elapsed = time.monotonic() - self.started

    def join(self, timeout):
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the request did not end"
        if self.error is not None:
            raise self.error
        return self.answer


def _wait_file(path, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            with open(path) as f:
                return f.read()
        time.sleep(0.02)
    raise AssertionError("the slow agent never started")


@pytest.mark.parametrize("mode", ["poll", "sleep"])
def test_cancel_a_working_task_from_another_worker(live_server, tmp_path, mode):
    # 2 sync workers: while one runs the slow turn, the other answers the rest.
    mark = live_server.log_mark()
    seconds = 15 if mode == "poll" else 3
    announce = str(tmp_path / "task-id")
    sent = message("%s %s" % (mode, seconds), metadata={"announce": announce})
    slow = live_server.rpc("slow")
    request = _Background(lambda: slow.result("message/send", {"message": sent}))
    task_id = _wait_file(announce)

    other = live_server.rpc("slow")
    working = other.result("tasks/get", {"id": task_id})
    assert working["status"]["state"] == "working"
    assert [m["messageId"] for m in working["history"]] == [sent["messageId"]]
    # A retry of the same message answers the task as it stands: working.
    replay = other.result("message/send", {"message": sent})
    assert (replay["id"], replay["status"]["state"]) == (task_id, "working")
    # Working: no second message in it meanwhile.
    status, error = other.error("message/send", {"message": message(
        "poll 1", taskId=task_id)})
    assert (status, error["code"], error["data"]["state"]) == (200, -32602, "working")

    started = time.monotonic()
    canceled = other.result("tasks/cancel", {"id": task_id})
    assert time.monotonic() - started < 2.0
    assert (canceled["id"], canceled["status"]["state"]) == (task_id, "canceled")
    assert request.thread.is_alive() or mode == "poll"

    final = request.join(seconds + 10)
    if mode == "poll":
        assert request.elapsed < seconds - 5, "the agent did not notice the cancel"
    assert final["id"] == task_id
    assert final["status"]["state"] == "canceled"
    assert final["artifacts"] == []
    assert [m["role"] for m in final["history"]] == ["user"]
    assert LATE not in json.dumps(final)

    got = other.result("tasks/get", {"id": task_id})
    assert got == final
    assert LATE not in json.dumps(got)
    status, error = other.error("tasks/cancel", {"id": task_id})
    assert (status, error["code"], error["data"]["state"]) == (200, -32002, "canceled")

    assert live_server.wait_log("result is discarded", mark)
    assert task_id in live_server.log_since(mark)
    assert_clean_log(live_server.log_since(mark))


def _start_slow_turn(server, tmp_path, text):
    """A message/send to ``slow`` running in the background: (request, task id)."""
    announce = str(tmp_path / "task-id")
    slow = server.rpc("slow")
    request = _Background(lambda: slow.client.session.post(
        server.url + "/api/v1/agents/slow/a2a", timeout=30, json={
            "jsonrpc": "2.0", "id": 1, "method": "message/send",
            "params": {"message": message(text, metadata={"announce": announce})}}))
    return request, _wait_file(announce)


def test_worker_killed_mid_turn_leaves_no_task_working(start_server, tmp_path):
    # gunicorn aborts a worker whose request outlives --timeout (SystemExit in
    # the agent): the task must end failed, not stay "working" for ever.
    server = start_server("server_app:app", workers=2,
                          gunicorn_args=["--timeout", "2"])
    request, task_id = _start_slow_turn(server, tmp_path, "sleep 8")
    try:
        answer = request.join(15)
        assert answer.status_code == 500  # gunicorn's own page: nothing to say
    except requests.ConnectionError:
        pass
    assert request.elapsed < 7, "the worker was not stopped"
    task = server.rpc("slow").result("tasks/get", {"id": task_id})
    _failed_text_only(task)
    assert task["artifacts"] == []
    assert LATE not in json.dumps(task)
    log = server.log()
    assert "WORKER TIMEOUT" in log and task_id in log


def test_worker_sigkilled_mid_turn_fails_its_task_once_stale(start_server, tmp_path):
    # SIGKILL (out of memory, a graceful timeout run out) leaves no chance to
    # store anything: the task is failed by the first tasks/get once it has
    # been working for longer than A2A_STALE_TURN_SECONDS.
    # 6 s: time for the master to start a new worker on a busy machine before
    # the turn is stale (the first get below must find it still working).
    server = start_server("server_app:app", workers=1,
                          env={"A2A_STALE_TURN_SECONDS": "6"})
    request, task_id = _start_slow_turn(server, tmp_path, "sleep 15")
    workers = subprocess.run(["pgrep", "-P", str(server.process.pid)],
                             capture_output=True, text=True).stdout.split()
    assert len(workers) == 1, workers
    os.kill(int(workers[0]), signal.SIGKILL)
    with pytest.raises(requests.ConnectionError):
        request.join(10)

    rpc = server.rpc("slow")
    # The master starts a new worker; the turn is not stale yet.
    deadline = time.monotonic() + 10
    while True:
        try:
            task = rpc.result("tasks/get", {"id": task_id})
            break
        except requests.ConnectionError:
            assert time.monotonic() < deadline
            time.sleep(0.1)
    assert task["status"]["state"] == "working"
    time.sleep(6.2)
    task = rpc.result("tasks/get", {"id": task_id})
    assert task["status"]["state"] == "failed"
    assert task["status"]["message"]["parts"] == [
        {"kind": "text", "text": STALE_TURN_TEXT}]
    assert [m["role"] for m in task["history"]] == ["user", "agent"]
    assert rpc.result("tasks/get", {"id": task_id}) == task  # failed once, stays
    status, error = rpc.error("message/send", {"message": message(
        "again", taskId=task_id)})
    assert (status, error["code"], error["data"]["state"]) == (200, -32602, "failed")
