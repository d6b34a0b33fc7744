"""docs/protocol.md §4 (tasks/get, tasks/cancel, the unsupported methods, the extended
card) and 5 (the Task and its messages)."""

import threading
from datetime import datetime, timedelta, timezone

import pytest

from a2a_flask import Reply
from helpers import (
    TERMINAL_STATES, Rpc, message, parse_timestamp, random_bits, task_in_state,
    texts,
)

# -- tasks/get ----------------------------------------------------------------------


@pytest.fixture
def long_task(script):
    """A task of ``script`` with 6 messages: ask, ask, then a reply."""
    task = script.send("ask 1")
    script.send("ask 2", taskId=task["id"])
    task = script.send("reply 3", taskId=task["id"])
    assert task["status"]["state"] == "completed"
    assert len(task["history"]) == 6
    return task


def history_texts(task):
    return [texts(m) for m in task["history"]]


def test_get_without_history_length_gives_the_whole_history(script, long_task):
    task = script.result("tasks/get", {"id": long_task["id"]})
    assert task == long_task
    assert history_texts(task) == ["ask 1", "What else?", "ask 2", "What else?",
                                   "reply 3", "done: reply 3"]


@pytest.mark.parametrize("length", [None, "absent"])
def test_get_with_null_or_absent_history_length(script, long_task, length):
    params = {"id": long_task["id"]}
    if length != "absent":
        params["historyLength"] = length
    assert len(script.result("tasks/get", params)["history"]) == 6


def test_get_with_history_length_0_has_an_empty_history_list(script, long_task):
    task = script.result("tasks/get", {"id": long_task["id"], "historyLength": 0})
    assert task["history"] == []
    assert task["status"] == long_task["status"]
    assert task["artifacts"] == long_task["artifacts"]


@pytest.mark.parametrize("length, expected", [
    (1, ["done: reply 3"]),
    (2, ["reply 3", "done: reply 3"]),
    (5, ["What else?", "ask 2", "What else?", "reply 3", "done: reply 3"]),
    (6, None), (7, None), (2 ** 31 - 1, None),
])
@pytest.mark.compat
def test_get_with_history_length_n_gives_the_last_n(script, long_task, length,
                                                    expected):
    task = script.result("tasks/get", {"id": long_task["id"], "historyLength": length})
    assert history_texts(task) == (expected or history_texts(long_task))


# Past the proto's int32 an integer is out of range (-32602), not "all".
@pytest.mark.parametrize("length", [-1, -100, 1.5, 2.0, "2", True, False, [1], {},
                                    2 ** 31, 2 ** 63, 2 ** 70])
def test_get_with_bad_history_length_is_32602(script, long_task, length):
    status, error = script.error("tasks/get", {"id": long_task["id"],
                                               "historyLength": length})
    assert status == 200 and error["code"] == -32602
    assert error["data"]["field"] == "historyLength"
    assert "historyLength" in error["message"]


def test_history_key_is_always_present(script):
    task = task_in_state(script, "canceled")
    for length in (None, 0, 1):
        params = {"id": task["id"]}
        if length is not None:
            params["historyLength"] = length
        assert "history" in script.result("tasks/get", params)


@pytest.mark.parametrize("params, code, field", [
    ({"id": "task_nope"}, -32001, None),
    ({"id": "nope", "historyLength": 1}, -32001, None),
    ({}, -32602, "id"),
    ({"id": 5}, -32602, "id"),
    ({"id": ""}, -32602, "id"),
    ({"id": None}, -32602, "id"),
])
@pytest.mark.compat
@pytest.mark.parametrize("method", ["tasks/get", "tasks/cancel"])
def test_get_and_cancel_unknown_or_bad_id(rpc, method, params, code, field):
    status, error = rpc.error(method, params)
    assert status == 200 and error["code"] == code
    if field:
        assert error["data"]["field"] == field
    else:
        assert error["data"]["taskId"] == params["id"]
        assert error["message"].rstrip(".") == "Task not found"


@pytest.mark.parametrize("method", ["tasks/get", "tasks/cancel"])
def test_task_of_another_agent_is_not_found(script, method):
    task = script.send("ask")
    status, error = script.error(method, {"id": task["id"]}, agent="echo")
    assert error["code"] == -32001
    assert script.result("tasks/get", {"id": task["id"]})["status"]["state"] == \
        "input-required"


@pytest.mark.parametrize("method", ["tasks/get", "tasks/cancel"])
def test_task_of_another_owner_is_not_found(script, method):
    store = script.app.extensions["a2a"].storage
    start = store.start_turn("someone-else", "script", message("theirs"))
    store.finish_turn(start.task_id, "someone-else", "script", "input-required")
    status, error = script.error(method, {"id": start.task_id})
    assert error["code"] == -32001
    assert store.task_state(start.task_id) == "input-required"


