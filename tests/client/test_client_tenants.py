"""The sync client against our own service under gunicorn, given an
interface of a tenant from the service's card: it sends the interface's
tenant in every request (params.tenant on JSON-RPC, the path on HTTP+JSON),
so its tasks are that tenant's (docs/tenants.md)."""

import json
import urllib.request

import pytest

from a2a_flask.client import Client
from a2a_flask.errors import TaskNotFoundError
from serving import GunicornServer, flask_cli

ENV = {"A2A_TENANTS": "acme,beta"}


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tenant-service")
    server = GunicornServer(folder, workers=1, auth="key", env=ENV)
    server.start()
    server.acme_key = flask_cli(server.database, "a2a", "keys", "create", "--tenant",
                                "acme", "--quiet", env=ENV).strip()
    yield server
    server.stop()


def _card(service):
    request = urllib.request.Request(
        service.url + "/api/v1/agents/chat/.well-known/agent-card.json",
        headers={"A2A-Version": "1.0"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_the_client_echoes_the_interfaces_tenant(service, binding):
    card = _card(service)
    card["supportedInterfaces"] = [
        item for item in card["supportedInterfaces"]
        if item.get("tenant") == "acme" and item["protocolBinding"] == binding]
    assert len(card["supportedInterfaces"]) == 1
    acme = Client(card=card, key=service.acme_key)
    assert (acme.interface.tenant, acme.interface.binding) == ("acme", binding)
    task = acme.send("hello")
    assert task.state == "input-required"
    assert acme.get(task.id).id == task.id
    assert [t.id for t in acme.list_tasks().tasks][0] == task.id
    continued = acme.send("more", task_id=task.id, context_id=task.context_id)
    assert continued.id == task.id
    assert acme.cancel(task.id).state == "canceled"

    # The same key where no tenant is named: the task does not exist there.
    plain = Client(service.url + "/api/v1/agents/chat/", key=service.acme_key,
                   binding=binding, version="1.0")
    assert plain.interface.tenant is None
    with pytest.raises(TaskNotFoundError):
        plain.get(task.id)
