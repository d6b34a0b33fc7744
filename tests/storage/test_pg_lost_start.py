"""PostgreSQL commits a turn's start unflushed (synchronous_commit off): a
crash may lose it while its agent runs. The outcome's write then stores the
start again: the live send is answered with its task (not "Task not found"),
and a retry of its messageId is answered with that task, the agent not run
twice. The loss is made by deleting the start's rows while the agent runs,
and for real by SIGKILLing the whole cluster while the agent runs."""

import os
import signal
import time

import psycopg
import pytest

from a2a_flask import InputRequired
from helpers import Rpc, message
from pgcluster import Cluster, unavailable


def _lose_start(url, task_id, message_id, created):
    """What a crash before the start reached the disk leaves: no retry
    record, no user message, and no task (new) or the task waiting again."""
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("DELETE FROM a2a_deliveries WHERE message_id = %s",
                            (message_id,)).rowcount == 1
        assert conn.execute("DELETE FROM a2a_messages WHERE task_id = %s AND"
                            " message_id = %s", (task_id, message_id)).rowcount == 1
        if created:
            assert conn.execute("DELETE FROM a2a_tasks WHERE id = %s",
                                (task_id,)).rowcount == 1
        else:
            assert conn.execute("UPDATE a2a_tasks SET state = 'input-required'"
                                " WHERE id = %s", (task_id,)).rowcount == 1


def _register_losing(url, runs):
    def agent(turn):
        runs.append(turn.message["messageId"])
        if turn.text == "ask":
            return InputRequired("what else?")
        if turn.text.startswith("lose"):
            _lose_start(url, turn.task_id, turn.message["messageId"],
                        created="taskId" not in turn.message)
        return "done: " + turn.text

    return lambda a2a: a2a.add_agent("losing", agent)


def _check_once(rpc, sent, task, runs, history):
    assert task["status"]["state"] == "completed"
    assert task["status"]["message"]["parts"][0]["text"] == "done: " + sent["parts"][0]["text"]
    got = rpc.result("tasks/get", {"id": task["id"]})
    assert got["status"] == task["status"]
    assert [m["role"] for m in got["history"]] == history
    assert got["history"][-2]["messageId"] == sent["messageId"]
    again = rpc.result("message/send", {"message": sent})
    assert again["id"] == task["id"] and again["status"] == task["status"]
    assert runs.count(sent["messageId"]) == 1


def test_a_new_task_whose_start_was_lost_is_stored_with_its_outcome(
        make_rpc, postgres_url, caplog):
    runs = []
    rpc = make_rpc(_register_losing(postgres_url, runs), agent="losing",
                   A2A_DATABASE=postgres_url)
    sent = message("lose it", contextId="ctx-lost")
    task = rpc.result("message/send", {"message": sent})
    assert task["contextId"] == "ctx-lost"
    _check_once(rpc, sent, task, runs, ["user", "agent"])
    assert any("its start was lost" in r.getMessage() for r in caplog.records)


def test_a_continuation_whose_start_was_lost_is_stored_with_its_outcome(
        make_rpc, postgres_url):
    runs = []
    rpc = make_rpc(_register_losing(postgres_url, runs), agent="losing",
                   A2A_DATABASE=postgres_url)
    asked = rpc.send("ask")
    sent = message("lose this one", taskId=asked["id"])
    task = rpc.result("message/send", {"message": sent})
    assert task["id"] == asked["id"]
    _check_once(rpc, sent, task, runs, ["user", "agent", "user", "agent"])


@pytest.mark.parametrize("continued", [False, True], ids=["new", "continuation"])
def test_a_tenant_s_lost_start_is_stored_again_in_its_tenant(make_rpc, postgres_url,
                                                              caplog, continued):
    """The start is stored again where it was: the tenant's caller reads the
    task and its retry is answered with it (in tenant '' neither would)."""
    runs = []
    app = make_rpc(_register_losing(postgres_url, runs), agent="losing",
                   A2A_DATABASE=postgres_url, A2A_TENANTS="acme").app
    rpc = Rpc(app.test_client(), agent="losing", version="1.0")

    def send(sent):
        return rpc.result("SendMessage", {"message": sent, "tenant": "acme"})["task"]

    fields = {}
    if continued:
        fields["taskId"] = send(message("ask", version="1.0"))["id"]
    sent = message("lose it", version="1.0", **fields)
    task = send(sent)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert any("its start was lost" in r.getMessage() for r in caplog.records)
    got = rpc.result("GetTask", {"id": task["id"], "tenant": "acme"})
    assert got["status"] == task["status"]
    assert [m["messageId"] for m in got["history"]][-2] == sent["messageId"]
    assert send(sent)["id"] == task["id"]
    assert runs.count(sent["messageId"]) == 1
    status, body = rpc.call("GetTask", {"id": task["id"]})  # not tenant ''
    assert status == 200 and body["error"]["code"] == -32001, body


def test_a_canceled_task_still_discards_its_outcome(make_rpc, postgres_url):
    """The start is there (its retry record): no second start is made."""
    def agent(turn):
        turn._store.cancel_task(turn.task_id, turn.caller.id, turn.agent.name)
        return "too late"

    rpc = make_rpc(lambda a2a: a2a.add_agent("canceling", agent),
                   agent="canceling", A2A_DATABASE=postgres_url)
    task = rpc.send("hi")
    assert task["status"]["state"] == "canceled"
    assert [m["role"] for m in task["history"]] == ["user"]


