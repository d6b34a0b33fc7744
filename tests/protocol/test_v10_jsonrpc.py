"""A2A 1.0 over JSON-RPC, in process through HTTP: version negotiation, the
methods, 1.0 shapes and errors with their typed details. Every 1.0 answer is
checked against the 1.0 proto (helpers.Rpc with version="1.0")."""

import logging

import pytest

from helpers import Rpc, check_answer, detail, message


# In the compat subset: .ci/matrix runs it on every supported Python and Flask.
pytestmark = pytest.mark.compat


@pytest.fixture
def service(keyed):
    one, two = keyed("one", "two")
    return one.client, one, two, one.key


@pytest.fixture
def caller(service):
    return service[1]


# -- version negotiation (section 3.6) -------------------------------------------

def test_no_header_is_0_3_and_1_0_header_is_1_0(service):
    client, caller, _, key = service
    old = Rpc(client, headers={"X-API-Key": key})
    answer = old.result("message/send", {"message": {
        "kind": "message", "role": "user", "messageId": "a",
        "parts": [{"kind": "text", "text": "hi"}]}})
    assert answer["kind"] == "task" and answer["status"]["state"] == "completed"
    # The 0.3 name is unknown to 1.0 and the other way round.
    assert caller.error("message/send", {})[1]["code"] == -32601
    assert old.error("SendMessage", {})[1]["code"] == -32601
    task = caller.send("hi")
    assert task["status"]["state"] == "TASK_STATE_COMPLETED" and "kind" not in task


