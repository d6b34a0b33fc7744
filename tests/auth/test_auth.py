"""docs/protocol.md §6, in process: API keys, HTTP Basic, host hooks, who sees what.

Every answer goes through ``check_answer`` (the official A2A schema).
"""

import base64
import hashlib
import json
import logging
import re

import pytest
from flask import session as flask_session
from werkzeug.security import check_password_hash

from a2a_flask import config_from_env
from a2a_flask.auth.credentials import CredentialError
from helpers import assert_401, basic, bearer, check_answer, message

ECHO = "/api/v1/agents/echo/a2a"
CHAT = "/api/v1/agents/chat/a2a"
LIST = "/api/v1/agents"
NO_SUCH_TASK = "task_00000000000000000000000000000000"


def call(method, params=None, id=1):
    body = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        body["params"] = params
    return body


def send(text="hello", **fields):
    return call("message/send", {"message": message(text, **fields)})


class Service:
    """An app with A2A_AUTH=required (unless told), its client and credentials."""

    def __init__(self, app, a2a):
        self.app, self.a2a = app, a2a
        self.state = app.extensions["a2a"]
        self.credentials = self.state.credentials
        self.client = app.test_client()

    def key(self, agents=None, label=None):
        return self.credentials.create_key(agents, label)[1]

    def listed(self, label):
        """The stored key labelled ``label`` (keys made in one millisecond
        list in no particular order)."""
        [key] = [k for k in self.credentials.keys() if k.label == label]
        return key

    def post(self, path, body, headers=None, **kwargs):
        if "data" not in kwargs:
            kwargs["json"] = body
        response = self.client.post(path, headers=headers or {}, **kwargs)
        assert response.mimetype == "application/json", response.data
        check_answer(response.status_code, response.get_json())
        return response

    def get(self, path, headers=None):
        response = self.client.get(path, headers=headers or {})
        assert response.mimetype == "application/json", response.data
        check_answer(response.status_code, response.get_json())
        return response

    def result(self, path, body, headers):
        response = self.post(path, body, headers)
        answer = response.get_json()
        assert response.status_code == 200 and "result" in answer, answer
        assert answer["id"] == body["id"]
        return answer["result"]

    def error(self, path, body, headers):
        """The error of an HTTP 200 JSON-RPC answer."""
        response = self.post(path, body, headers)
        answer = response.get_json()
        assert response.status_code == 200 and "error" in answer, answer
        assert answer["id"] == body["id"]
        return answer["error"]


@pytest.fixture
def service(make_app):
    def build(register=None, **config):
        config.setdefault("A2A_AUTH", "required")
        return Service(*make_app(register, **config))
    return build


@pytest.fixture
def svc(service):
    # Tests of refusals fail many logins on purpose: the throttle is tested
    # on its own, with the default limit.
    return service(A2A_LOGIN_FAILURES_PER_MINUTE=1000,
                   A2A_LOGIN_FAILURES_PER_ADDRESS=1000)


def assert_rpc_refusal(response, status, request_id):
    """``status`` with a JSON-RPC error response, -32600, the id echoed."""
    assert response.status_code == status, response.data
    body = response.get_json()
    assert body["jsonrpc"] == "2.0" and "result" not in body, body
    assert body["id"] == request_id
    assert body["error"]["code"] == -32600
    assert body["error"]["message"]


def assert_bare(response, status):
    """A card-endpoint refusal: the bare error object is the whole body."""
    assert response.status_code == status, response.data
    body = response.get_json()
    assert "jsonrpc" not in body and "error" not in body, body
    assert set(body) <= {"code", "message", "data"} and body["code"] == -32600
    assert body["message"]
    if status == 401:
        assert_401(response)


# -- API keys: what they look like, where they are kept -------------------------


def test_key_is_random_256_bits_with_readable_prefix_and_recorded(svc):
    created, secret = svc.credentials.create_key(None, "ci bot")
    other = svc.key(label="other")
    assert secret != other
    assert re.fullmatch(r"a2a_[A-Za-z0-9_-]{43,}", secret), secret
    assert len(base64.urlsafe_b64decode(secret[4:] + "=" * (-len(secret[4:]) % 4))) >= 32
    assert secret.startswith(created.prefix) and len(created.prefix) < len(secret) / 2
    listed = svc.listed("ci bot")
    assert (listed.id, listed.prefix, listed.label) == (created.id, created.prefix, "ci bot")
    assert listed.scope is None and listed.scope_text == "*"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", listed.created_at)
    assert listed.last_used_at is None and listed.revoked_at is None
    assert not any(secret in str(getattr(listed, s)) for s in listed.__slots__)

    svc.result(ECHO, send(), bearer(secret))
    used = svc.listed("ci bot")
    assert used.last_used_at is not None and used.last_used_at >= used.created_at
    assert svc.listed("other").last_used_at is None