def _kill_cluster(cluster):
    """SIGKILL the postmaster and every server process at once: a crash."""
    pid = cluster.postmaster_pid()
    children = [int(p) for p in open("/proc/%d/task/%d/children" % (pid, pid)).read().split()]
    for each in [pid] + children:
        try:
            os.kill(each, signal.SIGKILL)
        except ProcessLookupError:  # a backend that ended meanwhile (psql's)
            pass
    deadline = time.monotonic() + 10
    while os.path.exists("/proc/%d" % pid) and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.mark.skipif(bool(unavailable()), reason="no PostgreSQL server binaries")
def test_a_real_crash_while_the_agent_runs(make_rpc, caplog):
    # The WAL writer waits 10 s: an unflushed start is still in shared memory
    # when the cluster is killed, so the crash loses it.
    cluster = Cluster(settings=["wal_writer_delay=10000ms"]).start()
    try:
        url = cluster.create_db("a2a_crash")
        runs = []

        def agent(turn):
            runs.append(turn.message["messageId"])
            _kill_cluster(cluster)
            os.remove(os.path.join(cluster.data, "postmaster.pid"))
            cluster.resume()  # crash recovery
            return "done: " + turn.text

        rpc = make_rpc(lambda a2a: a2a.add_agent("crashing", agent),
                       agent="crashing", A2A_DATABASE=url)
        rpc.send("warm up")  # the schema is flushed before the crash
        runs.clear()
        cluster.query("CHECKPOINT", db="a2a_crash")
        sent = message("crash now")
        task = rpc.result("message/send", {"message": sent})
        _check_once(rpc, sent, task, runs, ["user", "agent"])
        # The crash did lose the start (else this test proves nothing).
        assert any("its start was lost" in r.getMessage() for r in caplog.records)
        rpc.app.extensions["a2a"].storage.close()
    finally:
        cluster.stop()


@pytest.mark.skipif(bool(unavailable()), reason="no PostgreSQL server binaries")
def test_a_crash_the_database_stays_down_through_is_answered_as_the_outage(
        make_rpc):
    # The start is lost (unflushed, as above) and PostgreSQL stays down
    # through every try of the outcome's write: whether the task exists is
    # unknown, so the answer is the outage (retryable), never "task X was
    # stored" (a task that does not exist).
    cluster = Cluster(settings=["wal_writer_delay=10000ms"]).start()
    try:
        url = cluster.create_db("a2a_down")
        runs, killed_at = [], []

        def agent(turn):
            runs.append(turn.message["messageId"])
            if len(runs) == 2:  # the send after the warm-up
                _kill_cluster(cluster)
                os.remove(os.path.join(cluster.data, "postmaster.pid"))
                killed_at.append(time.monotonic())
            return "done: " + turn.text

        rpc = make_rpc(lambda a2a: a2a.add_agent("crashing", agent),
                       agent="crashing", A2A_DATABASE=url)
        rpc.send("warm up")
        cluster.query("CHECKPOINT", db="a2a_down")
        sent = message("crash, stay down")
        _, answer = rpc.call("message/send", {"message": sent})
        # From the agent's return: the outcome's tries share the call's one
        # wait (A2A_BUSY_TIMEOUT_MS, 5 s), then 1 s for the read; not 5 s a
        # try and 5 s the read (20 s).
        assert time.monotonic() - killed_at[0] < 8.5
        error = answer["error"]
        assert error["code"] == -32603
        assert error["data"]["retry"] is True
        assert "the task may not have been either" in error["message"]
        assert "nothing acknowledged is ever lost" in error["message"]
        assert "was stored" not in error["message"]
        cluster.resume()  # crash recovery: the start is gone
        assert len(_task_ids(url)) == 1  # only the warm-up's task
        # The retry the answer invites runs the turn (it was never acknowledged).
        task = rpc.result("message/send", {"message": sent})
        assert task["status"]["state"] == "completed"
        assert runs.count(sent["messageId"]) == 2
        again = rpc.result("message/send", {"message": sent})
        assert again["id"] == task["id"] and runs.count(sent["messageId"]) == 2
        rpc.app.extensions["a2a"].storage.close()
    finally:
        cluster.stop()


def _task_ids(url):
    with psycopg.connect(url, autocommit=True) as conn:
        return [row[0] for row in conn.execute(
            "SELECT id FROM a2a_tasks ORDER BY created_at")]


def test_an_outcome_refused_while_the_start_is_readable_names_the_task(
        make_rpc, postgres_url, monkeypatch):
    # PostgreSQL is up, but every try of the outcome's write fails (its
    # connection is ended under it): the start is read back, so the answer
    # says the task was stored and stays working.
    from a2a_flask.storage.postgres import outcomes
    monkeypatch.setattr(outcomes, "_FINISH", "SELECT pg_terminate_backend("
                        "pg_backend_pid()) WHERE %(state)s::text IS NOT NULL")
    rpc = make_rpc(agent="echo", A2A_DATABASE=postgres_url)
    _, answer = rpc.call("message/send", {"message": message("refused")})
    error = answer["error"]
    assert error["data"]["retry"] is False
    assert error["data"]["state"] == "working"
    assert "task %s was stored" % error["data"]["taskId"] in error["message"]
