"""``tasks/get`` (0.3) and ``GetTask`` (1.0) with an API key this process
found live lately: no lookup of its own, the read checks the key in the same
statement, and a key revoked meanwhile is still refused at once (401), also
where the call would otherwise have failed (unknown task, bad params,
another agent). Every other method looks the key up first, as before."""

import pytest

from helpers import message

ECHO = "/api/v1/agents/echo/a2a"
CHAT = "/api/v1/agents/chat/a2a"


class Service:
    def __init__(self, make_app):
        self.app, _ = make_app(A2A_AUTH="required")
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

    def send(self, secret):
        body = {"jsonrpc": "2.0", "id": 1, "method": "message/send",
                "params": {"message": message()}}
        answer = self.post(body, secret).get_json()
        return answer["result"]["id"]


def get(task_id, **params):
    return {"jsonrpc": "2.0", "id": 2, "method": "tasks/get",
            "params": dict({"id": task_id}, **params)}


def get_v10(task_id):
    return {"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": task_id}}


@pytest.fixture
def svc(make_app):
    return Service(make_app)


def assert_401(response):
    assert response.status_code == 401, response.data
    assert response.get_json()["code"] == -32600
    assert "revoked" in response.get_json()["message"]
    assert "Bearer" in response.headers["WWW-Authenticate"]


def test_a_remembered_key_reads_without_a_lookup_of_its_own(svc):
    _, secret = svc.key()
    task_id = svc.send(secret)  # looked up, and remembered
    svc.lookups = 0
    for body, version in ((get(task_id), None), (get_v10(task_id), "1.0")):
        answer = svc.post(body, secret, version=version).get_json()
        assert answer["result"]["id"] == task_id
    assert svc.lookups == 0
    svc.send(secret)  # any other method still looks the key up
    assert svc.lookups == 1


@pytest.mark.parametrize("case", ["own task", "unknown task", "bad params",
                                  "other agent", "1.0 GetTask"])
def test_a_remembered_key_revoked_since_is_refused_at_once(svc, case):
    key, secret = svc.key(agents=["echo"])
    task_id = svc.send(secret)
    svc.credentials.revoke_key(key.id)  # as another worker or the CLI would
    response = {
        "own task": lambda: svc.post(get(task_id), secret),
        "unknown task": lambda: svc.post(get("task_nope"), secret),
        "bad params": lambda: svc.post(get(task_id, historyLength=-1), secret),
        "other agent": lambda: svc.post(get(task_id), secret, path=CHAT),
        "1.0 GetTask": lambda: svc.post(get_v10(task_id), secret, version="1.0"),
    }[case]()
    assert_401(response)


def test_a_live_remembered_key_gets_the_errors_it_earned(svc):
    _, secret = svc.key(agents=["echo"])
    task_id = svc.send(secret)
    assert svc.post(get("task_nope"), secret).get_json()["error"]["code"] == -32001
    assert svc.post(get(task_id, historyLength=-1), secret).get_json()["error"]["code"] == -32602
    assert svc.post(get(task_id), secret, path=CHAT).status_code == 403


def test_a_key_is_looked_up_again_once_its_last_use_is_a_minute_old(svc, monkeypatch):
    key, secret = svc.key()
    task_id = svc.send(secret)
    import a2a_flask.credentials as credentials
    # A minute later: its last use is worth recording again, so it is looked up.
    monkeypatch.setattr(credentials, "_last_used_cutoff", lambda: "9999")
    svc.lookups = 0
    assert svc.post(get(task_id), secret).get_json()["result"]["id"] == task_id
    assert svc.lookups == 1
