"""Mounted in a host app with its own error handlers, hooks and extensions:
every answer on the service's paths stays JSON, the host's pages stay the
host's (issue 7)."""

import base64
import logging

import pytest
from flask import Flask, jsonify
from werkzeug.exceptions import HTTPException

from a2a_flask import A2A
from a2a_flask.demo import register_demo_agents
from a2a_flask.testing import make_key
from helpers import check_answer, message

CARD = "/.well-known/agent-card.json"


# In the compat subset: .ci/matrix runs it on every supported Python and Flask.
pytestmark = pytest.mark.compat


def host_app(tmp_path, **config):
    """A bare host app (not yet mounted), with a page at ``/``."""
    app = Flask("host", instance_path=str(tmp_path / "instance"))
    app.config.update(A2A_DATABASE=str(tmp_path / "a2a.sqlite3"),
                      A2A_AUTH="off", A2A_DEFAULT_AGENT="chat")
    app.config.update(config)

    @app.route("/")
    def home():
        return "<p>home</p>"

    return app


def mount(app):
    a2a = A2A(app)
    register_demo_agents(a2a, slow_agent=False)
    return a2a


def assert_json_error(response, status):
    assert response.status_code == status, response.data
    assert response.mimetype == "application/json", response.data
    body = response.get_json()
    assert body["code"] == (-32603 if status >= 500 else -32600), body
    return body


def html_404(exc):
    return "<html>host 404</html>", 404


def host_json(exc):
    return jsonify(host=True, status=exc.code), exc.code


# -- trap 2: host error handlers ------------------------------------------------

OUR_UNKNOWN_PATHS = ["/api/v1/agents/echo/nope", "/api/v1/agents/",
                     "/api/v1/agents/echo/a2a/more", "/a2a/x", "/a2a/x/"]


@pytest.mark.parametrize("before", [True, False], ids=["before", "after"])
@pytest.mark.parametrize("path", OUR_UNKNOWN_PATHS)
def test_host_404_handler_does_not_answer_our_paths(tmp_path, before, path):
    app = host_app(tmp_path)
    if before:
        app.register_error_handler(404, html_404)
    mount(app)
    if not before:
        app.register_error_handler(404, html_404)
    client = app.test_client()
    for method in ("GET", "POST", "DELETE"):
        assert_json_error(client.open(path, method=method), 404)
    # The host's own unknown pages are still the host's.
    assert client.get("/nope").data == b"<html>host 404</html>"


@pytest.mark.parametrize("before", [True, False], ids=["before", "after"])
def test_host_http_exception_handler_keeps_host_pages(tmp_path, before):
    app = host_app(tmp_path)
    if before:
        app.register_error_handler(HTTPException, host_json)
    mount(app)
    if not before:
        app.register_error_handler(HTTPException, host_json)
    client = app.test_client()
    response = client.put("/")
    assert response.status_code == 405
    assert response.get_json() == {"host": True, "status": 405}
    assert client.get("/nope").get_json() == {"host": True, "status": 404}
    # ... and ours stay ours.
    response = client.get("/api/v1/agents/echo/a2a")
    assert_json_error(response, 405)
    assert response.headers["Allow"] == "OPTIONS, POST"
    assert_json_error(client.get("/api/v1/agents/echo/nope"), 404)


@pytest.mark.parametrize("method, path, allowed", [
    ("GET", "/api/v1/agents/echo/a2a", "OPTIONS, POST"),
    ("PROPFIND", "/api/v1/agents/echo/a2a", "OPTIONS, POST"),
    ("PUT", "/api/v1/agents", "GET, HEAD, OPTIONS"),
    ("GET", "/a2a", "OPTIONS, POST"),
    ("DELETE", CARD, "GET, HEAD, OPTIONS"),
    ("POST", "/api/v1/agents/echo" + CARD, "GET, HEAD, OPTIONS"),
])
def test_host_405_handler_does_not_answer_our_paths(tmp_path, method, path,
                                                     allowed):
    app = host_app(tmp_path)
    app.register_error_handler(405, html_404)
    mount(app)
    response = app.test_client().open(path, method=method)
    assert_json_error(response, 405)
    assert response.headers["Allow"] == allowed


