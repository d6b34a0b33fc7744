"""Memory bounded per process (issue 32): the large answers one process
builds at once share A2A_MAX_ANSWER_BYTES_IN_FLIGHT. An answer of 64 KiB or
more holds its share from before it is read until its last byte is sent
(a ListTasks page holds A2A_MAX_ANSWER_BYTES until its tasks are read); a
read finding no room waits A2A_ANSWER_WAIT_SECONDS (here 0), then is answered
busy: HTTP 503, Retry-After, -32603 with ``data.retry`` true, 1.0 reason
SERVER_BUSY. Small answers skip the budget; a send's answer is counted but
never refused. Through HTTP: an answer not yet read by its caller (the test
client's ``buffered=False``) keeps its share, as one a slow client reads."""

import json
import logging
import os
import platform
import subprocess
import sys

import pytest

from a2a_flask import Reply
from a2a_flask.protocol.json_body import json_chunks
from helpers import message

BUDGET = 512 * 1024
IN_FLIGHT = 256 * 1024
RPC = "/api/v1/agents/big/a2a"
REST = "/api/v1/agents/big/rest"


def register(a2a):
    # "<KiB>": a reply of that many KiB.
    a2a.add_agent("big", lambda turn: Reply("y" * (int(turn.text) * 1024)))


@pytest.fixture(params=["sqlite", "postgres"])
def caller(request, keyed):
    # Room for one page at a time (a page holds A2A_MAX_ANSWER_BYTES first,
    # here all of the budget).
    config = dict(A2A_AUTH="required", A2A_MAX_ANSWER_BYTES=BUDGET,
                  A2A_MAX_TURN_OUTPUT_BYTES=96 * 1024,
                  A2A_MAX_ANSWER_BYTES_IN_FLIGHT=IN_FLIGHT, A2A_ANSWER_WAIT_SECONDS=0)
    if request.param == "postgres":
        config["A2A_DATABASE"] = request.getfixturevalue("postgres_url")
    return keyed("k", register=register, agent="big", **config)[0]


def _send(caller, kib):
    return caller.result("SendMessage", {"message": message(str(kib), version="1.0")})["task"]


def _rpc(method, params):
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}


def _list_unread(caller):
    """A ListTasks answer its caller has not read yet: it holds its share."""
    response = caller.client.post(
        RPC, headers=caller.headers, buffered=False,
        json=_rpc("ListTasks", {"pageSize": 100, "includeArtifacts": True,
                                "historyLength": 0}))
    assert response.status_code == 200
    return response


def _busy(response, rest=False):
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "1"
    body = response.get_json()
    if rest:
        error = body["error"]
        assert error["status"] == "UNAVAILABLE"
        info = error["details"][0]
    else:
        assert body["id"] == 7
        error = body["error"]
        assert error["code"] == -32603
        info = error["data"][0]
    assert info["reason"] == "SERVER_BUSY"
    assert info["metadata"] == {"retryAfter": "1"}
    assert "other large answers" in error["message"]


def test_a_large_read_waits_for_the_answers_in_flight_then_is_answered_busy(caller):
    # Each ~120 KiB as GetTask shows it (the reply in its history, as its
    # status and as its artifact); ~80 KiB listed without history.
    big = [_send(caller, 40)["id"] for _ in range(2)]
    small = _send(caller, 1)["id"]
    held = _list_unread(caller)  # ~160 KiB of the 256

    # Another page, a large task: no room, and no time to wait (0 s).
    _busy(caller.client.post(RPC, headers=caller.headers, json=_rpc(
        "ListTasks", {"pageSize": 100, "includeArtifacts": True})))
    _busy(caller.client.post(RPC, headers=caller.headers,
                             json=_rpc("GetTask", {"id": big[0]})))
    _busy(caller.client.get(REST + "/tasks/" + big[1], headers=caller.headers),
          rest=True)
    response = caller.client.post(RPC, headers={"X-API-Key": caller.headers["X-API-Key"]},
                                  json={"jsonrpc": "2.0", "id": 7, "method": "tasks/get",
                                        "params": {"id": big[0]}})
    assert response.status_code == 503 and response.headers["Retry-After"] == "1"
    assert response.get_json()["error"]["code"] == -32603
    assert response.get_json()["error"]["data"] == {"retry": True, "retryAfter": 1}
    # A small answer skips the budget; a send's is counted, never refused.
    assert caller.result("GetTask", {"id": small})["id"] == small
    assert _send(caller, 40)["status"]["state"] == "TASK_STATE_COMPLETED"

    # Once the held answer is read to its end and closed, there is room again.
    page = json.loads(held.get_data())["result"]
    held.close()
    assert [task["id"] for task in page["tasks"]] == [small] + big[::-1]
    assert caller.result("GetTask", {"id": big[0]})["id"] == big[0]
    assert len(caller.result("ListTasks", {"pageSize": 100, "historyLength": 0}
                             )["tasks"]) == 4