def test_key_scope_is_stored_and_listed(svc):
    svc.key(["echo"], "one")
    svc.key(["chat", "echo"], "two")
    scopes = {k.label: (k.scope, k.scope_text) for k in svc.credentials.keys()}
    assert scopes == {"one": ({"echo"}, "echo"),
                      "two": ({"chat", "echo"}, "chat,echo")}


@pytest.mark.compat
def test_key_is_accepted_as_bearer_and_in_the_api_key_header(svc):
    key = svc.key()
    assert svc.result(ECHO, send("a"), bearer(key))["status"]["state"] == "completed"
    assert svc.result(ECHO, send("b"), {"X-API-Key": key})["status"]["state"] == "completed"
    assert svc.result(ECHO, send("c"), {"Authorization": "bearer " + key})["kind"] == "task"


def test_api_key_header_name_is_configurable(service):
    svc = service(A2A_API_KEY_HEADER="X-Embabel-Api-Key")
    key = svc.key()
    svc.result(ECHO, send(), {"X-Embabel-Api-Key": key})
    svc.result(ECHO, send(), bearer(key))
    assert_401(svc.post(ECHO, send(), {"X-API-Key": key}))
    card = svc.get("/api/v1/agents/echo/.well-known/agent-card.json").get_json()
    assert card["securitySchemes"]["apiKey"] == {
        **card["securitySchemes"]["apiKey"],
        "type": "apiKey", "in": "header", "name": "X-Embabel-Api-Key"}


@pytest.mark.compat
def test_revoked_key_is_refused_at_once(svc):
    key = svc.key(label="to revoke")
    svc.result(ECHO, send(), bearer(key))
    [k] = svc.credentials.keys()
    svc.credentials.revoke_key(k.id)
    assert_401(svc.post(ECHO, send(), bearer(key)))
    assert_401(svc.post(ECHO, send(), {"X-API-Key": key}))
    assert_401(svc.client.get(LIST, headers=bearer(key)))
    assert svc.credentials.keys()[0].revoked_at is not None
    svc.credentials.revoke_key(k.id)  # again: still revoked, no error
    with pytest.raises(CredentialError):
        svc.credentials.revoke_key("key_nope")


# -- 401 -------------------------------------------------------------------------


def _wrong_credentials(svc):
    revoked = svc.key(label="revoked")
    svc.credentials.revoke_key(svc.listed("revoked").id)
    svc.credentials.create_user("alice", "right password")
    return {
        "none": {},
        "wrong bearer key": bearer("a2a_" + "x" * 43),
        "wrong header key": {"X-API-Key": "a2a_" + "y" * 43},
        "revoked key": bearer(revoked),
        "revoked key in header": {"X-API-Key": revoked},
        "wrong password": basic("alice", "wrong password"),
        "unknown user": basic("mallory", "right password"),
        "malformed basic": {"Authorization": "Basic %%%not-base64"},
        "basic without colon": {"Authorization": "Basic " + base64.b64encode(
            b"alice").decode()},
        "other scheme": {"Authorization": "Digest username=alice"},
        "empty bearer": {"Authorization": "Bearer "},
    }


@pytest.mark.compat
def test_every_kind_of_missing_or_wrong_credentials_is_401(svc):
    for name, headers in _wrong_credentials(svc).items():
        for path in (ECHO, CHAT, "/a2a"):
            response = svc.post(path, send(), headers)
            assert_401(response)
        assert_401(svc.client.get(LIST, headers=headers))
        assert_401(svc.post(ECHO, call("tasks/get", {"id": NO_SUCH_TASK}, id="r1"),
                            headers))


@pytest.mark.parametrize("authorization", ["Bearer ", "Bearer", "bearer   "])
def test_an_empty_bearer_token_is_named_as_empty(svc, authorization):
    # What a shell sends when $KEY is empty: the scheme was right, the key
    # missing, and the answer says so instead of naming the scheme.
    response = svc.post(ECHO, send(), {"Authorization": authorization})
    assert_401(response)
    assert response.get_json()["message"] == (
        'The Authorization header\'s Bearer token is empty: send an API key '
        'after "Bearer ".')