# -- tasks/cancel -----------------------------------------------------------------


@pytest.mark.compat
@pytest.mark.parametrize("state", ["input-required", "auth-required"])
def test_cancel_of_a_waiting_task_cancels_it(script, state):
    task = task_in_state(script, state)
    canceled = script.result("tasks/cancel", {"id": task["id"]})
    assert canceled["id"] == task["id"]
    assert canceled["status"]["state"] == "canceled"
    assert "message" not in canceled["status"]
    assert parse_timestamp(canceled["status"]["timestamp"]) >= \
        parse_timestamp(task["status"]["timestamp"])
    assert canceled["history"] == task["history"]
    assert script.result("tasks/get", {"id": task["id"]}) == canceled


@pytest.mark.parametrize("state", TERMINAL_STATES)
def test_cancel_of_a_terminal_task_is_32002_naming_the_state(script, state):
    task = task_in_state(script, state)
    before = script.result("tasks/get", {"id": task["id"]})
    status, error = script.error("tasks/cancel", {"id": task["id"]})
    assert status == 200 and error["code"] == -32002
    assert error["data"]["state"] == state
    assert state in error["message"]
    assert script.result("tasks/get", {"id": task["id"]}) == before


@pytest.mark.parametrize("state", TERMINAL_STATES)
def test_a_terminal_task_never_changes(script, state):
    task = task_in_state(script, state)
    before = script.result("tasks/get", {"id": task["id"]})
    for _ in range(2):
        script.error("tasks/cancel", {"id": task["id"]})
        script.error("message/send", {"message": message("reply", taskId=task["id"])})
        script.error("message/send", {"message": message(
            "reply", taskId=task["id"], contextId=task["contextId"])})
    assert script.result("tasks/get", {"id": task["id"]}) == before
    # Its conversation goes on in a new task.
    follow = script.send("reply", contextId=task["contextId"])
    assert follow["id"] != task["id"]
    assert script.result("tasks/get", {"id": task["id"]}) == before


def test_cancel_of_a_working_task(make_rpc):
    """Canceled at once from another request; the late result is discarded."""
    started, release = threading.Event(), threading.Event()
    seen = {}

    calls = []
    first_message = message("go")

    def slow(turn):
        calls.append(1)
        started.set()
        assert release.wait(10)
        seen["canceled"] = turn.canceled
        return Reply("late result", artifacts=[{"parts": [
            {"kind": "text", "text": "late artifact"}]}])

    rpc = make_rpc(lambda a2a: a2a.add_agent("slow", slow), agent="slow")
    answers = []

    def run():
        worker = Rpc(rpc.app.test_client(), agent="slow")
        try:
            answers.append(worker.call("message/send", {"message": first_message}))
        except BaseException as exc:  # noqa: BLE001 - reported below
            answers.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert started.wait(10)
        storage = rpc.app.extensions["a2a"].storage
        [task_id] = [task.id for task in storage.list_tasks().tasks]
        # Another request sees it working (committed before the agent runs)...
        working = rpc.result("tasks/get", {"id": task_id})
        assert working["status"]["state"] == "working"
        assert [m["role"] for m in working["history"]] == ["user"]
        # ...cannot send it a message now...
        status, error = rpc.error("message/send",
                                  {"message": message("more", taskId=task_id)})
        assert error["code"] == -32602 and error["data"]["state"] == "working"
        assert "working" in error["message"] and "tasks/get" in error["message"]
        # ...a retry of the running message answers it as it stands...
        retry = rpc.result("message/send", {"message": first_message})
        assert retry["id"] == task_id and retry["status"]["state"] == "working"
        assert calls == [1]
        # ...and cancels it at once, while the agent is still running.
        canceled = rpc.result("tasks/cancel", {"id": task_id})
        assert canceled["status"]["state"] == "canceled"
        assert thread.is_alive()
    finally:
        release.set()
        thread.join(10)
    assert not thread.is_alive()
    [(status, answer)] = answers
    assert status == 200, answer
    assert seen["canceled"] is True
    late = answer["result"]
    assert late["status"]["state"] == "canceled"
    assert late["artifacts"] == []
    final = rpc.result("tasks/get", {"id": task_id})
    assert final == late
    assert [m["role"] for m in final["history"]] == ["user"]
    assert "late" not in str(final)
    status, error = rpc.error("tasks/cancel", {"id": task_id})
    assert error["code"] == -32002 and error["data"]["state"] == "canceled"


def test_turn_canceled_is_false_while_not_canceled(script):
    script.send("hello")
    assert script.a2a.turns[-1].canceled is False


# -- not supported, answered with the alternative ------------------------------------


