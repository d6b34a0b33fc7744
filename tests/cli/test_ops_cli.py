"""``flask a2a tasks ...`` and ``flask a2a db ...`` through the real CLI
(subprocesses in the repository, on a temporary database file), against
tasks made over HTTP by an app on the same file."""

import json
import sqlite3
from contextlib import contextmanager
from datetime import datetime

import pytest

from a2a_flask.storage.base import SchemaError
from a2a_flask.storage.sqlite.migrations import EXPECTED_VERSION

from helpers import Rpc, message, register_scripted
from serving import assert_fails, flask_a2a

OLD = "2020-01-01T00:00:00.000Z"


def _app_rpc(make_app, db, **config):
    app, _ = make_app(A2A_DATABASE=str(db), **config)
    return app, Rpc(app.test_client())


@contextmanager
def _clock(app, when=OLD):
    """Tasks made and changed meanwhile are stamped ``when`` (long ago):
    the storage's clock, set for the test."""
    storage = app.extensions["a2a"].storage
    moment = datetime.fromisoformat(when.replace("Z", "+00:00"))
    storage.clock = lambda: moment
    try:
        yield
    finally:
        del storage.clock  # back to the class's real clock


def _count(db, sql, *args):
    with sqlite3.connect(str(db)) as conn:
        return conn.execute(sql, args).fetchone()[0]


def _usage_error(result, word):
    """Click's refusal of a bad option: exit status 2, naming ``word``."""
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and word in result.stderr


def _ok(result):
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    return result.stdout


@pytest.mark.compat
def test_tasks_list_filters_newest_first_and_json(tmp_path, make_app):
    db = tmp_path / "ops.sqlite3"
    _, rpc = _app_rpc(make_app, db)
    first = rpc.send("one", agent="echo")
    second = rpc.send("two", agent="chat")
    third = rpc.send("three", agent="echo")

    listed = json.loads(_ok(flask_a2a(db, "tasks", "list", "--json")))
    assert [t["id"] for t in listed] == [third["id"], second["id"], first["id"]]
    assert listed[1] == {
        "id": second["id"], "agent": "chat", "caller": "anonymous",
        "contextId": second["contextId"], "state": "input-required",
        "createdAt": listed[1]["createdAt"],
        "updatedAt": second["status"]["timestamp"]}

    only_echo = json.loads(_ok(flask_a2a(db, "tasks", "list", "--agent", "echo",
                                         "--json")))
    assert [t["id"] for t in only_echo] == [third["id"], first["id"]]
    waiting = json.loads(_ok(flask_a2a(db, "tasks", "list", "--state",
                                       "input-required", "--json")))
    assert [t["id"] for t in waiting] == [second["id"]]
    limited = json.loads(_ok(flask_a2a(db, "tasks", "list", "--limit", "1",
                                       "--json")))
    assert [t["id"] for t in limited] == [third["id"]]
    assert json.loads(_ok(flask_a2a(db, "tasks", "list", "--caller", "nobody",
                                    "--json"))) == []

    table = _ok(flask_a2a(db, "tasks", "list")).splitlines()
    assert table[0].split() == ["ID", "AGENT", "STATE", "CALLER", "CREATED",
                                "UPDATED"]
    assert [line.split()[:3] for line in table[1:]] == [
        [third["id"], "echo", "completed"], [second["id"], "chat", "input-required"],
        [first["id"], "echo", "completed"]]
    _usage_error(flask_a2a(db, "tasks", "list", "--state", "sleeping"), "sleeping")


def test_tasks_show(tmp_path, make_app):
    db = tmp_path / "ops.sqlite3"
    _, rpc = _app_rpc(make_app, db)
    task = rpc.send("hello there", agent="chat")
    task = rpc.send("and again", agent="chat", taskId=task["id"],
                    contextId=task["contextId"])

    shown = json.loads(_ok(flask_a2a(db, "tasks", "show", task["id"], "--json")))
    assert shown["id"] == task["id"] and shown["agent"] == "chat"
    assert shown["caller"] == "anonymous"
    assert shown["status"]["state"] == "input-required"
    assert [m["role"] for m in shown["history"]] == ["user", "agent"] * 2
    assert shown["history"][2]["parts"][0]["text"] == "and again"

    text = _ok(flask_a2a(db, "tasks", "show", task["id"]))
    assert "History (4 messages):" in text and "and again" in text
    assert_fails(flask_a2a(db, "tasks", "show", "task_nope"), "task_nope")


