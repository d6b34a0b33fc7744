"""Background agents through real processes: gunicorn (several workers)
plus one or two ``flask a2a worker`` processes on one SQLite file.

``server_app``'s ``bg`` / ``bg_retry`` append ``<task id> <attempt>`` to the
ledger file ``BG_LEDGER`` each time they run, so that a test counts runs.
"""

import os
import signal
import threading

import pytest

from a2a_flask.storage.base import LEASE_EXPIRED_TEXT, QUEUED_TEXT
from helpers import message, wait_until
from serving import WorkerProcess, assert_clean_log

LEASE = "2"  # seconds: a killed worker's turn is noticed within ~3 s
NON_BLOCKING = {"blocking": False}


@pytest.fixture
def setup(start_server, tmp_path):
    """``setup(workers=1, threads=4, gunicorn_args=(), env=None)``:
    a gunicorn (2 workers) plus ``workers`` worker processes; returns
    (server, [WorkerProcess], ledger path)."""
    started = []
    ledger = str(tmp_path / "ledger")

    def make(workers=1, threads=4, gunicorn_args=(), env=None, database=None):
        env = dict({"BG_LEDGER": ledger, "A2A_WORKER_LEASE_SECONDS": LEASE},
                   **(env or {}))
        server = start_server(workers=2, env=env, gunicorn_args=gunicorn_args,
                              database=database)
        for _ in range(workers):
            started.append(WorkerProcess(server, "--threads", str(threads),
                                         "--grace", "5").start())
        return server, list(started), ledger

    yield make
    for worker in started:
        worker.stop(signal.SIGKILL)


def runs(ledger):
    """{task id: [attempts]} from the ledger."""
    found = {}
    if os.path.exists(ledger):
        with open(ledger) as f:
            for line in f:
                task_id, attempt = line.split()
                found.setdefault(task_id, []).append(int(attempt))
    return found


def state(rpc, task_id):
    return rpc.result("tasks/get", {"id": task_id})["status"]


@pytest.mark.compat
def test_blocking_caller_gets_the_outcome_of_a_short_turn_in_one_call(setup):
    server, _, ledger = setup(workers=1)
    rpc = server.rpc("bg")
    task = rpc.send("hello")
    assert task["status"]["state"] == "completed"
    assert task["status"]["message"]["parts"][0]["text"] == "ran hello"
    assert list(runs(ledger)) == [task["id"]]
    assert_clean_log(server.log())


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_200_turns_across_two_workers_each_run_exactly_once(setup, backend,
                                                            request):
    database = (request.getfixturevalue("postgres_url") if backend == "postgres"
                else None)
    server, workers, ledger = setup(workers=2, threads=4, database=database)
    ids, lock = [], threading.Lock()

    def caller():
        rpc = server.rpc("bg")
        for i in range(25):
            task = rpc.send("n%d" % i, configuration=NON_BLOCKING)
            assert task["status"]["state"] in ("working", "completed")
            with lock:
                ids.append(task["id"])

    callers = [threading.Thread(target=caller) for _ in range(8)]
    for thread in callers:
        thread.start()
    for thread in callers:
        thread.join(120)
    assert len(set(ids)) == 200
    rpc = server.rpc("bg")
    wait_until(lambda: len(runs(ledger)) >= 200, 120, "200 runs")
    for task_id in ids:
        assert wait_until(lambda: state(rpc, task_id)["state"] == "completed",  # noqa: B023
                          10, task_id)
    ran = runs(ledger)
    assert sorted(ran) == sorted(ids)
    assert all(attempts == [1] for attempts in ran.values())
    claimed = [w.log().count("claimed task") for w in workers]
    assert sum(claimed) == 200 and all(claimed), claimed
    assert_clean_log(server.log())


def _announced(tmp_path, rpc, text, agent="bg"):
    announce = str(tmp_path / ("announce-" + text.replace(" ", "-")))
    task = rpc.call("message/send", {
        "message": message(text, metadata={"announce": announce}),
        "configuration": NON_BLOCKING}, agent=agent)[1]["result"]
    wait_until(lambda: os.path.exists(announce), 20, "the turn to start")
    return task


