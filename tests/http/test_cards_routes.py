"""docs/protocol.md §2 (routes, JSON everywhere) and 7 (the Agent Card)."""

import jsonschema
import pytest

from helpers import Rpc, check_answer, message, validate

CARD = "/.well-known/agent-card.json"
LEGACY = "/.well-known/agent.json"


# In the compat subset: .ci/matrix runs it on every supported Python and Flask.
pytestmark = pytest.mark.compat


def get_json(client, path, status=200, **kwargs):
    response = client.get(path, **kwargs)
    assert response.status_code == status, response.data
    assert response.mimetype == "application/json", response.data
    return response.get_json()


def get_card(client, path, **kwargs):
    card = get_json(client, path, **kwargs)
    validate("AgentCard", card)
    return card


def assert_bare_error(response, status):
    assert response.status_code == status
    assert response.mimetype == "application/json", response.data
    body = response.get_json()
    assert set(body) <= {"code", "message", "data"}, body
    assert body["code"] == -32600
    assert isinstance(body["message"], str) and body["message"]
    validate("JSONRPCError", body)
    return body


# -- protocol.md §7: the card ------------------------------------------------------


@pytest.mark.parametrize("path", [CARD, LEGACY])
def test_agent_card(app, path):
    card = get_card(app.test_client(), "/api/v1/agents/echo" + path)
    assert card["protocolVersion"] == "0.3.0"
    assert card["preferredTransport"] == "JSONRPC"
    assert card["name"] == "echo"
    assert card["url"] == "http://localhost/api/v1/agents/echo/a2a"
    assert card["capabilities"]["streaming"] is False
    assert card["capabilities"]["pushNotifications"] is False
    assert card["defaultInputModes"] == ["text/plain"]
    assert card["defaultOutputModes"] == ["text/plain"]
    assert [s["id"] for s in card["skills"]] == ["echo"]
    assert card["supportsAuthenticatedExtendedCard"] is False
    assert card["version"]


def test_legacy_card_is_the_same_card(app):
    client = app.test_client()
    assert get_card(client, "/api/v1/agents/chat" + CARD) == \
        get_card(client, "/api/v1/agents/chat" + LEGACY)


def test_public_card_hides_the_extended_skills(app):
    card = get_card(app.test_client(), "/api/v1/agents/chat" + CARD)
    assert [s["id"] for s in card["skills"]] == ["chat"]
    # Auth off: nobody can get the extended card, so the card does not offer it.
    assert card["supportsAuthenticatedExtendedCard"] is False


def test_card_url_is_the_endpoint_as_reached(app):
    card = get_card(app.test_client(), "/api/v1/agents/echo" + CARD,
                    base_url="https://agents.example.org:8443")
    assert card["url"] == "https://agents.example.org:8443/api/v1/agents/echo/a2a"
    # Mounted under a script root (a WSGI prefix): the prefix is part of it.
    card = get_card(app.test_client(), "/api/v1/agents/echo" + CARD,
                    base_url="http://host.example/mount")
    assert card["url"] == "http://host.example/mount/api/v1/agents/echo/a2a"


@pytest.mark.parametrize("base", ["https://public.example/base",
                                  "https://public.example/base/"])
def test_card_url_honours_the_public_base_url(make_app, base):
    app, _ = make_app(A2A_PUBLIC_BASE_URL=base)
    client = app.test_client()
    card = get_card(client, "/api/v1/agents/echo" + CARD,
                    base_url="http://10.0.0.5:8000")
    assert card["url"] == "https://public.example/base/api/v1/agents/echo/a2a"
    root = get_card(client, CARD, base_url="http://10.0.0.5:8000")
    assert root["url"] == "https://public.example/base/a2a"
    listed = get_json(client, "/api/v1/agents")["agents"][0]
    assert listed["url"].startswith("https://public.example/base/api/v1/agents/")


def test_card_from_registration_options(make_app):
    def register(a2a):
        def helper(turn):
            """Helps with things.

            More words."""
            return "ok"
        a2a.add_agent("helper", helper, version="2.1.0",
                      input_modes=["text/plain", "application/json"],
                      output_modes=["application/json"],
                      skills=[{"id": "s1", "name": "Skill one",
                               "description": "Does one thing.", "tags": ["x"]}],
                      card={"provider": {"organization": "ACME",
                                         "url": "https://acme.example"},
                            "documentationUrl": "https://acme.example/docs"})

    app, _ = make_app(register)
    card = get_card(app.test_client(), "/api/v1/agents/helper" + CARD)
    assert card["description"].startswith("Helps with things.")
    assert "More words" not in card["description"]
    assert card["version"] == "2.1.0"
    assert card["defaultInputModes"] == ["text/plain", "application/json"]
    assert card["defaultOutputModes"] == ["application/json"]
    assert card["skills"] == [{"id": "s1", "name": "Skill one",
                               "description": "Does one thing.", "tags": ["x"]}]
    assert card["provider"]["organization"] == "ACME"
    assert card["documentationUrl"] == "https://acme.example/docs"