def test_prune_deletes_only_old_finished_tasks(tmp_path, make_app):
    db = tmp_path / "ops.sqlite3"
    app, rpc = _app_rpc(make_app, db)
    with _clock(app):
        old_done = rpc.send("old and done", agent="echo")
        old_open = rpc.send("old and waiting", agent="chat")
        canceled = rpc.send("to cancel", agent="chat")
        rpc.result("tasks/cancel", {"id": canceled["id"]}, agent="chat")
    recent_done = rpc.send("recent", agent="echo")

    dry = _ok(flask_a2a(db, "tasks", "prune", "--older-than", "30d", "--dry-run"))
    assert old_done["id"] in dry and canceled["id"] in dry
    assert old_open["id"] not in dry and recent_done["id"] not in dry
    assert "Would remove 2 finished tasks" in dry
    assert _count(db, "SELECT count(*) FROM a2a_tasks") == 4  # nothing deleted

    done = _ok(flask_a2a(db, "tasks", "prune", "--older-than", "30d"))
    assert done.startswith("Removed 2 finished tasks, ")
    assert "2 retry records" in done
    left = json.loads(_ok(flask_a2a(db, "tasks", "list", "--json")))
    assert sorted(t["id"] for t in left) == sorted([old_open["id"], recent_done["id"]])
    for table in ("a2a_messages", "a2a_artifacts", "a2a_deliveries"):
        assert _count(db, "SELECT count(*) FROM %s WHERE task_id IN (?, ?)" % table,
                      old_done["id"], canceled["id"]) == 0
    assert _count(db, "SELECT count(*) FROM a2a_messages WHERE task_id = ?",
                  old_open["id"]) == 2
    # The retry record went with its task: the same messageId is a new message.
    again = rpc.send("old and done", agent="echo",
                     message_id=old_done["history"][0]["messageId"])
    assert again["id"] != old_done["id"]
    _ok(flask_a2a(db, "tasks", "prune", "--older-than", "30d"))
    assert _count(db, "SELECT count(*) FROM a2a_tasks WHERE id = ?",
                  old_open["id"]) == 1  # still open: never pruned


def test_prune_takes_a2a_retention_and_refuses_bad_ages(tmp_path, make_app):
    db = tmp_path / "ops.sqlite3"
    app, rpc = _app_rpc(make_app, db)
    with _clock(app, "2026-01-01T00:00:00.000Z"):
        rpc.send("x", agent="echo")
    _usage_error(flask_a2a(db, "tasks", "prune"), "A2A_RETENTION")
    _usage_error(flask_a2a(db, "tasks", "prune", "--older-than", "30 days"),
                 "--older-than")
    kept = _ok(flask_a2a(db, "tasks", "prune", env={"A2A_RETENTION": "5000d"}))
    assert kept.startswith("Removed 0 finished tasks")
    gone = _ok(flask_a2a(db, "tasks", "prune", env={"A2A_RETENTION": "1d"}))
    assert gone.startswith("Removed 1 finished tasks")