@pytest.mark.parametrize("path", [
    "/api/v1/agents/nope/a2a",      # no such agent
    "/api/v1/agents/off/a2a",       # switched off by configuration
    "/api/v1/agents/hidden/a2a",    # registered with enabled=False
])
def test_credentials_are_checked_before_anything_is_said_about_the_agent(
        service, path):
    svc = service(_register_hidden, A2A_DISABLED_AGENTS="off")
    assert_401(svc.post(path, send(), {}))
    assert_401(svc.post(path, send(), bearer("a2a_wrong")))


@pytest.mark.parametrize("body, code", [
    (b"not json", -32700),
    (call("no/such/method"), -32601),
])
def test_malformed_calls_answer_the_same_whatever_the_agent(service, body, code):
    # The envelope and the method name are checked before the credentials
    # (reading them costs no more than parsing the JSON), so they must tell an
    # anonymous caller nothing: the same answer for an agent that exists, one
    # that does not, and ones switched off.
    svc = service(_register_hidden, A2A_DISABLED_AGENTS="off")
    kwargs = {"data": body} if isinstance(body, bytes) else {}
    answers = set()
    for path in (ECHO, "/api/v1/agents/nope/a2a", "/api/v1/agents/off/a2a",
                 "/api/v1/agents/hidden/a2a"):
        for headers in ({}, bearer("a2a_wrong"), bearer(svc.key())):
            response = svc.post(path, body, headers, **kwargs)
            assert response.status_code == 200, response.data
            answers.add(response.data)
    assert len(answers) == 1, answers
    assert json.loads(answers.pop())["error"]["code"] == code


def test_params_are_checked_only_after_the_credentials(service):
    # An anonymous caller must not make the service validate (maybe tens of
    # thousands of) parts: 401 first; with a key, the agent, then -32602.
    svc = service(_register_hidden, A2A_DISABLED_AGENTS="off")
    bad = call("tasks/get", {"historyLength": 1})
    many_parts = send()
    many_parts["params"]["message"]["parts"] = [{"kind": "text"}] * 5000
    key = bearer(svc.key())
    for body in (bad, many_parts):
        for path in (ECHO, "/api/v1/agents/nope/a2a", "/api/v1/agents/off/a2a",
                     "/api/v1/agents/hidden/a2a"):
            assert_401(svc.post(path, body, {}))
            assert_401(svc.post(path, body, bearer("a2a_wrong")))
            response = svc.post(path, body, key)
            if path == ECHO:
                assert response.status_code == 200, response.data
                assert response.get_json()["error"]["code"] == -32602
            else:
                assert response.status_code == 404, response.data


def _register_hidden(a2a):
    a2a.add_agent("off", lambda turn: "off")
    a2a.add_agent("hidden", lambda turn: "hidden", enabled=False)


# -- 404 and 403 -------------------------------------------------------------------


@pytest.mark.parametrize("request_id", [7, "req-404"])
def test_agent_that_cannot_be_talked_to_is_404_with_id_echoed(service, request_id):
    svc = service(_register_hidden, A2A_DISABLED_AGENTS="off, echo")
    key = svc.key()
    for name in ("nope", "off", "hidden", "echo"):
        body = send()
        body["id"] = request_id
        assert_rpc_refusal(svc.post("/api/v1/agents/%s/a2a" % name, body,
                                    bearer(key)), 404, request_id)
        # Every method that needs an agent, with valid params, gets the 404.
        for other in (call("tasks/get", {"id": NO_SUCH_TASK}, id=request_id),
                      call("message/stream", {}, id=request_id)):
            assert_rpc_refusal(svc.post("/api/v1/agents/%s/a2a" % name, other,
                                        bearer(key)), 404, request_id)
    svc.result(CHAT, send(), bearer(key))  # the others still answer


@pytest.mark.compat
def test_key_scoped_to_echo_gets_403_from_chat(svc):
    key = svc.key(["echo"])
    svc.result(ECHO, send(), bearer(key))
    for path in (CHAT, "/a2a"):  # /a2a: chat as the default agent
        for request_id in (3, "req-403"):
            body = send()
            body["id"] = request_id
            assert_rpc_refusal(svc.post(path, body, bearer(key)), 403, request_id)
            assert_rpc_refusal(svc.post(path, body, {"X-API-Key": key}), 403,
                               request_id)
        # Scope is checked before any method runs.
        assert_rpc_refusal(svc.post(path, call("tasks/get", {"id": NO_SUCH_TASK},
                                                id=9), bearer(key)), 403, 9)
        assert_rpc_refusal(svc.post(path, call(
            "agent/getAuthenticatedExtendedCard", id=10), bearer(key)), 403, 10)


