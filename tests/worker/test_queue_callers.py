"""The background queue as callers see it, in one process (the worker in a
thread), on SQLite and PostgreSQL: the per-caller queued limit answered with
HTTP 429 in every binding, and follow-ups to a task whose background turn is
queued or running. Through real processes: tests/servers/test_server_queue.py."""

import threading

import pytest

from a2a_flask.worker import Worker
from helpers import Rpc, add_gated_agent, detail, message, wait_until

NON_BLOCKING = {"blocking": False}


def _register(a2a):
    def answer(turn):
        earlier = [m["parts"][0]["text"] for m in turn.history]
        return "opened %s after %s" % (turn.text, "/".join(earlier) or "-")

    add_gated_agent(a2a, answer)


@pytest.fixture(params=["sqlite", "postgres"])
def service(request, keyed):
    """(app, rpc for key a, rpc for key b, 1.0 caller for key a), keys
    required, agent ``waits`` in the background, no worker yet."""
    config = {"A2A_AUTH": "required", "A2A_QUEUE_LIMIT_PER_CALLER": "2",
              "A2A_BLOCKING_WAIT_SECONDS": "5"}
    if request.param == "postgres":
        config["A2A_DATABASE"] = request.getfixturevalue("postgres_url")
    one, two = keyed("a", "b", register=_register, agent="waits", version="0.3", **config)
    app, a2a = one.app, one.a2a
    app.gate = a2a.gate
    yield app, one, two, Rpc(one.client, agent="waits", key=one.key, version="1.0")
    a2a.gate.set()
    app.extensions["a2a"].storage.close()


def _worker(app):
    with app.app_context():
        runner = Worker(app.extensions["a2a"], threads=1, grace=5)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    return runner, thread


def test_over_the_queue_limit_is_429_in_every_binding_and_stores_nothing(service):
    app, rpc, other, v10 = service
    first = rpc.send("one", configuration=NON_BLOCKING)
    rpc.send("two", configuration=NON_BLOCKING)

    status, answer = rpc.call("message/send", {"message": message("three"),
                                               "configuration": NON_BLOCKING})
    assert status == 429 and rpc.last_response.headers["Retry-After"] == "10"
    assert answer["error"]["code"] == -32000
    assert answer["error"]["data"] == {"retryAfter": 10, "queueLimit": 2}
    assert "nothing was stored" in answer["error"]["message"]

    status, answer = v10.call("SendMessage", {
        "message": message("three", version="1.0"), "configuration": {"returnImmediately": True}})
    assert status == 429 and answer["error"]["code"] == -32000
    assert detail(answer["error"], "ErrorInfo")["reason"] == "QUEUE_FULL"

    status, answer = v10.rest("POST", "/message:send", {
        "message": message("three", version="1.0"), "configuration": {"returnImmediately": True}})
    assert status == 429 and answer["error"]["status"] == "RESOURCE_EXHAUSTED"
    assert detail(answer["error"], "ErrorInfo")["reason"] == "QUEUE_FULL"

    status, page = v10.rest("GET", "/tasks")
    assert (status, page["totalSize"]) == (200, 2)  # nothing stored
    # A retry of an accepted message is answered; another caller is not limited.
    again = rpc.result("message/send", {"message": dict(
        message("one"), messageId=first["history"][0]["messageId"]),
        "configuration": NON_BLOCKING})
    assert again["id"] == first["id"]
    assert other.send("b", configuration=NON_BLOCKING)["status"]["state"] == "working"


def test_a_follow_up_to_a_running_task_is_its_next_turn(service):
    app, rpc, _, v10 = service
    runner, thread = _worker(app)
    try:
        task = rpc.send("one", configuration=NON_BLOCKING)
        wait_until(lambda: _text(rpc, task["id"]) == "halfway")  # running
        follow = rpc.send("two", taskId=task["id"], configuration=NON_BLOCKING)
        assert (follow["id"], follow["status"]["state"]) == (task["id"], "working")
        later = v10.result("SendMessage", {
            "message": message("three", taskId=task["id"], version="1.0"),
            "configuration": {"returnImmediately": True}})["task"]
        assert later["status"]["state"] == "TASK_STATE_WORKING"
        app.gate.set()
        done = wait_until(lambda: (lambda t: t if t["status"]["state"] != "working"
                              else None)(rpc.result("tasks/get", {"id": task["id"]})))
    finally:
        runner.stop()
        thread.join(10)
    assert done["status"]["state"] == "completed"
    assert [m["parts"][0]["text"] for m in done["history"]] == [
        "one", "opened one after -", "two", "opened two after one/opened one after -",
        "three", "opened three after one/opened one after -/two/"
        "opened two after one/opened one after -"]


def test_cancel_drops_the_queued_follow_ups(service):
    app, rpc, _, _ = service
    task = rpc.send("one", configuration=NON_BLOCKING)
    rpc.send("two", taskId=task["id"], configuration=NON_BLOCKING)
    canceled = rpc.result("tasks/cancel", {"id": task["id"]})
    assert canceled["status"]["state"] == "canceled"
    assert app.extensions["a2a"].storage.claim_turns("w", 10, 30) == []


def _text(rpc, task_id):
    return rpc.result("tasks/get", {"id": task_id})["status"]["message"][
        "parts"][0]["text"]