@pytest.mark.parametrize("path", [CARD, LEGACY])
def test_root_card_is_the_default_agents(app, path):
    card = get_card(app.test_client(), path)
    assert card["name"] == "chat"
    assert card["url"] == "http://localhost/a2a"
    assert card["protocolVersion"] == "0.3.0"
    assert card["preferredTransport"] == "JSONRPC"


def test_root_endpoint_is_the_default_agent(app):
    root = Rpc(app.test_client())
    task = root.result("message/send", {"message": message("hi")}, path="/a2a")
    assert task["status"]["state"] == "input-required"  # chat, not echo
    # The same agent behind its per-agent endpoint.
    chat = Rpc(app.test_client(), agent="chat")
    assert chat.result("tasks/get", {"id": task["id"]}) == task
    status, error = chat.error("tasks/get", {"id": task["id"]}, agent="echo")
    assert error["code"] == -32001


def test_without_default_agent_there_is_no_root_endpoint(make_app):
    app, _ = make_app(A2A_DEFAULT_AGENT=None)
    client = app.test_client()
    assert client.get(CARD).status_code == 404
    assert client.get(LEGACY).status_code == 404
    assert client.post("/a2a", json={"jsonrpc": "2.0", "id": 1,
                                     "method": "tasks/get"}).status_code == 404
    assert client.get("/api/v1/agents/chat" + CARD).status_code == 200


@pytest.mark.parametrize("config", [
    {"A2A_DISABLED_AGENTS": "chat"},
    {"A2A_DEFAULT_AGENT": "nosuchagent"},
])
def test_root_endpoint_of_a_missing_default_agent_is_404(make_app, config):
    app, _ = make_app(**config)
    client = app.test_client()
    assert_bare_error(client.get(CARD), 404)
    status, answer = Rpc(client).post(
        {"jsonrpc": "2.0", "id": "r", "method": "tasks/get", "params": {"id": "x"}},
        path="/a2a")
    assert status == 404
    assert answer["id"] == "r" and answer["error"]["code"] == -32600


# -- protocol.md §2: routes ---------------------------------------------------------


def test_agent_list(app):
    client = app.test_client()
    listed = get_json(client, "/api/v1/agents")
    assert [a["name"] for a in listed["agents"]] == ["chat", "echo"]
    for agent in listed["agents"]:
        name = agent["name"]
        assert agent["description"]
        assert agent["url"] == "http://localhost/api/v1/agents/%s/a2a" % name
        assert agent["card"] == "http://localhost/api/v1/agents/%s%s" % (name, CARD)
        card = get_card(client, agent["card"])
        assert card["url"] == agent["url"]
        assert card["description"].startswith(agent["description"])


@pytest.mark.parametrize("prefix, base", [
    ("/svc/a2a-api", "/svc/a2a-api"), ("svc/", "/svc"), ("", ""), ("/", ""),
])
def test_url_prefix_is_honoured(make_app, prefix, base):
    app, _ = make_app(A2A_URL_PREFIX=prefix)
    client = app.test_client()
    rpc = Rpc(client)
    task = rpc.result("message/send", {"message": message("hi")},
                      path=base + "/agents/echo/a2a")
    assert task["status"]["state"] == "completed"
    card = get_card(client, base + "/agents/echo" + CARD)
    assert card["url"] == "http://localhost%s/agents/echo/a2a" % base
    listed = get_json(client, base + "/agents")["agents"]
    assert listed[0]["url"] == "http://localhost%s/agents/chat/a2a" % base
    if base:
        assert client.post("/api/v1/agents/echo/a2a", json={}).status_code == 404
        assert client.get("/api/v1/agents").status_code == 404


@pytest.mark.parametrize("path", [
    "/api/v1/agents/echo/nothing", "/api/v1/agents/echo/a2a/more",
    "/api/v1/agents/echo/.well-known/other.json", "/api/v1/agents/",
    "/a2a/card",  # under the default agent's endpoint (a REST-transport probe)
])
def test_unknown_paths_under_the_prefix_are_json_404(app, path):
    client = app.test_client()
    assert_bare_error(client.get(path), 404)
    assert_bare_error(client.post(path, json={}), 404)


