"""a2a_flask.client against a hostile server: a raw HTTP server in this
file (a thread per connection on 127.0.0.1) that answers what an attacker
would. The client must stay within what its caller set (``timeout`` for the
whole call, ``max_answer_bytes``), raise only its documented errors, and
send its credentials only to the origin the card came from.

Each server caps what it sends (bytes, seconds), so that a client without
these bounds fails the test in seconds instead of reading for ever.
"""

import json
import socketserver
import threading
import time

import pytest

from a2a_flask.client import (
    AmbiguousOutcome, AnswerTooLarge, CardError, Client, ClientCredentials,
    ClientError, TransportError,
)
from a2a_flask.client import client as client_module
from a2a_flask.client import stdlib_transport

KEY = "hostile-test-key"
MiB = 1024 * 1024
TASK = {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}


class _Handler(socketserver.StreamRequestHandler):
    def handle(self):
        line = self.rfile.readline(65537)
        if not line:
            return
        method, path = line.decode("latin-1").split(" ")[:2]
        headers = {}
        while True:
            header = self.rfile.readline(65537).decode("latin-1").strip()
            if not header:
                break
            name, _, value = header.partition(":")
            headers[name.strip().lower()] = value.strip()
        body = self.rfile.read(int(headers.get("content-length") or 0))
        self.server.seen.append((method, path, headers, body))
        try:
            self.server.behave(self, method, path, body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading: what is wanted

    def answer(self, status, body, headers=()):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        head = ["HTTP/1.1 %s" % status, "Content-Type: application/json",
                "Content-Length: %d" % len(data), "Connection: close"]
        head.extend(headers)
        self.wfile.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)

    def rpc(self, result, body):
        request = json.loads(body or b"{}")
        self.answer("200 OK", {"jsonrpc": "2.0", "id": request.get("id"),
                               "result": result})


class Hostile(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, behave):
        self.behave = behave
        self.seen = []
        super().__init__(("127.0.0.1", 0), _Handler)
        self.url = "http://127.0.0.1:%d" % self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def card(self, **extra):
        """A 1.0 JSON-RPC card whose interface is ``/a2a`` here."""
        return dict({"name": "hostile", "supportedInterfaces": [
            {"url": self.url + "/a2a", "protocolBinding": "JSONRPC",
             "protocolVersion": "1.0"}], "capabilities": {}}, **extra)


@pytest.fixture(autouse=True, params=["urllib3", "stdlib"])
def transport(request, monkeypatch):
    """Every test here runs on both transports: urllib3's (the ``client``
    extra) and the standard library's, which a plain install uses; both
    must keep the same bounds."""
    if request.param == "stdlib":
        monkeypatch.setattr(client_module, "Http", stdlib_transport.Http)
    return request.param


@pytest.fixture
def hostile():
    started = []

    def start(behave):
        server = Hostile(behave)
        started.append(server)
        return server

    yield start
    for server in started:
        server.shutdown()
        server.server_close()


def endless(handler, head, piece, cap):
    """Write ``head``, then ``piece`` again and again, up to ``cap`` bytes."""
    handler.wfile.write(head)
    sent = 0
    while sent < cap:
        handler.wfile.write(piece)
        sent += len(piece)


# -- the size of an answer ----------------------------------------------------

