"""Shared fixtures: an app per test, and a JSON-RPC client that checks every
answer against the official A2A 0.3.0 JSON schema."""

import itertools
import json
import os

import jsonschema
import pytest
from flask import Flask

from a2a_flask import A2A
from a2a_flask.demo import register_demo_agents
from pgfixtures import postgres_module_url, postgres_server, postgres_url  # noqa: F401

SCHEMA_PATH = os.path.join(os.path.dirname(__file__), "a2a-v0.3.0.schema.json")
with open(SCHEMA_PATH) as f:
    SCHEMA = json.load(f)


jsonschema.Draft7Validator.check_schema(SCHEMA)
_validators = {}


def validate(definition, instance):
    """Raise unless ``instance`` is a valid A2A ``definition``."""
    # One validator per definition: checking the (large) schema on every
    # call, as jsonschema.validate does, costs ~60 ms an answer.
    validator = _validators.get(definition)
    if validator is None:
        validator = _validators[definition] = jsonschema.Draft7Validator(
            {"$ref": "#/definitions/" + definition,
             "definitions": SCHEMA["definitions"]})
    error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    if error is not None:
        raise error


def check_answer(status, body):
    """Validate an answer of an A2A endpoint, whatever it is."""
    assert isinstance(body, dict), body
    if "jsonrpc" in body:
        assert body["jsonrpc"] == "2.0"
        assert ("result" in body) != ("error" in body), body
        validate("JSONRPCResponse", body)
        result = body.get("result")
        if isinstance(result, dict) and result.get("kind") == "task":
            validate("Task", result)
            for message in result.get("history", []):
                for key in ("kind", "role", "parts", "messageId", "taskId", "contextId"):
                    assert key in message, (key, message)
        if isinstance(result, dict) and "protocolVersion" in result:
            validate("AgentCard", result)
    elif "protocolVersion" in body:
        validate("AgentCard", body)
    elif "agents" not in body:
        validate("JSONRPCError", body)


_ids = itertools.count(1)


def message(text="hello", message_id=None, **fields):
    """A user message, with a fresh messageId unless one is given."""
    msg = {"kind": "message", "role": "user",
           "messageId": message_id or "msg-%d" % next(_ids),
           "parts": [{"kind": "text", "text": text}]}
    msg.update(fields)
    return msg


class Rpc:
    """JSON-RPC over the Flask test client; every answer schema-checked."""

    def __init__(self, client, agent="echo", headers=None):
        self.client = client
        self.agent = agent
        self.headers = headers or {}

    def path(self, agent=None):
        return "/api/v1/agents/%s/a2a" % (agent or self.agent)

    def post(self, body, agent=None, path=None, headers=None, raw=False):
        """POST ``body`` (a JSON value, or bytes with raw=True); (status, answer)."""
        kwargs = {"data": body} if raw else {"json": body}
        response = self.client.post(path or self.path(agent),
                                    headers={**self.headers, **(headers or {})},
                                    **kwargs)
        assert response.mimetype == "application/json", response.data
        answer = response.get_json()
        check_answer(response.status_code, answer)
        self.last_response = response
        return response.status_code, answer

    def call(self, method, params=None, id=1, agent=None, **kwargs):
        body = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            body["params"] = params
        return self.post(body, agent=agent, **kwargs)

    def result(self, method, params=None, **kwargs):
        status, answer = self.call(method, params, **kwargs)
        assert status == 200 and "result" in answer, answer
        return answer["result"]

    def error(self, method, params=None, **kwargs):
        status, answer = self.call(method, params, **kwargs)
        assert "error" in answer, answer
        return status, answer["error"]

    def send(self, text="hello", agent=None, configuration=None, **fields):
        params = {"message": message(text, **fields)}
        if configuration is not None:
            params["configuration"] = configuration
        return self.result("message/send", params, agent=agent)


@pytest.fixture
def make_app(tmp_path):
    """Build an app with the demo agents: ``make_app(**config) -> (app, a2a)``."""

    def build(register=None, **config):
        app = Flask("a2a_test", instance_path=str(tmp_path / "instance"))
        app.config.update(A2A_DATABASE=str(tmp_path / "a2a.sqlite3"),
                          A2A_AUTH="off", A2A_DEFAULT_AGENT="chat")
        app.config.update(config)
        a2a = A2A(app)
        register_demo_agents(a2a)
        if register is not None:
            register(a2a)
        return app, a2a

    return build


