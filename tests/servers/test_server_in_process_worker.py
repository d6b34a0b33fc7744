"""Background turns claimed inside the web processes (A2A_IN_PROCESS_WORKER,
on in the demo's wsgi.py), and a gunicorn worker's stop: real gunicorn
processes, no ``flask a2a worker``.

A stopping web process (SIGTERM, a ``max_requests`` recycle, its master
gone) answers its blocking waits at once with the task as it stands, stops
claiming, finishes or releases its turns, and exits within gunicorn's
``graceful_timeout``: no process is left behind.
"""

import os
import re
import signal
import threading
import time

import pytest

from helpers import wait_until
from serving import assert_clean_log

NON_BLOCKING = {"blocking": False}


def group_processes(pgid):
    """The live (not zombie) processes of process group ``pgid``, from /proc:
    a worker orphaned by its master keeps the group."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            found.append(int(entry))
    return found


def state(rpc, task_id):
    return rpc.result("tasks/get", {"id": task_id})["status"]


def _terminated_within(server, sig, seconds):
    """Send ``sig`` to the master; the seconds until its whole group is gone
    (AssertionError past ``seconds``)."""
    pgid = server.process.pid
    started = time.monotonic()
    os.kill(pgid, sig)
    wait_until(lambda: not group_processes(pgid) and server.process.poll()
               is not None, seconds, "the server's processes to exit")
    return time.monotonic() - started


def test_the_readme_command_serves_slow_with_no_worker(start_server):
    server = start_server(app="wsgi:app", workers=2)
    task = server.rpc("slow").send("1")
    assert task["status"]["state"] == "completed"
    assert task["status"]["message"]["parts"][0]["text"] == "done after 1 s"
    assert "claimed task %s" % task["id"] in server.log()
    assert_clean_log(server.log())


def test_sigterm_lets_a_running_turn_finish_within_graceful_timeout(start_server):
    server = start_server(app="wsgi:app",
                          gunicorn_args=["--graceful-timeout", "8"])
    rpc = server.rpc("slow")
    task = rpc.send("2", configuration=NON_BLOCKING)
    wait_until(lambda: "claimed task " + task["id"] in server.log(), 10,
               "the turn to be claimed")
    mark = server.log_mark()
    assert _terminated_within(server, signal.SIGTERM, 10) < 8
    stopped = server.log_since(mark)
    assert "SIGKILL" not in stopped  # it exited, gunicorn did not kill it
    assert "finished task %s: completed" % task["id"] in stopped
    server.restart()
    status = state(server.rpc("slow"), task["id"])
    assert status["state"] == "completed"
    assert status["message"]["parts"][0]["text"] == "done after 2 s"
    assert_clean_log(server.log())


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT],
                         ids=["SIGTERM", "SIGINT"])
def test_a_stop_releases_a_turn_longer_than_the_grace_and_it_runs_again(
        start_server, tmp_path, sig):
    """SIGTERM: released shortly before graceful_timeout; SIGINT (a quick
    shutdown: gunicorn kills its workers 2 s later): released at once."""
    ledger = str(tmp_path / "ledger")
    # SIGINT: a graceful_timeout far past gunicorn's 2 s of a quick shutdown,
    # so that only a release at once beats the kill.
    server = start_server(env={"A2A_IN_PROCESS_WORKER": "1", "BG_LEDGER": ledger},
                          gunicorn_args=["--graceful-timeout", "3" if sig ==
                                         signal.SIGTERM else "10"])
    rpc = server.rpc("bg_retry")
    task = rpc.send("sleep 4", configuration=NON_BLOCKING)
    wait_until(lambda: os.path.exists(ledger), 10, "the turn to start")
    mark = server.log_mark()
    # The helper's graceful_timeout is 3 s: the turn cannot finish in it.
    _terminated_within(server, sig, 6)
    stopped = server.log_since(mark)
    assert "stopped before task %s finished: requeued" % task["id"] in stopped
    assert "SIGKILL" not in stopped  # released and gone before the kill
    with open(ledger) as f:
        assert f.read().split() == [task["id"], "1"]
    server.restart()
    rpc = server.rpc("bg_retry")
    wait_until(lambda: state(rpc, task["id"])["state"] != "working", 20,
               "the turn to run again")
    status = state(rpc, task["id"])
    assert status["state"] == "completed"
    assert status["message"]["parts"][0]["text"] == "ran sleep 4"
    with open(ledger) as f:
        assert f.read().split() == [task["id"], "1", task["id"], "2"]
    assert_clean_log(server.log())


def test_a_max_requests_recycle_stops_the_claimer_and_the_turn_completes(
        start_server):
    server = start_server(app="wsgi:app", gunicorn_args=[
        "--graceful-timeout", "8", "--max-requests", "2",
        "--max-requests-jitter", "0"])
    rpc = server.rpc("slow")
    task = rpc.send("1", configuration=NON_BLOCKING)  # the 2nd request
    assert server.wait_log("Autorestarting worker", timeout=10)
    assert server.wait_log("stopping (the server stops or recycles this "
                           "process)", timeout=10)
    wait_until(lambda: state(server.rpc("slow"), task["id"])["state"]
               == "completed", 20, "the turn to complete")
    log = server.log()
    first = log.split("Booting worker with pid: ", 1)[1].split()[0]
    own = [line.split("a2a_flask: ", 1)[1] for line in log.splitlines()
           if "[%s] [INFO] a2a_flask: " % first in line]
    stopping = [i for i, line in enumerate(own) if line.startswith("stopping (")]
    assert stopping, own
    # Nothing claimed after the recycle began; the claimer then stopped.
    assert not [line for line in own[stopping[0]:] if "claimed task" in line]
    assert own[-1].endswith(": stopped"), own
    assert log.count("Booting worker with pid") == 2
    assert_clean_log(log)


def _blocked_call(server, answers):
    """A blocking send to ``slow`` in a thread; its (seconds, task) lands
    in ``answers``."""
    def call():
        started = time.monotonic()
        rpc = server.rpc("slow")
        answers.append((started, rpc.send("5")))
        answers.append(time.monotonic())

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    return thread


def test_master_sigterm_answers_a_blocking_wait_no_worker_runs(start_server):
    # No claimer anywhere: the wait could last for ever. graceful_timeout is
    # the shipped 30 s, so an exit well before it is the process's own.
    server = start_server(app="wsgi:app", env={"A2A_IN_PROCESS_WORKER": "0"},
                          gunicorn_args=["--graceful-timeout", "30"])
    answers = []
    thread = _blocked_call(server, answers)
    time.sleep(1.5)
    assert thread.is_alive() and not answers  # still waiting
    sent = time.monotonic()
    seconds = _terminated_within(server, signal.SIGTERM, 35)
    thread.join(35)
    assert answers, "the blocking call was never answered"
    (_, task), answered = answers
    assert answered - sent < 5
    assert task["status"]["state"] == "working"
    assert task["id"].startswith("task_")
    assert seconds < 20  # its own exit, not gunicorn's kill at 30 s
    assert "WORKER TIMEOUT" not in server.log()
    assert "SIGKILL" not in server.log()


def test_a_worker_whose_master_is_killed_answers_and_exits(start_server):
    server = start_server(app="wsgi:app", env={"A2A_IN_PROCESS_WORKER": "0"},
                          gunicorn_args=["--graceful-timeout", "30"])
    answers = []
    thread = _blocked_call(server, answers)
    time.sleep(1.5)
    assert thread.is_alive() and not answers
    sent = time.monotonic()
    _terminated_within(server, signal.SIGKILL, 35)
    thread.join(35)
    assert answers, "the blocking call was never answered"
    (_, task), answered = answers
    assert answered - sent < 10
    assert task["status"]["state"] == "working"
    assert "master process is gone" in server.log()


def test_health_is_degraded_without_any_claimer_and_ok_with_the_demos(
        start_server):
    lonely = start_server(app="wsgi:app", env={"A2A_IN_PROCESS_WORKER": "0"})

    def health():
        answer = lonely.client().get("/api/v1/health")
        assert answer.status_code == 200
        return answer.get_json()

    body = health()
    assert body["status"] == "degraded"
    assert re.fullmatch(r"none seen for \d+ s", body["worker"]), body
    health()
    assert lonely.log().count("health: degraded") == 1  # warned once
    # The demo's web processes on the same database: claimers are seen.
    demo = start_server(app="wsgi:app", database=lonely.database)
    # Its claimer's first heartbeat comes from a thread of its own.
    assert wait_until(lambda: health() == {
        "status": "ok", "database": "ok",
        "schemaVersion": body["schemaVersion"]}, 10, "a claimer to be seen")
    assert "runs background turns again" in lonely.log()
    demo.stop()  # its claimers say they are gone
    assert health()["status"] == "degraded"
    assert lonely.log().count("health: degraded") == 2
    assert_clean_log(lonely.log())