def test_sigkill_mid_turn_fails_the_task_when_its_lease_expires(setup, tmp_path):
    server, (doomed, survivor), ledger = setup(workers=2, threads=1)
    rpc = server.rpc("bg")
    task = _announced(tmp_path, rpc, "poll 15")
    holder = doomed if task["id"] in doomed.log() else survivor
    other = survivor if holder is doomed else doomed
    holder.stop(signal.SIGKILL)
    status = wait_until(lambda: (lambda s: s if s["state"] != "working" else None)(
        state(rpc, task["id"])), 20, "the lease to expire")
    assert status["state"] == "failed"
    assert status["message"]["parts"][0]["text"] == LEASE_EXPIRED_TEXT
    assert runs(ledger) == {task["id"]: [1]}  # at most once: not run again
    assert "lease on task %s expired" % task["id"] in other.log()
    assert_clean_log(server.log())


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_sigkill_mid_turn_of_a_retry_agent_runs_it_again(setup, tmp_path, backend,
                                                         request):
    database = (request.getfixturevalue("postgres_url") if backend == "postgres"
                else None)
    server, (doomed, survivor), ledger = setup(workers=2, threads=1,
                                               database=database)
    rpc = server.rpc("bg_retry")
    task = _announced(tmp_path, rpc, "poll 3", agent="bg_retry")
    holder = doomed if task["id"] in doomed.log() else survivor
    holder.stop(signal.SIGKILL)
    wait_until(lambda: state(rpc, task["id"])["state"] == "completed", 30,
               "the retried turn")
    assert runs(ledger) == {task["id"]: [1, 2]}
    final = rpc.result("tasks/get", {"id": task["id"]})
    assert final["status"]["message"]["parts"][0]["text"] == "ran poll 3"


@pytest.mark.compat
def test_cancel_of_a_queued_turn_then_of_a_running_one(setup, tmp_path):
    server, workers, ledger = setup(workers=0)
    rpc = server.rpc("bg")
    queued = rpc.send("never", configuration=NON_BLOCKING)
    assert queued["status"]["message"]["parts"][0]["text"] == QUEUED_TEXT
    assert rpc.result("tasks/cancel", {"id": queued["id"]})["status"]["state"] == \
        "canceled"
    worker = WorkerProcess(server, "--threads", "2").start()
    try:
        running = _announced(tmp_path, rpc, "poll 15")
        canceled = rpc.result("tasks/cancel", {"id": running["id"]})
        assert canceled["status"]["state"] == "canceled"
        wait_until(lambda: "finished task %s: discarded" % running["id"]
                   in worker.log(), 10, "the running turn to stop")
    finally:
        assert worker.stop() == 0
    assert list(runs(ledger)) == [running["id"]]  # the queued one never ran
    for task_id in (queued["id"], running["id"]):
        task = rpc.result("tasks/get", {"id": task_id})
        assert task["status"]["state"] == "canceled"
        assert [m["role"] for m in task["history"]] == ["user"]


def test_a_turn_longer_than_gunicorns_timeout_completes(setup):
    # --timeout 5 would kill a request running an 8 s turn; the worker is not
    # a web request. A2A_BLOCKING_WAIT_SECONDS stays below the timeout.
    server, _, _ = setup(workers=1, gunicorn_args=["--timeout", "5"],
                         env={"A2A_BLOCKING_WAIT_SECONDS": "2"})
    rpc = server.rpc("bg")
    task = rpc.send("sleep 8")
    assert task["status"]["state"] == "working"  # the blocking wait ran out
    wait_until(lambda: state(rpc, task["id"])["state"] == "completed", 20,
               "the 8 s turn")
    assert "WORKER TIMEOUT" not in server.log()
    assert_clean_log(server.log())


def test_sigterm_lets_the_running_turn_finish(setup, tmp_path):
    server, (worker,), ledger = setup(workers=1, threads=2)
    rpc = server.rpc("bg")
    task = _announced(tmp_path, rpc, "sleep 2")
    assert worker.stop(signal.SIGTERM, timeout=15) == 0
    assert state(rpc, task["id"])["state"] == "completed"
    assert "stopped" in worker.log()
