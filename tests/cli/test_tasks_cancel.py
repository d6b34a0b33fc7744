"""``flask a2a tasks cancel`` through the real CLI, on a database file with
tasks of two callers: queued background turns, a task waiting for input, a
finished one."""

import json

import pytest

from a2a_flask.storage.sqlite import SqliteStorage
from serving import flask_a2a

# On the matrix too: the legs on Ubuntu 20.04's and Debian 11's SQLite run it.
pytestmark = pytest.mark.compat


def _msg(text):
    return {"role": "user", "messageId": "m-" + text,
            "parts": [{"kind": "text", "text": text}]}


@pytest.fixture
def db(tmp_path):
    """mallory: two queued turns of ``slow``, one ``chat`` task waiting for
    input, one completed; alice: one queued turn."""
    path = tmp_path / "cancel.sqlite3"
    storage = SqliteStorage(str(path))
    storage.migrate()
    ids = {}
    for owner, name in (("mallory", "q1"), ("mallory", "q2"), ("alice", "a1")):
        ids[name] = storage.enqueue_turn(owner, "slow", _msg(name)).task_id
    for name, state in (("waits", "input-required"), ("done", "completed")):
        start = storage.start_turn("mallory", "chat", _msg(name))
        storage.finish_turn(start.task_id, "mallory", "chat", state)
        ids[name] = start.task_id
    storage.close()
    return path, ids


def _states(path):
    out = flask_a2a(path, "tasks", "list", "--json", "--limit", "100")
    return {t["id"]: t["state"] for t in json.loads(out.stdout)}


def test_a_dry_run_lists_what_would_be_canceled_and_changes_nothing(db):
    path, ids = db
    before = _states(path)
    out = flask_a2a(path, "tasks", "cancel", "--caller", "mallory", "--dry-run")
    assert out.returncode == 0, out.stderr
    assert "Would cancel 3 tasks." in out.stdout
    for name in ("q1", "q2", "waits"):
        assert ids[name] in out.stdout
    assert ids["a1"] not in out.stdout and ids["done"] not in out.stdout
    assert _states(path) == before


def test_cancel_by_caller_and_state_by_agent_and_by_task(db):
    path, ids = db
    out = flask_a2a(path, "tasks", "cancel", "--caller", "mallory",
                    "--state", "working")
    assert out.returncode == 0 and "Canceled 2 tasks." in out.stdout, out.stderr
    states = _states(path)
    assert (states[ids["q1"]], states[ids["q2"]], states[ids["waits"]],
            states[ids["done"]], states[ids["a1"]]) == (
        "canceled", "canceled", "input-required", "completed", "working")
    storage = SqliteStorage(str(path))
    assert [t.task_id for t in storage.claim_turns("w", 10, 30)] == [ids["a1"]]
    storage.close()
    out = flask_a2a(path, "tasks", "cancel", "--agent", "chat")
    assert "Canceled 1 tasks." in out.stdout
    out = flask_a2a(path, "tasks", "cancel", "--task", ids["a1"])
    assert "Canceled 1 tasks." in out.stdout
    assert set(_states(path).values()) == {"canceled", "completed"}


def test_cancel_needs_a_filter(db):
    path, _ = db
    out = flask_a2a(path, "tasks", "cancel")
    assert out.returncode == 2 and "--caller" in out.stderr