def test_the_access_record_of_a_streamed_answer_leaves_it_unread(caller, caplog):
    # The record takes the call's outcome from the result the pipeline noted,
    # never from the body: reading a streamed one would buffer it whole and
    # give back its share of the budget before its caller read a byte.
    other, task = _send(caller, 40), _send(caller, 40)  # a page of ~160 KiB
    before = len(caplog.records)  # the sends' too, if the logger is at INFO
    with caplog.at_level(logging.INFO, logger="a2a_flask"):
        held = _list_unread(caller)
        streamed = caller.client.post(RPC, headers=caller.headers, buffered=False,
                                      json=_rpc("GetTask", {"id": task["id"]}))
    assert streamed.status_code == 503  # the page still holds all the room
    records = [r for r in caplog.records[before:] if r.name == "a2a_flask.access"]
    assert [(r.method, r.state, r.code, r.status) for r in records] == [
        ("ListTasks", None, None, 200), ("GetTask", None, -32603, 503)]
    assert "Content-Length" not in held.headers
    page = json.loads(held.get_data())["result"]
    held.close()
    assert [listed["id"] for listed in page["tasks"]] == [task["id"], other["id"]]
    with caplog.at_level(logging.INFO, logger="a2a_flask"):
        read = caller.client.post(RPC, headers=caller.headers, buffered=False,
                                  json=_rpc("GetTask", {"id": task["id"]}))
    assert "Content-Length" not in read.headers  # streamed, and recorded:
    record = [r for r in caplog.records if r.name == "a2a_flask.access"][-1]
    assert (record.method, record.taskId, record.state) == (
        "GetTask", task["id"], "TASK_STATE_COMPLETED")
    assert read.get_json()["result"]["id"] == task["id"]
    read.close()


def test_a_large_answer_is_streamed_as_json_dumps_writes_it(caller):
    task = _send(caller, 40)
    streamed = caller.client.post(RPC, headers=caller.headers,
                                  json=_rpc("GetTask", {"id": task["id"]}))
    assert streamed.status_code == 200
    assert "Content-Length" not in streamed.headers  # written as it is sent
    assert streamed.get_json()["result"]["status"] == task["status"]
    small = _send(caller, 1)
    answer = caller.client.post(RPC, headers=caller.headers,
                                json=_rpc("GetTask", {"id": small["id"]}))
    assert int(answer.headers["Content-Length"]) == len(answer.data)


def test_json_chunks_are_the_bytes_json_dumps_writes():
    value = {"jsonrpc": "2.0", "id": None, "result": {"tasks": [
        {"id": "t", "history": [{"parts": [{"text": "\u00e9\u2028\"\\" * 100000}]}],
         "metadata": {"deep": [[[[[[[[[[1, {"a": []}]]]]]]]]]], "empty": {}}},
        {"id": "u", "artifacts": []}], "nextPageToken": ""}}
    chunks = list(json_chunks(value))
    assert len(chunks) > 1
    assert b"".join(chunks) == json.dumps(
        value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


SERVE_SMALL = """
import sys
from flask import Flask
from a2a_flask import A2A
from a2a_flask.answer_budget import give_back_memory
app = Flask("imports")
app.config.update(A2A_DATABASE=sys.argv[1], A2A_AUTH="off")
A2A(app).add_agent("echo", lambda turn: turn.text)
answer = app.test_client().post("/api/v1/agents/echo/a2a", json={
    "jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "role": "user", "messageId": "m-1", "parts": [{"kind": "text", "text": "hi"}]}}})
assert answer.get_json()["result"]["status"]["state"] == "completed", answer.data
print("ctypes" in sys.modules, end=" ")
print(give_back_memory(), "ctypes" in sys.modules)
"""


def test_only_a_give_back_of_memory_loads_what_it_calls(tmp_path):
    # ctypes is memory in every process (each gunicorn worker, the master);
    # looking up malloc_trim through ctypes.util.find_library ran ldconfig
    # at import. A process that served only small answers never loads it.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", SERVE_SMALL, str(tmp_path / "a.db")],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    glibc = platform.libc_ver()[0] == "glibc"
    assert done.stdout.split() == ["False", str(glibc), "True"]
