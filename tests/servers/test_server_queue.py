"""The background queue through real processes (gunicorn with 2 workers, a
``flask a2a worker`` process, API keys from the command line): one caller's
backlog does not hold back another caller's turn, and revoking a key cancels
its queued turns and stops its running one.

``server_app``'s ``bg`` appends ``<task id> <attempt>`` to the ledger file
``BG_LEDGER`` when a turn starts: the order of the lines is the order turns
were claimed in (one worker thread)."""

import json
import os
import signal

import pytest

from helpers import wait_until
from serving import WorkerProcess, create_api_key, created_key, flask_a2a

NON_BLOCKING = {"blocking": False}


@pytest.fixture
def setup(start_server, tmp_path):
    """``setup(database=None) -> (server, worker, ledger)``: keys required,
    one worker process with one thread."""
    started = []
    ledger = str(tmp_path / "ledger")

    def make(database=None):
        server = start_server(workers=2, auth="key", database=database,
                              env={"BG_LEDGER": ledger})
        started.append(WorkerProcess(server, "--threads", "1").start())
        return server, started[0], ledger

    yield make
    for worker in started:
        worker.stop(signal.SIGKILL)


def started_turns(ledger):
    if not os.path.exists(ledger):
        return []
    with open(ledger) as f:
        return [line.split()[0] for line in f]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_backlog_does_not_hold_back_another_callers_turn(setup, backend, request):
    database = (request.getfixturevalue("postgres_url") if backend == "postgres"
                else None)
    server, _, ledger = setup(database)
    alice = server.rpc("bg", headers={
        "Authorization": "Bearer " + create_api_key(server.database)})
    flooder = server.rpc("bg")
    backlog = [flooder.send("sleep 1", configuration=NON_BLOCKING)["id"]
               for _ in range(10)]
    wait_until(lambda: started_turns(ledger), what="the first turn")
    before = len(started_turns(ledger))
    mine = alice.send("hello", configuration=NON_BLOCKING)["id"]
    wait_until(lambda: mine in started_turns(ledger), what="alice's turn")
    order = started_turns(ledger)
    # Claimed as soon as the one thread is free: at most a turn or two of
    # the flooder's started meanwhile, not its whole backlog.
    assert order.index(mine) <= before + 2, (before, order)
    assert len(set(order) & set(backlog)) < len(backlog)


def test_revoking_a_key_cancels_its_queued_turns_and_stops_its_running_one(setup):
    server, worker, ledger = setup()
    key_id, key = created_key(flask_a2a(server.database, "keys", "create"))
    mallory = server.rpc("bg", headers={"Authorization": "Bearer " + key})
    running = mallory.send("poll 15", configuration=NON_BLOCKING)["id"]
    wait_until(lambda: running in started_turns(ledger), what="the turn to start")
    queued = [mallory.send("poll 15", configuration=NON_BLOCKING)["id"]
              for _ in range(3)]

    revoked = flask_a2a(server.database, "keys", "revoke", key_id)
    assert revoked.returncode == 0, revoked.stderr
    assert "canceled 4 of its working tasks" in revoked.stdout
    wait_until(lambda: "finished task %s: discarded" % running in worker.log(),
               20, "the running turn to see turn.canceled")
    listed = flask_a2a(server.database, "tasks", "list", "--caller",
                       "key:" + key_id, "--json")
    assert sorted((t["id"], t["state"]) for t in json.loads(listed.stdout)) == sorted((task_id, "canceled")
                                  for task_id in [running] + queued)
    # The next turn the worker runs is another caller's: none of mallory's.
    other = server.rpc("bg").send("hi", configuration=NON_BLOCKING)["id"]
    wait_until(lambda: other in started_turns(ledger), what="the next turn")
    assert started_turns(ledger) == [running, other]
    status, answer = mallory.call("message/send", {"message": {
        "kind": "message", "role": "user", "messageId": "after",
        "parts": [{"kind": "text", "text": "x"}]}})
    assert status == 401
