"""Operators from the command line: ``keys create --operator`` (no agent
unless ``--agents``), ``keys list`` shows the flag, ``users create
--operator``; the flag survives ``db copy``'s export and import."""

import re

import pytest

from helpers import bearer
from serving import created_key, flask_a2a
from test_cli import key_rows, rpc_status

pytestmark = pytest.mark.compat


def test_operator_keys(tmp_path, make_app):
    db = tmp_path / "ops.sqlite3"
    op_id, op_key = created_key(flask_a2a(db, "keys", "create", "--operator"))
    both_id, both_key = created_key(flask_a2a(db, "keys", "create", "--operator",
                                              "--agents", "echo"))
    plain_id, plain_key = created_key(flask_a2a(db, "keys", "create"))
    rows, _ = key_rows(db)
    assert rows[op_id][3:5] == ["(no agent)", "yes"]
    assert rows[both_id][3:5] == ["echo", "yes"]
    assert rows[plain_id][3:5] == ["*", "no"]

    app, _ = make_app(A2A_AUTH="required", A2A_DATABASE=str(db))
    client = app.test_client()
    assert rpc_status(client, "echo", bearer(op_key)) == 403  # reaches no agent
    assert rpc_status(client, "chat", bearer(op_key)) == 403
    assert rpc_status(client, "echo", bearer(both_key)) == 200
    assert rpc_status(client, "chat", bearer(both_key)) == 403
    assert rpc_status(client, "chat", bearer(plain_key)) == 200
    storage = app.extensions["a2a"].storage
    flags = {row.id: row.operator for row in storage.keys()}
    assert flags == {op_id: True, both_id: True, plain_id: False}


def test_operator_users(tmp_path, make_app):
    db = tmp_path / "ops.sqlite3"
    result = flask_a2a(db, "users", "create", "olga", "--operator",
                       "--password-stdin", input="olga pw\n")
    assert result.returncode == 0 and "operator user olga" in result.stdout, result
    result = flask_a2a(db, "users", "create", "bob", "--password-stdin",
                       input="bob pw\n")
    assert result.returncode == 0, result
    listed = flask_a2a(db, "users", "list").stdout.splitlines()
    assert [re.split(r"\s{2,}", line)[::2] for line in listed] == [
        ["bob"], ["olga", "operator"]]

    app, _ = make_app(A2A_AUTH="required", A2A_DATABASE=str(db))
    storage = app.extensions["a2a"].storage
    assert storage.user_is_operator("olga") is True
    assert storage.user_is_operator("bob") is False
    assert storage.user_is_operator("nobody") is False
    keys, users = storage.export_credentials()
    assert [(u[0], u[3]) for u in users] == [("bob", False), ("olga", True)]
    other, _ = make_app(A2A_AUTH="required",
                        A2A_DATABASE=str(tmp_path / "copy.sqlite3"))
    copy = other.extensions["a2a"].storage
    copy.import_credentials(keys, users)
    assert copy.user_is_operator("olga") is True
    assert copy.user_is_operator("bob") is False
