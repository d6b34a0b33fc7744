"""docs/protocol.md §4, message/send: validation, which task, retries, outcomes, config."""

import base64
import json

import pytest

from a2a_flask import Reply
from helpers import SECRET, TERMINAL_STATES, message, task_in_state, texts


def send_params(msg, **configuration):
    params = {"message": msg}
    if configuration:
        params["configuration"] = configuration
    return params


def send_error(rpc, msg, agent=None, **configuration):
    status, error = rpc.error("message/send", send_params(msg, **configuration),
                              agent=agent)
    assert status == 200
    return error


# -- validation ---------------------------------------------------------------------

TEXT = {"kind": "text", "text": "hi"}


def without(key):
    msg = message()
    del msg[key]
    return msg


@pytest.mark.parametrize("params, field", [
    ({}, "message"),
    ({"message": None}, "message"),
    ({"message": "hello"}, "message"),
    ({"message": [message()]}, "message"),
    ({"message": without("role")}, "message.role"),
    ({"message": message(role="agent")}, "message.role"),
    ({"message": message(role=None)}, "message.role"),
    ({"message": without("parts")}, "message.parts"),
    ({"message": message(parts=[])}, "message.parts"),
    ({"message": message(parts=TEXT)}, "message.parts"),
    ({"message": without("messageId")}, "message.messageId"),
    ({"message": message(messageId="")}, "message.messageId"),
    ({"message": message(messageId=7)}, "message.messageId"),
    ({"message": message(messageId=None)}, "message.messageId"),
    ({"message": message(kind="task")}, "message.kind"),
    ({"message": message(kind=None)}, "message.kind"),
    ({"message": message(contextId=5)}, "message.contextId"),
    ({"message": message(contextId="")}, "message.contextId"),
    ({"message": message(taskId=5)}, "message.taskId"),
    ({"message": message(taskId=["t"])}, "message.taskId"),
    ({"message": message(metadata=[1])}, "message.metadata"),
    ({"message": message(referenceTaskIds="task_x")}, "message.referenceTaskIds"),
    ({"message": message(extensions=[1])}, "message.extensions[0]"),
    ({"message": message(parts=["hi"])}, "message.parts[0]"),
    ({"message": message(parts=[TEXT, {"text": "no kind"}])}, "message.parts[1].kind"),
    ({"message": message(parts=[{"kind": "image", "text": "x"}])}, "message.parts[0].kind"),
    ({"message": message(parts=[{"kind": ["text"], "text": "x"}])}, "message.parts[0].kind"),
    ({"message": message(parts=[{"kind": {"a": 1}}])}, "message.parts[0].kind"),
    ({"message": message(parts=[{"kind": "text"}])}, "message.parts[0].text"),
    ({"message": message(parts=[{"kind": "text", "text": 5}])}, "message.parts[0].text"),
    ({"message": message(parts=[{"kind": "text", "text": None}])}, "message.parts[0].text"),
    ({"message": message(parts=[TEXT, {"kind": "text", "text": "x", "metadata": 3}])},
     "message.parts[1].metadata"),
    ({"message": message(parts=[TEXT, {"kind": "file"}])}, "message.parts[1].file"),
    ({"message": message(parts=[TEXT, {"kind": "file", "file": "x"}])},
     "message.parts[1].file"),
    ({"message": message(parts=[TEXT, {"kind": "file", "file": {}}])},
     "message.parts[1].file"),
    ({"message": message(parts=[TEXT, {"kind": "file", "file": {
        "bytes": "aGk=", "uri": "https://example.org/f"}}])}, "message.parts[1].file"),
    ({"message": message(parts=[TEXT, {"kind": "file", "file": {"bytes": "!!"}}])},
     "message.parts[1].file.bytes"),
    ({"message": message(parts=[TEXT, {"kind": "file", "file": {"bytes": None}}])},
     "message.parts[1].file.bytes"),
    ({"message": message(parts=[TEXT, {"kind": "file", "file": {"uri": ""}}])},
     "message.parts[1].file.uri"),
    ({"message": message(parts=[TEXT, {"kind": "data"}])}, "message.parts[1].data"),
    ({"message": message(parts=[TEXT, {"kind": "data", "data": [1, 2]}])},
     "message.parts[1].data"),
    ({"message": message(parts=[TEXT, {"kind": "data", "data": "x"}])},
     "message.parts[1].data"),
    ({"message": message(), "configuration": []}, "configuration"),
    ({"message": message(), "configuration": {"historyLength": -1}},
     "configuration.historyLength"),
    ({"message": message(), "configuration": {"historyLength": 1.5}},
     "configuration.historyLength"),
    ({"message": message(), "configuration": {"historyLength": True}},
     "configuration.historyLength"),
    ({"message": message(), "configuration": {"historyLength": "2"}},
     "configuration.historyLength"),
    ({"message": message(), "configuration": {"blocking": "no"}},
     "configuration.blocking"),
    ({"message": message(), "configuration": {"acceptedOutputModes": "text/plain"}},
     "configuration.acceptedOutputModes"),
    ({"message": message(), "metadata": "x"}, "metadata"),
])
@pytest.mark.compat
def test_invalid_params_name_the_field(rpc, params, field):
    status, error = rpc.error("message/send", params, id="v")
    assert status == 200 and rpc.last_response.get_json()["id"] == "v"
    assert error["code"] == -32602
    assert error["data"]["field"] == field
    assert field in error["message"]
    assert task_count_of(rpc) == 0


