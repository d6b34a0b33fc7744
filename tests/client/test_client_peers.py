"""a2a_flask.client against the official servers, each in its own
environment (tests/v1/clients.py installs them once into a cache): the
Python SDK 0.3.26 server (0.3 JSON-RPC), the Python SDK 1.x server (1.0
JSON-RPC and HTTP+JSON) and the JS SDK 1.x server (all three: 0.3 through
its compat layer). Each runs the echo/chat/wait agent of tests/v1 and
refuses calls without its API key, which the card declares in an
``apiKey`` scheme (so the client sends ``X-API-Key``).

None of them declares that a messageId runs once: a lost send is the
caller's decision there (checked in test_client_server.py with our card
stripped of the extension).
"""

import pytest

from a2a_flask.client import Client
from a2a_flask.errors import (
    TaskNotFoundError, UnauthenticatedError, UnsupportedOperationError,
)
from v1 import clients

KEY = "peer-key"
#: peer -> the (version, binding) pairs it serves, its card's order.
PEERS = {
    "sdk03": [("0.3", "JSONRPC")],
    "sdk1": [("1.0", "JSONRPC"), ("1.0", "HTTP+JSON")],
    "js": [("1.0", "JSONRPC"), ("1.0", "HTTP+JSON"), ("0.3", "JSONRPC")],
}
SERVERS = {"sdk03": clients.sdk03_server, "sdk1": clients.sdk_server,
           "js": clients.js_server}


@pytest.fixture(scope="module", params=sorted(PEERS))
def peer(request):
    with SERVERS[request.param](key=KEY) as card_url:
        yield request.param, card_url


def base_of(card_url):
    return card_url.split("/.well-known/")[0]


def test_card_from_the_base_url_in_each_form(peer):
    name, card_url = peer
    for url in (base_of(card_url), base_of(card_url) + "/", card_url):
        agent = Client(url, key=KEY)
        assert agent.card["name"] == "echo"
        assert (agent.interface.version, agent.interface.binding) == PEERS[name][0]


def test_operations(peer):
    name, card_url = peer
    for version, binding in PEERS[name]:
        agent = Client(base_of(card_url), key=KEY, version=version, binding=binding)
        assert agent.interface.binding == binding
        echoed = agent.send("hello")
        assert (echoed.state, echoed.text) == ("completed", "hello")
        assert agent.get(echoed.id).state == "completed"
        asked = agent.send("chat")
        assert (asked.state, asked.text) == ("input-required", "say more")
        answered = agent.send("more", task_id=asked.id, context_id=asked.context_id)
        assert (answered.id, answered.state, answered.text) == (
            asked.id, "completed", "more")
        assert len(agent.get(asked.id, history_length=1).history) == 1
        working = agent.send("wait")
        assert working.state == "working"
        assert agent.cancel(working.id).state == "canceled"
        with pytest.raises(TaskNotFoundError) as raised:
            agent.get("00000000-0000-0000-0000-000000000000")
        assert raised.value.code == -32001
        assert raised.value.http_status == (404 if binding == "HTTP+JSON" else 200)
        if version == "1.0":
            assert raised.value.reason == "TASK_NOT_FOUND"
            assert echoed.id in {t.id for t in agent.list_tasks(page_size=100).tasks}
        else:
            with pytest.raises(UnsupportedOperationError):
                agent.list_tasks()


def test_wait_on_a_finished_task_returns_it(peer):
    _, card_url = peer
    agent = Client(base_of(card_url), key=KEY)
    task = agent.send("hello", wait=5)
    assert (task.state, task.text) == ("completed", "hello")


def test_wrong_key(peer):
    name, card_url = peer
    for version, binding in PEERS[name]:
        agent = Client(base_of(card_url), key="wrong", version=version, binding=binding)
        with pytest.raises(UnauthenticatedError) as raised:
            agent.send("hello")
        assert raised.value.http_status == 401