def test_key_scoped_to_a_list_reaches_exactly_those_agents(service):
    svc = service(lambda a2a: a2a.add_agent("third", lambda turn: "3"))
    key = svc.key(["echo", "third"])
    svc.result(ECHO, send(), bearer(key))
    svc.result("/api/v1/agents/third/a2a", send(), bearer(key))
    assert_rpc_refusal(svc.post(CHAT, send(), bearer(key)), 403, 1)
    every = svc.key(None)
    for path in (ECHO, CHAT, "/api/v1/agents/third/a2a"):
        svc.result(path, send(), bearer(every))


# -- HTTP Basic: built-in users, the host's password hook -------------------------


@pytest.mark.compat
def test_built_in_users_authenticate_with_basic(svc):
    svc.credentials.create_user("alice", "s3cret pass")
    svc.result(ECHO, send(), basic("alice", "s3cret pass"))
    assert_401(svc.post(ECHO, send(), basic("alice", "s3cret pas")))
    stored = svc.state.storage.password_hash("alice")
    assert stored != "s3cret pass" and check_password_hash(stored, "s3cret pass")
    svc.credentials.delete_user("alice")
    assert_401(svc.post(ECHO, send(), basic("alice", "s3cret pass")))
    with pytest.raises(CredentialError):
        svc.credentials.delete_user("alice")


def test_a_checked_password_is_not_hashed_again_but_a_change_is_seen_at_once(
        svc, monkeypatch):
    import a2a_flask.auth.passwords as passwords

    checks = []
    real = passwords.check_password
    monkeypatch.setattr(passwords, "check_password",
                        lambda stored, password: checks.append(1) or real(stored, password))
    svc.credentials.create_user("dora", "first pw")
    for _ in range(3):
        svc.result(ECHO, send(), basic("dora", "first pw"))
    assert len(checks) == 1  # the slow hash ran once, not per request
    assert_401(svc.post(ECHO, send(), basic("dora", "other pw")))
    assert len(checks) == 2  # a different password is checked for real
    # A new password: the old one is refused on the very next request.
    svc.credentials.delete_user("dora")
    assert_401(svc.post(ECHO, send(), basic("dora", "first pw")))
    svc.credentials.create_user("dora", "second pw")
    assert_401(svc.post(ECHO, send(), basic("dora", "first pw")))
    svc.result(ECHO, send(), basic("dora", "second pw"))


def test_the_slow_password_hash_holds_no_connection_of_the_storage(svc, monkeypatch):
    import a2a_flask.auth.passwords as passwords

    held = []
    real = passwords.check_password
    storage = svc.state.storage

    def check(stored, password):  # seconds of CPU for a burst of logins
        held.append(storage.connections_in_use())
        return real(stored, password)

    monkeypatch.setattr(passwords, "check_password", check)
    svc.credentials.create_user("erin", "pw of erin")
    storage.release_connection()
    svc.result(ECHO, send(), basic("erin", "pw of erin"))
    assert held == [0]  # the request thread read the hash, then handed it back


def test_the_host_hooks_run_holding_no_connection_of_the_storage(service):
    # A host's check may ask an identity provider over the network.
    held = []

    def register(a2a):
        @a2a.token_caller
        def token(value):
            held.append(("token", state["storage"].connections_in_use()))
            return "tok-user" if value == "host-token" else None

        @a2a.password_check
        def password(name, pw):
            held.append(("password", state["storage"].connections_in_use()))
            return name if pw == "right" else None

    state = {}
    svc = service(register)
    state["storage"] = svc.state.storage
    _, secret = svc.credentials.create_key(None, "k")
    svc.result(ECHO, send(), bearer(secret))  # the key lookup took a connection
    svc.result(ECHO, send(), bearer("host-token"))
    svc.result(ECHO, send(), basic("ann", "right"))
    assert held == [("token", 0), ("password", 0)]


def test_password_hook_replaces_the_built_in_users(service):
    seen = []

    def register(a2a):
        @a2a.password_check
        def check(name, password):
            seen.append((name, password))
            return "u-%s" % name if (name, password) == ("carol", "hostpw") else None

    svc = service(register)
    svc.credentials.create_user("alice", "builtin pw")
    task = svc.result(CHAT, send("from carol"), basic("carol", "hostpw"))
    assert_401(svc.post(CHAT, send(), basic("carol", "wrong")))
    # The hook is asked instead of the built-in users, not as well.
    assert_401(svc.post(CHAT, send(), basic("alice", "builtin pw")))
    assert seen == [("carol", "hostpw"), ("carol", "wrong"), ("alice", "builtin pw")]
    # The hook's user owns the task.
    svc.result(CHAT, call("tasks/get", {"id": task["id"]}), basic("carol", "hostpw"))
    other = svc.key()
    assert svc.error(CHAT, call("tasks/get", {"id": task["id"]}),
                     bearer(other))["code"] == -32001


