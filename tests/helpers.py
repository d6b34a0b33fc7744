"""Helpers the tests import (the fixtures are in conftest.py): the A2A 0.3
schema check of every answer, messages of either protocol version, the
in-process client of both versions and bindings (``Rpc``), the scripted
agent, and small readers."""

import base64
import itertools
import json
import os
import re
import threading
import time
from datetime import datetime, timezone

import jsonschema

from a2a_flask import AuthRequired, InputRequired, Reject, Reply

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


def assert_401(response):
    """401, the bare error object as the body, a challenge naming both schemes."""
    assert response.status_code == 401, response.data
    body = response.get_json()
    assert set(body) == {"code", "message"}, body
    assert body["code"] == -32600
    assert isinstance(body["message"], str) and body["message"]
    challenge = response.headers.get("WWW-Authenticate", "")
    schemes = {m.lower() for m in re.findall(r'(?:^|,)\s*([A-Za-z]+)(?:\s|,|$)',
                                             challenge)}
    assert {"basic", "bearer"} <= schemes, challenge


def message(text="hello", message_id=None, version="0.3", **fields):
    """A user message of protocol ``version`` ("0.3" or "1.0"), with a fresh
    messageId unless one is given."""
    message_id = message_id or "msg-%d" % next(_ids)
    if version == "0.3":
        msg = {"kind": "message", "role": "user", "messageId": message_id,
               "parts": [{"kind": "text", "text": text}]}
    else:
        msg = {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]}
    msg.update(fields)
    return msg


class Rpc:
    """One caller of one agent over the Flask test client (or anything with
    its API, tests/serving.py), every answer checked before a test sees it:
    ``version="0.3"`` (no A2A-Version header) against the 0.3 JSON schema,
    ``version="1.0"`` (the header, both bindings) against the 1.0 proto
    (tests/v1/proto.py). ``key``: sent as X-API-Key; a header given as None
    is not sent."""

    def __init__(self, client, agent="echo", headers=None, key=None,
                 version="0.3", prefix="/api/v1"):
        self.client, self.agent, self.prefix = client, agent, prefix
        self.version = version
        self.headers = dict(headers or {})
        if version != "0.3":
            self.headers["A2A-Version"] = version
        if key is not None:
            self.headers["X-API-Key"] = key

    def path(self, agent=None):
        return "%s/agents/%s/a2a" % (self.prefix, agent or self.agent)

    def _headers(self, headers):
        merged = {**self.headers, **(headers or {})}
        return {k: v for k, v in merged.items() if v is not None}

    def _check(self, method, url, request, response, answer):
        if self.version == "0.3":
            check_answer(response.status_code, answer)
        else:
            from v1 import proto  # protobuf: only where a 1.0 answer is checked

            proto.check_exchange({"method": method, "url": url, "request": request,
                                  "status": response.status_code, "body": answer})

    # -- JSON-RPC ---------------------------------------------------------------

    def post(self, body, agent=None, path=None, headers=None, raw=False):
        """POST ``body`` (a JSON value, or bytes with raw=True); (status, answer)."""
        kwargs = {"data": body} if raw else {"json": body}
        path = path or self.path(agent)
        response = self.client.post(path, headers=self._headers(headers), **kwargs)
        assert response.mimetype == "application/json", response.data
        answer = response.get_json()
        self._check("POST", path, body, response, answer)
        self.last_response = response
        return response.status_code, answer

    def call(self, method, params=None, id=1, agent=None, **kwargs):
        """(HTTP status, answer) of one JSON-RPC call."""
        body = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            body["params"] = params
        return self.post(body, agent=agent, **kwargs)

    def result(self, method, params=None, **kwargs):
        status, answer = self.call(method, params, **kwargs)
        assert status == 200 and "result" in answer, answer
        return answer["result"]

    def error(self, method, params=None, **kwargs):
        """(HTTP status, the error object) of a call that must fail."""
        status, answer = self.call(method, params, **kwargs)
        assert "error" in answer, answer
        return status, answer["error"]

    def send(self, text="hello", agent=None, configuration=None, **fields):
        """The task a send of a new user message answers."""
        params = {"message": message(text, version=self.version, **fields)}
        if configuration is not None:
            params["configuration"] = configuration
        if self.version == "0.3":
            return self.result("message/send", params, agent=agent)
        return self.result("SendMessage", params, agent=agent)["task"]

    # -- HTTP+JSON (1.0) --------------------------------------------------------

    def rest(self, method, path, body=None, query=None, headers=None, base=None):
        """(HTTP status, body) of one HTTP+JSON call."""
        base = base if base is not None else "%s/agents/%s/rest" % (
            self.prefix, self.agent)
        kwargs = {"json": body} if body is not None else {}
        response = self.client.open(base + path, method=method,
                                    query_string=query,
                                    headers=self._headers(headers), **kwargs)
        assert response.mimetype == "application/a2a+json", response.data
        answer = response.get_json()
        self._check(method, base + path, body, response, answer)
        self.last_response = response
        return response.status_code, answer


def detail(error, type_name):
    """The detail of ``type_name`` (``ErrorInfo``, ``BadRequest``) in a 1.0
    error's ``data`` or ``details``."""
    found = [d for d in error.get("data", error.get("details", []))
             if d["@type"] == "type.googleapis.com/google.rpc." + type_name]
    assert len(found) == 1, error
    return found[0]


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


def add_gated_agent(a2a, answer=lambda turn: "opened " + turn.text, name="waits"):
    """Registers background agent ``name``: it reports progress "halfway",
    then waits until the test opens ``a2a.gate`` (a ``threading.Event``) or
    the task is canceled, and replies ``answer(turn)``."""
    gate = a2a.gate = threading.Event()

    def waits(turn):
        turn.progress("halfway")
        while not gate.wait(0.02):
            if turn.canceled:
                break
        return Reply(answer(turn))

    a2a.add_agent(name, waits, background=True)


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


def metric_sample(text, name, **labels):
    """The value of one sample in Prometheus text, 0 when absent."""
    wanted = ",".join('%s="%s"' % kv for kv in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith("%s{%s} " % (name, wanted)):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def metric_growth(before, after, name, **labels):
    """How much one sample grew between two Prometheus texts."""
    return metric_sample(after, name, **labels) - metric_sample(before, name, **labels)


def bearer(key):
    """The header of ``key`` sent as a bearer token."""
    return {"Authorization": "Bearer " + key}


def basic(name, password):
    """The header of HTTP Basic credentials."""
    pair = ("%s:%s" % (name, password)).encode()
    return {"Authorization": "Basic " + base64.b64encode(pair).decode()}


def wait_until(predicate, timeout=30.0, what="condition"):
    """``predicate()``'s first true value, polled every 50 ms; AssertionError
    after ``timeout`` seconds (a bound for a stuck test, not a measurement)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


def write_key(path, key, public=False):
    """Write the PEM of ``key`` (a ``cryptography`` private key; ``public``:
    its public key) to ``path``; return the path as a string."""
    from cryptography.hazmat.primitives import serialization

    if public:
        data = key.public_key().public_bytes(
            serialization.Encoding.PEM,
            serialization.PublicFormat.SubjectPublicKeyInfo)
    else:
        data = key.private_bytes(serialization.Encoding.PEM,
                                 serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())
    path.write_bytes(data)
    return str(path)
