"""A storage outage under an agent's own read (``turn.recent()``...) is
answered as the outage, retryable, not as the agent's failure: in a
request, a new task's start is withdrawn (nothing was stored, so a retry of
the same messageId runs the agent again); a continuation is failed naming
the storage, and the answer says so; in the worker the turn is released
(re-queued for a retry agent). On both backends."""

import logging
import threading

import pytest

from a2a_flask import InputRequired
from a2a_flask.service import READ_FAILED_TEXT
from a2a_flask.storage import states
from a2a_flask.storage.errors import StorageUnavailableError
from a2a_flask.worker import Worker
from helpers import Rpc, message

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def database(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "a2a.sqlite3")
    return request.getfixturevalue("postgres_url")


class Outage:
    """Makes the next ``count`` reads of ``context_history`` fail as an
    unavailable storage does, then lets them through."""

    def __init__(self, storage, count=0):
        self.count = count
        self.calls = []
        real = storage.context_history

        def reading(*args, **kwargs):
            self.calls.append(args)
            if self.count > 0:
                self.count -= 1
                raise StorageUnavailableError()
            return real(*args, **kwargs)
        storage.context_history = reading


def _register(a2a):
    def reader(turn):
        earlier = turn.recent(5)
        if turn.text == "ask":
            return InputRequired("what else?")
        return "read %d earlier" % len(earlier)

    a2a.add_agent("reader", reader)
    a2a.add_agent("bgreader", reader, background=True, retry=True)
    a2a.add_agent("bgonce", reader, background=True)


@pytest.fixture
def reader(make_rpc, database):
    rpc = make_rpc(_register, agent="reader", A2A_DATABASE=database,
                   A2A_BLOCKING_WAIT_SECONDS=10)
    rpc.runtime = rpc.app.extensions["a2a"]
    rpc.outage = Outage(rpc.runtime.storage)
    return rpc


def _agent_blamed(caplog):
    return [r for r in caplog.records if "failed on task" in r.getMessage()
            or r.exc_info]


def test_a_new_task_is_withdrawn_and_a_retry_of_its_message_runs(reader, caplog):
    sent = message("hi")
    reader.outage.count = 1
    status, error = reader.error("message/send", {"message": sent})
    assert error["code"] == -32603
    assert error["data"] == {"retry": True}
    assert "nothing was stored" in error["message"]
    assert _agent_blamed(caplog) == []
    storage = reader.runtime.storage
    assert storage.list_tasks(owner="anonymous").tasks == []
    # The same messageId again: no replay of a stuck task, the agent runs.
    task = reader.result("message/send", {"message": sent})
    assert task["status"]["state"] == "completed"
    assert task["status"]["message"]["parts"][0]["text"] == "read 0 earlier"
    assert len(reader.outage.calls) == 2
    assert [t.id for t in storage.list_tasks(owner="anonymous").tasks] == [task["id"]]


