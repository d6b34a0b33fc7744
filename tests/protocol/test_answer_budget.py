"""Bounded answers (issue 18): every answer fits A2A_MAX_ANSWER_BYTES.
A ListTasks page ends early at the budget with a nextPageToken (at least
one task a page); a task whose history does not fit shows its newest
messages that do and says how many it left out (metadata
``a2a_flask.historyOmitted``), artifacts whole; what one turn may write is
capped when written (A2A_MAX_TURN_OUTPUT_BYTES: over it, the turn fails).
On SQLite and PostgreSQL, over both 1.0 bindings and 0.3. A task's
artifacts, piling up over its turns, are capped when written too (the
budget less a turn's output and an eighth): the turn that would go over
fails, so that any task fits an answer."""

import pytest

from a2a_flask import InputRequired, Reply
from a2a_flask.worker import Worker
from helpers import message

BUDGET = 256 * 1024
TURN = 96 * 1024
OMITTED = "a2a_flask.historyOmitted"


def register(a2a):
    def big(turn):
        """Answers ``<command> <KiB>``: reply 30 = a 30 KiB reply; ask 30 =
        a 30 KiB question (the task waits); over = more than a turn may write."""
        command, _, amount = turn.text.partition(" ")
        if command == "over":
            return Reply("x" * (TURN + 1))
        text = "y" * (int(amount or "1") * 1024)
        return InputRequired(text) if command == "ask" else Reply(text)

    a2a.add_agent("big", big)
    # Each turn adds a 40 KiB artifact to its task (queued follow-ups keep
    # the task working from one turn to the next).
    a2a.add_agent("piles", lambda turn: Reply("ok", artifacts=[
        {"parts": [{"kind": "text", "text": "z" * 40 * 1024}]}]), background=True)


@pytest.fixture(params=["sqlite", "postgres"])
def caller(request, keyed):
    config = dict(A2A_AUTH="required", A2A_MAX_ANSWER_BYTES=BUDGET,
                  A2A_MAX_TURN_OUTPUT_BYTES=TURN)
    if request.param == "postgres":
        config["A2A_DATABASE"] = request.getfixturevalue("postgres_url")
    return keyed("k", register=register, agent="big", **config)[0]


def _send(caller, text, **fields):
    return caller.result("SendMessage",
                         {"message": message(text, version="1.0", **fields)})["task"]


def _pages(caller, binding, agent="big", **params):
    """Every page of ListTasks, with the size of each answer in bytes."""
    pages, token = [], ""
    while True:
        query = dict(params, pageToken=token) if token else dict(params)
        if binding == "jsonrpc":
            response = caller.client.post(
                "/api/v1/agents/%s/a2a" % agent, headers=caller.headers,
                json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks",
                      "params": query})
            page = response.get_json()["result"]
        else:
            response = caller.client.get(
                "/api/v1/agents/%s/rest/tasks" % agent, headers=caller.headers,
                query_string={k: str(v).lower() if isinstance(v, bool) else str(v)
                              for k, v in query.items()})
            page = response.get_json()
        assert response.status_code == 200, response.data[:300]
        pages.append((len(response.data), page))
        token = page["nextPageToken"]
        if not token:
            return pages


@pytest.mark.parametrize("binding", ["jsonrpc", "rest"])
def test_a_list_page_ends_at_the_budget_and_the_rest_follows(caller, binding):
    sent = [_send(caller, "reply 40")["id"] for _ in range(9)]  # ~80 KiB each
    pages = _pages(caller, binding, pageSize=100, includeArtifacts=True)
    assert len(pages) > 2
    for size, page in pages:
        assert size <= BUDGET
        assert page["tasks"] and page["pageSize"] == len(page["tasks"])
        assert page["totalSize"] == 9
    listed = [task["id"] for _, page in pages for task in page["tasks"]]
    assert listed == sent[::-1]
    for _, page in pages:  # artifacts whole
        for task in page["tasks"]:
            assert len(task["artifacts"][0]["parts"][0]["text"]) == 40 * 1024