def test_a_declared_huge_body_is_refused_unread(hostile):
    def behave(handler, method, path, body):
        endless(handler, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n" % (2 * 1024 * MiB), b"[" * MiB, 40 * MiB)

    server = hostile(behave)
    agent = Client(card=server.card(), retries=0)
    started = time.monotonic()
    with pytest.raises(AnswerTooLarge) as raised:
        agent.get("t1")
    assert time.monotonic() - started < 5
    assert (raised.value.limit, raised.value.declared, raised.value.status) == (
        16 * MiB, 2 * 1024 * MiB, 200)
    assert isinstance(raised.value, TransportError)
    assert "max_answer_bytes" in str(raised.value)


def test_an_endless_chunked_body_is_cut_at_the_limit(hostile):
    def behave(handler, method, path, body):
        piece = b"%x\r\n%s\r\n" % (64 * 1024, b" " * 64 * 1024)
        endless(handler, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n", piece, 40 * MiB)

    server = hostile(behave)
    agent = Client(card=server.card(), retries=0)  # the default limit, 16 MiB
    with pytest.raises(AnswerTooLarge) as raised:
        agent.get("t1")
    assert (raised.value.limit, raised.value.declared) == (16 * MiB, None)
    # A send it carried reached the agent: not taken for a lost one.
    with pytest.raises(AnswerTooLarge):
        agent.send("hello")
    assert len(server.seen) == 2


def test_the_limit_is_the_callers(hostile):
    task = dict(TASK, metadata={"pad": "x" * (MiB // 2)})
    server = hostile(lambda handler, method, path, body: handler.rpc(task, body))
    assert Client(card=server.card(), max_answer_bytes=MiB).get(
        "t1").metadata["pad"] == "x" * (MiB // 2)
    with pytest.raises(AnswerTooLarge) as raised:
        Client(card=server.card(), max_answer_bytes=MiB // 4, retries=0).get("t1")
    assert raised.value.limit == MiB // 4
    assert raised.value.declared > MiB // 2  # the Content-Length it sent


# -- the whole call's time ------------------------------------------------------

def drip(handler, data, every=2.0, cap=12.0):
    """Send ``data`` a byte every ``every`` seconds, for ``cap`` seconds."""
    started = time.monotonic()
    for byte in data:
        if time.monotonic() - started > cap:
            return
        handler.wfile.write(bytes([byte]))
        handler.wfile.flush()
        time.sleep(every)


@pytest.mark.parametrize("where", ["head", "body"])
def test_a_dripping_server_cannot_hold_a_call_past_its_timeout(hostile, where):
    answer = json.dumps({"jsonrpc": "2.0", "id": 1, "result": TASK}).encode()
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(answer))

    def behave(handler, method, path, body):
        if where == "head":
            drip(handler, head + answer)
        else:
            handler.wfile.write(head)
            handler.wfile.flush()
            drip(handler, answer)

    server = hostile(behave)
    # A read retried: the retries are inside the call's timeout too.
    agent = Client(card=server.card(), timeout=5, backoff=0.1)
    started = time.monotonic()
    with pytest.raises(TransportError) as raised:
        agent.get("t1")
    elapsed = time.monotonic() - started
    assert 4.5 <= elapsed < 5 + 2
    assert "timed out" in str(raised.value) or "timeout" in str(raised.value)
    # A send: its outcome unknown, as for any lost answer.
    started = time.monotonic()
    with pytest.raises(AmbiguousOutcome):
        agent.send("hello")
    assert time.monotonic() - started < 5 + 2


# -- what the answer says ---------------------------------------------------------

def test_deep_nesting_is_a_transport_error(hostile):
    deep = b"[" * 100000 + b"]" * 100000
    server = hostile(lambda handler, method, path, body: handler.answer(
        "200 OK", b'{"jsonrpc": "2.0", "id": 1, "result": %s}' % deep))
    agent = Client(card=server.card(), retries=0)
    with pytest.raises(TransportError) as raised:
        agent.get("t1")
    assert type(raised.value) is TransportError
    assert "Not a JSON-RPC answer" in str(raised.value)


def test_a_deeply_nested_card_is_no_card(hostile):
    deep = b"{\"name\": " + b"[" * 100000 + b"]" * 100000 + b"}"
    server = hostile(lambda handler, method, path, body: handler.answer("200 OK", deep))
    with pytest.raises(CardError) as raised:
        Client(server.url, retries=0).get("t1")
    assert "No Agent Card" in str(raised.value)


MALFORMED = {
    "a string for the task": "a task",
    "a string for its status": {"id": "t1", "contextId": "c1", "status": "done"},
    "a list for its state": {"id": "t1", "status": {"state": ["completed"]}},
    "an object for its id": {"id": {"x": 1}, "contextId": "c1", "status": {}},
    "a string for a part": {"id": "t1", "contextId": "c1", "status": {
        "state": "TASK_STATE_COMPLETED", "message": {
            "messageId": "m", "role": "ROLE_AGENT", "parts": ["kind"]}}},
    "a number for the artifacts": dict(TASK, artifacts=5),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_task_is_a_transport_error(hostile, case):
    server = hostile(lambda handler, method, path, body: handler.rpc(
        MALFORMED[case], body))
    agent = Client(card=server.card(), retries=0)
    with pytest.raises(TransportError) as raised:
        agent.get("t1")
    assert type(raised.value) is TransportError
    assert "Not an A2A answer" in str(raised.value)


def test_a_malformed_extended_card_and_rest_error_are_transport_errors(hostile):
    def behave(handler, method, path, body):
        if path.startswith("/rest/extendedAgentCard"):
            handler.answer("200 OK", ["not", "a", "card"])
        else:  # an ErrorInfo whose reason is no string
            handler.answer("404 Not Found", {"error": {
                "code": 404, "message": "no", "details": [{
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": [1]}]}})

    server = hostile(behave)
    card = {"name": "hostile", "supportedInterfaces": [
        {"url": server.url + "/rest", "protocolBinding": "HTTP+JSON",
         "protocolVersion": "1.0"}]}
    agent = Client(card=card, retries=0)
    with pytest.raises(TransportError):
        agent.extended_card()
    with pytest.raises(TransportError):
        agent.get("t1")


def test_a_malformed_card_is_a_card_error(hostile):
    server = hostile(lambda handler, method, path, body: handler.answer(
        "200 OK", {"name": "hostile", "supportedInterfaces": 5, "capabilities": []}))
    with pytest.raises(CardError) as raised:
        Client(server.url, retries=0).get("t1")
    assert "malformed" in str(raised.value)


def test_a_retry_after_of_nan_is_no_delay(hostile):
    server = hostile(lambda handler, method, path, body: handler.answer(
        "429 Too Many Requests", {"error": "slow down"}, ["Retry-After: nan"]))
    agent = Client(card=server.card(), retries=1, backoff=0.05)
    with pytest.raises(ClientError):
        agent.get("t1")
    assert len(server.seen) == 2


# -- where the credentials go ---------------------------------------------------------

def credentials_seen(server):
    return [headers for _, _, headers, body in server.seen
            if "authorization" in headers or "x-api-key" in headers
            or KEY.encode() in body or any(KEY in v for v in headers.values())]


def test_the_key_is_never_sent_to_an_origin_the_card_names(hostile):
    other = hostile(lambda handler, method, path, body: handler.rpc(TASK, body))
    home = hostile(lambda handler, method, path, body: handler.answer(
        "200 OK", other.card(securitySchemes={"key": {"apiKeySecurityScheme": {
            "location": "header", "name": "X-API-Key"}}})))
    agent = Client(home.url, key=KEY)
    for call in (lambda: agent.get("t1"), lambda: agent.send("hello")):
        with pytest.raises(CardError) as raised:
            call()
        assert "allow_origins=['%s']" % other.url in str(raised.value)
    assert other.seen == []  # not even the message: refused before anything is sent
    assert credentials_seen(home) == []
    # Allowed by the caller: called, with the key.
    allowed = Client(home.url, key=KEY, allow_origins=[other.url + "/"])
    assert allowed.get("t1").state == "completed"
    assert other.seen[-1][2]["x-api-key"] == KEY
    # The same host on another port is another origin, as in a browser.
    assert home.url.rsplit(":", 1)[0] == other.url.rsplit(":", 1)[0]


def test_a_caller_without_credentials_may_call_another_origin(hostile):
    other = hostile(lambda handler, method, path, body: handler.rpc(TASK, body))
    home = hostile(lambda handler, method, path, body: handler.answer(
        "200 OK", other.card()))
    assert Client(home.url).get("t1").state == "completed"
    assert credentials_seen(other) == []


def test_the_client_secret_is_never_sent_to_a_token_endpoint_on_another_origin(hostile):
    other = hostile(lambda handler, method, path, body: handler.answer(
        "200 OK", {"access_token": "stolen", "expires_in": 3600}))
    home = hostile(lambda handler, method, path, body: handler.answer(
        "200 OK", home.card(securitySchemes={"oauth": {"oauth2SecurityScheme": {
            "flows": {"clientCredentials": {"tokenUrl": other.url + "/token"}}}}})))
    agent = Client(home.url, auth=ClientCredentials("client", KEY))
    for _ in range(2):  # the card is read again on the next call: still refused
        with pytest.raises(CardError) as raised:
            agent.get("t1")
        assert "token endpoint" in str(raised.value)
    assert other.seen == []
