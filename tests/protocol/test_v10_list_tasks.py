"""ListTasks over both A2A 1.0 bindings: only the caller's tasks of the agent,
the filters, paging (pageSize bounds, pageToken/nextPageToken, totalSize),
newest status first, historyLength, includeArtifacts."""

import pytest

from a2a_flask.storage.base import TaskRecord
from helpers import detail, message

BINDINGS = ("jsonrpc", "rest")


@pytest.fixture
def service(keyed):
    callers = keyed("a", "b")
    return callers[0].app.extensions["a2a"], callers


def list_tasks(caller, binding, **params):
    """(status or error code, answer) of ListTasks with ``params``."""
    if binding == "jsonrpc":
        status, body = caller.call("ListTasks", params)
        if "error" in body:
            return body["error"]["code"], body["error"]
        return 200, body["result"]
    query = {k: (str(v).lower() if isinstance(v, bool) else str(v))
             for k, v in params.items()}
    status, body = caller.rest("GET", "/tasks", query=query)
    return status, body.get("error", body)


def send(caller, text="hello", agent=None):
    return caller.result("SendMessage", {"message": message(text, version="1.0")},
                         agent=agent)["task"]


@pytest.mark.parametrize("binding", BINDINGS)
def test_only_the_callers_tasks_of_that_agent_newest_first(service, binding):
    _, (one, two) = service
    mine = [send(one) for _ in range(3)]
    send(one, agent="chat")
    send(two)
    status, page = list_tasks(one, binding)
    assert status == 200
    # Newest update first; two updated in the same millisecond by id, as the
    # storage contract orders them (the third send often lands in the second's).
    assert [t["id"] for t in page["tasks"]] == [t["id"] for t in sorted(
        mine, key=lambda t: (t["status"]["timestamp"], t["id"]), reverse=True)]
    assert (page["nextPageToken"], page["pageSize"], page["totalSize"]) == ("", 3, 3)
    status, page = list_tasks(two, binding)
    assert page["totalSize"] == 1


@pytest.mark.parametrize("binding", BINDINGS)
def test_empty_list(service, binding):
    _, (one, _) = service
    status, page = list_tasks(one, binding)
    assert page == {"tasks": [], "nextPageToken": "", "pageSize": 0, "totalSize": 0}


@pytest.mark.parametrize("binding", BINDINGS)
def test_filters(service, binding):
    _, (one, _) = service
    one.agent = "chat"
    first = send(one)
    one.result("CancelTask", {"id": first["id"]})
    second = send(one)
    status, page = list_tasks(one, binding, status="TASK_STATE_CANCELED")
    assert [t["id"] for t in page["tasks"]] == [first["id"]]
    status, page = list_tasks(one, binding, contextId=second["contextId"])
    assert [t["id"] for t in page["tasks"]] == [second["id"]]
    status, page = list_tasks(one, binding,
                              statusTimestampAfter=second["status"]["timestamp"])
    assert page["tasks"] == []
    status, page = list_tasks(one, binding,
                              statusTimestampAfter="2000-01-01T00:00:00Z")
    assert page["totalSize"] == 2


@pytest.mark.parametrize("binding", BINDINGS)
def test_history_length_and_include_artifacts(service, binding):
    _, (one, _) = service
    send(one)
    status, page = list_tasks(one, binding)
    [task] = page["tasks"]
    assert "artifacts" not in task and len(task["history"]) == 2
    status, page = list_tasks(one, binding, historyLength=0, includeArtifacts=True)
    [task] = page["tasks"]
    assert "history" not in task and task["artifacts"][0]["parts"] == [{"text": "hello"}]
    status, page = list_tasks(one, binding, historyLength=1)
    assert [m["role"] for m in page["tasks"][0]["history"]] == ["ROLE_AGENT"]


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize("params, field", [
    ({"status": "INVALID_STATUS"}, "status"),
    ({"pageSize": 0}, "pageSize"), ({"pageSize": -1}, "pageSize"),
    ({"pageSize": 101}, "pageSize"), ({"historyLength": -1}, "historyLength"),
    ({"statusTimestampAfter": "yesterday"}, "statusTimestampAfter"),
    ({"pageToken": "not-a-token"}, "pageToken"),
])
def test_invalid_params(service, binding, params, field):
    _, (one, _) = service
    status, error = list_tasks(one, binding, **params)
    assert status == (-32602 if binding == "jsonrpc" else 400), error
    assert detail(error, "BadRequest")["fieldViolations"][0]["field"] == field


def _import(runtime, owner, tag, count):
    """``count`` completed tasks of ``owner`` (ids ``task_<tag>_NNNN``)."""
    runtime.storage.import_tasks([TaskRecord(
        "task_%s_%04d" % (tag, i), "ctx_%s_%04d" % (tag, i), "echo", owner,
        "completed", "2026-01-01T00:%02d:%02d.000Z" % (i // 60 % 60, i % 60),
        history=[{"kind": "message", "role": "user", "messageId": "m%s%d" % (tag, i),
                  "parts": [{"kind": "text", "text": str(i)}]}])
        for i in range(count)])


@pytest.mark.parametrize("binding", BINDINGS)
def test_pages_through_1000_tasks_of_one_caller_and_none_of_another(service, binding):
    runtime, (one, two) = service
    newest = send(one)
    # The callers' ids as the storage records them, read from a task of each.
    _import(runtime, runtime.storage.show_task(newest["id"]).owner, "one", 1000)
    _import(runtime, runtime.storage.show_task(send(two)["id"]).owner, "two", 1000)
    seen, token, pages = [], "", 0
    while True:
        status, page = list_tasks(one, binding, pageSize=100, pageToken=token)
        assert status == 200, page
        pages += 1
        assert page["totalSize"] == 1001 and page["pageSize"] == len(page["tasks"])
        seen.extend(t["id"] for t in page["tasks"])
        token = page["nextPageToken"]
        if not token:
            break
    assert pages == 11 and len(set(seen)) == 1001
    assert seen[:3] == [newest["id"], "task_one_0999", "task_one_0998"]
    assert seen[-1] == "task_one_0000"
    assert not [t for t in seen if t.startswith("task_two_")]


@pytest.mark.parametrize("status", ["TASK_STATE_UNSPECIFIED", "UNRECOGNIZED"])
def test_default_status_values_filter_nothing(service, status):
    # @a2a-js/sdk 1.3's JSON-RPC client sends "UNRECOGNIZED" when no status
    # is asked for: refusing it would break every ListTasks of that client.
    _, (one, _) = service
    send(one)
    code, page = list_tasks(one, "jsonrpc", status=status)
    assert code == 200 and page["totalSize"] == 1