@pytest.mark.parametrize("handled", [500, Exception])
def test_host_500_handler_does_not_answer_our_paths(tmp_path, monkeypatch,
                                                     handled):
    app = host_app(tmp_path)
    app.register_error_handler(handled, lambda exc: ("<html>oops</html>", 500))
    mount(app)
    import a2a_flask.http.discovery

    def broken(*args, **kwargs):
        raise RuntimeError("secret card failure")

    monkeypatch.setattr(a2a_flask.http.discovery, "agent_card", broken)
    response = app.test_client().get("/api/v1/agents/echo" + CARD)
    assert_json_error(response, 500)
    assert "secret" not in response.get_data(as_text=True)


def test_without_default_agent_a2a_is_the_hosts(tmp_path):
    app = host_app(tmp_path, A2A_DEFAULT_AGENT=None)
    app.register_error_handler(404, html_404)
    mount(app)
    client = app.test_client()
    assert client.post("/a2a", json={}).data == b"<html>host 404</html>"
    assert client.get(CARD).data == b"<html>host 404</html>"


def test_rpc_still_answers_beside_the_catch_all(tmp_path):
    app = host_app(tmp_path)
    app.register_error_handler(404, html_404)
    mount(app)
    client = app.test_client()
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send",
            "params": {"message": message("hi")}}
    for path in ("/api/v1/agents/echo/a2a", "/a2a"):
        response = client.post(path, json=body)
        assert response.status_code == 200
        assert response.get_json()["result"]["kind"] == "task"
    assert client.get("/api/v1/agents").status_code == 200
    assert client.get(CARD).get_json()["name"] == "chat"


# -- trap 3: the host's own bearer tokens ---------------------------------------

HOST_TOKENS = {"jwt-of-ann": "7", "jwt-of-bob": "8"}


@pytest.fixture
def token_service(make_app):
    """Auth on; the host's tokens (``HOST_TOKENS``) and its Basic users (the
    same ids); ``service.seen`` lists the tokens the hook was given."""
    app, a2a = make_app(A2A_AUTH="required")
    seen = []

    @a2a.token_caller
    def from_token(token):
        seen.append(token)
        return HOST_TOKENS.get(token)

    @a2a.password_check
    def check(name, password):
        return {"ann": "7"}.get(name) if password == "pw" else None

    app.seen = seen
    return app