@pytest.mark.compat
def test_db_check_backup_upgrade(tmp_path, make_app):
    db = tmp_path / "ops.sqlite3"
    _, rpc = _app_rpc(make_app, db)
    task = rpc.send("keep me", agent="echo")

    checked = _ok(flask_a2a(db, "db", "check"))
    assert "Integrity: ok" in checked and "Schema version: %d" % EXPECTED_VERSION in checked

    copy = tmp_path / "backup.sqlite3"
    backed = _ok(flask_a2a(db, "db", "backup", str(copy)))
    assert str(copy) in backed
    assert "Integrity: ok" in _ok(flask_a2a(copy, "db", "check"))
    shown = json.loads(_ok(flask_a2a(copy, "tasks", "show", task["id"], "--json")))
    assert shown["history"][0]["parts"][0]["text"] == "keep me"
    assert_fails(flask_a2a(db, "db", "backup", str(copy)), "exists")

    assert "up to date" in _ok(flask_a2a(db, "db", "upgrade"))

    # A damaged file: check says so and exits 1.
    broken = tmp_path / "broken.sqlite3"
    data = bytearray(copy.read_bytes())
    for page in range(1, len(data) // 4096):  # every b-tree page but the first
        data[page * 4096] = 0xFF  # not a page type
    broken.write_bytes(bytes(data))
    result = flask_a2a(broken, "db", "check", env={"A2A_AUTO_MIGRATE": "0"})
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Integrity: ok" not in result.stdout


def test_a_retry_after_db_copy_replays_its_task_on_the_copy(tmp_path, make_app):
    """A client that sent a message before ``db copy`` and retries it (same
    messageId, same message) against the service on the copy gets its task
    back; the agent does not run again."""
    db, copied = tmp_path / "ops.sqlite3", tmp_path / "copied.sqlite3"
    app, a2a = make_app(register_scripted, A2A_DATABASE=str(db))
    rpc = Rpc(app.test_client(), agent="script")
    hello = message("hello")
    done = rpc.result("message/send", {"message": hello})
    asked = rpc.send("ask")
    more = message("go on", taskId=asked["id"], contextId=asked["contextId"])
    assert rpc.result("message/send", {"message": more})["status"]["state"] == \
        "completed"
    assert len(a2a.turns) == 3

    assert "Copied 2 tasks" in _ok(flask_a2a(db, "db", "copy", "--to", str(copied)))
    app, a2a = make_app(register_scripted, A2A_DATABASE=str(copied))
    on_copy = Rpc(app.test_client(), agent="script")
    for sent, task in ((hello, done), (more, asked)):
        again = on_copy.result("message/send", {"message": sent})
        assert (again["id"], again["contextId"]) == (task["id"], task["contextId"])
        assert again["status"]["state"] == "completed"
    assert on_copy.result("tasks/get", {"id": done["id"]}) == \
        rpc.result("tasks/get", {"id": done["id"]})
    assert a2a.turns == []  # no agent ran again
    # Another message under the same messageId is still refused.
    status, error = on_copy.error("message/send", {
        "message": dict(hello, parts=[{"kind": "text", "text": "other"}])})
    assert (status, error["code"]) == (200, -32602) and a2a.turns == []


def test_auto_migrate_off_refuses_until_db_upgrade(tmp_path, make_app):
    db = tmp_path / "fresh.sqlite3"
    app, rpc = _app_rpc(make_app, db, A2A_AUTO_MIGRATE=False)
    health = app.test_client().get("/api/v1/health")
    assert health.status_code == 503
    assert health.get_json()["status"] == "outdated"
    assert "flask a2a db upgrade" in health.get_json()["message"]
    status, answer = rpc.call("message/send", {"message": message("hi")})
    assert status == 503 and answer["error"]["code"] == -32603
    assert "flask a2a db upgrade" in answer["error"]["message"]

    checked = flask_a2a(db, "db", "check", env={"A2A_AUTO_MIGRATE": "0"})
    assert checked.returncode == 1 and "db upgrade" in checked.stdout
    upgraded = _ok(flask_a2a(db, "db", "upgrade", env={"A2A_AUTO_MIGRATE": "0"}))
    assert "from version 0 to %d" % EXPECTED_VERSION in upgraded

    # The same app, without a restart: serves now.
    assert app.test_client().get("/api/v1/health").get_json() == {
        "status": "ok", "database": "ok", "schemaVersion": EXPECTED_VERSION}
    assert rpc.send("hi")["status"]["state"] == "completed"


def test_a_pre_release_file_is_refused_at_start_and_by_db_check(tmp_path, make_app):
    """A file at a version below the squashed start (here 5): the app does
    not start on it; with A2A_AUTO_MIGRATE=0 health, calls, ``db check``
    and ``db upgrade`` say why; the file is left as it is."""
    db = tmp_path / "old.sqlite3"
    _, rpc = _app_rpc(make_app, db)
    task = rpc.send("keep me", agent="echo")
    with sqlite3.connect(str(db)) as conn:
        conn.execute("UPDATE a2a_schema_version SET version = 5")
    refusal = (
        "The database schema is version 5, written by a pre-release a2a_flask: "
        "this a2a_flask (schema version 8 on) cannot read or upgrade it. Point "
        "A2A_DATABASE at a new, empty database.")

    with pytest.raises(SchemaError) as refused:
        make_app(A2A_DATABASE=str(db))
    assert str(refused.value) == refusal

    app, rpc = _app_rpc(make_app, db, A2A_AUTO_MIGRATE=False)
    health = app.test_client().get("/api/v1/health")
    assert (health.status_code, health.get_json()) == (503, {
        "status": "outdated", "database": "ok", "schemaVersion": 5,
        "message": refusal})
    status, answer = rpc.call("message/send", {"message": message("hi")})
    assert (status, answer["error"]["code"]) == (503, -32603)
    assert answer["error"]["message"] == refusal

    checked = flask_a2a(db, "db", "check", env={"A2A_AUTO_MIGRATE": "0"})
    assert checked.returncode == 1, (checked.stdout, checked.stderr)
    assert checked.stdout.splitlines()[-2:] == [
        "Schema version: 5 (this a2a_flask: %d)" % EXPECTED_VERSION, refusal]
    upgraded = flask_a2a(db, "db", "upgrade", env={"A2A_AUTO_MIGRATE": "0"})
    assert upgraded.returncode == 1 and "Traceback" not in upgraded.stderr
    # The app's start warns (A2A_AUTO_MIGRATE=0), then the command refuses.
    warned, error = upgraded.stderr.strip().splitlines()[-2:]
    assert warned.endswith(refusal + " Calls are refused until then.")
    assert error == "Error: " + refusal
    assert _count(db, "SELECT version FROM a2a_schema_version") == 5
    assert _count(db, "SELECT count(*) FROM a2a_tasks WHERE id = ?", task["id"]) == 1
