"""``flask a2a keys/users/tasks`` with tenants (docs/tenants.md): real
subprocesses on a temporary file, their keys and users then used against an
app on the same file."""

import json
import re

from helpers import Rpc, basic, message
from serving import assert_fails, created_key, flask_a2a

TENANTS = {"A2A_TENANTS": "acme,beta"}


def _app(make_app, db):
    app, _ = make_app(A2A_AUTH="required", A2A_DATABASE=str(db), A2A_TENANTS="acme,beta")
    return app


def test_keys_of_a_tenant_are_listed_with_it_and_act_in_it_only(tmp_path, make_app):
    db = tmp_path / "cli.sqlite3"
    acme_id, acme_key = created_key(flask_a2a(db, "keys", "create", "--tenant", "acme",
                                              env=TENANTS))
    plain_id, plain_key = created_key(flask_a2a(db, "keys", "create", env=TENANTS))
    assert_fails(flask_a2a(db, "keys", "create", "--tenant", "zeta", env=TENANTS),
                 "unknown tenant 'zeta'", "acme, beta")

    listed = flask_a2a(db, "keys", "list", env=TENANTS)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert re.split(r"\s{2,}", lines[0].strip()) == [
        "ID", "PREFIX", "LABEL", "SCOPE", "OPERATOR", "CREATED", "LAST USED", "REVOKED", "TENANT"]
    tenants = {cells[0]: cells[-1] for cells in
               (re.split(r"\s{2,}", line.strip()) for line in lines[1:])}
    assert tenants == {acme_id: "acme", plain_id: "-"}

    client = _app(make_app, db).test_client()
    acme, plain = Rpc(client, key=acme_key, version="1.0"), Rpc(client, key=plain_key, version="1.0")
    status, body = acme.call("SendMessage", {"message": message(version="1.0"), "tenant": "acme"})
    assert status == 200 and body["result"]["task"]["status"]["state"] == \
        "TASK_STATE_COMPLETED"
    status, body = acme.call("SendMessage", {"message": message(version="1.0")})
    assert status == 404  # no tenant named: not where this key acts
    status, body = plain.call("SendMessage", {"message": message(version="1.0"), "tenant": "acme"})
    assert status == 404
    status, body = plain.call("SendMessage", {"message": message(version="1.0")})
    assert status == 200

    only_acme = flask_a2a(db, "tasks", "list", "--tenant", "acme", "--json", env=TENANTS)
    assert only_acme.returncode == 0, only_acme.stderr
    assert [t["caller"] for t in json.loads(only_acme.stdout)] == [
        "key:" + acme_id]
    none = flask_a2a(db, "tasks", "list", "--tenant", "-", "--json", env=TENANTS)
    assert [t["caller"] for t in json.loads(none.stdout)] == [
        "key:" + plain_id]
    every = flask_a2a(db, "tasks", "list", "--json", env=TENANTS)
    assert len(json.loads(every.stdout)) == 2


def test_an_operator_key_of_a_tenant_sees_every_tenant(tmp_path, make_app):
    db = tmp_path / "cli.sqlite3"
    made = flask_a2a(db, "keys", "create", "--operator", "--tenant", "acme",
                     "--label", "acme ops", env=TENANTS)
    ops_id, ops_key = created_key(made)
    assert made.stdout.splitlines()[0] == (
        "Created operator API key %s (scope: (no agent), label: acme ops,"
        " tenant: acme)." % ops_id)
    listed = flask_a2a(db, "keys", "list", env=TENANTS)
    assert listed.returncode == 0, listed.stderr
    [row] = [re.split(r"\s{2,}", line.strip()) for line in listed.stdout.splitlines()[1:]]
    assert (row[0], row[3], row[4], row[-1]) == (ops_id, "(no agent)", "yes", "acme")

    app, _ = make_app(A2A_AUTH="required", A2A_DATABASE=str(db), A2A_TENANTS="acme,beta",
                      A2A_DASHBOARD=True)
    credentials = app.extensions["a2a"].credentials
    client = app.test_client()
    for tenant in ("beta", None):
        caller = Rpc(client, "chat", key=credentials.create_key(None, "k", tenant=tenant)[1],
                     version="1.0")
        status, body = caller.call("SendMessage", dict(
            {"message": message(version="1.0")}, **({"tenant": tenant} if tenant else {})))
        assert status == 200, body
    operator = {"Authorization": "Bearer " + ops_key, "Accept": "application/json"}
    page = client.get("/api/v1/dashboard/", headers=operator)
    assert page.status_code == 200, page.data
    assert page.get_json()["agents"]["chat"]["tasks"] == {"input-required": 2}
    assert page.get_json()["tenants"] == ["acme", "beta"]
    # Not its tenant's task, nor any tenant's: canceled all the same.
    [task_id] = [t["id"] for t in json.loads(flask_a2a(
        db, "tasks", "list", "--tenant", "-", "--json", env=TENANTS).stdout)]
    canceled = client.post("/api/v1/dashboard/cancel-task", json={"task_id": task_id},
                           headers=operator)
    assert canceled.status_code == 200, canceled.data
    assert canceled.get_json()["canceled"][0]["state"] == "canceled"


def test_a_user_of_a_tenant_acts_in_it_only(tmp_path, make_app):
    db = tmp_path / "cli.sqlite3"
    made = flask_a2a(db, "users", "create", "ann", "--tenant", "beta",
                     "--password-stdin", input="pw-of-ann\n", env=TENANTS)
    assert made.returncode == 0 and made.stdout == "Created user ann (tenant beta).\n", made
    assert_fails(flask_a2a(db, "users", "create", "bob", "--tenant", "zeta",
                           "--password-stdin", input="pw-of-bob\n", env=TENANTS),
                 "unknown tenant 'zeta'")
    flask_a2a(db, "users", "create", "olga", "--operator", "--password-stdin",
              input="pw-of-olga\n", env=TENANTS)
    listed = flask_a2a(db, "users", "list", env=TENANTS).stdout.splitlines()
    assert [re.split(r"\s{2,}", line)[::2] for line in listed] == [
        ["ann", "tenant beta"], ["olga", "operator"]]

    caller = Rpc(_app(make_app, db).test_client(), version="1.0")
    caller.headers.update(basic("ann", "pw-of-ann"))
    status, body = caller.call("SendMessage", {"message": message(version="1.0"), "tenant": "beta"})
    assert status == 200, body
    status, body = caller.call("SendMessage", {"message": message(version="1.0"), "tenant": "acme"})
    assert status == 404