# -- the host's login session -----------------------------------------------------


def _register_session(a2a):
    @a2a.session_caller
    def current_user():
        return flask_session.get("user")


def _session_service(service):
    return service(_register_session, SECRET_KEY="test secret",
                   SESSION_COOKIE_NAME="host_session")


def _login(client, user):
    with client.session_transaction() as session:
        session["user"] = user


@pytest.mark.compat
def test_session_hook_authenticates_json_posts_only(service):
    svc = _session_service(service)
    assert_401(svc.post(CHAT, send()))  # not logged in
    _login(svc.client, "dora")
    task = svc.result(CHAT, send("hi"), {})
    assert task["status"]["state"] == "input-required"
    svc.result(CHAT, call("tasks/get", {"id": task["id"]}), {})
    body = json.dumps(send("hi"))
    for content_type in ("text/plain", "application/x-www-form-urlencoded",
                         "multipart/form-data; boundary=x"):
        response = svc.post(CHAT, None, data=body, content_type=content_type)
        assert_401(response)
    # Credentials sent with the request come first: a wrong key is refused.
    assert_401(svc.post(CHAT, send(), bearer("a2a_wrong")))


def test_session_callers_own_their_tasks(service):
    svc = _session_service(service)
    _login(svc.client, "dora")
    task = svc.result(CHAT, send("dora's"), {})
    _login(svc.client, "eve")
    error = svc.error(CHAT, call("tasks/get", {"id": task["id"]}), {})
    assert error["code"] == -32001
    _login(svc.client, "dora")
    svc.result(CHAT, call("tasks/get", {"id": task["id"]}), {})


# -- what the cards say about security ----------------------------------------------


CARD = "/api/v1/agents/%s/.well-known/agent-card.json"


def _schemes(card):
    """{name: a hashable description} and the security requirements."""
    described = {}
    for name, scheme in card.get("securitySchemes", {}).items():
        described[name] = (scheme["type"], scheme.get("in"), scheme.get("name"),
                           scheme.get("scheme", "").lower() or None)
    return described


def _assert_security(card, expected):
    described = _schemes(card)
    assert sorted(described.values(), key=str) == sorted(expected, key=str), described
    # Any one scheme is enough: one requirement per scheme, each a defined one.
    security = card.get("security", [])
    assert sorted(security, key=str) == sorted(
        ({name: []} for name in described), key=str), security


API_KEY = ("apiKey", "header", "X-API-Key", None)
BEARER = ("http", None, None, "bearer")
BASIC = ("http", None, None, "basic")


def _cards(svc, headers=None):
    cards = [svc.get(CARD % name, headers).get_json() for name in ("echo", "chat")]
    cards.append(svc.get("/.well-known/agent-card.json", headers).get_json())
    cards.append(svc.get("/api/v1/agents/echo/.well-known/agent.json",
                         headers).get_json())
    return cards


def test_cards_describe_keys_only_without_users_or_hooks(svc):
    for card in _cards(svc):
        _assert_security(card, [API_KEY, BEARER])
    # Indeed: Basic is not accepted (there is nobody to check it against).
    assert_401(svc.post(ECHO, send(), basic("anyone", "pw")))


def test_cards_describe_basic_once_a_user_exists(svc):
    svc.credentials.create_user("alice", "pw")
    for card in _cards(svc):
        _assert_security(card, [API_KEY, BEARER, BASIC])


def test_cards_describe_basic_with_the_password_hook(service):
    def register(a2a):
        a2a.password_check(lambda name, password: None)
    for card in _cards(service(register)):
        _assert_security(card, [API_KEY, BEARER, BASIC])


def test_cards_describe_the_session_cookie_with_the_session_hook(service):
    svc = _session_service(service)
    for card in _cards(svc):
        _assert_security(card, [API_KEY, BEARER,
                                ("apiKey", "cookie", "host_session", None)])


