"""A JSON body naming a member twice in one object is refused (issue 18):
-32600 naming the member over JSON-RPC (both versions), HTTP 400 with the
1.0 error body over HTTP+JSON; nothing runs. The last value never wins
(``"method": "tasks/cancel", "method": "tasks/get"`` would run get)."""

import json

import pytest

from helpers import message


@pytest.fixture
def client(make_app):
    app, _ = make_app(A2A_AUTH="off")
    return app.test_client()


def _post(client, text, path="/api/v1/agents/echo/a2a", headers=None):
    return client.post(path, data=text.encode(), headers=headers or {},
                       content_type="application/json")


def _send(client, **headers):
    response = client.post("/api/v1/agents/echo/a2a", headers=headers, json={
        "jsonrpc": "2.0", "id": 1, "method": "message/send",
        "params": {"message": message()}})
    return response.get_json()["result"]["id"]


@pytest.mark.parametrize("version", ["0.3", "1.0"])
def test_a_duplicate_method_is_refused_and_nothing_runs(client, version):
    task_id = _send(client)
    names = {"0.3": ("tasks/cancel", "tasks/get"),
             "1.0": ("CancelTask", "GetTask")}[version]
    text = ('{"jsonrpc":"2.0","id":7,"method":"%s","method":"%s",'
            '"params":{"id":"%s"}}' % (names[0], names[1], task_id))
    headers = {"A2A-Version": "1.0"} if version == "1.0" else {}
    response = _post(client, text, headers=headers)
    body = response.get_json()
    assert body["error"]["code"] == -32600, body
    assert '"method"' in body["error"]["message"]
    assert "result" not in body and body["id"] is None
    if version == "0.3":
        assert body["error"]["data"] == {"field": "method"}
    else:
        violations = [d for d in body["error"]["data"]
                      if d["@type"].endswith("BadRequest")]
        assert violations[0]["fieldViolations"][0]["field"] == "method"


def test_a_duplicate_deep_inside_params_is_refused(client):
    msg = message()
    text = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "message/send",
                       "params": {"message": msg}})
    text = text.replace('"role": "user"', '"role": "user", "role": "agent"')
    body = _post(client, text).get_json()
    assert body["error"]["code"] == -32600
    assert body["error"]["data"] == {"field": "role"}


def test_rest_refuses_a_duplicate_with_the_10_error_body(client):
    text = ('{"message":{"messageId":"m1","role":"ROLE_USER","parts":'
            '[{"text":"a","text":"b"}]}}')
    response = _post(client, text, path="/api/v1/agents/echo/rest/message:send",
                     headers={"A2A-Version": "1.0"})
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert error["status"] == "INVALID_ARGUMENT" and "text" in error["message"]
    violation = [d for d in error["details"] if d["@type"].endswith("BadRequest")]
    assert violation[0]["fieldViolations"][0]["field"] == "text"


def test_the_same_member_in_two_objects_is_fine(client):
    # "kind" in the message and in its part: one each.
    assert _send(client)


def test_a_long_duplicate_name_is_echoed_as_a_short_prefix(client):
    name = "x" * 100000
    text = '{"jsonrpc":"2.0","id":1,"method":"a","%s":1,"%s":2}' % (name, name)
    response = _post(client, text)
    assert len(response.data) < 1000
    assert response.get_json()["error"]["code"] == -32600