def test_a_history_too_long_for_one_answer_shows_its_newest_messages(caller):
    task = _send(caller, "ask 30")
    for number in range(10):
        task = _send(caller, "ask 30", taskId=task["id"], contextId=task["contextId"],
                     messageId="turn-%d" % number)
    # 22 messages of ~30 KiB (the user's are short): ~330 KiB of history.
    response = caller.client.post("/api/v1/agents/big/a2a", headers=caller.headers,
                                  json={"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                                        "params": {"id": task["id"]}})
    assert len(response.data) <= BUDGET
    got = response.get_json()["result"]
    history = got["history"]
    omitted = got["metadata"][OMITTED]
    assert omitted > 0 and len(history) + omitted == 22
    assert history[-1]["messageId"] == got["status"]["message"]["messageId"]
    everything = caller.client.application.extensions["a2a"].storage.task_history(task["id"])
    assert [m["messageId"] for m in history] == [  # exactly the newest ones
        m["messageId"] for m in everything[-len(history):]]
    # 0.3 tasks/get and the REST GET: bounded the same way.
    response = caller.client.post("/api/v1/agents/big/a2a",
                                  headers={"X-API-Key": caller.headers["X-API-Key"]},
                                  json={"jsonrpc": "2.0", "id": 1, "method": "tasks/get",
                                        "params": {"id": task["id"]}})
    assert len(response.data) <= BUDGET
    assert response.get_json()["result"]["metadata"][OMITTED] == omitted
    response = caller.client.get("/api/v1/agents/big/rest/tasks/" + task["id"],
                                 headers=caller.headers)
    assert len(response.data) <= BUDGET
    # Alone on a list page, its history is trimmed the same way.
    size, page = _pages(caller, "rest", pageSize=1)[0]
    assert size <= BUDGET and page["tasks"][0]["metadata"][OMITTED] == omitted
    # A short history is whole, and says nothing.
    assert OMITTED not in _send(caller, "reply 1").get("metadata", {})


def test_a_turn_writing_more_than_its_cap_fails_and_stores_nothing(caller):
    task = _send(caller, "over")
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    text = task["status"]["message"]["parts"][0]["text"]
    assert "A2A_MAX_TURN_OUTPUT_BYTES" in text and str(TURN) in text
    assert "artifacts" not in task
    got = caller.result("GetTask", {"id": task["id"]})
    assert got["status"]["state"] == "TASK_STATE_FAILED" and "artifacts" not in got


def test_a_turn_that_would_pile_artifacts_over_the_budget_fails(caller):
    """Allowed: 256 - 96 - 32 = 128 KiB of artifacts; three turns fit, the
    fourth fails saying why and stores none of its own; the follow-ups
    queued after it never run. Every answer of the task is within budget."""
    app, piles = caller.client.application, dict(agent="piles")
    task = caller.result("SendMessage", {
        "message": message("1", version="1.0"), "configuration": {"returnImmediately": True}},
        **piles)["task"]
    for number in range(2, 9):  # 8 turns: 320 KiB of artifacts, were all kept
        caller.result("SendMessage", {
            "message": message(str(number), taskId=task["id"], version="1.0"),
            "configuration": {"returnImmediately": True}}, **piles)
    runtime = app.extensions["a2a"]
    with app.app_context():
        worker = Worker(runtime, threads=1, grace=1)
    while True:  # the queued turns one by one, in this thread
        claimed = runtime.storage.claim_turns(worker.id, 1, 60)
        if not claimed:
            break
        worker._run(claimed[0])
    response = caller.client.post("/api/v1/agents/piles/a2a", headers=caller.headers,
                                  json={"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                                        "params": {"id": task["id"]}})
    assert len(response.data) <= BUDGET
    got = response.get_json()["result"]
    assert got["status"]["state"] == "TASK_STATE_FAILED"
    text = got["status"]["message"]["parts"][0]["text"]
    assert "not kept" in text and "A2A_MAX_ANSWER_BYTES" in text
    assert "the %d bytes a task may hold" % (BUDGET - TURN - BUDGET // 8) in text
    assert len(got["artifacts"]) == 6  # 3 turns: a response and a 40 KiB one each
    replies = [m["parts"][0]["text"] for m in got["history"] if m["role"] == "ROLE_AGENT"]
    assert replies == ["ok", "ok", "ok", text]  # turns 5 to 8 never ran
    for binding in ("jsonrpc", "rest"):
        (size, page), = _pages(caller, binding, agent="piles", includeArtifacts=True)
        assert size <= BUDGET and len(page["tasks"][0]["artifacts"]) == 6