@pytest.mark.compat
def test_cards_with_everything_each_scheme_really_works(service):
    svc = service(_register_session, SECRET_KEY="k",
                  A2A_API_KEY_HEADER="X-Embabel-Api-Key")
    svc.credentials.create_user("alice", "pw")
    key = svc.key()
    card = svc.get(CARD % "chat").get_json()
    _assert_security(card, [("apiKey", "header", "X-Embabel-Api-Key", None), BEARER,
                            BASIC, ("apiKey", "cookie", "session", None)])
    for name, (kind, where, header, scheme) in _schemes(card).items():
        client = svc.app.test_client()
        if kind == "apiKey" and where == "header":
            headers = {header: key}
        elif scheme == "bearer":
            headers = bearer(key)
        elif scheme == "basic":
            headers = basic("alice", "pw")
        else:
            _login(client, "dora")
            # The cookie the login set (not client.get_cookie: Flask 2.3+).
            assert header == svc.app.config["SESSION_COOKIE_NAME"]
            headers = {}
        response = client.post(CHAT, json=send(), headers=headers)
        assert response.status_code == 200, (name, response.get_json())
        check_answer(200, response.get_json())
        assert "result" in response.get_json()


def test_extended_card_has_the_same_security(svc):
    svc.credentials.create_user("alice", "pw")
    extended = svc.result(CHAT, call("agent/getAuthenticatedExtendedCard"),
                          basic("alice", "pw"))
    public = svc.get(CARD % "chat").get_json()
    assert extended["securitySchemes"] == public["securitySchemes"]
    assert extended["security"] == public["security"]


# -- card endpoints: public or not ------------------------------------------------


def test_cards_are_public_by_default(service):
    svc = service(_register_hidden, A2A_DISABLED_AGENTS="off")
    for card in _cards(svc):
        assert card["protocolVersion"] == "0.3.0"
    for name in ("nope", "off", "hidden"):
        assert_bare(svc.client.get(CARD % name), 404)


def test_cards_when_not_public(service):
    svc = service(_register_hidden, A2A_PUBLIC_CARDS=False, A2A_DISABLED_AGENTS="off")
    paths = [CARD % "echo", CARD % "chat", "/.well-known/agent-card.json",
             "/api/v1/agents/chat/.well-known/agent.json"]
    for path in paths + [CARD % "nope", CARD % "hidden"]:
        for headers in ({}, bearer("a2a_wrong"), basic("x", "y")):
            assert_bare(svc.client.get(path, headers=headers), 401)
    every, echo_only = svc.key(), svc.key(["echo"])
    for path in paths:
        assert svc.get(path, bearer(every)).status_code == 200
    for name in ("nope", "off", "hidden"):
        assert_bare(svc.client.get(CARD % name, headers=bearer(every)), 404)
    assert svc.get(CARD % "echo", bearer(echo_only)).status_code == 200
    for path in (CARD % "chat", "/.well-known/agent-card.json"):
        assert_bare(svc.client.get(path, headers=bearer(echo_only)), 403)


def test_cards_not_public_from_environment_text(service):
    svc = service(**config_from_env({"A2A_PUBLIC_CARDS": "false",
                                     "A2A_AUTH": "required"}))
    assert_bare(svc.client.get(CARD % "echo"), 401)


# -- the authenticated extended card --------------------------------------------------


def test_extended_card_only_for_authenticated_callers(svc):
    key = svc.key()
    public = svc.get(CARD % "chat").get_json()
    assert public["supportsAuthenticatedExtendedCard"] is True
    assert "chat-history" not in [s["id"] for s in public["skills"]]
    extended = svc.result(CHAT, call("agent/getAuthenticatedExtendedCard"), bearer(key))
    check_answer(200, extended)
    assert [s["id"] for s in extended["skills"]] == ["chat", "chat-history"]
    assert extended["name"] == "chat"
    assert_401(svc.post(CHAT, call("agent/getAuthenticatedExtendedCard")))
    assert svc.get(CARD % "echo").get_json()["supportsAuthenticatedExtendedCard"] is False
    error = svc.error(ECHO, call("agent/getAuthenticatedExtendedCard", id="x"),
                      bearer(key))
    assert error["code"] == -32007


def test_extended_card_not_given_to_the_anonymous_caller_with_auth_off(service):
    svc = service(A2A_AUTH="off")
    assert svc.get(CARD % "chat").get_json()["supportsAuthenticatedExtendedCard"] is False
    error = svc.error(CHAT, call("agent/getAuthenticatedExtendedCard"), {})
    assert error["code"] == -32007


# -- the agent list ------------------------------------------------------------------


@pytest.mark.compat
def test_agent_list_shows_only_reachable_agents(service):
    svc = service(_register_hidden, A2A_DISABLED_AGENTS="off")
    assert_401(svc.client.get(LIST))
    assert_401(svc.client.get(LIST, headers=bearer("a2a_wrong")))

    def names(headers):
        response = svc.get(LIST, headers)
        assert response.status_code == 200
        return [agent["name"] for agent in response.get_json()["agents"]]

    assert names(bearer(svc.key())) == ["chat", "echo"]
    assert names(bearer(svc.key(["echo"]))) == ["echo"]
    assert names(bearer(svc.key(["chat", "off"]))) == ["chat"]
    svc.credentials.create_user("alice", "pw")
    assert names(basic("alice", "pw")) == ["chat", "echo"]


