"""``flask a2a ...`` end to end: real subprocesses in the repository,
``A2A_DATABASE`` pointing at a temporary file; what they create is then used
against an app on the same file."""

import base64
import os
import re
import subprocess
import sys
import time

import pytest

from helpers import bearer, check_answer, message
from serving import KEY, assert_fails, created_key, flask_a2a

# In the compat subset: .ci/matrix runs it on every supported Python and Flask.
pytestmark = pytest.mark.compat


def rpc_status(client, agent, headers):
    response = client.post("/api/v1/agents/%s/a2a" % agent, headers=headers, json={
        "jsonrpc": "2.0", "id": 1, "method": "message/send",
        "params": {"message": message("hi")}})
    check_answer(response.status_code, response.get_json())
    return response.status_code


def key_rows(database):
    """{key id: the cells of its line} from ``keys list``."""
    result = flask_a2a(database, "keys", "list")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert re.split(r"\s{2,}", lines[0]) == [
        "ID", "PREFIX", "LABEL", "SCOPE", "OPERATOR", "CREATED", "LAST USED",
        "REVOKED"]
    return {cells[0]: cells for cells in (re.split(r"\s{2,}", line.strip())
                                          for line in lines[1:])}, result.stdout


def test_keys_create_list_revoke(tmp_path, make_app):
    db = tmp_path / "cli.sqlite3"
    all_id, all_key = created_key(flask_a2a(db, "keys", "create"))
    echo_id, echo_key = created_key(flask_a2a(db, "keys", "create", "--agents", "echo",
                                              "--label", "ci bot"))
    quiet = flask_a2a(db, "keys", "create", "--agents", "echo,chat", "--quiet")
    assert quiet.returncode == 0 and KEY.fullmatch(quiet.stdout.rstrip("\n")), quiet
    assert quiet.stdout.count("\n") == 1
    two_key = quiet.stdout.strip()
    star_id, star_key = created_key(flask_a2a(db, "keys", "create", "--agents", "*",
                                              "--label", "unused"))
    assert len({all_key, echo_key, two_key, star_key}) == 4

    rows, text = key_rows(db)
    assert len(rows) == 4
    for secret in (all_key, echo_key, two_key, star_key):
        assert secret not in text and secret[10:] not in text  # never the key
    assert rows[all_id][1:4] == [all_key[:10] + "...", "-", "*"]
    assert rows[echo_id][1:4] == [echo_key[:10] + "...", "ci bot", "echo"]
    assert rows[star_id][2:4] == ["unused", "*"]
    [two_id] = [i for i, cells in rows.items() if cells[1] == two_key[:10] + "..."]
    assert rows[two_id][3] == "chat,echo"
    for cells in rows.values():
        assert cells[4] == "no"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", cells[5])
        assert cells[6:] == ["never", "-"]

    # The keys work against the app, in their scope.
    app, _ = make_app(A2A_AUTH="required", A2A_DATABASE=str(db))
    client = app.test_client()
    assert rpc_status(client, "echo", bearer(all_key)) == 200
    assert rpc_status(client, "chat", {"X-API-Key": all_key}) == 200
    assert rpc_status(client, "echo", bearer(echo_key)) == 200
    assert rpc_status(client, "chat", bearer(echo_key)) == 403
    assert rpc_status(client, "chat", bearer(two_key)) == 200

    # The uses of one second are written together, within a second.
    deadline = time.monotonic() + 10
    while True:
        rows, _ = key_rows(db)
        if all(rows[k][6] != "never" for k in (all_id, echo_id, two_id)):
            break
        assert time.monotonic() < deadline, rows
        time.sleep(0.2)
    for key_id in (all_id, echo_id, two_id):
        assert re.fullmatch(r"\d{4}-.*Z", rows[key_id][6]), rows[key_id]
    assert rows[star_id][6] == "never"

    revoked = flask_a2a(db, "keys", "revoke", echo_id)
    assert revoked.returncode == 0 and echo_id in revoked.stdout, revoked
    assert rpc_status(client, "echo", bearer(echo_key)) == 401  # same app, at once
    assert rpc_status(client, "echo", bearer(all_key)) == 200
    rows, _ = key_rows(db)
    assert re.fullmatch(r"\d{4}-.*Z", rows[echo_id][7])
    assert [rows[i][7] for i in (all_id, two_id, star_id)] == ["-", "-", "-"]

    assert_fails(flask_a2a(db, "keys", "revoke", "key_0000nope"), "key_0000nope")
    assert_fails(flask_a2a(db, "keys", "create", "--agents", "echo,nope"), "nope")
    assert_fails(flask_a2a(db, "keys", "create", "--agents", " , "), "--agents")
    assert len(key_rows(db)[0]) == 4  # the refused commands created nothing