@pytest.mark.parametrize("method, path, allowed", [
    ("get", "/api/v1/agents/echo/a2a", "POST"),
    ("put", "/api/v1/agents/echo/a2a", "POST"),
    ("delete", "/api/v1/agents/echo/a2a", "POST"),
    ("post", "/api/v1/agents/echo" + CARD, "GET"),
    ("post", "/api/v1/agents/echo" + LEGACY, "GET"),
    ("post", "/api/v1/agents", "GET"),
    ("get", "/a2a", "POST"),
    ("post", CARD, "GET"),
])
def test_wrong_http_method_is_json_405(app, method, path, allowed):
    response = getattr(app.test_client(), method)(path)
    body = assert_bare_error(response, 405)
    assert allowed in response.headers["Allow"]
    assert "<html" not in response.get_data(as_text=True).lower()
    assert body["message"]


@pytest.mark.parametrize("method", ["get", "put", "delete", "patch"])
@pytest.mark.parametrize("path, card", [
    ("/api/v1/agents/echo/a2a", "/api/v1/agents/echo" + CARD),
    ("/api/v1/agents/echo/a2a/", "/api/v1/agents/echo" + CARD),
    ("/a2a", CARD),  # the default agent's endpoint at the host root
])
def test_another_method_on_a_jsonrpc_endpoint_says_to_post_and_where_the_card_is(
        app, method, path, card):
    response = getattr(app.test_client(), method)(path)
    body = assert_bare_error(response, 405)
    assert response.headers["Allow"] == "OPTIONS, POST"
    assert body["message"] == (
        "Method Not Allowed: This is an A2A JSON-RPC endpoint: POST a JSON-RPC "
        "request to it (Content-Type: application/json). The agent's card is "
        "at http://localhost%s." % card)


def test_the_405_hint_names_the_public_url(make_app):
    app = make_app(A2A_PUBLIC_BASE_URL="https://a2a.example.com")[0]
    body = assert_bare_error(app.test_client().get("/api/v1/agents/chat/a2a"), 405)
    assert body["message"].endswith(
        "The agent's card is at https://a2a.example.com/api/v1/agents/chat%s." % CARD)


def test_other_405s_keep_the_generic_sentence(app):
    body = assert_bare_error(app.test_client().post("/api/v1/agents/echo" + CARD), 405)
    assert body["message"] == ("Method Not Allowed: The method is not allowed "
                               "for the requested URL.")


@pytest.mark.parametrize("try_page", [False, True])
@pytest.mark.parametrize("accept", [None, "application/json", "*/*"])
def test_the_agents_base_url_answers_where_its_card_is(make_app, try_page, accept):
    app = make_app(A2A_TRY_PAGE=try_page)[0]
    response = app.test_client().get("/api/v1/agents/echo/",
                                     headers={"Accept": accept} if accept else {})
    body = assert_bare_error(response, 404)
    assert body["message"] == (
        "Not Found: This is the URL of agent echo to give an A2A client, which "
        "reads the agent's card at http://localhost/api/v1/agents/echo%s (and "
        "calls it at http://localhost/api/v1/agents/echo/a2a). GET the card, or "
        "call the agent with a client." % CARD)


def test_a_browser_without_the_try_page_gets_the_hint_too(app):
    response = app.test_client().get("/api/v1/agents/echo/",
                                     headers={"Accept": "text/html"})
    assert "card at http://localhost/api/v1/agents/echo" in (
        assert_bare_error(response, 404)["message"])


def test_the_base_url_of_no_agent_is_a_plain_404_where_cards_are_public(make_app):
    app = make_app(A2A_PUBLIC_CARDS=True)[0]
    body = assert_bare_error(app.test_client().get("/api/v1/agents/nope/"), 404)
    assert body["message"] == ("Not Found: The requested URL was not found on "
                               "the server. If you entered the URL manually "
                               "please check your spelling and try again.")


def test_where_cards_are_not_public_every_name_gets_the_same_hint(make_app):
    # Without credentials, nothing may tell which agents exist.
    app = make_app(A2A_PUBLIC_CARDS=False, A2A_AUTH="required")[0]
    client = app.test_client()
    answers = [assert_bare_error(client.get("/api/v1/agents/%s/" % name), 404)
               ["message"].replace(name, "NAME") for name in ("echo", "nope")]
    assert answers[0] == answers[1]
    assert "card at http://localhost/api/v1/agents/NAME" + CARD in answers[0]


def test_host_app_pages_are_left_alone(make_app):
    app, _ = make_app()

    @app.route("/home")
    def home():
        return "<p>home</p>"

    client = app.test_client()
    assert client.get("/home").data == b"<p>home</p>"
    response = client.get("/no-such-host-page")
    assert response.status_code == 404
    assert response.mimetype == "text/html"


def test_unexpected_exception_is_json_500_without_traceback(make_app, monkeypatch):
    app, _ = make_app()
    import a2a_flask.http.discovery

    def broken(*args, **kwargs):
        raise RuntimeError("secret card failure")

    monkeypatch.setattr(a2a_flask.http.discovery, "agent_card", broken)
    response = app.test_client().get("/api/v1/agents/echo" + CARD)
    assert response.status_code == 500
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert body["code"] == -32603
    assert "secret" not in response.get_data(as_text=True)
    assert "Traceback" not in response.get_data(as_text=True)