@pytest.mark.parametrize("method, hint", [
    ("message/stream", "message/send"),
    ("message/stream", "tasks/get"),
    ("tasks/resubscribe", "tasks/get"),
])
@pytest.mark.compat
def test_streaming_methods_are_32004_naming_the_alternative(rpc, method, hint):
    status, error = rpc.error(method, {"message": message()}, id="s")
    assert status == 200 and error["code"] == -32004
    assert hint in error["message"]
    assert rpc.last_response.get_json()["id"] == "s"


@pytest.mark.parametrize("name", ["set", "get", "list", "delete"])
def test_push_notification_config_methods_are_32003(rpc, name):
    status, error = rpc.error("tasks/pushNotificationConfig/" + name,
                              {"id": "task_x"})
    assert status == 200 and error["code"] == -32003
    assert "tasks/get" in error["message"]


@pytest.mark.parametrize("agent", ["echo", "chat"])
def test_extended_card_with_auth_off_is_32007(rpc, agent):
    # echo has no extended card; chat has one, but with A2A_AUTH=off the
    # caller is anonymous and may not see it.
    status, error = rpc.error("agent/getAuthenticatedExtendedCard", agent=agent)
    assert status == 200 and error["code"] == -32007
    assert agent in error["message"]


# -- protocol.md §5: the Task and its messages ---------------------------------------


@pytest.mark.compat
def test_task_shape(script):
    task = script.send("ask")
    assert set(task) == {"kind", "id", "contextId", "status", "artifacts", "history"}
    assert task["kind"] == "task"
    assert set(task["status"]) == {"state", "timestamp", "message"}
    done = script.send("reply", taskId=task["id"])
    assert set(done) == {"kind", "id", "contextId", "status", "artifacts", "history"}
    [artifact] = done["artifacts"]
    assert artifact["artifactId"] and artifact["name"] == "response"


def test_ids_have_a_prefix_and_128_random_bits(script):
    tasks = [script.send("ask"), script.send("reply"), script.send("ask")]
    task_ids = {t["id"] for t in tasks}
    context_ids = {t["contextId"] for t in tasks}
    assert len(task_ids) == len(context_ids) == 3
    for task in tasks:
        assert random_bits(task["id"], "task_") >= 128
        assert random_bits(task["contextId"], "ctx_") >= 128
    # The random part differs in many characters, not just a counter.
    first, second = sorted(task_ids)[:2]
    differing = sum(a != b for a, b in zip(first[-32:], second[-32:]))
    assert differing > 10


def test_timestamps_are_iso_utc_with_milliseconds_and_z(script):
    before = datetime.now(timezone.utc) - timedelta(seconds=1)
    task = script.send("ask")
    stamp = parse_timestamp(task["status"]["timestamp"])
    assert before <= stamp <= datetime.now(timezone.utc) + timedelta(seconds=1)
    done = script.send("reply", taskId=task["id"])
    assert parse_timestamp(done["status"]["timestamp"]) >= stamp


def test_every_history_message_carries_its_ids(script):
    task = script.send("ask", parts=[{"kind": "text", "text": "ask"}])
    task = script.send("reply", taskId=task["id"])
    roles = []
    for msg in task["history"]:
        assert msg["kind"] == "message"
        assert msg["role"] in ("user", "agent")
        assert msg["parts"]
        assert msg["messageId"]
        assert msg["taskId"] == task["id"]
        assert msg["contextId"] == task["contextId"]
        roles.append(msg["role"])
    assert roles == ["user", "agent", "user", "agent"]
    ids = [m["messageId"] for m in task["history"]]
    assert len(set(ids)) == 4
    assert task["status"]["message"] == task["history"][-1]


def test_sent_message_is_stored_with_task_and_context_even_without_them(rpc):
    msg = message("hi")
    msg.pop("kind")
    task = rpc.result("message/send", {"message": msg})
    sent = task["history"][0]
    assert sent["messageId"] == msg["messageId"]
    assert (sent["kind"], sent["taskId"], sent["contextId"]) == (
        "message", task["id"], task["contextId"])


@pytest.mark.compat
@pytest.mark.parametrize("state", ["completed", "input-required", "auth-required",
                                   "rejected", "failed"])
@pytest.mark.parametrize("history_length", [None, 0, 1])
def test_send_answers_the_new_task_exactly_as_tasks_get_reads_it(
        script, state, history_length):
    # message/send builds a new task's answer from what it wrote, without
    # reading it back: it must be the stored task, field for field.
    command = {"completed": "hello", "input-required": "ask",
               "auth-required": "auth", "rejected": "reject", "failed": "fail"}
    configuration = {} if history_length is None else {"historyLength": history_length}
    params = {"message": message(command[state]), "configuration": configuration,
              "metadata": {"origin": "test"}}
    sent = script.result("message/send", params)
    query = {"id": sent["id"]}
    if history_length is not None:
        query["historyLength"] = history_length
    assert sent["status"]["state"] == state
    assert sent == script.result("tasks/get", query)
