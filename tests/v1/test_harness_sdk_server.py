"""The 1.0 client harness against the official SDK 1.x server (sdk_server.py):
proves that py_client.py and js_client.mjs drive every scenario over JSON-RPC
and HTTP+JSON, and that the SDK's own answers pass the 1.0 proto check.

Runs by default, like the tests of our own 1.0 endpoints with the same
clients (test_server_v10_clients.py): the first run installs a2a-sdk 1.x and
@a2a-js/sdk 1.x from the package registries into the cache of clients.py.
The JS client is skipped only where node is absent.
"""

import pytest

from v1 import clients

KEY = "harness-key"

ERRORS = {  # step -> (Python SDK class, JSON-RPC code, JS SDK name, JS reason)
    "get_unknown": ("TaskNotFoundError", -32001, "TaskNotFoundError", "TASK_NOT_FOUND"),
    "cancel_terminal": ("TaskNotCancelableError", -32002, "TaskNotCancelableError",
                        "TASK_NOT_CANCELABLE"),
}


@pytest.fixture(scope="module")
def card_url():
    with clients.sdk_server(key=KEY) as url:
        yield url


@pytest.mark.parametrize("transport", clients.TRANSPORTS)
@pytest.mark.parametrize("run", [clients.run_py, clients.run_js], ids=["py", "js"])
def test_every_scenario_against_the_sdk_server(card_url, run, transport):
    if run is clients.run_js and clients.node_missing():
        pytest.skip(clients.node_missing())
    r = run(card_url, key=KEY, transport=transport)
    assert all(item["ok"] for item in r.values()), r
    assert r["send"]["state"] == "TASK_STATE_COMPLETED"
    assert r["send"]["artifacts_text"] == ["hello"]
    assert (r["multiturn"]["first_state"], r["multiturn"]["second_state"]) == (
        "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_COMPLETED")
    assert r["multiturn"]["same_task"] is True
    assert (r["get"]["history_len_1"], r["get"]["history_len_0"]) == (1, 0)
    pages = r["list"]["pages"]
    assert len(pages) >= 2 and all(len(p["ids"]) <= 2 for p in pages)
    assert pages[-1]["nextPageToken"] == "" and r["list"]["distinct"] == r["list"]["count"] >= 3
    assert (r["cancel"]["before"], r["cancel"]["state"]) == (
        "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_CANCELED")
    for step, (py_class, code, js_name, reason) in ERRORS.items():
        error = r[step]["error"]
        if run is clients.run_py:
            assert (error["class"], error["code"]) == (py_class, code)
        else:
            assert (error["name"], error["reason"]) == (js_name, reason)
    counts = clients.check_wire(r)
    assert {"card", "SendMessage", "GetTask", "ListTasks", "CancelTask"} <= set(counts), counts


def test_without_the_key_the_client_gets_nothing(card_url):
    r = clients.run_py(card_url, transport="rest", steps="send")
    assert r["send"]["ok"] is False and r["send"]["wire"][-1]["status"] == 401