# -- A2A_AUTH=off ---------------------------------------------------------------------


def test_auth_off_warns_and_serves_one_anonymous_caller(service, caplog):
    with caplog.at_level(logging.WARNING, logger="a2a_flask"):
        svc = service(A2A_AUTH="off", A2A_PUBLIC_BASE_URL="https://a.example")
    warnings = [r for r in caplog.records
                if r.name == "a2a_flask" and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "A2A_AUTH=off" in warnings[0].getMessage()
    card = svc.get(CARD % "echo").get_json()
    assert "authentication is off" in card["description"].lower()
    assert "security" not in card or card["security"] == []
    # Whatever credentials are sent (or none), it is the same caller.
    task = svc.result(CHAT, send("hi"), {})
    for headers in ({}, bearer("a2a_anything"), basic("x", "y")):
        assert svc.result(CHAT, call("tasks/get", {"id": task["id"]}),
                          headers)["id"] == task["id"]
    assert [a["name"] for a in svc.get(LIST).get_json()["agents"]] == ["chat", "echo"]


def test_auth_required_does_not_warn(service, caplog):
    with caplog.at_level(logging.WARNING, logger="a2a_flask"):
        svc = service()
    assert not [r for r in caplog.records if "A2A_AUTH" in r.getMessage()]
    card = svc.get(CARD % "echo").get_json()
    assert "authentication is off" not in card["description"].lower()


# -- tasks and contexts belong to their caller ----------------------------------------


def _not_found_like(svc, headers, path, make_body, task_id):
    """The error for ``task_id`` equals the one for a task that does not exist."""
    error = svc.error(path, make_body(task_id), headers)
    missing = svc.error(path, make_body(NO_SUCH_TASK), headers)
    assert error["code"] == missing["code"] == -32001
    assert error["message"] == missing["message"]
    assert json.dumps(error.get("data")).replace(task_id, "ID") == json.dumps(
        missing.get("data")).replace(NO_SUCH_TASK, "ID")


TASKS = 200


def test_two_callers_with_200_tasks_each_never_touch_each_others(svc):
    callers = {"a": bearer(svc.key(label="a")), "b": {"X-API-Key": svc.key(label="b")}}
    tasks = {name: [] for name in callers}
    for i in range(TASKS):
        for name, headers in callers.items():
            task = svc.result(CHAT, send("%s %d" % (name, i)), headers)
            assert task["status"]["state"] == "input-required"
            tasks[name].append(task["id"])
    assert not set(tasks["a"]) & set(tasks["b"])
    bodies = {
        "get": lambda task_id: call("tasks/get", {"id": task_id}),
        "cancel": lambda task_id: call("tasks/cancel", {"id": task_id}),
        "continue": lambda task_id: send("hijack", taskId=task_id),
    }
    for me, other in (("a", "b"), ("b", "a")):
        headers = callers[me]
        for i, task_id in enumerate(tasks[other]):
            for make_body in bodies.values():
                if i % 50 == 0:  # the full comparison with a missing task, now and then
                    _not_found_like(svc, headers, CHAT, make_body, task_id)
                else:
                    assert svc.error(CHAT, make_body(task_id), headers)["code"] == -32001
    # Nothing happened to any task: each owner still sees its own untouched.
    for name, headers in callers.items():
        for i, task_id in enumerate(tasks[name]):
            task = svc.result(CHAT, call("tasks/get", {"id": task_id}), headers)
            assert task["status"]["state"] == "input-required"
            assert len(task["history"]) == 2
            assert task["history"][0]["parts"][0]["text"] == "%s %d" % (name, i)
    # And the owners can still continue and cancel them.
    task = svc.result(CHAT, send("more", taskId=tasks["a"][0]), callers["a"])
    assert task["status"]["state"] == "input-required" and len(task["history"]) == 4
    task = svc.result(CHAT, call("tasks/cancel", {"id": tasks["b"][0]}), callers["b"])
    assert task["status"]["state"] == "canceled"


def test_tasks_are_not_shared_between_keys_users_and_agents(svc):
    svc.credentials.create_user("alice", "pw")
    key = svc.key()
    task = svc.result(CHAT, send("mine"), basic("alice", "pw"))
    for method in ("tasks/get", "tasks/cancel"):
        _not_found_like(svc, bearer(key), CHAT,
                        lambda t: call(method, {"id": t}), task["id"])  # noqa: B023 - called here
        # Same caller, other agent: not there either.
        assert svc.error(ECHO, call(method, {"id": task["id"]}),
                         basic("alice", "pw"))["code"] == -32001
    # A second key is a second caller, even with the same scope and label.
    first, second = svc.key(label="same"), svc.key(label="same")
    task = svc.result(CHAT, send("first"), bearer(first))
    assert svc.error(CHAT, call("tasks/get", {"id": task["id"]}),
                     bearer(second))["code"] == -32001


def test_contexts_belong_to_their_caller(svc):
    a, b = bearer(svc.key()), bearer(svc.key())
    first = svc.result(CHAT, send("the plan is at noon"), a)
    context = first["contextId"]
    intruder = svc.result(CHAT, send("what was said?", contextId=context), b)
    reply = intruder["status"]["message"]["parts"][0]["text"]
    assert reply == "turn 1; you said: what was said?", reply
    assert intruder["id"] != first["id"]
    assert [m["parts"][0]["text"] for m in intruder["history"]
            if m["role"] == "user"] == ["what was said?"]
    # A's conversation is untouched by B's turn in the same contextId.
    again = svc.result(CHAT, send("and the place?", contextId=context), a)
    reply = again["status"]["message"]["parts"][0]["text"]
    assert reply == ("turn 2; you said: and the place?; you said earlier: "
                     "the plan is at noon"), reply
    # B can talk on in "its" context without ever seeing A's turns.
    later = svc.result(CHAT, send("still me", contextId=context), b)
    reply = later["status"]["message"]["parts"][0]["text"]
    assert "noon" not in reply and "place" not in reply
    assert reply.endswith("you said earlier: what was said?"), reply


def test_retry_safety_is_per_caller(svc):
    a, b = bearer(svc.key()), bearer(svc.key())
    sent = send("first", message_id="shared-id")
    task_a = svc.result(ECHO, sent, a)
    # B's message with the same messageId is B's own new task, not A's replay.
    task_b = svc.result(ECHO, sent, b)
    assert task_b["id"] != task_a["id"] and task_b["contextId"] != task_a["contextId"]
    # Nor is a different message under A's messageId a conflict for B.
    other = send("different", message_id="shared-id-2")
    svc.result(ECHO, other, a)
    task_b2 = svc.result(ECHO, send("something else", message_id="shared-id-2"), b)
    assert task_b2["history"][0]["parts"][0]["text"] == "something else"
    # A's retry is A's replay.
    assert svc.result(ECHO, sent, a)["id"] == task_a["id"]
    assert svc.result(ECHO, sent, b)["id"] == task_b["id"]


# -- secrets stay secret ----------------------------------------------------------------


def test_keys_and_passwords_never_stored_or_logged_in_clear(service, caplog):
    password = "correct horse battery staple 9f2"
    with caplog.at_level(logging.DEBUG):
        svc = service()
        key, scoped = svc.key(label="k1"), svc.key(["echo"], label="k2")
        revoked = svc.key(label="k3")
        svc.credentials.revoke_key(svc.listed("k3").id)
        svc.credentials.create_user("alice", password)
        svc.result(ECHO, send(), bearer(key))
        svc.result(ECHO, send(), {"X-API-Key": scoped})
        svc.result(ECHO, send(), basic("alice", password))
        svc.post(CHAT, send(), bearer(scoped))                   # 403
        assert_401(svc.post(ECHO, send(), bearer(revoked)))      # 401
        assert_401(svc.post(ECHO, send(), basic("alice", password + "x")))
        assert_401(svc.post(ECHO, send(), basic("bob", password)))
        svc.get(LIST, basic("alice", password))
    secrets = [key, scoped, revoked, password]
    needles = set()
    for secret in secrets:
        needles |= {secret, secret[10:], secret[-20:]}
    needles.add(base64.b64encode(("alice:" + password).encode()).decode())
    data = b""
    for suffix in ("", "-wal", "-journal"):
        try:
            with open(svc.state.storage.path + suffix, "rb") as f:
                data += f.read()
        except FileNotFoundError:
            pass
    assert len(data) > 4096
    # Sanity of the scan itself: the non-secret prefix and the hashes are there.
    assert key[:10].encode() in data
    assert hashlib.sha256(key.encode()).hexdigest().encode() in data
    logged = caplog.text + "".join(repr(r.args) + repr(r.__dict__)
                                   for r in caplog.records)
    for needle in needles:
        assert needle.encode() not in data, needle
        assert needle not in logged, needle
