"""Ids a caller gives (messageId, contextId, taskId, referenceTaskIds, the id
of tasks/get and tasks/cancel, ListTasks' contextId) are at most
``MAX_ID_CHARS`` (256) characters, the same on both backends: one over is
refused with -32602 (HTTP+JSON: 400) naming the field and the limit, storing
nothing; one at the limit is served on both, in 4-byte characters too (a
PostgreSQL index entry holds about 2,700 bytes: longer ids were answered as
an outage there)."""

import pytest

from a2a_flask.validation import MAX_ID_CHARS
from helpers import Rpc, message

LONG = "x" * (MAX_ID_CHARS + 1)
WIDE = "\U0001F600" * MAX_ID_CHARS  # 4 bytes each in UTF-8


@pytest.fixture(params=["sqlite", "postgres"])
def database(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "a2a.sqlite3")
    return request.getfixturevalue("postgres_url")


def _refusal(field):
    return ("Invalid params: %s: must be at most 256 characters long (an id); "
            "this one has 257." % field)


def test_the_limit_is_within_the_documented_range():
    assert 256 <= MAX_ID_CHARS <= 1024


@pytest.mark.parametrize("field,where", [
    ("messageId", "message.messageId"),
    ("contextId", "message.contextId"),
    ("taskId", "message.taskId"),
])
def test_a_0_3_message_with_a_long_id_is_refused(make_app, database, field, where):
    app, _ = make_app(A2A_DATABASE=database)
    rpc = Rpc(app.test_client(), agent="echo")
    sent = message("hi", **{field: LONG})
    status, error = rpc.error("message/send", {"message": sent})
    assert error["code"] == -32602
    assert error["message"] == _refusal(where)
    assert error["data"]["field"] == where
    assert sum(app.extensions["a2a"].storage.task_counts().values()) == 0


def test_0_3_get_and_cancel_with_a_long_id_are_refused(make_app, database):
    app, _ = make_app(A2A_DATABASE=database)
    rpc = Rpc(app.test_client(), agent="echo")
    for method in ("tasks/get", "tasks/cancel"):
        status, error = rpc.error(method, {"id": LONG})
        assert error["code"] == -32602, method
        assert error["message"] == _refusal("id"), method


def test_ids_at_the_limit_are_served_in_wide_characters(make_app, database):
    app, _ = make_app(A2A_DATABASE=database)
    rpc = Rpc(app.test_client(), agent="echo")
    task = rpc.send("hi", messageId=WIDE, contextId=WIDE)
    assert task["status"]["state"] == "completed"
    assert task["contextId"] == WIDE
    again = rpc.send("hi", messageId=WIDE, contextId=WIDE)  # a replay
    assert again["id"] == task["id"]


def test_1_0_ids_over_the_limit_are_refused_on_both_bindings(make_app, database):
    app, _ = make_app(A2A_DATABASE=database)
    caller = Rpc(app.test_client(), version="1.0")
    _, error = caller.error("SendMessage", {"message": message("hi", message_id=LONG, version="1.0")})
    assert error["code"] == -32602
    assert "must be at most 256 characters long (an id)" in error["message"]
    assert "messageId" in error["message"]
    _, error = caller.error("GetTask", {"id": LONG})
    assert error["code"] == -32602 and "256 characters" in error["message"]
    _, error = caller.error("ListTasks", {"contextId": LONG})
    assert error["code"] == -32602 and "256 characters" in error["message"]
    status, body = caller.rest("POST", "/message:send",
                               {"message": message("hi", message_id=LONG, version="1.0")})
    assert status == 400 and "256 characters" in body["error"]["message"], body
    status, body = caller.rest("GET", "/tasks/" + LONG)
    assert status == 400 and "256 characters" in body["error"]["message"], body