@pytest.fixture
def app(make_app):
    return make_app()[0]


@pytest.fixture
def rpc(app):
    return Rpc(app.test_client())


# -- real gunicorn processes (tests/servers.py, tests/test_server_*.py) --------


@pytest.fixture
def start_server(tmp_path):
    """``start_server(app="server_app:app", workers=1, env=None, headers=None,
    database=None, auth=None) -> GunicornServer``, started and answering;
    every server it started is stopped (its process group killed) at teardown."""
    from servers import GunicornServer

    servers = []

    def start(app="server_app:app", workers=1, **options):
        server = GunicornServer(tmp_path / ("server%d" % len(servers)), app=app,
                                workers=workers, **options)
        servers.append(server)
        return server.start()

    yield start
    for server in servers:
        server.stop()
        print("server log:", server.log_path)  # shown when the test failed


def _module_server(tmp_path_factory, app, workers):
    from servers import GunicornServer

    server = GunicornServer(tmp_path_factory.mktemp("server"), app=app,
                            workers=workers)
    try:
        yield server.start()
    finally:
        server.stop()
        print("server log:", server.log_path)


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    """One ``server_app:app`` (demo + test agents), 2 workers, per test module."""
    yield from _module_server(tmp_path_factory, "server_app:app", 2)


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory):
    """One demo service (``wsgi:app``), 2 workers, per test module."""
    yield from _module_server(tmp_path_factory, "wsgi:app", 2)


# -- helpers for the in-process protocol tests ----------------------------------

import re  # noqa: E402
from datetime import datetime, timezone  # noqa: E402

from a2a_flask import AuthRequired, InputRequired, Reject, Reply  # noqa: E402

TERMINAL_STATES = ("completed", "canceled", "failed", "rejected")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
SECRET = "secret-internal-detail-7f3a"


def scripted(turn):
    """Does what the first word of the text says: ask, auth, reject, fail;
    anything else is a reply."""
    command = (turn.text.split() or [""])[0]
    if command == "ask":
        return InputRequired("What else?")
    if command == "auth":
        return AuthRequired("Please authorize me first.")
    if command == "reject":
        return Reject("I will not do that.")
    if command == "fail":
        raise RuntimeError(SECRET)
    return Reply("done: " + turn.text)


def register_scripted(a2a):
    """Agent ``script``: ``scripted``, recording every Turn in ``a2a.turns``."""
    a2a.turns = []

    def script(turn):
        a2a.turns.append(turn)
        return scripted(turn)

    a2a.add_agent("script", script, description="Does what it is told.")


@pytest.fixture
def make_rpc(make_app):
    """``make_rpc(register=None, agent="echo", **config) -> Rpc``; the app and
    the extension are ``rpc.app`` and ``rpc.a2a``."""

    def build(register=None, agent="echo", **config):
        app, a2a = make_app(register, **config)
        client = Rpc(app.test_client(), agent=agent)
        client.app, client.a2a = app, a2a
        return client

    return build


@pytest.fixture
def script(make_rpc):
    """An Rpc on agent ``script`` (see ``scripted``); ``script.a2a.turns``."""
    return make_rpc(register_scripted, agent="script")


def task_in_state(rpc, state):
    """A task of agent ``script`` (``rpc`` must be on it) in ``state``."""
    command = {"completed": "hello", "input-required": "ask",
               "auth-required": "auth", "rejected": "reject", "failed": "fail",
               "canceled": "ask"}[state]
    task = rpc.send(command)
    if state == "canceled":
        task = rpc.result("tasks/cancel", {"id": task["id"]})
    assert task["status"]["state"] == state, task
    return task


def texts(message):
    """The text parts of a message, joined with newlines."""
    return "\n".join(p["text"] for p in message["parts"] if p["kind"] == "text")


def random_bits(value, prefix):
    """How many random bits an id ``prefix...`` can carry at most."""
    assert value.startswith(prefix), value
    rest = value[len(prefix):]
    if re.fullmatch(r"[0-9a-f]+", rest):
        return 4 * len(rest)
    assert re.fullmatch(r"[A-Za-z0-9_-]+", rest), value
    return 6 * len(rest)


def parse_timestamp(text):
    assert TIMESTAMP.match(text), text
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=timezone.utc)