def rpc_call(client, method, params, headers, path="/api/v1/agents/echo/a2a"):
    response = client.post(path, headers=headers, json={
        "jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    assert response.mimetype == "application/json", response.data
    return response


def bearer(token):
    return {"Authorization": "Bearer " + token}


def test_host_token_gives_the_host_user_as_caller(token_service):
    client = token_service.test_client()
    response = rpc_call(client, "message/send", {"message": message("hi")},
                        bearer("jwt-of-ann"))
    assert response.status_code == 200
    task = response.get_json()["result"]
    assert token_service.seen == ["jwt-of-ann"]
    # The same owner as the password hook's user 7: host:7.
    basic = {"Authorization": "Basic " + base64.b64encode(b"ann:pw").decode()}
    found = rpc_call(client, "tasks/get", {"id": task["id"]}, basic)
    assert found.get_json()["result"]["id"] == task["id"]
    # Another host user does not see it.
    other = rpc_call(client, "tasks/get", {"id": task["id"]}, bearer("jwt-of-bob"))
    assert other.get_json()["error"]["code"] == -32001


def test_host_token_refused_by_the_hook_is_401(token_service):
    response = rpc_call(token_service.test_client(), "message/send",
                        {"message": message("hi")}, bearer("forged"))
    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"]
    assert response.get_json() == {"code": -32600, "message":
                                   "The bearer token is not valid: neither an "
                                   "API key nor a token of this application."}
    assert token_service.seen == ["forged"]


def test_key_shaped_tokens_never_reach_the_host_hook(token_service):
    key = make_key(token_service)
    client = token_service.test_client()
    assert rpc_call(client, "message/send", {"message": message("hi")},
                    bearer(key)).status_code == 200
    unknown = "a2a_" + "x" * 43
    response = rpc_call(client, "message/send", {"message": message("hi")},
                        bearer(unknown))
    assert response.status_code == 401
    assert response.get_json()["message"] == (
        "The API key is not valid: unknown or revoked.")
    # Nor does the API key header: the hook is for bearer tokens.
    response = rpc_call(client, "message/send", {"message": message("hi")},
                        {"X-API-Key": "jwt-of-ann"})
    assert response.status_code == 401
    assert token_service.seen == []


def test_host_token_hook_may_return_a_scoped_caller(make_app):
    from a2a_flask import Caller

    app, a2a = make_app(A2A_AUTH="required")
    a2a.token_caller(lambda token: Caller("host:9", "token", "nine",
                                          scope={"chat"}))
    client = app.test_client()
    response = rpc_call(client, "message/send", {"message": message("hi")},
                        bearer("anything"))
    assert response.status_code == 403
    response = rpc_call(client, "message/send", {"message": message("hi")},
                        bearer("anything"), path="/api/v1/agents/chat/a2a")
    assert response.status_code == 200


def test_cards_list_the_host_token_scheme_when_set(make_app):
    app, a2a = make_app(A2A_AUTH="required")
    card = app.test_client().get("/api/v1/agents/echo" + CARD).get_json()
    assert "hostToken" not in card["securitySchemes"]
    a2a.token_caller(lambda token: None)
    card = app.test_client().get("/api/v1/agents/echo" + CARD).get_json()
    scheme = card["securitySchemes"]["hostToken"]
    # The 0.3 members, and the same in 1.0's form beside them.
    assert scheme == {
        "type": "http", "scheme": "bearer",
        "description": "A bearer token of the host application.",
        "httpAuthSecurityScheme": {
            "scheme": "bearer",
            "description": "A bearer token of the host application."}}
    assert {"hostToken": []} in card["security"]
    check_answer(200, card)


# -- trap 4: Flask-WTF's CSRFProtect --------------------------------------------


@pytest.mark.parametrize("csrf_first", [True, False], ids=["before", "after"])
def test_csrf_protect_leaves_our_calls_alone(tmp_path, csrf_first):
    flask_wtf = pytest.importorskip("flask_wtf.csrf")
    app = host_app(tmp_path, SECRET_KEY="host secret")

    @app.route("/form", methods=["POST"])
    def form():
        return "saved"

    if csrf_first:
        flask_wtf.CSRFProtect(app)
    mount(app)
    if not csrf_first:
        flask_wtf.CSRFProtect(app)
    client = app.test_client()
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send",
            "params": {"message": message("hi")}}
    for path in ("/api/v1/agents/echo/a2a", "/a2a"):
        response = client.post(path, json=body)
        assert response.status_code == 200, response.data
        assert response.get_json()["result"]["kind"] == "task"
    assert_json_error(client.post("/api/v1/agents/echo/nope", json=body), 404)
    # The host's own forms are still protected.
    assert client.post("/form", data={"x": "1"}).status_code == 400


# -- trap 7: setup mistakes are loud --------------------------------------------


def test_second_init_app_is_a_clear_error(tmp_path):
    app = host_app(tmp_path)
    a2a = mount(app)
    with pytest.raises(RuntimeError, match="already set up on app 'host'"):
        a2a.init_app(app)
    with pytest.raises(RuntimeError, match="call init_app once per app"):
        A2A(app)
    # The first one still serves.
    assert app.test_client().get("/api/v1/agents").status_code == 200


def test_unknown_setting_is_warned_with_a_suggestion(tmp_path, caplog):
    app = host_app(tmp_path, A2A_AUTHENTICATION="off", A2A_WHATEVER=1)
    with caplog.at_level(logging.WARNING, logger="a2a_flask"):
        mount(app)
    messages = [r.getMessage() for r in caplog.records]
    assert ("Unknown setting A2A_AUTHENTICATION in app.config is ignored. "
            "Did you mean A2A_AUTH?") in messages
    assert "Unknown setting A2A_WHATEVER in app.config is ignored." in messages
    assert not [m for m in messages if "A2A_DATABASE" in m]


@pytest.mark.parametrize("typo, meant", [
    ("A2A_DATABSE", "A2A_DATABASE"), ("A2A_DEFAULT_AGNET", "A2A_DEFAULT_AGENT"),
    ("A2A_API_KEY", "A2A_API_KEY_HEADER"), ("A2A_PUBLIC_CARD", "A2A_PUBLIC_CARDS"),
])
def test_unknown_setting_suggestions(tmp_path, caplog, typo, meant):
    with caplog.at_level(logging.WARNING, logger="a2a_flask"):
        mount(host_app(tmp_path, **{typo: "x"}))
    assert ("Unknown setting %s in app.config is ignored. Did you mean %s?"
            % (typo, meant)) in [r.getMessage() for r in caplog.records]


def test_first_request_hook_leaves_the_hooks_after_its_run(tmp_path):
    """It runs before the first request's other hooks, none of them skipped
    when it takes itself off, and is no hook of any later request."""
    app = host_app(tmp_path)
    mount(app)
    seen = []
    app.before_request(lambda: seen.append("host"))
    client = app.test_client()
    assert client.get("/").status_code == 200
    assert seen == ["host"]
    assert [hook for hook in app.before_request_funcs[None]
            if type(hook).__name__ == "FirstRequest"] == []
    assert client.get("/").status_code == 200
    assert seen == ["host", "host"]


def test_default_agent_naming_no_agent_is_logged_and_json(tmp_path, caplog):
    app = host_app(tmp_path, A2A_DEFAULT_AGENT="summarizer")
    app.register_error_handler(404, html_404)
    app.register_error_handler(405, html_404)
    mount(app)
    client = app.test_client()
    with caplog.at_level(logging.ERROR, logger="a2a_flask"):
        client.get("/")
        client.get("/")
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors == ["A2A_DEFAULT_AGENT='summarizer' names no registered agent "
                      "(registered: chat, echo): /a2a answers 404 until it is "
                      "registered."]
    response = client.post("/a2a", json={"jsonrpc": "2.0", "id": 3,
                                         "method": "tasks/get",
                                         "params": {"id": "t"}})
    assert response.status_code == 404
    assert response.get_json()["error"]["code"] == -32600
    assert response.get_json()["id"] == 3
    assert_json_error(client.get("/a2a"), 405)
    assert_json_error(client.get("/a2a/x"), 404)
    response = client.get(CARD)
    assert response.status_code == 404
    assert response.get_json()["code"] == -32600


def test_default_agent_registered_after_init_app_is_fine(tmp_path, caplog):
    app = host_app(tmp_path, A2A_DEFAULT_AGENT="late")
    a2a = mount(app)
    a2a.add_agent("late", lambda turn: "ok")
    with caplog.at_level(logging.ERROR, logger="a2a_flask"):
        app.test_client().get("/")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_empty_default_agent_is_unset_and_warned(tmp_path, caplog):
    app = host_app(tmp_path, A2A_DEFAULT_AGENT="")
    with caplog.at_level(logging.WARNING, logger="a2a_flask"):
        mount(app)
    assert ("A2A_DEFAULT_AGENT is empty: no default agent is served; /a2a and "
            "/.well-known/agent-card.json stay the host app's."
            in [r.getMessage() for r in caplog.records])

    @app.route("/a2a", methods=["POST"])
    def hosts_own():
        return "the host's /a2a"

    assert app.test_client().post("/a2a").data == b"the host's /a2a"


def test_root_rest_without_a_default_agent_is_warned(tmp_path, caplog):
    app = host_app(tmp_path, A2A_ROOT_REST=True, A2A_DEFAULT_AGENT=None)
    with caplog.at_level(logging.WARNING, logger="a2a_flask"):
        mount(app)
    assert ("A2A_ROOT_REST is on but A2A_DEFAULT_AGENT is not set: the HTTP+JSON "
            "routes at the host root serve the default agent, so none are added."
            in [r.getMessage() for r in caplog.records])
    # And nothing was mounted at the root: the host's /tasks stays its own.
    assert app.test_client().get("/tasks").status_code == 404


def test_root_rest_with_a_default_agent_is_not_warned(tmp_path, caplog):
    app = host_app(tmp_path, A2A_ROOT_REST=True, A2A_DEFAULT_AGENT="echo")
    with caplog.at_level(logging.WARNING, logger="a2a_flask"):
        mount(app)
    assert not [r for r in caplog.records if "A2A_ROOT_REST" in r.getMessage()]
