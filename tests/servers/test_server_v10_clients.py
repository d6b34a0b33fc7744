"""The official A2A 1.x clients against the demo under gunicorn (2 workers,
an API key): the Python SDK in native 1.0 mode and the JS SDK without its
legacy switch, over JSON-RPC and HTTP+JSON. Every HTTP exchange they made is
checked against the 1.0 proto. The SDKs are installed once into ~/.cache
(tests/v1/README.md); the JS client is skipped only where node is absent."""

import pytest

from serving import GunicornServer
from v1 import clients

ECHO_STEPS = "card,send,get,list,get_unknown,cancel_terminal"
CHAT_STEPS = "multiturn,cancel"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    server = GunicornServer(tmp_path_factory.mktemp("v10clients"), app="wsgi:app",
                            workers=2, auth="key")
    server.start()
    try:
        key = server.headers["Authorization"].split(" ", 1)[1]
        yield server, key
    finally:
        server.stop()
        print("server log:", server.log_path)


def card_url(server, agent):
    return "%s/api/v1/agents/%s/.well-known/agent-card.json" % (server.url, agent)


def run(runner, demo, transport):
    server, key = demo
    echo = runner(card_url(server, "echo"), key=key, transport=transport,
                  steps=ECHO_STEPS)
    chat = runner(card_url(server, "chat"), key=key, transport=transport,
                  steps=CHAT_STEPS)
    results = dict(echo, **chat)
    for name, result in results.items():
        assert result["ok"], result
        assert result["transport"] == transport, result
    assert results["send"]["state"] == "TASK_STATE_COMPLETED"
    assert (results["get"]["history_len"], results["get"]["history_len_1"],
            results["get"]["history_len_0"]) == (2, 1, 0)
    assert results["multiturn"]["first_state"] == "TASK_STATE_INPUT_REQUIRED"
    assert results["multiturn"]["same_task"] is True
    assert (results["cancel"]["before"], results["cancel"]["state"]) == (
        "TASK_STATE_INPUT_REQUIRED", "TASK_STATE_CANCELED")
    counts = clients.check_wire(results)
    for operation in ("SendMessage", "GetTask", "ListTasks", "CancelTask"):
        assert counts.get(operation), counts
    return results


def pages_cover_every_task(listed):
    ids = [i for page in listed["pages"] for i in page["ids"]]
    assert len(ids) == len(set(ids)) >= 3
    assert listed["pages"][-1]["nextPageToken"] == ""
    assert all(page["pageSize"] == len(page["ids"]) for page in listed["pages"])


@pytest.mark.parametrize("transport", clients.TRANSPORTS)
def test_python_sdk_1(demo, transport):
    results = run(clients.run_py, demo, transport)
    pages_cover_every_task(results["list"])
    assert results["get_unknown"]["error"]["class"] == "TaskNotFoundError"
    assert results["cancel_terminal"]["error"]["class"] == "TaskNotCancelableError"


@pytest.mark.parametrize("transport", clients.TRANSPORTS)
def test_js_sdk_1(demo, transport):
    if clients.node_missing():
        pytest.skip(clients.node_missing())
    results = run(clients.run_js, demo, transport)
    pages_cover_every_task(results["list"])
    assert results["get_unknown"]["error"]["reason"] == "TASK_NOT_FOUND"
    assert results["cancel_terminal"]["error"]["reason"] == "TASK_NOT_CANCELABLE"
    if transport == "rest":
        assert results["get_unknown"]["error"]["statusCode"] == 404
    else:
        assert results["get_unknown"]["error"]["code"] == -32001
