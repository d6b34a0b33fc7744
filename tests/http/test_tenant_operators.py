"""Operators see every tenant (docs/tenants.md): the operator's page counts
and cancels the tasks of every tenant, whatever tenant the operator's key
was made in; a tenant's own callers still see only theirs. Through HTTP."""

import pytest

from helpers import Rpc, message

JSON = {"Accept": "application/json"}


@pytest.fixture
def service(make_app):
    app, _ = make_app(A2A_AUTH="required", A2A_TENANTS="acme,beta", A2A_DASHBOARD=True)
    credentials = app.extensions["a2a"].credentials
    client = app.test_client()

    def key(agents=None, **options):
        return credentials.create_key(agents, "k", **options)[1]

    return client, key


def _send(caller, tenant, agent="echo"):
    caller.agent = agent
    status, body = caller.rest("POST", "/%s/message:send" % tenant if tenant
                               else "/message:send", {"message": message(version="1.0")})
    assert status == 200, body
    return body["task"]


@pytest.mark.parametrize("operator_tenant", [None, "beta"])
def test_the_operators_page_counts_and_cancels_every_tenants_tasks(service,
                                                                   operator_tenant):
    client, key = service
    acme = Rpc(client, key=key(tenant="acme"), version="1.0")
    beta = Rpc(client, key=key(tenant="beta"), version="1.0")
    plain = Rpc(client, key=key(), version="1.0")
    for caller, tenant in ((acme, "acme"), (beta, "beta"), (plain, None)):
        _send(caller, tenant)
    waiting = _send(acme, "acme", agent="chat")
    assert waiting["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    operator_key = key(operator=True, tenant=operator_tenant, agents=["echo"])
    operator = {"X-API-Key": operator_key}

    page = client.get("/api/v1/dashboard/", headers=dict(JSON, **operator))
    assert page.status_code == 200
    agents = page.get_json()["agents"]
    assert agents["echo"]["tasks"] == {"completed": 3}
    assert agents["chat"]["tasks"] == {"input-required": 1}

    canceled = client.post("/api/v1/dashboard/cancel-task", json={"task_id": waiting["id"]},
                           headers=dict(JSON, **operator))
    assert canceled.status_code == 200, canceled.data
    assert [t["state"] for t in canceled.get_json()["canceled"]] == ["canceled"]
    acme.agent = "chat"
    status, task = acme.rest("GET", "/acme/tasks/" + waiting["id"])
    assert status == 200 and task["status"]["state"] == "TASK_STATE_CANCELED"
    # The tenant's neighbours still do not see it.
    beta.agent = "chat"
    status, _ = beta.rest("GET", "/beta/tasks/" + waiting["id"])
    assert status == 404

    # Talking to an agent, an operator key is a key of its own tenant.
    as_caller = Rpc(client, key=operator_key, version="1.0")
    _send(as_caller, operator_tenant)
    status, _ = as_caller.rest("POST", "/acme/message:send", {"message": message(version="1.0")})
    assert status == 404
