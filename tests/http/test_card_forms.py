"""The two forms of the Agent Card: pure A2A 1.0 for a caller that asks for
1.0 (``A2A-Version: 1.0``, header or query parameter) and for the 1.0
extended-card operations; the 0.3-compatible card otherwise. Every 1.0 card
is parsed strictly as the 1.0 proto's AgentCard (no unknown member)."""

import pytest

from helpers import Rpc, check_answer
from v1 import proto

AGENT_PATHS = ["/api/v1/agents/echo/.well-known/agent-card.json",
               "/api/v1/agents/echo/.well-known/agent.json",
               "/.well-known/agent-card.json",  # the default agent, chat
               "/a2a/.well-known/agent-card.json"]
EXTRAS = {"provider": {"organization": "Example", "url": "https://example.org"},
          "documentationUrl": "https://example.org/docs",
          "iconUrl": "https://example.org/icon.png"}


@pytest.fixture
def app(make_app):
    def register(a2a):
        a2a.add_agent("extra", lambda turn: "ok", card=dict(EXTRAS),
                      skills=[{"id": "s", "name": "S", "description": "d"}])
    app, _ = make_app(register=register, A2A_AUTH="required",
                      A2A_PUBLIC_BASE_URL="https://a.example")
    return app


def get(client, path, **kwargs):
    response = client.get(path, **kwargs)
    assert response.status_code == 200, response.data
    assert "A2A-Version" in response.headers.get("Vary", ""), response.headers
    return response.get_json()


@pytest.mark.parametrize("path", AGENT_PATHS)
@pytest.mark.parametrize("how", ["header", "query"])
def test_a_1_0_caller_gets_the_pure_1_0_card(app, path, how):
    client = app.test_client()
    if how == "header":
        card = get(client, path, headers={"A2A-Version": "1.0"})
    else:
        card = get(client, path, query_string={"A2A-Version": "1.0"})
    proto.validate("AgentCard", card)  # strict: no 0.3 member passes
    assert "protocolVersion" not in card and "url" not in card
    capabilities = dict(card["capabilities"])
    assert [e["uri"] for e in capabilities.pop("extensions")] == [
        "urn:a2a-flask:ext:message-id-once:v1"]
    assert capabilities == {"streaming": False, "pushNotifications": False,
                            "extendedAgentCard": card["name"] == "chat"}
    assert card["securitySchemes"]["apiKey"] == {"apiKeySecurityScheme": {
        "location": "header", "name": "X-API-Key",
        "description": "An API key made with `flask a2a keys create`."}}
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"][
        "scheme"] == "bearer"


@pytest.mark.parametrize("path", AGENT_PATHS)
@pytest.mark.parametrize("version", [None, "0.3", "0.3.0"])
def test_other_callers_get_the_0_3_compatible_card(app, path, version):
    headers = {"A2A-Version": version} if version else {}
    card = get(app.test_client(), path, headers=headers)
    check_answer(200, card)  # the 0.3 schema
    proto.validate_card(card)  # the 1.0 reading, 0.3 members ignored
    assert card["protocolVersion"] == "0.3.0"
    assert card["securitySchemes"]["apiKey"]["in"] == "header"
    with pytest.raises(proto.ProtoJSONError):
        proto.validate("AgentCard", card)


def test_an_agents_extra_members_in_both_forms(app):
    client = app.test_client()
    path = "/api/v1/agents/extra/.well-known/agent-card.json"
    pure = get(client, path, headers={"A2A-Version": "1.0"})
    proto.validate("AgentCard", pure)
    compatible = get(client, path)
    for key, value in EXTRAS.items():
        assert pure[key] == value and compatible[key] == value
    assert pure["skills"] == [{"id": "s", "name": "S", "description": "d",
                               "tags": []}]


def keyed_caller(app, agent, version="1.0"):
    key = app.extensions["a2a"].credentials.create_key(None, "a")[1]
    return Rpc(app.test_client(), agent=agent, key=key, version=version)


def test_extended_card_of_1_0_operations_is_pure_1_0(app):
    caller = keyed_caller(app, "chat")
    card = caller.result("GetExtendedAgentCard")
    proto.validate("AgentCard", card)
    assert "chat-history" in [skill["id"] for skill in card["skills"]]
    status, card = caller.rest("GET", "/extendedAgentCard")
    assert status == 200
    proto.validate("AgentCard", card)
    assert "chat-history" in [skill["id"] for skill in card["skills"]]


def test_extended_card_of_the_0_3_method_stays_compatible(app):
    caller = keyed_caller(app, "chat", version="0.3")
    status, body = caller.call("agent/getAuthenticatedExtendedCard")
    assert status == 200
    card = body["result"]
    check_answer(200, card)
    assert card["protocolVersion"] == "0.3.0"
    assert "chat-history" in [skill["id"] for skill in card["skills"]]


@pytest.mark.parametrize("path", [
    "/api/v1/agents/echo/a2a/.well-known/agent-card.json",
    "/api/v1/agents/echo/rest/.well-known/agent-card.json",
    "/api/v1/agents/echo/.well-known/agent-card.json/.well-known/agent-card.json",
    "/api/v1/agents/echo/.well-known/.well-known/agent-card.json"])
def test_the_card_where_clients_given_another_url_look(app, path):
    # A client given the endpoint, the REST base or the card URL as its base
    # URL (docs/cards.md): the same card, in the form asked for.
    client = app.test_client()
    assert get(client, path) == get(client, AGENT_PATHS[0])
    pure = get(client, path, headers={"A2A-Version": "1.0"})
    proto.validate("AgentCard", pure)


def test_the_agentless_card_path_says_what_to_give(app):
    response = app.test_client().get("/api/v1/agents/.well-known/agent-card.json")
    assert response.status_code == 404
    body = response.get_json()
    assert body["code"] == -32600 and "trailing slash" in body["message"]
    assert "/api/v1/agents/<name>/" in body["message"]