@pytest.mark.parametrize("asked", ["0.3", "", "0.3.0"])
def test_empty_or_0_3_version_is_0_3(service, asked):
    client, caller, _, key = service
    response = client.post("/api/v1/agents/echo/a2a", headers={
        "X-API-Key": key, "A2A-Version": asked}, json={
        "jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "nope"}})
    body = response.get_json()
    check_answer(response.status_code, body)
    assert body["error"]["code"] == -32001
    assert body["error"]["data"] == {"taskId": "nope"}  # the 0.3 form


def test_patch_number_is_ignored_and_query_parameter_works(caller):
    caller.headers["A2A-Version"] = "1.0.1"
    assert caller.send()["status"]["state"] == "TASK_STATE_COMPLETED"
    del caller.headers["A2A-Version"]
    task = caller.result("SendMessage", {"message": message(version="1.0")},
                         path="/api/v1/agents/echo/a2a?A2A-Version=1.0")
    assert task["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("asked", ["2.0", "0.2", "1.1", "one"])
def test_version_not_served_is_32009_and_runs_nothing(service, asked):
    client, caller, _, _ = service
    _, error = caller.error("SendMessage", {"message": message(version="1.0")},
                         headers={"A2A-Version": asked})
    assert error["code"] == -32009
    info = detail(error, "ErrorInfo")
    assert info["reason"] == "VERSION_NOT_SUPPORTED"
    assert info["metadata"]["requestedVersion"] == asked
    assert "1.0" in error["message"] and "0.3" in error["message"]
    assert caller.result("ListTasks", {})["totalSize"] == 0


# -- the methods ----------------------------------------------------------------

def test_send_message_answers_a_task_in_protojson(caller):
    task = caller.send("hello", metadata={"k": "v"})
    assert set(task) == {"id", "contextId", "status", "artifacts", "history"}
    status = task["status"]
    assert status["state"] == "TASK_STATE_COMPLETED"
    assert status["message"]["role"] == "ROLE_AGENT"
    assert status["message"]["parts"] == [{"text": "hello"}]
    assert task["artifacts"][0]["parts"] == [{"text": "hello"}]
    assert [m["role"] for m in task["history"]] == ["ROLE_USER", "ROLE_AGENT"]
    assert task["history"][0]["metadata"] == {"k": "v"}
    assert task["history"][0]["taskId"] == task["id"]


def test_return_immediately_is_accepted_and_the_turn_still_ends_in_the_call(caller):
    answer = caller.result("SendMessage", {
        "message": message(version="1.0"), "configuration": {"returnImmediately": True}})
    assert answer["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_multi_turn_continues_the_same_task(caller):
    caller.agent = "chat"
    first = caller.send("hello")
    assert first["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    second = caller.send("bye", taskId=first["id"], contextId=first["contextId"])
    assert second["id"] == first["id"]
    assert second["status"]["state"] == "TASK_STATE_COMPLETED"
    got = caller.result("GetTask", {"id": first["id"]})
    assert len(got["history"]) == 4
    assert len(caller.result("GetTask", {"id": first["id"], "historyLength": 1})
               ["history"]) == 1
    assert "history" not in caller.result("GetTask", {"id": first["id"],
                                                      "historyLength": 0})


def test_file_and_data_parts_keep_their_fields(caller):
    parts = [{"raw": "aGVsbG8=", "filename": "a.txt", "mediaType": "text/plain"},
             {"url": "https://example.com/x.png", "mediaType": "image/png"},
             {"data": {"a": [1, 2]}, "metadata": {"m": 1}}, {"text": ""}]
    sent = message(version="1.0")
    sent["parts"] = parts
    task = caller.result("SendMessage", {"message": sent})["task"]
    assert task["history"][0]["parts"] == parts


def test_cancel_task(caller):
    caller.agent = "chat"
    waiting = caller.send("hello")
    canceled = caller.result("CancelTask", {"id": waiting["id"]})
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    _, error = caller.error("CancelTask", {"id": waiting["id"]})
    assert error["code"] == -32002
    info = detail(error, "ErrorInfo")
    assert info == {"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "TASK_NOT_CANCELABLE", "domain": "a2a-protocol.org",
                    "metadata": {"taskId": waiting["id"],
                                 "state": "TASK_STATE_CANCELED"}}
    assert "TASK_STATE_CANCELED" in error["message"]


def test_another_callers_task_is_not_found(service):
    _, caller, other, _ = service
    task = caller.send()
    for method in ("GetTask", "CancelTask"):
        _, error = other.error(method, {"id": task["id"]})
        assert error["code"] == -32001
        assert detail(error, "ErrorInfo")["reason"] == "TASK_NOT_FOUND"
    _, error = other.error("SendMessage", {"message": message(taskId=task["id"], version="1.0")})
    assert error["code"] == -32001


@pytest.mark.parametrize("params, field", [
    ({}, "message"),
    ({"message": {"messageId": "x", "role": "ROLE_USER"}}, "message.parts"),
    ({"message": {"messageId": "x", "role": "ROLE_AGENT",
                  "parts": [{"text": "a"}]}}, "message.role"),
    ({"message": {"messageId": "x", "role": "ROLE_USER",
                  "parts": [{"text": "a", "url": "b"}]}}, "message.parts[0]"),
    ({"message": {"messageId": "x", "role": "ROLE_USER",
                  "parts": [{"raw": "***"}]}}, "message.parts[0].raw"),
    ({"message": {"messageId": "x", "role": "ROLE_USER",
                  "parts": [{"data": [1]}]}}, "message.parts[0].data"),
    ({"message": message(version="1.0"), "configuration": {"historyLength": -1}},
     "configuration.historyLength"),
])
def test_invalid_params_name_the_field_in_a_bad_request_detail(caller, params, field):
    _, error = caller.error("SendMessage", params)
    assert error["code"] == -32602
    violations = detail(error, "BadRequest")["fieldViolations"]
    assert violations[0]["field"] == field, violations
    assert caller.result("ListTasks", {})["tasks"] == []  # nothing was stored


def test_get_task_params_are_checked(caller):
    _, error = caller.error("GetTask", {"id": "x", "historyLength": "1"})
    assert error["code"] == -32602
    assert detail(error, "BadRequest")["fieldViolations"][0]["field"] == "historyLength"
    assert caller.error("GetTask", {})[1]["code"] == -32602


@pytest.mark.parametrize("method, code, words", [
    ("SendStreamingMessage", -32004, "SendMessage"),
    ("SubscribeToTask", -32004, "GetTask"),
    ("CreateTaskPushNotificationConfig", -32003, "GetTask"),
    ("GetTaskPushNotificationConfig", -32003, "GetTask"),
    ("ListTaskPushNotificationConfigs", -32003, "GetTask"),
    ("DeleteTaskPushNotificationConfig", -32003, "GetTask"),
])
def test_streaming_and_push_name_the_alternative(caller, method, code, words):
    _, error = caller.error(method, {"id": "x"})
    assert error["code"] == code and words in error["message"]
    assert detail(error, "ErrorInfo")["reason"] == (
        "UNSUPPORTED_OPERATION" if code == -32004 else "PUSH_NOTIFICATION_NOT_SUPPORTED")


def test_push_config_in_send_is_32003(caller):
    _, error = caller.error("SendMessage", {"message": message(version="1.0"), "configuration": {
        "taskPushNotificationConfig": {"url": "https://example.com/hook"}}})
    assert error["code"] == -32003
    assert "push notifications are not supported" in error["message"]


def test_unknown_method_lists_the_1_0_methods(caller):
    _, error = caller.error("tasks/list")
    assert error["code"] == -32601
    for name in ("SendMessage", "GetTask", "ListTasks", "CancelTask",
                 "GetExtendedAgentCard"):
        assert name in error["message"]
    assert "message/send" not in error["message"]


def test_extended_card(caller):
    caller.agent = "chat"
    card = caller.result("GetExtendedAgentCard")
    assert "chat-history" in [s["id"] for s in card["skills"]]
    caller.agent = "echo"
    _, error = caller.error("GetExtendedAgentCard")
    assert error["code"] == -32007
    assert detail(error, "ErrorInfo")["reason"] == "EXTENDED_AGENT_CARD_NOT_CONFIGURED"


def test_envelope_errors_of_a_1_0_call_have_no_0_3_data(service):
    client, _, _, key = service
    response = client.post("/api/v1/agents/echo/a2a", data=b'{"id": 1}', headers={
        "X-API-Key": key, "A2A-Version": "1.0", "Content-Type": "application/json"})
    error = response.get_json()["error"]
    assert error["code"] == -32600
    assert detail(error, "BadRequest")["fieldViolations"][0]["field"] == "method"


def test_0_3_and_1_0_callers_see_the_same_task(service):
    client, caller, _, key = service
    old = Rpc(client, agent="chat", headers={"X-API-Key": key})
    caller.agent = "chat"
    started = old.send("hello")
    assert started["status"]["state"] == "input-required"
    got = caller.result("GetTask", {"id": started["id"]})
    assert got["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert got["history"][0]["parts"] == [{"text": "hello"}]
    ended = caller.send("bye", taskId=started["id"], contextId=started["contextId"])
    assert ended["status"]["state"] == "TASK_STATE_COMPLETED"
    seen = old.result("tasks/get", {"id": started["id"]})
    assert seen["status"]["state"] == "completed"
    assert [m["role"] for m in seen["history"]] == ["user", "agent", "user", "agent"]
    assert seen["history"][2]["parts"] == [{"kind": "text", "text": "bye"}]


def test_access_log_records_method_and_version(service, caplog):
    _, caller, _, _ = service
    with caplog.at_level(logging.INFO, logger="a2a_flask.access"):
        task = caller.send()
        caller.error("GetTask", {"id": "nope"})
    first, second = [r for r in caplog.records if r.name == "a2a_flask.access"]
    assert (first.method, first.version, first.taskId, first.state) == (
        "SendMessage", "1.0", task["id"], "TASK_STATE_COMPLETED")
    assert first.getMessage().endswith("version=1.0")
    assert (second.method, second.version, second.code) == ("GetTask", "1.0", -32001)


def test_a_method_of_the_other_version_is_told_after_the_credentials(service):
    client, caller, _, key = service
    for version, method in ((None, "GetTask"), ("1.0", "tasks/get")):
        headers = {"A2A-Version": version} if version else {}
        response = client.post("/api/v1/agents/echo/a2a", headers=headers, json={
            "jsonrpc": "2.0", "id": 1, "method": method, "params": {"id": "x"}})
        assert response.status_code == 401  # anonymous: the credentials first
        response = client.post("/api/v1/agents/echo/a2a", headers=dict(
            headers, **{"X-API-Key": key}), json={
            "jsonrpc": "2.0", "id": 1, "method": method, "params": {"id": "x"}})
        error = response.get_json()["error"]
        assert error["code"] == -32601
        assert ("A2A-Version: 1.0" if version is None else "no A2A-Version") \
            in error["message"]
    # A name of no version is refused before the credentials, as before.
    response = client.post("/api/v1/agents/echo/a2a", headers={"A2A-Version": "1.0"},
                           json={"jsonrpc": "2.0", "id": 1, "method": "Nope"})
    assert response.status_code == 200
    assert response.get_json()["error"]["code"] == -32601


def test_proto_field_names_are_read_as_their_json_names(caller):
    # ProtoJSON parsers accept both; the 1.0 conformance kit sends the former.
    task = caller.result("SendMessage", {"message": {
        "message_id": "snake-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
        "configuration": {"history_length": 0}})["task"]
    assert "history" not in task
    got = caller.result("GetTask", {"id": task["id"], "history_length": 1})
    assert got["history"][0]["messageId"] != "snake-1"
    again = caller.result("GetTask", {"id": task["id"], "history_length": 2})
    assert again["history"][0]["messageId"] == "snake-1"


def test_return_immediately_to_a_background_agent_answers_working(make_app,
                                                                   monkeypatch):
    from a2a_flask import service as service_module
    from a2a_flask.demo import slow

    # No worker runs here: a blocking send would wait A2A_BLOCKING_WAIT_SECONDS
    # and answer working too, so the test also sees what the service was asked.
    asked = []
    queue = service_module._send_to_queue
    monkeypatch.setattr(service_module, "_send_to_queue", lambda *a: (
        asked.append(a[-1]), queue(*a))[1])
    app, _ = make_app(lambda a2a: a2a.add_agent("slow", slow, background=True))
    caller = Rpc(app.test_client(), agent="slow", version="1.0")
    answer = caller.result("SendMessage", {
        "message": message("1", version="1.0"), "configuration": {"returnImmediately": True}})
    assert answer["task"]["status"]["state"] == "TASK_STATE_WORKING"
    got = caller.result("GetTask", {"id": answer["task"]["id"]})
    assert got["status"]["state"] == "TASK_STATE_WORKING"
    assert asked == [True]


@pytest.mark.parametrize("path", ["/api/v1/agents/echo/a2a/", "/a2a/"])
def test_the_endpoint_takes_a_trailing_slash(caller, path):
    # httpx given the card's URL as base_url posts to "/" below it (the
    # 1.0-dev conformance kit does): the same endpoint answers.
    _, error = caller.error("GetTask", {"id": "nope"}, path=path)
    assert error["code"] == -32001