def test_users_create_list_delete(tmp_path, make_app):
    db = tmp_path / "cli.sqlite3"
    empty = flask_a2a(db, "users", "list")
    assert empty.returncode == 0 and "alice" not in empty.stdout
    result = flask_a2a(db, "users", "create", "alice", "--password-stdin",
                       input="alice pw 1\n")
    assert result.returncode == 0 and "alice" in result.stdout, result
    result = flask_a2a(db, "users", "create", "bob", input="bob pw 2\nbob pw 2\n")
    assert result.returncode == 0 and "bob" in result.stdout, result
    assert "bob pw 2" not in result.stdout + result.stderr
    assert_fails(flask_a2a(db, "users", "create", "alice", "--password-stdin",
                           input="other\n"), "alice")

    listed = flask_a2a(db, "users", "list")
    assert listed.returncode == 0
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["alice", "bob"]

    app, _ = make_app(A2A_AUTH="required", A2A_DATABASE=str(db))
    client = app.test_client()

    def basic(name, password):
        pair = ("%s:%s" % (name, password)).encode()
        return {"Authorization": "Basic " + base64.b64encode(pair).decode()}

    assert rpc_status(client, "echo", basic("alice", "alice pw 1")) == 200
    assert rpc_status(client, "chat", basic("bob", "bob pw 2")) == 200
    assert rpc_status(client, "echo", basic("alice", "other")) == 401  # not replaced

    result = flask_a2a(db, "users", "delete", "bob")
    assert result.returncode == 0 and "bob" in result.stdout, result
    assert rpc_status(client, "chat", basic("bob", "bob pw 2")) == 401
    assert_fails(flask_a2a(db, "users", "delete", "bob"), "bob")
    listed = flask_a2a(db, "users", "list")
    assert [line.split()[0] for line in listed.stdout.splitlines()] == ["alice"]

    data = b"".join(open(str(db) + suffix, "rb").read()
                    for suffix in ("", "-wal") if os.path.exists(str(db) + suffix))
    assert b"alice" in data
    for password in (b"alice pw 1", b"bob pw 2"):
        assert password not in data


LOADED_COMMANDS = r'''
import sys
from flask import Flask
from a2a_flask import A2A
app = Flask("host")
app.config["A2A_DATABASE"] = sys.argv[1]
A2A(app)
print(sorted(m for m in sys.modules if m.startswith("a2a_flask.cli.")))
'''


def test_a_web_process_imports_no_command_and_help_lists_them_all(tmp_path):
    # The group imports a command's module when it is named: an app that
    # only serves (a gunicorn worker) never loads them (docs/benchmarks.md,
    # "The master's imports").
    loaded = subprocess.run([sys.executable, "-c", LOADED_COMMANDS,
                             str(tmp_path / "a2a.sqlite3")],
                            capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
    result = flask_a2a(tmp_path / "a2a.sqlite3", "--help")
    assert result.returncode == 0, result.stderr
    listed = re.findall(r"^  (\w+) ", result.stdout.split("Commands:")[1], re.M)
    assert listed == ["call", "cards", "db", "keys", "tasks", "users", "worker"]
    unknown = flask_a2a(tmp_path / "a2a.sqlite3", "nothing")
    assert unknown.returncode == 2
    assert "No such command" in unknown.stderr and "nothing" in unknown.stderr


def test_the_worker_freezes_what_it_built_before_it_runs(make_app, monkeypatch):
    # Its full collections walked the app's ~39,000 objects (7 ms) while every
    # turn waited; gunicorn.conf.py freezes a web worker's the same way.
    import gc
    import signal

    from a2a_flask import worker as running_turns
    from a2a_flask.cli import worker as command

    app, _ = make_app(register=lambda a2a: a2a.add_agent(
        "later", lambda turn: "done", background=True))
    frozen = []
    monkeypatch.setattr(running_turns.Worker, "run",
                        lambda self: frozen.append(gc.get_freeze_count()))
    monkeypatch.setattr(command, "_log_to_stderr", lambda log_format: None)
    monkeypatch.setattr(signal, "signal", lambda *args: None)  # pytest's own stay
    gc.unfreeze()
    try:
        result = app.test_cli_runner().invoke(args=["a2a", "worker"])
    finally:
        gc.unfreeze()
    assert result.exit_code == 0, result.output
    assert frozen and frozen[0] > 10000