def task_count_of(rpc):
    app = rpc.client.application
    return sum(app.extensions["a2a"].storage.task_counts().values())


@pytest.mark.compat
def test_valid_parts_of_every_kind_are_accepted(rpc):
    task = rpc.send(parts=[
        {"kind": "text", "text": "a", "metadata": {"k": 1}},
        {"kind": "file", "file": {"bytes": "aGk=", "name": "hi.txt",
                                  "mimeType": "text/plain"}},
        {"kind": "file", "file": {"uri": "https://example.org/f.pdf"}},
        {"kind": "data", "data": {"x": [1, {"y": None}]}},
    ], referenceTaskIds=["task_other"], extensions=["https://ext.example/x"],
        metadata={"trace": "t1"})
    assert task["status"]["state"] == "completed"
    sent = task["history"][0]
    assert sent["parts"][1]["file"]["name"] == "hi.txt"
    assert sent["parts"][3]["data"] == {"x": [1, {"y": None}]}
    assert sent["referenceTaskIds"] == ["task_other"]
    assert sent["metadata"] == {"trace": "t1"}


def test_kind_may_be_left_out(rpc):
    msg = without("kind")
    task = rpc.result("message/send", {"message": msg})
    assert task["status"]["state"] == "completed"
    assert task["history"][0]["kind"] == "message"


def test_null_optional_members_are_taken_as_absent(rpc):
    """Null where A2A has no null (metadata, file name...) is not echoed back."""
    task = rpc.send(
        "hi", metadata=None, contextId=None, taskId=None, parts=[
            {"kind": "text", "text": "hi", "metadata": None},
            {"kind": "file", "file": {"uri": "https://example.org/f",
                                      "name": None, "mimeType": None}}])
    assert task["status"]["state"] == "completed"
    sent = task["history"][0]
    assert "metadata" not in sent
    assert "metadata" not in sent["parts"][0]
    assert sent["parts"][1]["file"] == {"uri": "https://example.org/f"}
    assert sent["contextId"] == task["contextId"] and sent["taskId"] == task["id"]


def test_unknown_members_are_kept_as_sent(rpc):
    task = rpc.send("hi", **{"x-extra": {"a": 1}})
    assert task["history"][0]["x-extra"] == {"a": 1}


# -- what the agent gets ---------------------------------------------------------------


def test_text_parts_are_joined_with_newlines_and_all_parts_reach_the_agent(script):
    parts = [{"kind": "text", "text": "first"},
             {"kind": "data", "data": {"n": 1}},
             {"kind": "file", "file": {"bytes": base64.b64encode(b"abc").decode(),
                                       "name": "a.bin"}},
             {"kind": "text", "text": "second\nthird"},
             {"kind": "file", "file": {"uri": "https://example.org/f"}}]
    task = script.send(parts=parts)
    turn = script.a2a.turns[-1]
    assert turn.text == "first\nsecond\nthird"
    assert turn.parts == parts
    assert turn.data == [{"n": 1}]
    assert turn.files == [{"bytes": "YWJj", "name": "a.bin"},
                          {"uri": "https://example.org/f"}]
    assert turn.message["messageId"] == task["history"][0]["messageId"]
    assert texts(task["status"]["message"]) == "done: first\nsecond\nthird"