def test_unexpected_exception_in_a_method_is_32603_without_traceback(
        rpc, monkeypatch, caplog):
    store = rpc.client.application.extensions["a2a"].storage

    def broken(*args, **kwargs):
        raise RuntimeError("secret store failure")

    monkeypatch.setattr(store, "get_task", broken)
    status, error = rpc.error("tasks/get", {"id": "task_x"}, id="i")
    assert status == 200 and error["code"] == -32603
    assert rpc.last_response.get_json()["id"] == "i"
    assert "secret" not in rpc.last_response.get_data(as_text=True)
    assert "secret store failure" in caplog.text


# -- which agents can be reached -----------------------------------------------------


def test_unknown_agent_is_404_with_id_echoed(rpc):
    status, answer = rpc.post({"jsonrpc": "2.0", "id": "abc", "method": "tasks/get",
                               "params": {"id": "x"}}, agent="nobody")
    assert status == 404
    assert answer["id"] == "abc"
    assert answer["error"]["code"] == -32600
    assert "nobody" in answer["error"]["message"]


def test_unknown_agent_card_is_404_bare_error(app):
    body = assert_bare_error(app.test_client().get("/api/v1/agents/nobody" + CARD), 404)
    assert "nobody" in body["message"]


@pytest.mark.parametrize("disabled", ["echo", " echo , other", ["echo"], {"echo"}])
def test_disabled_agents_are_404(make_app, disabled):
    app, _ = make_app(A2A_DISABLED_AGENTS=disabled)
    assert_agent_off(app, "echo")


def test_agent_registered_disabled_is_404(make_app):
    app, _ = make_app(lambda a2a: a2a.add_agent(
        "sleeper", lambda turn: "zzz", enabled=False))
    assert_agent_off(app, "sleeper")


def assert_agent_off(app, name):
    client = app.test_client()
    rpc = Rpc(client, agent=name)
    status, answer = rpc.call("message/send", {"message": message("hi")}, id=5)
    assert status == 404
    assert (answer["id"], answer["error"]["code"]) == (5, -32600)
    assert_bare_error(client.get("/api/v1/agents/%s%s" % (name, CARD)), 404)
    assert_bare_error(client.get("/api/v1/agents/%s%s" % (name, LEGACY)), 404)
    names = [a["name"] for a in get_json(client, "/api/v1/agents")["agents"]]
    assert name not in names and "chat" in names
    # The others still answer.
    assert Rpc(client, agent="chat").result(
        "message/send", {"message": message("hi")})["status"]["state"] == \
        "input-required"


def test_static_envelope_errors_come_before_the_agent_404(rpc):
    """A broken call is refused for what it is, whatever agent it names: the
    static checks (envelope, method, params) come first (see views.py)."""
    status, answer = rpc.post({"id": 8}, agent="nobody")
    assert status == 200 and answer["id"] == 8
    assert answer["error"]["code"] == -32600
    status, answer = rpc.post(b"not json", agent="nobody", raw=True)
    assert status == 200 and answer["id"] is None
    assert answer["error"]["code"] == -32700
    status, answer = rpc.call("tasks/get", {"id": "task_x"}, id=9, agent="nobody")
    assert status == 404 and answer["id"] == 9
    assert answer["error"]["code"] == -32600


def test_every_answer_is_schema_checked(app):
    """Smoke test of the checker itself: a broken card is caught."""
    card = get_card(app.test_client(), "/api/v1/agents/echo" + CARD)
    del card["url"]
    with pytest.raises(jsonschema.ValidationError, match="'url' is a required property"):
        check_answer(200, card)


# -- a storage failure on a GET route ----------------------------------------------


@pytest.mark.parametrize("path", ["/api/v1/agents/echo" + CARD, "/api/v1/agents"])
def test_a_storage_failure_on_a_get_route_is_503_with_the_storage_sentence(make_app, path):
    import sqlite3

    app, a2a = make_app(A2A_AUTH="required", A2A_PUBLIC_CARDS=False)
    _, secret = app.extensions["a2a"].credentials.create_key()

    def unavailable(key_hash):
        raise sqlite3.OperationalError("disk I/O error")

    app.extensions["a2a"].storage.find_key = unavailable
    response = app.test_client().get(path, headers={"Authorization": "Bearer " + secret})
    assert response.status_code == 503, response.data
    body = response.get_json()
    assert body["code"] == -32603 and body["data"] == {"retry": True}
    assert body["message"].startswith("The storage is unavailable")
    validate("JSONRPCError", body)
