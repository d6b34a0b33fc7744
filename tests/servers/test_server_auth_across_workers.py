"""docs/protocol.md §6 across processes: gunicorn workers (``start_server`` from
tests/conftest.py), keys and users made with the CLI, the a2a-sdk client."""

import asyncio
import base64
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

try:
    import httpx  # installed with the a2a-sdk
except ImportError:  # Python 3.9: no a2a-sdk, and its tests skip
    httpx = None
import requests

from helpers import basic, bearer, check_answer, message
from serving import assert_clean_log, created_key, flask_a2a

WORKERS = 4
ACCESS_FORMAT = "%(p)s %(s)s %(r)s"  # "<pid> 401 POST /path?query HTTP/1.1"


def worker_pids(server, count, timeout=15.0):
    """The pids of the master's ``count`` workers, once they are all up."""
    path = "/proc/%d/task/%d/children" % (server.process.pid, server.process.pid)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path) as f:
            pids = {int(pid) for pid in f.read().split()}
        if len(pids) == count:
            return pids
        time.sleep(0.05)
    raise AssertionError("gunicorn has %d workers, not %d" % (len(pids), count))


def access_lines(path, phase):
    """(pid, status) of each access-log line of requests tagged ``phase``."""
    lines = []
    with open(path) as f:
        for line in f:
            pid, status, method, target = line.split()[:4]
            if "phase=%s&" % phase in target:
                lines.append((int(pid.strip("<>")), int(status)))
    return lines


def post_fresh(url, headers, n):
    """message/send to echo on a fresh connection: (status, answer)."""
    body = {"jsonrpc": "2.0", "id": n, "method": "message/send",
            "params": {"message": message("n %d" % n)}}
    response = requests.post(url, json=body, headers=dict(headers,
                             Connection="close"), timeout=30)
    return response.status_code, response.json(), response.headers


def hit_every_worker(server, access_log, phase, headers, expect, pids):
    """Send requests (8 at once, each on a new connection) until every worker
    pid logged one of this phase; every answer must be ``expect``."""
    url = server.url + "/api/v1/agents/echo/a2a?phase=%s&n=" % phase
    answers, n = [], 0
    with ThreadPoolExecutor(8) as pool:
        while n < 800:
            batch = range(n, n + 16)
            n += 16
            answers += pool.map(lambda i: post_fresh(url + str(i), headers, i), batch)
            if {pid for pid, _ in access_lines(access_log, phase)} >= pids:
                break
    for status, answer, response_headers in answers:
        check_answer(status, answer)
        expect(status, answer, response_headers)
    logged = access_lines(access_log, phase)
    assert {pid for pid, _ in logged} == pids, (logged, pids)
    return logged


def test_revoked_key_is_refused_by_every_worker_without_restart(start_server,
                                                                 tmp_path):
    database = str(tmp_path / "a2a.sqlite3")
    key_id, key = created_key(flask_a2a(database, "keys", "create", "--label",
                                        "to revoke"))
    _, other_key = created_key(flask_a2a(database, "keys", "create"))
    access_log = str(tmp_path / "access.log")
    server = start_server("wsgi:app", workers=WORKERS, database=database, auth="key",
                          headers=bearer(other_key), gunicorn_args=[
                              "--access-logfile", access_log,
                              "--access-logformat", ACCESS_FORMAT])
    pids = worker_pids(server, WORKERS)

    def ok(status, answer, headers):
        assert status == 200 and answer["result"]["status"]["state"] == "completed"

    def refused(status, answer, headers):
        assert status == 401, answer
        assert set(answer) == {"code", "message"} and answer["code"] == -32600
        assert "Basic" in headers["WWW-Authenticate"]
        assert "Bearer" in headers["WWW-Authenticate"]

    # Every worker takes the key (and could have kept it in memory)...
    hit_every_worker(server, access_log, "before", bearer(key), ok, pids)
    hit_every_worker(server, access_log, "header", {"X-API-Key": key}, ok, pids)
    revoked = flask_a2a(database, "keys", "revoke", key_id)
    assert revoked.returncode == 0, revoked.stderr
    # ... and every worker refuses it from the very next request on.
    logged = hit_every_worker(server, access_log, "after", bearer(key), refused, pids)
    assert {status for _, status in logged} == {401}
    logged = hit_every_worker(server, access_log, "after-header", {"X-API-Key": key},
                              refused, pids)
    assert {status for _, status in logged} == {401}
    # Same workers, no restart; the other key still works everywhere.
    assert worker_pids(server, WORKERS) == pids and server.starts == 1
    hit_every_worker(server, access_log, "other", bearer(other_key), ok, pids)
    assert_clean_log(server.log())