def test_message_without_text_part_to_text_only_agent_is_32005(rpc):
    msg = message(parts=[{"kind": "data", "data": {"a": 1}}])
    error = send_error(rpc, msg)
    assert error["code"] == -32005
    assert "text" in error["message"]
    assert task_count_of(rpc) == 0


def test_agent_taking_data_gets_a_message_without_text(make_rpc):
    seen = []

    def register(a2a):
        a2a.add_agent("json", lambda turn: seen.append(turn) or Reply("ok"),
                      input_modes=["application/json"])

    rpc = make_rpc(register, agent="json")
    task = rpc.send(parts=[{"kind": "data", "data": {"a": 1}}])
    assert task["status"]["state"] == "completed"
    assert seen[0].text == "" and seen[0].data == [{"a": 1}]


@pytest.mark.parametrize("modes", [["image/png"], ["application/json", "audio/*"]])
def test_accepted_output_modes_sharing_nothing_is_32005(rpc, modes):
    error = send_error(rpc, message(), acceptedOutputModes=modes)
    assert error["code"] == -32005
    assert error["data"]["field"] == "configuration.acceptedOutputModes"
    assert "text/plain" in error["message"]
    assert task_count_of(rpc) == 0


@pytest.mark.parametrize("modes", [[], None, ["text/plain"], ["image/png", "text/*"],
                                   ["*/*"]])
def test_accepted_output_modes_matching_or_empty_is_no_restriction(rpc, modes):
    task = rpc.send("hi", configuration={"acceptedOutputModes": modes})
    assert task["status"]["state"] == "completed"


def test_push_notification_config_is_32003(rpc):
    error = send_error(rpc, message(), pushNotificationConfig={
        "url": "https://callback.example/hook"})
    assert error["code"] == -32003
    assert error["data"]["field"] == "configuration.pushNotificationConfig"
    assert "tasks/get" in error["message"]
    assert task_count_of(rpc) == 0


@pytest.mark.parametrize("blocking", [False, True, None])
def test_blocking_false_is_accepted_and_the_turn_still_completes(rpc, blocking):
    task = rpc.send("hi", configuration={"blocking": blocking})
    assert task["status"]["state"] == "completed"
    assert texts(task["artifacts"][0]) == "hi"


# -- outcomes ---------------------------------------------------------------------------


@pytest.mark.compat
def test_reply_completes_with_response_artifact_and_agent_message(rpc):
    task = rpc.send("hello there")
    assert task["kind"] == "task"
    assert task["status"]["state"] == "completed"
    status_message = task["status"]["message"]
    assert status_message["role"] == "agent"
    assert texts(status_message) == "hello there"
    [artifact] = task["artifacts"]
    assert artifact["name"] == "response"
    assert artifact["parts"] == [{"kind": "text", "text": "hello there"}]
    assert [m["role"] for m in task["history"]] == ["user", "agent"]
    assert task["history"][-1] == status_message


@pytest.mark.parametrize("command, state, question", [
    ("ask", "input-required", "What else?"),
    ("auth", "auth-required", "Please authorize me first."),
])
@pytest.mark.compat
def test_request_for_more_input_leaves_the_task_open(script, command, state, question):
    task = script.send(command)
    assert task["status"]["state"] == state
    assert texts(task["status"]["message"]) == question
    assert task["status"]["message"]["role"] == "agent"
    assert task["artifacts"] == []
    assert task["history"][-1] == task["status"]["message"]
    # The conversation continues in the same task.
    again = script.send("and then", taskId=task["id"])
    assert again["id"] == task["id"] and again["contextId"] == task["contextId"]
    assert again["status"]["state"] == "completed"
    assert [m["role"] for m in again["history"]] == ["user", "agent"] * 2
    assert texts(again["artifacts"][0]) == "done: and then"


def test_refusal_is_rejected(script):
    task = script.send("reject this")
    assert task["status"]["state"] == "rejected"
    assert texts(task["status"]["message"]) == "I will not do that."
    assert task["artifacts"] == []


