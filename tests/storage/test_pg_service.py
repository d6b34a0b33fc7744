"""The service on PostgreSQL (A2A_DATABASE=postgresql://...), in process and
through the CLI: the protocol as on SQLite, ``flask a2a db`` operations, and
``flask a2a db copy`` moving an SQLite database (tasks with history and
artifacts, keys, users) to PostgreSQL."""

import base64

import pytest

from a2a_flask.config import Settings
from a2a_flask.storage import open_storage
from a2a_flask.storage.postgres.migrations import EXPECTED_VERSION
from helpers import Rpc, message, register_scripted
from serving import assert_fails, flask_a2a


def _ok(result):
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    return result.stdout


@pytest.mark.compat
def test_the_protocol_on_postgres(make_rpc, postgres_url):
    rpc = make_rpc(register_scripted, agent="script", A2A_DATABASE=postgres_url)
    task = rpc.send("ask")
    assert task["status"]["state"] == "input-required"
    done = rpc.send("thanks", taskId=task["id"], contextId=task["contextId"])
    assert done["status"]["state"] == "completed" and done["id"] == task["id"]
    got = rpc.result("tasks/get", {"id": task["id"]})
    assert [m["role"] for m in got["history"]] == ["user", "agent", "user", "agent"]
    assert got["status"] == done["status"]
    assert rpc.result("tasks/get", {"id": task["id"], "historyLength": 1})["history"] == \
        [got["history"][-1]]
    waiting = rpc.send("ask")
    assert rpc.result("tasks/cancel", {"id": waiting["id"]})["status"]["state"] == "canceled"
    status, error = rpc.error("tasks/cancel", {"id": waiting["id"]})
    assert error["code"] == -32002
    status, error = rpc.error("tasks/get", {"id": "task_nope"})
    assert error["code"] == -32001


def test_a_server_that_cannot_be_reached_is_a_clear_retryable_error(make_rpc):
    rpc = make_rpc(A2A_DATABASE="postgresql://nobody@127.0.0.1:1/none",
                   A2A_BUSY_TIMEOUT_MS=500)
    status, error = rpc.error("message/send", {"message": {
        "kind": "message", "role": "user", "messageId": "m1",
        "parts": [{"kind": "text", "text": "hi"}]}})
    assert error["code"] == -32603 and error["data"] == {"retry": True}
    assert "storage is unavailable" in error["message"]
    assert "nobody" not in error["message"]


def test_a_database_that_does_not_exist_is_unavailable_until_created(
        make_rpc, postgres_server, caplog):
    """Refused by the server (here: no such database; a wrong password is
    the same path) at boot and after: retryable errors, then served once the
    database exists, without a new app."""
    name = "a2a_test_created_later"
    postgres_server.drop_db(name)
    url = postgres_server.url(name).replace("postgres@", "postgres:s3cret-pw@")
    rpc = make_rpc(A2A_DATABASE=url)
    status, error = rpc.error("message/send", {"message": {
        "kind": "message", "role": "user", "messageId": "m1",
        "parts": [{"kind": "text", "text": "hi"}]}})
    assert error["data"] == {"retry": True}
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert name in logged and "does not exist" in logged
    assert "s3cret-pw" not in logged and "postgres:***@" in logged
    postgres_server.query('CREATE DATABASE "%s"' % name)
    try:
        import time

        time.sleep(1.1)  # the next try to open it comes at most once a second
        assert rpc.send("hi")["status"]["state"] == "completed"
    finally:
        rpc.app.extensions["a2a"].storage.close()
        postgres_server.drop_db(name)


@pytest.mark.compat
def test_health_on_postgres(make_app, postgres_url):
    app, _ = make_app(A2A_DATABASE=postgres_url)
    response = app.test_client().get("/api/v1/health")
    assert (response.status_code, response.get_json()) == (
        200, {"status": "ok", "database": "ok", "schemaVersion": EXPECTED_VERSION})
    app, _ = make_app(A2A_DATABASE="postgresql://nobody:pw@127.0.0.1:1/none")
    response = app.test_client().get("/api/v1/health")
    assert (response.status_code, response.get_json()) == (
        503, {"status": "unavailable", "database": "unavailable"})


def test_auto_migrate_off_refuses_until_db_upgrade(make_rpc, postgres_url):
    rpc = make_rpc(A2A_DATABASE=postgres_url, A2A_AUTO_MIGRATE=False)
    status, error = rpc.error("message/send", {"message": {
        "kind": "message", "role": "user", "messageId": "m1",
        "parts": [{"kind": "text", "text": "hi"}]}})
    assert status == 503 and "flask a2a db upgrade" in error["message"]
    assert "Upgraded the schema from version 0 to %d" % EXPECTED_VERSION in _ok(
        flask_a2a(postgres_url, "db", "upgrade", env={"A2A_AUTO_MIGRATE": "0"}))
    assert rpc.send("hi")["status"]["state"] == "completed"