def test_secrets_never_reach_the_database_or_the_server_logs(start_server, tmp_path):
    database = str(tmp_path / "a2a.sqlite3")
    password = "pw-9d7c1e correct horse"
    assert flask_a2a(database, "users", "create", "alice", "--password-stdin",
                     input=password + "\n").returncode == 0
    key_id, key = created_key(flask_a2a(database, "keys", "create"))
    _, scoped = created_key(flask_a2a(database, "keys", "create", "--agents", "echo"))
    # server_app logs a2a_flask at INFO into the server log.
    server = start_server("server_app:app", workers=2, database=database, auth="key",
                          headers=bearer(key))
    statuses = []
    for headers, agent in [
            (bearer(key), "echo"), ({"X-API-Key": scoped}, "echo"),
            (basic("alice", password), "chat"), (bearer(scoped), "chat"),
            (basic("alice", password + "!"), "echo"), (basic("bob", password), "echo"),
            (bearer(key), "crash"), (bearer(key), "nope")]:
        # Only these credentials: the server's default key beside them
        # would be a second credential (refused when they disagree).
        rpc = server.rpc(agent, headers=headers, anonymous=True)
        statuses.append(rpc.call("message/send", {"message": message("hi")})[0])
    assert statuses == [200, 200, 200, 403, 401, 401, 200, 404]
    assert flask_a2a(database, "keys", "revoke", key_id).returncode == 0
    assert server.rpc("echo", headers=bearer(key)).call(
        "message/send", {"message": message("hi")})[0] == 401
    server.stop()  # so that the logs are complete

    data = b""
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(database + suffix):
            with open(database + suffix, "rb") as f:
                data += f.read()
    logs = server.log()
    assert "agent 'crash' failed on task" in logs  # the log is the real one
    needles = {password, base64.b64encode(("alice:" + password).encode()).decode()}
    for secret in (key, scoped):
        needles |= {secret, secret[10:], secret[-16:]}
    for needle in needles:
        assert needle.encode() not in data, needle
        assert needle not in logs, needle
    assert key[:10].encode() in data  # the scan sees what is there


def test_auth_off_warns_in_the_server_log(start_server):
    server = start_server("wsgi:app", workers=1, auth="off")
    assert server.wait_log("A2A_AUTH=off", timeout=5), server.log()
    card = requests.get(server.url + "/api/v1/agents/echo/.well-known/agent-card.json",
                        timeout=10).json()
    check_answer(200, card)
    assert "authentication is off" in card["description"].lower()


# -- the official a2a-sdk client ---------------------------------------------------

def _sdk():
    """The a2a-sdk names these tests use (skipped before Python 3.10, which
    the SDK needs; elsewhere it must import)."""
    if sys.version_info < (3, 10):
        pytest.skip("the a2a-sdk client needs Python 3.10 or newer")
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.client.auth import AuthInterceptor, CredentialService
    from a2a.client.errors import A2AClientHTTPError
    from a2a import types

    class KeyForBearer(CredentialService):
        """Gives the key for the card's HTTP bearer scheme, nothing otherwise."""

        def __init__(self, key, card):
            self.key, self.card = key, card
            self.asked = []

        async def get_credentials(self, security_scheme_name, context):
            self.asked.append(security_scheme_name)
            scheme = self.card.security_schemes[security_scheme_name].root
            if (isinstance(scheme, types.HTTPAuthSecurityScheme)
                    and scheme.scheme == "bearer"):
                return self.key
            return None

    def text_message(text):
        return types.Message(
            role=types.Role.user, parts=[types.Part(root=types.TextPart(text=text))],
            message_id="sdk-%s-%d" % (text.replace(" ", "-"), time.time_ns()))

    return (A2ACardResolver, ClientConfig, ClientFactory, AuthInterceptor,
            A2AClientHTTPError, types, KeyForBearer, text_message)


def test_sdk_client_authenticates_with_a_key(start_server):
    (A2ACardResolver, ClientConfig, ClientFactory, AuthInterceptor,
     A2AClientHTTPError, types, KeyForBearer, _message) = _sdk()
    Task, TaskState = types.Task, types.TaskState
    TransportProtocol = types.TransportProtocol
    server = start_server("wsgi:app", workers=2, auth="key")
    key = server.headers["Authorization"].split(" ", 1)[1]
    sent_auth, statuses = [], []

    async def on_request(request):
        sent_auth.append(request.headers.get("Authorization"))

    async def on_response(response):
        await response.aread()
        check_answer(response.status_code, response.json())
        statuses.append(response.status_code)

    async def scenario():
        async with httpx.AsyncClient(timeout=30, event_hooks={
                "request": [on_request], "response": [on_response]}) as http:
            card = await A2ACardResolver(
                http, server.url + "/api/v1/agents/echo").get_agent_card()
            assert card.security and card.security_schemes
            config = ClientConfig(streaming=False, httpx_client=http,
                                  supported_transports=[TransportProtocol.jsonrpc])
            factory = ClientFactory(config)

            credentials = KeyForBearer(key, card)
            client = factory.create(card, interceptors=[AuthInterceptor(credentials)])
            events = [e async for e in client.send_message(_message("with key"))]
            assert len(events) == 1
            task, update = events[0]
            assert isinstance(task, Task) and update is None
            assert task.status.state == TaskState.completed
            assert task.artifacts[0].parts[0].root.text == "with key"
            assert sent_auth[-1] == "Bearer " + key and "bearer" in credentials.asked

            for interceptors in ([], [AuthInterceptor(KeyForBearer("a2a_wrong", card))]):
                client = factory.create(card, interceptors=interceptors)
                with pytest.raises(A2AClientHTTPError) as refused:
                    async for _ in client.send_message(_message("no key")):
                        pass
                assert refused.value.status_code == 401

        # The other way the SDK can carry a key: default headers of its client.
        async with httpx.AsyncClient(timeout=30, headers=bearer(key)) as http:
            config = ClientConfig(streaming=False, httpx_client=http,
                                  supported_transports=[TransportProtocol.jsonrpc])
            client = ClientFactory(config).create(card)
            [(task, _)] = [e async for e in client.send_message(_message("headers"))]
            assert task.status.state == TaskState.completed

    asyncio.run(scenario())
    assert statuses == [200, 200, 401, 401]
    assert sent_auth[0] is None  # the public card was read without credentials
