"""A2A 1.0 over HTTP+JSON (section 11), in process through HTTP: routes,
params, errors (google.rpc.Status at section 5.4's HTTP status), the root
routes of A2A_ROOT_REST. Every answer is checked against the 1.0 proto."""

import pytest

from helpers import Rpc, detail, message, metric_growth


# In the compat subset: .ci/matrix runs it on every supported Python and Flask.
pytestmark = pytest.mark.compat


@pytest.fixture
def service(keyed):
    def build(**config):
        one, two = keyed("a", "b", **config)
        return one.client, one, two
    return build


@pytest.fixture
def caller(service):
    return service()[1]


def send(caller, text="hello", **fields):
    status, body = caller.rest("POST", "/message:send",
                               {"message": message(text, version="1.0", **fields)})
    assert status == 200, body
    return body["task"]


def test_send_get_and_history_length(caller):
    task = send(caller)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    status, got = caller.rest("GET", "/tasks/" + task["id"])
    assert status == 200 and got["id"] == task["id"] and len(got["history"]) == 2
    status, got = caller.rest("GET", "/tasks/" + task["id"],
                              query={"historyLength": "1"})
    assert [m["role"] for m in got["history"]] == ["ROLE_AGENT"]
    status, got = caller.rest("GET", "/tasks/" + task["id"],
                              query={"historyLength": "0"})
    assert "history" not in got


