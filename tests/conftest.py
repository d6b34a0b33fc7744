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

SCHEMA_PATH = os.path.join(os.path.dirname(__file__), "a2a-v0.3.0.schema.json")
with open(SCHEMA_PATH) as f:
    SCHEMA = json.load(f)


def validate(definition, instance):
    """Raise unless ``instance`` is a valid A2A ``definition``."""
    jsonschema.validate(
        instance, {"$ref": "#/definitions/" + definition,
                   "definitions": SCHEMA["definitions"]},
        cls=jsonschema.Draft7Validator)


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
