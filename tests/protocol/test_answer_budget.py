"""Bounded answers (issue 18): every answer fits A2A_MAX_ANSWER_BYTES.
A ListTasks page ends early at the budget with a nextPageToken (at least
one task a page); a task whose history does not fit shows its newest
messages that do and says how many it left out (metadata
``a2a_flask.historyOmitted``), artifacts whole; what one turn may write is
capped when written (A2A_MAX_TURN_OUTPUT_BYTES: over it, the turn fails).
On SQLite and PostgreSQL, over both 1.0 bindings and 0.3."""

import pytest

from a2a_flask import InputRequired, Reply
from v1.inprocess import Caller, user_message

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


@pytest.fixture(params=["sqlite", "postgres"])
def caller(request, make_app):
    config = dict(A2A_AUTH="required", A2A_MAX_ANSWER_BYTES=BUDGET,
                  A2A_MAX_TURN_OUTPUT_BYTES=TURN)
    if request.param == "postgres":
        config["A2A_DATABASE"] = request.getfixturevalue("postgres_url")
    app, _ = make_app(register, **config)
    key = app.extensions["a2a"].credentials.create_key(None, "k")[1]
    return Caller(app.test_client(), agent="big", key=key)


def _send(caller, text, **fields):
    return caller.result("SendMessage",
                         {"message": user_message(text, **fields)})["task"]


def _pages(caller, binding, **params):
    """Every page of ListTasks, with the size of each answer in bytes."""
    pages, token = [], ""
    while True:
        query = dict(params, pageToken=token) if token else dict(params)
        if binding == "jsonrpc":
            response = caller.client.post(
                "/api/v1/agents/big/a2a", headers=caller.headers,
                json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks",
                      "params": query})
            page = response.get_json()["result"]
        else:
            response = caller.client.get(
                "/api/v1/agents/big/rest/tasks", headers=caller.headers,
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