def test_multi_turn_and_cancel(caller):
    caller.agent = "chat"
    first = send(caller)
    assert first["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    status, canceled = caller.rest("POST", "/tasks/%s:cancel" % first["id"])
    assert status == 200 and canceled["status"]["state"] == "TASK_STATE_CANCELED"
    status, body = caller.rest("POST", "/tasks/%s:cancel" % first["id"], {})
    assert status == 400
    assert body["error"]["status"] == "FAILED_PRECONDITION"
    assert detail(body["error"], "ErrorInfo")["reason"] == "TASK_NOT_CANCELABLE"


def test_unknown_and_foreign_tasks_are_404(service):
    _, caller, other = service()
    task = send(caller)
    for path, method in (("/tasks/nope", "GET"), ("/tasks/" + task["id"], "GET"),
                         ("/tasks/%s:cancel" % task["id"], "POST")):
        status, body = other.rest(method, path)
        assert status == 404, body
        assert body["error"]["code"] == 404 and body["error"]["status"] == "NOT_FOUND"
        assert detail(body["error"], "ErrorInfo")["reason"] == "TASK_NOT_FOUND"


@pytest.mark.parametrize("body, field", [
    ({}, "message"),
    ({"message": {"messageId": "x", "role": "ROLE_USER", "parts": []}},
     "message.parts"),
])
def test_bad_body_is_400_with_the_field(caller, body, field):
    status, answer = caller.rest("POST", "/message:send", body)
    assert status == 400 and answer["error"]["status"] == "INVALID_ARGUMENT"
    assert detail(answer["error"], "BadRequest")["fieldViolations"][0]["field"] == field


def test_body_that_is_not_json_is_400(caller):
    response = caller.client.post("/api/v1/agents/echo/rest/message:send",
                                  data=b"{nope", headers=caller.headers)
    assert response.status_code == 400
    assert response.get_json()["error"]["status"] == "INVALID_ARGUMENT"


def test_query_params_are_checked(caller):
    status, body = caller.rest("GET", "/tasks/x", query={"historyLength": "-1"})
    assert status == 400
    assert detail(body["error"], "BadRequest")["fieldViolations"][0]["field"] == \
        "historyLength"


@pytest.mark.parametrize("method, path, reason", [
    ("POST", "/message:stream", "UNSUPPORTED_OPERATION"),
    ("POST", "/tasks/t:subscribe", "UNSUPPORTED_OPERATION"),
    ("POST", "/tasks/t/pushNotificationConfigs", "PUSH_NOTIFICATION_NOT_SUPPORTED"),
    ("GET", "/tasks/t/pushNotificationConfigs", "PUSH_NOTIFICATION_NOT_SUPPORTED"),
    ("GET", "/tasks/t/pushNotificationConfigs/c", "PUSH_NOTIFICATION_NOT_SUPPORTED"),
    ("DELETE", "/tasks/t/pushNotificationConfigs/c", "PUSH_NOTIFICATION_NOT_SUPPORTED"),
])
def test_streaming_and_push_routes_answer_their_errors(caller, method, path, reason):
    status, body = caller.rest(method, path)
    assert status == 400 and body["error"]["status"] == "FAILED_PRECONDITION"
    assert detail(body["error"], "ErrorInfo")["reason"] == reason
    assert "GetTask" in body["error"]["message"]


def test_version_is_required(caller):
    for asked in (None, "0.3", "2.0"):
        status, body = caller.rest("GET", "/tasks", headers={"A2A-Version": asked})
        assert status == 400, body
        assert detail(body["error"], "ErrorInfo")["reason"] == "VERSION_NOT_SUPPORTED"
        assert "A2A-Version: 1.0" in body["error"]["message"] or asked == "2.0"
    status, body = caller.rest("GET", "/tasks", headers={"A2A-Version": None},
                               query={"A2A-Version": "1.0"})
    assert status == 200


def test_credentials_and_agents_are_checked(service):
    client, caller, _ = service()
    response = client.get("/api/v1/agents/echo/rest/tasks",
                          headers={"A2A-Version": "1.0"})
    assert response.status_code == 401 and response.headers["WWW-Authenticate"]
    assert response.get_json()["error"]["status"] == "UNAUTHENTICATED"
    status, body = caller.rest("GET", "/tasks",
                               base="/api/v1/agents/nobody/rest")
    assert status == 404 and body["error"]["status"] == "NOT_FOUND"


def test_extended_card(caller):
    caller.agent = "chat"
    status, card = caller.rest("GET", "/extendedAgentCard")
    assert status == 200 and "chat-history" in [s["id"] for s in card["skills"]]
    caller.agent = "echo"
    status, body = caller.rest("GET", "/extendedAgentCard")
    assert status == 400
    assert detail(body["error"], "ErrorInfo")["reason"] == \
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED"


def test_unrouted_rest_paths_are_rest_json_errors(caller):
    status, body = caller.rest("GET", "/nothing")
    assert status == 404 and body["error"]["status"] == "NOT_FOUND"
    status, body = caller.rest("DELETE", "/tasks/x")
    assert status == 405 and body["error"]["code"] == 405


def test_root_routes_only_with_a2a_root_rest(service, make_app):
    client, caller, _ = service()
    assert client.get("/tasks", headers=caller.headers).status_code == 404
    client, caller, _ = service(A2A_ROOT_REST=True)  # default agent: chat
    status, body = caller.rest("POST", "/message:send",
                               {"message": message(version="1.0")}, base="")
    assert status == 200
    assert body["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    status, page = caller.rest("GET", "/tasks", base="")
    assert [t["id"] for t in page["tasks"]] == [body["task"]["id"]]
    caller.agent = "chat"
    status, same = caller.rest("GET", "/tasks/" + body["task"]["id"])
    assert status == 200
    status, missing = caller.rest("GET", "/tasks/nope/x", base="")
    assert status == 404 and missing["error"]["status"] == "NOT_FOUND"


def test_metrics_and_access_log_name_the_1_0_methods(make_app, monkeypatch, caplog):
    pytest.importorskip("prometheus_client")
    import logging


    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    app, _ = make_app(A2A_METRICS=True)
    client = app.test_client()
    caller = Rpc(client, version="1.0")
    before = client.get("/api/v1/metrics").get_data(as_text=True)
    with caplog.at_level(logging.INFO, logger="a2a_flask.access"):
        caller.send()  # JSON-RPC 1.0
        send(caller)  # HTTP+JSON
        caller.rest("GET", "/tasks/nope")
        caller.result("ListTasks", {})
    text = client.get("/api/v1/metrics").get_data(as_text=True)

    def grew(name, **labels):
        return metric_growth(before, text, name, **labels)

    assert grew("a2a_calls_total", method="SendMessage", code="ok") == 2
    # The A2A error's code, as over JSON-RPC, not the HTTP status.
    assert grew("a2a_calls_total", method="GetTask", code="-32001") == 1
    assert grew("a2a_calls_total", method="ListTasks", code="ok") == 1
    assert grew("a2a_turn_seconds_count", agent="echo") == 2
    records = [r for r in caplog.records if r.name == "a2a_flask.access"]
    assert [(r.method, r.version) for r in records] == [
        ("SendMessage", "1.0"), ("SendMessage", "1.0"), ("GetTask", "1.0"),
        ("ListTasks", "1.0")]
    assert (records[1].state, records[2].taskId) == ("TASK_STATE_COMPLETED", "nope")
    assert records[2].code == -32001