@pytest.mark.compat
def test_agent_exception_fails_the_task_without_internals(script, caplog):
    caplog.set_level("INFO", logger="a2a_flask")
    status, answer = script.call("message/send", {"message": message("fail now")})
    assert status == 200 and "result" in answer
    task = answer["result"]
    assert task["status"]["state"] == "failed"
    assert task["status"]["message"]["role"] == "agent"
    assert task["artifacts"] == []
    body = script.last_response.get_data(as_text=True)
    for internal in (SECRET, "Traceback", "RuntimeError", "scripted", ".py"):
        assert internal not in body
    # The traceback is in the log.
    [record] = [r for r in caplog.records if r.exc_info]
    assert record.levelname == "ERROR"
    assert record.exc_info[0] is RuntimeError
    assert SECRET in caplog.text and "Traceback" in caplog.text
    assert task["id"] in record.getMessage()


def test_agent_returning_something_else_fails_the_task(make_rpc, caplog):
    rpc = make_rpc(lambda a2a: a2a.add_agent("odd", lambda turn: 42), agent="odd")
    task = rpc.send("hi")
    assert task["status"]["state"] == "failed"
    shown = texts(task["status"]["message"])
    assert "returned" not in shown and "TypeError" not in shown
    assert "returned 'int'" in caplog.text


# -- historyLength of message/send -----------------------------------------------------


@pytest.mark.parametrize("length, roles", [
    (None, ["user", "agent", "user", "agent"]),
    (0, []), (1, ["agent"]), (3, ["agent", "user", "agent"]),
    (10, ["user", "agent", "user", "agent"]),
    (2 ** 31 - 1, ["user", "agent", "user", "agent"]),
])
@pytest.mark.compat
def test_history_length_in_configuration_clamps_the_history(script, length, roles):
    first = script.send("ask")
    task = script.send("now reply", taskId=first["id"],
                       configuration={"historyLength": length})
    assert [m["role"] for m in task["history"]] == roles
    if roles:
        assert task["history"][-1] == task["status"]["message"]
    full = script.result("tasks/get", {"id": task["id"]})
    assert len(full["history"]) == 4


# -- which task -------------------------------------------------------------------------


def test_no_task_id_makes_a_new_task_in_a_new_context(rpc):
    one, two = rpc.send("a"), rpc.send("b")
    assert one["id"] != two["id"]
    assert one["contextId"] != two["contextId"]
    assert one["contextId"].startswith("ctx_")


def test_unknown_context_id_is_accepted_as_the_callers_own(rpc):
    task = rpc.send("a", contextId="my-conversation-1")
    assert task["contextId"] == "my-conversation-1"
    assert task["history"][0]["contextId"] == "my-conversation-1"
    assert task["status"]["message"]["contextId"] == "my-conversation-1"


def test_new_task_with_existing_context_sees_earlier_turns(script):
    first = script.send("hello one")
    second = script.send("hello two", contextId=first["contextId"])
    assert second["id"] != first["id"]
    assert second["contextId"] == first["contextId"]
    turn = script.a2a.turns[-1]
    assert [texts(m) for m in turn.context_history] == [
        "hello one", "done: hello one"]
    assert turn.history == []  # the task itself is new
    # The task's history has only its own messages.
    assert [texts(m) for m in second["history"]] == ["hello two", "done: hello two"]


def test_a_context_is_the_callers_own_with_this_agent(script):
    store = script.app.extensions["a2a"].storage
    store.start_turn("someone-else", "script", message("their secret",
                                                       contextId="shared"))
    script.send("on echo", agent="echo", contextId="shared")
    task = script.send("mine", contextId="shared")
    assert task["contextId"] == "shared"
    assert script.a2a.turns[-1].context_history == []


def test_unknown_task_id_is_task_not_found_and_starts_nothing(script):
    error = send_error(script, message("hi", taskId="task_doesnotexist"))
    assert error["code"] == -32001
    assert error["data"]["taskId"] == "task_doesnotexist"
    assert task_count_of(script) == 0
    assert script.a2a.turns == []


def test_task_id_of_another_agent_is_task_not_found(script):
    task = script.send("ask", agent="chat")
    assert task["status"]["state"] == "input-required"
    error = send_error(script, message("hi", taskId=task["id"]))
    assert error["code"] == -32001
    assert script.a2a.turns == []


def test_task_id_of_another_owner_is_task_not_found(script):
    store = script.app.extensions["a2a"].storage
    start = store.start_turn("someone-else", "script", message("mine"))
    store.finish_turn(start.task_id, "someone-else", "script", "input-required")
    error = send_error(script, message("hi", taskId=start.task_id))
    assert error["code"] == -32001
    assert store.task_state(start.task_id) == "input-required"