def test_a_tenant_s_new_task_is_withdrawn_from_its_tenant(make_rpc, database):
    """The withdrawal names the start's tenant: the task and its retry
    record go, and the same messageId runs again in that tenant."""
    app = make_rpc(_register, agent="reader", A2A_DATABASE=database,
                   A2A_TENANTS="acme").app
    rpc = Rpc(app.test_client(), agent="reader", version="1.0")
    outage = Outage(app.extensions["a2a"].storage, count=1)
    sent = message("hi", version="1.0")
    status, body = rpc.call("SendMessage", {"message": sent, "tenant": "acme"})
    assert body["error"]["code"] == -32603, body
    assert "nothing was stored" in body["error"]["message"]
    storage = app.extensions["a2a"].storage
    assert storage.list_tasks(owner="anonymous", tenant="acme").tasks == []
    task = rpc.result("SendMessage", {"message": sent, "tenant": "acme"})["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert len(outage.calls) == 2
    assert [t.id for t in storage.list_tasks(owner="anonymous", tenant="acme").tasks] == [
        task["id"]]


def test_a_continuation_is_failed_naming_the_storage(reader, caplog):
    asked = reader.send("ask")
    assert asked["status"]["state"] == "input-required"
    reader.outage.count = 1
    status, error = reader.error("message/send", {"message": message(
        "more", taskId=asked["id"], contextId=asked["contextId"])})
    assert error["code"] == -32603
    assert error["data"] == {"retry": False, "taskId": asked["id"], "state": "failed"}
    assert "task %s was stored" % asked["id"] in error["message"]
    assert "it is failed" in error["message"]
    assert _agent_blamed(caplog) == []
    got = reader.result("tasks/get", {"id": asked["id"]})
    assert got["status"]["state"] == "failed"
    assert got["status"]["message"]["parts"][0]["text"] == READ_FAILED_TEXT


def test_when_the_withdrawal_fails_too_the_answer_says_the_task_is_stored(
        reader, caplog):
    storage = reader.runtime.storage

    def refused(*args):
        raise StorageUnavailableError()
    storage.withdraw_turn = refused
    reader.outage.count = 1
    status, error = reader.error("message/send", {"message": message("hi")})
    assert error["code"] == -32603
    assert error["data"]["retry"] is False and error["data"]["state"] == "working"
    assert "stays working" in error["message"]
    (task,) = storage.list_tasks(owner="anonymous").tasks
    assert task.id == error["data"]["taskId"] and task.state == "working"


def test_the_worker_releases_the_turn_and_it_runs_again(reader, caplog):
    caplog.set_level(logging.INFO)
    with reader.app.app_context():
        runner = Worker(reader.runtime, threads=1, grace=5)
    reader.outage.count = 1
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    try:
        task = reader.send("hi", agent="bgreader")
    finally:
        runner.stop()
        thread.join(10)
    assert task["status"]["state"] == "completed"
    assert task["status"]["message"]["parts"][0]["text"] == "read 0 earlier"
    assert len(reader.outage.calls) == 2
    assert _agent_blamed(caplog) == []
    assert any("requeued" in r.getMessage() for r in caplog.records)


def test_the_worker_fails_a_turn_of_an_agent_without_retry_naming_the_storage(
        reader, caplog):
    """Not registered retry=True: at most once, so the turn is failed, with
    a status naming the storage, neither the agent nor a stopped worker."""
    with reader.app.app_context():
        runner = Worker(reader.runtime, threads=1, grace=5)
    reader.outage.count = 1
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    try:
        task = reader.send("hi", agent="bgonce")
    finally:
        runner.stop()
        thread.join(10)
    assert task["status"]["state"] == "failed"
    assert task["status"]["message"]["parts"][0]["text"] == states.READ_FAILED_TEXT
    assert len(reader.outage.calls) == 1
    assert _agent_blamed(caplog) == []


def test_a_real_outage_under_the_read_is_answered_as_the_outage(make_rpc, caplog):
    """PostgreSQL stopped while the agent runs: its read meets the driver's
    own error; the withdrawal cannot be written either, so the answer says
    the task was stored and stays working, never "nothing was stored"."""
    from pgcluster import Cluster, unavailable
    if unavailable():
        pytest.skip("no PostgreSQL server binaries")
    cluster = Cluster(settings=["max_connections=50"]).start()
    try:
        url = cluster.create_db("a2a_outage")

        def stopping(turn):
            cluster.pause()
            turn.recent(3)
            return "never"

        rpc = make_rpc(lambda a2a: a2a.add_agent("stopping", stopping),
                       agent="stopping", A2A_DATABASE=url, A2A_BUSY_TIMEOUT_MS=500)
        status, error = rpc.error("message/send", {"message": message("hi")})
        assert error["code"] == -32603
        assert error["data"]["retry"] is False and error["data"]["state"] == "working"
        assert "nothing was stored" not in error["message"]
        assert _agent_blamed(caplog) == []
        cluster.resume()
        rpc.app.extensions["a2a"].storage.close()
    finally:
        cluster.stop()