@pytest.mark.compat
def test_db_check_and_backup_on_postgres(tmp_path, postgres_url):
    checked = _ok(flask_a2a(postgres_url, "db", "check"))
    assert "Integrity: ok" in checked and "Schema version: %d (this a2a_flask: %d)" % (
        EXPECTED_VERSION, EXPECTED_VERSION) in checked
    dump = tmp_path / "a2a.dump"
    backed = _ok(flask_a2a(postgres_url, "db", "backup", str(dump)))
    assert str(dump) in backed
    assert dump.read_bytes()[:5] == b"PGDMP"  # pg_dump's custom format
    assert_fails(flask_a2a(postgres_url, "db", "backup", str(dump)), "exists")
    # without pg_dump on the PATH: a clear message, no traceback
    result = flask_a2a(postgres_url, "db", "backup", str(tmp_path / "b.dump"),
                       env={"PATH": "/nonexistent"})
    assert_fails(result, "pg_dump")


def test_db_copy_moves_an_sqlite_database_to_postgres(tmp_path, make_app, postgres_url):
    db = tmp_path / "a2a.sqlite3"
    app, _ = make_app(register_scripted, A2A_DATABASE=str(db), A2A_AUTH="required")
    key = _ok(flask_a2a(db, "keys", "create", "--quiet")).strip()
    revoked = _ok(flask_a2a(db, "keys", "create", "--quiet")).strip()
    _ok(flask_a2a(db, "users", "create", "ann", "--password-stdin",
                  input="correct horse battery\n"))
    rpc = Rpc(app.test_client(), agent="script",
              headers={"Authorization": "Bearer " + key})
    asked = rpc.send("ask")
    rpc.send("go on", taskId=asked["id"])  # completed, 4 messages, an artifact
    hello = message("hello")
    said = rpc.result("message/send", {"message": hello})
    canceled = rpc.send("ask")
    rpc.result("tasks/cancel", {"id": canceled["id"]})
    revoked_id = [line.split()[0] for line in _ok(flask_a2a(db, "keys", "list")).splitlines()
                  if line.startswith("key_")][-1]
    _ok(flask_a2a(db, "keys", "revoke", revoked_id))

    out = _ok(flask_a2a(db, "db", "copy", "--to", postgres_url))
    assert "Copied 3 tasks, 2 API keys and 1 users" in out

    source = open_storage(Settings({"A2A_DATABASE": str(db)}, "."))
    target = open_storage(Settings({"A2A_DATABASE": postgres_url}, "."))
    try:
        for task in source.list_tasks(limit=10).tasks:
            assert target.show_task(task.id) == source.show_task(task.id)
        assert [k.astuple() for k in target.keys()] == [k.astuple() for k in source.keys()]
        assert target.users() == source.users()
        assert len(target.show_task(asked["id"]).history) == 4
        assert target.show_task(asked["id"]).artifacts
    finally:
        source.close()
        target.close()

    # the service on the copy: same key, same user, same tasks, retries replay
    pg_app, pg_a2a = make_app(register_scripted, A2A_DATABASE=postgres_url,
                              A2A_AUTH="required")
    on_pg = Rpc(pg_app.test_client(), agent="script",
                headers={"Authorization": "Bearer " + key})
    assert on_pg.result("tasks/get", {"id": asked["id"]}) == \
        rpc.result("tasks/get", {"id": asked["id"]})
    basic = base64.b64encode(b"ann:correct horse battery").decode()
    by_user = Rpc(pg_app.test_client(), agent="script",
                  headers={"Authorization": "Basic " + basic})
    assert by_user.send("hi")["status"]["state"] == "completed"
    runs = len(pg_a2a.turns)
    again = on_pg.result("message/send", {"message": hello})  # a retry
    assert (again["id"], again["status"]["state"]) == (said["id"], "completed")
    assert len(pg_a2a.turns) == runs  # replayed, not run again
    refused = Rpc(pg_app.test_client(), agent="script",
                  headers={"Authorization": "Bearer " + revoked})
    status, answer = refused.call("tasks/get", {"id": asked["id"]})
    assert status == 401 and "revoked" in answer["message"]

    # a second copy into a database that is not empty is refused
    assert_fails(flask_a2a(db, "db", "copy", "--to", postgres_url), "not empty")


def test_db_copy_to_an_unreachable_server_says_so(tmp_path, make_app):
    db = tmp_path / "a2a.sqlite3"
    make_app(A2A_DATABASE=str(db))
    result = flask_a2a(db, "db", "copy", "--to", "postgresql://nobody@127.0.0.1:1/x",
                       env={"A2A_BUSY_TIMEOUT_MS": "500"})
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "copy failed: connection failed" in result.stderr.splitlines()[-1]
    assert "Connection refused" in result.stderr.splitlines()[-1]
