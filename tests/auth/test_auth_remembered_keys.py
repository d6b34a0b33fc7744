"""``message/send``/``tasks/get`` (and 1.0 ``SendMessage``/``GetTask``) with
an API key this process found live lately: no lookup of its own, the call's
first storage statement checks the key, and a key revoked meanwhile is still
refused at once (401, nothing stored, no agent run), also where the call
would otherwise have failed (unknown task, bad params, another agent, a
retry). Every other method looks the key up first, as before."""

import sqlite3

import pytest

from helpers import assert_401, message

ECHO = "/api/v1/agents/echo/a2a"
CHAT = "/api/v1/agents/chat/a2a"
BG = "/api/v1/agents/bg/a2a"


class Service:
    def __init__(self, make_app):
        def register(a2a):  # no worker runs here: its turns stay queued
            a2a.add_agent("bg", lambda turn: "done", background=True)

        self.app, _ = make_app(register, A2A_AUTH="required")
        self.runtime = self.app.extensions["a2a"]
        self.credentials = self.runtime.credentials
        self.client = self.app.test_client()
        self.lookups = 0
        storage = self.credentials.storage
        find_key = storage.find_key

        def counted(key_hash):
            self.lookups += 1
            return find_key(key_hash)

        storage.find_key = counted  # the storage object of this app only

    def key(self, agents=None):
        return self.credentials.create_key(agents)

    def post(self, body, secret, path=ECHO, version=None):
        headers = {"Authorization": "Bearer " + secret}
        if version:
            headers["A2A-Version"] = version
        return self.client.post(path, json=body, headers=headers)

    def send(self, secret, msg=None, path=ECHO):
        answer = self.post(send(msg), secret, path=path).get_json()
        return answer["result"]["id"]

    def stored_tasks(self):
        return self.runtime.storage.count_tasks()


def send(msg=None, **configuration):
    params = {"message": msg or message()}
    if configuration:
        params["configuration"] = configuration
    return {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": params}


def send_v10(text="hello"):
    return {"jsonrpc": "2.0", "id": 4, "method": "SendMessage", "params": {
        "message": {"role": "ROLE_USER", "messageId": "m10-" + text,
                    "parts": [{"text": text}]}}}


def get(task_id, **params):
    return {"jsonrpc": "2.0", "id": 2, "method": "tasks/get",
            "params": dict({"id": task_id}, **params)}


def get_v10(task_id):
    return {"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": task_id}}


@pytest.fixture
def svc(make_app):
    return Service(make_app)


def assert_refused(response):
    """helpers.assert_401, and the key named as unknown or revoked."""
    assert_401(response)
    assert "revoked" in response.get_json()["message"]


def test_a_remembered_key_sends_and_reads_without_a_lookup_of_its_own(svc):
    _, secret = svc.key()
    task_id = svc.send(secret)  # looked up, and remembered
    svc.lookups = 0
    for body, version in ((get(task_id), None), (get_v10(task_id), "1.0")):
        answer = svc.post(body, secret, version=version).get_json()
        assert answer["result"]["id"] == task_id
    assert svc.post(send(), secret).get_json()["result"]["status"]["state"] == "completed"
    answer = svc.post(send_v10(), secret, version="1.0").get_json()
    assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert svc.lookups == 0
    cancel = {"jsonrpc": "2.0", "id": 5, "method": "tasks/cancel", "params": {"id": task_id}}
    svc.post(cancel, secret)  # any other method still looks the key up
    assert svc.lookups == 1


@pytest.mark.parametrize("case", [
    "get own task", "get unknown task", "get bad params", "get other agent",
    "1.0 GetTask", "send new task", "send retry", "send continuation",
    "send to unknown task", "send bad params", "1.0 SendMessage",
    "send to a background agent"])
def test_a_remembered_key_revoked_since_is_refused_at_once(svc, case):
    key, secret = svc.key(agents=["echo", "chat", "bg"])
    first = message("first")
    task_id = svc.send(secret, first)
    waiting = svc.send(secret, path=CHAT)  # chat waits for input
    svc.post(send(blocking=False), secret, path=BG)
    tasks = svc.stored_tasks()
    svc.credentials.revoke_key(key.id)  # as another worker or the CLI would
    response = {
        "get own task": lambda: svc.post(get(task_id), secret),
        "get unknown task": lambda: svc.post(get("task_nope"), secret),
        "get bad params": lambda: svc.post(get(task_id, historyLength=-1), secret),
        "get other agent": lambda: svc.post(get(task_id), secret,
                                            path="/api/v1/agents/nope/a2a"),
        "1.0 GetTask": lambda: svc.post(get_v10(task_id), secret, version="1.0"),
        "send new task": lambda: svc.post(send(), secret),
        "send retry": lambda: svc.post(send(first), secret),
        "send continuation": lambda: svc.post(
            send(message("more", taskId=waiting)), secret, path=CHAT),
        "send to unknown task": lambda: svc.post(send(message(taskId="task_nope")), secret),
        "send bad params": lambda: svc.post(send({"role": "user"}), secret),
        "1.0 SendMessage": lambda: svc.post(send_v10(), secret, version="1.0"),
        "send to a background agent": lambda: svc.post(
            send(blocking=False), secret, path=BG),
    }[case]()
    assert_refused(response)
    assert svc.stored_tasks() == tasks  # nothing stored, so no agent ran


def test_a_live_remembered_key_gets_the_errors_it_earned(svc):
    _, secret = svc.key(agents=["echo"])
    task_id = svc.send(secret)
    assert svc.post(get("task_nope"), secret).get_json()["error"]["code"] == -32001
    assert svc.post(get(task_id, historyLength=-1), secret).get_json()["error"]["code"] == -32602
    assert svc.post(get(task_id), secret, path=CHAT).status_code == 403


def test_a_key_is_looked_up_again_once_its_last_use_is_a_minute_old(svc, monkeypatch):
    key, secret = svc.key()
    task_id = svc.send(secret)
    import a2a_flask.auth.credentials as credentials
    # A minute later: its last use is worth recording again, so it is looked up.
    monkeypatch.setattr(credentials, "_last_used_cutoff", lambda: "9999")
    svc.lookups = 0
    assert svc.post(get(task_id), secret).get_json()["result"]["id"] == task_id
    assert svc.lookups == 1


def test_a_remembered_key_that_cannot_be_checked_gets_the_storage_error(svc):
    _, secret = svc.key()
    svc.send(secret)
    storage = svc.credentials.storage

    def unavailable(key_hash):
        raise sqlite3.OperationalError("disk I/O error")

    storage.find_key = unavailable  # the confirmation of the error below fails
    response = svc.post(get("task_nope"), secret)
    assert response.status_code == 200, response.data
    error = response.get_json()["error"]
    assert error["code"] == -32603 and "unavailable" in error["message"]
    assert error["data"] == {"retry": True}
