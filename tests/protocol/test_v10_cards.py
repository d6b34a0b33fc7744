"""Cards that serve both versions: a 0.3 reader finds url/preferredTransport
(the 0.3 schema), a 1.0 reader supportedInterfaces with protocolVersion (the
1.0 proto, the known 0.3 members ignored)."""

import pytest

from a2a_flask.protocol.cards import MESSAGE_ID_ONCE_EXTENSION
from helpers import check_answer
from v1 import proto


# In the compat subset: .ci/matrix runs it on every supported Python and Flask.
pytestmark = pytest.mark.compat


def card(client, path):
    response = client.get(path)
    assert response.status_code == 200
    body = response.get_json()
    check_answer(200, body)  # the 0.3 schema
    proto.validate_card(body)  # the 1.0 proto
    return body


@pytest.mark.parametrize("root_rest", [False, True])
def test_agent_and_root_cards_list_every_interface(make_app, root_rest):
    app, _ = make_app(A2A_AUTH="required", A2A_ROOT_REST=root_rest,
                      A2A_PUBLIC_BASE_URL="https://a.example")
    client = app.test_client()
    agent = card(client, "/api/v1/agents/echo/.well-known/agent-card.json")
    rpc = "https://a.example/api/v1/agents/echo/a2a"
    assert agent["supportedInterfaces"] == [
        {"url": rpc, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": "https://a.example/api/v1/agents/echo/rest",
         "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        {"url": rpc, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}]
    assert (agent["protocolVersion"], agent["url"], agent["preferredTransport"]) == (
        "0.3.0", rpc, "JSONRPC")
    assert agent["additionalInterfaces"] == [{"url": rpc, "transport": "JSONRPC"}]
    root = card(client, "/.well-known/agent-card.json")  # the default agent, chat
    assert [i["url"] for i in root["supportedInterfaces"]] == [
        "https://a.example/a2a",
        "https://a.example" if root_rest else "https://a.example/api/v1/agents/chat/rest",
        "https://a.example/a2a"]


def test_capabilities_are_honest(make_app):
    app, _ = make_app(A2A_AUTH="required")
    client = app.test_client()
    for name, extended in (("echo", False), ("chat", True)):
        body = card(client, "/api/v1/agents/%s/.well-known/agent-card.json" % name)
        assert body["capabilities"] == {
            "streaming": False, "pushNotifications": False,
            "stateTransitionHistory": False, "extendedAgentCard": extended,
            "extensions": [MESSAGE_ID_ONCE_EXTENSION]}
        assert body["supportsAuthenticatedExtendedCard"] is extended


def test_security_schemes_in_both_forms(make_app):
    app, _ = make_app(A2A_AUTH="required")
    body = card(app.test_client(), "/api/v1/agents/echo/.well-known/agent-card.json")
    api_key = body["securitySchemes"]["apiKey"]
    assert (api_key["type"], api_key["in"], api_key["name"]) == (
        "apiKey", "header", "X-API-Key")
    assert api_key["apiKeySecurityScheme"]["location"] == "header"
    assert api_key["apiKeySecurityScheme"]["name"] == "X-API-Key"
    assert body["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == \
        "bearer"
    assert {"apiKey": []} in body["security"]
    assert {"schemes": {"apiKey": {"list": []}}} in body["securityRequirements"]


def test_card_with_auth_off_has_no_schemes(make_app):
    app, _ = make_app()
    body = card(app.test_client(), "/api/v1/agents/echo/.well-known/agent-card.json")
    assert "securitySchemes" not in body and "securityRequirements" not in body


def test_an_unknown_member_still_fails_the_1_0_check():
    good = {"name": "a", "description": "b", "version": "1", "capabilities": {},
            "supportedInterfaces": [], "defaultInputModes": [],
            "defaultOutputModes": [], "skills": [], "url": "x"}
    proto.validate_card(good)
    with pytest.raises(proto.ProtoJSONError):
        proto.validate_card(dict(good, made_up=1))


def test_default_agents_card_is_also_below_its_endpoint(make_app):
    app, _ = make_app()
    client = app.test_client()
    assert card(client, "/a2a/.well-known/agent-card.json") == \
        card(client, "/.well-known/agent-card.json")