@pytest.mark.parametrize("state", TERMINAL_STATES)
def test_task_id_of_a_terminal_task_is_32602_pointing_to_its_context(script, state):
    task = task_in_state(script, state)
    before = script.result("tasks/get", {"id": task["id"]})
    error = send_error(script, message("more", taskId=task["id"]))
    assert error["code"] == -32602
    assert error["data"]["field"] == "message.taskId"
    assert error["data"]["state"] == state
    assert "terminal" in error["message"]
    assert state in error["message"]
    assert task["contextId"] in error["message"]
    assert script.result("tasks/get", {"id": task["id"]}) == before


def test_task_and_context_not_matching_is_32602(script):
    task = script.send("ask")
    error = send_error(script, message("x", taskId=task["id"], contextId="ctx_other"))
    assert error["code"] == -32602
    assert error["data"]["field"] == "message.contextId"
    assert "contextId" in error["message"]
    assert script.result("tasks/get", {"id": task["id"]})["status"]["state"] == \
        "input-required"


@pytest.mark.compat
def test_task_and_matching_context_continue_the_task(script):
    task = script.send("ask")
    again = script.send("ok", taskId=task["id"], contextId=task["contextId"])
    assert again["id"] == task["id"] and again["status"]["state"] == "completed"


# -- retries ------------------------------------------------------------------------------


@pytest.mark.compat
def test_retry_with_same_message_id_runs_nothing_and_answers_the_task(script):
    msg = message("ask", message_id="retry-1")
    first = script.result("message/send", {"message": msg})
    second = script.result("message/send", {"message": msg})
    assert len(script.a2a.turns) == 1
    assert second == first
    assert len(second["history"]) == 2


def test_retry_answers_the_task_as_it_stands_now(script):
    msg = message("ask", message_id="retry-2")
    first = script.result("message/send", {"message": msg})
    script.send("done now", taskId=first["id"])
    again = script.result("message/send", {"message": msg})
    assert len(script.a2a.turns) == 2
    assert again["id"] == first["id"]
    assert again["status"]["state"] == "completed"
    assert len(again["history"]) == 4


def test_retry_of_a_continuing_message_answers_the_same_task(script):
    task = script.send("ask")
    follow = message("ask again", message_id="retry-3", taskId=task["id"])
    first = script.result("message/send", {"message": follow})
    second = script.result("message/send", {"message": follow})
    assert first == second and first["id"] == task["id"]
    assert len(script.a2a.turns) == 2
    assert len(second["history"]) == 4


def test_retry_honours_its_own_history_length(script):
    msg = message("hello", message_id="retry-4")
    script.result("message/send", {"message": msg})
    again = script.result("message/send", {"message": msg,
                                           "configuration": {"historyLength": 0}})
    assert again["history"] == []


@pytest.mark.parametrize("change", [
    {"parts": [{"kind": "text", "text": "something else"}]},
    {"contextId": "ctx_elsewhere"},
    {"metadata": {"a": 1}},
])
def test_same_message_id_with_different_content_is_32602(script, change):
    msg = message("hello", message_id="dup-1")
    first = script.result("message/send", {"message": msg})
    error = send_error(script, {**msg, **change})
    assert error["code"] == -32602
    assert error["data"]["field"] == "message.messageId"
    assert "messageId" in error["message"]
    assert len(script.a2a.turns) == 1
    assert script.result("tasks/get", {"id": first["id"]}) == first


def test_same_message_id_to_another_agent_is_another_message(rpc):
    msg = message("hello", message_id="shared-id")
    one = rpc.result("message/send", {"message": msg})
    two = rpc.result("message/send", {"message": msg}, agent="chat")
    assert one["id"] != two["id"]
    assert two["status"]["state"] == "input-required"


def test_refused_message_can_be_sent_again_with_the_same_id(script):
    """A message refused with an error created nothing: its messageId is free."""
    msg = message("hello", message_id="free-1", taskId="task_unknown")
    assert send_error(script, msg)["code"] == -32001
    del msg["taskId"]
    task = script.result("message/send", {"message": msg})
    assert task["status"]["state"] == "completed"


def test_params_metadata_reaches_the_agent_and_the_task(script):
    task = script.result("message/send", {"message": message("hi"),
                                          "metadata": {"trace": "abc"}})
    assert script.a2a.turns[-1].metadata == {"trace": "abc"}
    assert task["metadata"] == {"trace": "abc"}
    assert json.dumps(task)  # plain JSON
