"""Headers on every answer (issue 18): ``X-Content-Type-Options: nosniff``
on all of them, ``Cache-Control: no-store`` on all but the Agent Cards'
(which depend on no caller, and whose caching is theirs to say); a card
route's errors are no-store too (issue 32)."""

import pytest

from helpers import message


@pytest.fixture
def client_and_key(keyed):
    caller, = keyed("h", A2A_METRICS=False)
    return caller.client, caller.key


def _answers(client, key):
    """(what, response) of one answer of each kind the service gives."""
    auth = {"X-API-Key": key}
    v10 = dict(auth, **{"A2A-Version": "1.0"})
    send = client.post("/api/v1/agents/echo/a2a", headers=auth, json={
        "jsonrpc": "2.0", "id": 1, "method": "message/send",
        "params": {"message": message()}})
    task_id = send.get_json()["result"]["id"]
    rest = "/api/v1/agents/echo/rest"
    yield "0.3 send", send
    yield "1.0 jsonrpc get", client.post(
        "/api/v1/agents/echo/a2a", headers=v10,
        json={"jsonrpc": "2.0", "id": 2, "method": "GetTask",
              "params": {"id": task_id}})
    yield "rest get", client.get(rest + "/tasks/" + task_id, headers=v10)
    yield "rest list", client.get(rest + "/tasks", headers=v10)
    yield "rest extended card", client.get(rest + "/extendedAgentCard",
                                           headers=v10)
    yield "rest 404", client.get(rest + "/tasks/nope", headers=v10)
    yield "401", client.post("/api/v1/agents/echo/a2a", json={})
    yield "agent list", client.get("/api/v1/agents", headers=auth)
    yield "health", client.get("/api/v1/health")
    yield "unrouted", client.get("/api/v1/agents/echo/nothing/here")
    yield "405", client.get("/api/v1/agents/echo/a2a")


def test_every_caller_answer_is_no_store_and_nosniff(client_and_key):
    client, key = client_and_key
    for what, response in _answers(client, key):
        assert response.headers.get("X-Content-Type-Options") == "nosniff", what
        assert response.headers.get("Cache-Control") == "no-store", what


def test_cards_are_nosniff_and_keep_their_own_caching(client_and_key):
    client, _ = client_and_key
    for path in ("/api/v1/agents/echo/.well-known/agent-card.json",
                 "/.well-known/agent-card.json", "/a2a/.well-known/agent.json"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert response.headers.get("X-Content-Type-Options") == "nosniff", path
        assert "no-store" not in response.headers.get("Cache-Control", ""), path


@pytest.mark.parametrize("public_cards", [True, False])
def test_a_card_route_error_is_no_store_and_nosniff(make_app, public_cards):
    app, _ = make_app(A2A_AUTH="required", A2A_PUBLIC_CARDS=public_cards,
                      A2A_DISABLED_AGENTS="chat")  # the default agent, at /
    client = app.test_client()
    status = 404 if public_cards else 401
    for path in ("/api/v1/agents/nope/.well-known/agent-card.json",
                 "/api/v1/agents/nope/.well-known/agent.json",
                 "/.well-known/agent-card.json", "/.well-known/agent.json"):
        response = client.get(path)
        assert response.status_code == status, (path, response.data)
        assert response.headers.get("X-Content-Type-Options") == "nosniff", path
        assert response.headers.get("Cache-Control") == "no-store", path
