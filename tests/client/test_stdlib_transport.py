"""The standard library's transport of the client (``stdlib_transport``,
what a plain install uses) against a small keep-alive HTTP/1.1 server:
connections reused, one the server closed never used, and each failure
sorted into ``NotSent`` or ``Lost``. tests/client/test_client_server.py runs
the client's calls on it against our service."""

import http.server
import inspect
import socket
import threading
import time

import pytest

from a2a_flask.client import transport
from a2a_flask.client.stdlib_transport import Http
from a2a_flask.client.transport import Lost, NotSent


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive

    def do_GET(self):  # noqa: N802 (http.server's naming)
        self.server.seen.append((self.path, self.client_address[1],
                                 self.headers.get("User-Agent")))
        if self.path == "/slow":
            time.sleep(1)
        body = b'{"path": "%s"}' % self.path.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Retry-After", "3")
        self.send_header("Content-Length", str(len(body)))
        if self.path == "/close":
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def log_message(self, *args):
        pass


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # a client that timed out and went: what the tests do on purpose


@pytest.fixture
def server():
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.seen = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    httpd.url = "http://127.0.0.1:%d" % httpd.server_address[1]
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_an_answer_and_its_headers(server):
    answer = Http().request("GET", server.url + "/a?b=c", headers={"X-Extra": "1"})
    assert (answer.status, answer.json()) == (200, {"path": "/a?b=c"})
    assert answer.headers.get("retry-after") == "3"  # any case, as urllib3's
    assert server.seen[0][2] == "a2a_flask-client"


def test_keep_alive_connections_are_reused(server):
    http = Http()
    for _ in range(3):
        http.request("GET", server.url + "/")
    assert len({port for _, port, _ in server.seen}) == 1


def test_a_connection_the_server_closed_is_not_used_again(server):
    http = Http()
    http.request("GET", server.url + "/close")
    http.request("GET", server.url + "/")
    assert [path for path, _, _ in server.seen] == ["/close", "/"]
    assert len({port for _, port, _ in server.seen}) == 2


def test_an_idle_connection_dropped_by_the_server_is_not_used(server):
    http = Http()
    http.request("GET", server.url + "/")
    [[idle]] = http._idle.values()
    # The server's end goes away while idle (its keep-alive timeout).
    idle.sock.shutdown(socket.SHUT_RD)
    http.request("GET", server.url + "/again")
    assert [path for path, _, _ in server.seen] == ["/", "/again"]


def test_no_connection_is_not_sent():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens there once closed
    with pytest.raises(NotSent, match="could not connect to"):
        Http().request("GET", "http://127.0.0.1:%d/" % port)


def test_it_takes_what_the_urllib3_transport_takes():
    """The client builds either with the same arguments (positionally too):
    a difference is a TypeError only a plain install would meet."""
    assert inspect.signature(Http.__init__) == inspect.signature(
        transport.Http.__init__)
    assert inspect.signature(Http.request) == inspect.signature(
        transport.Http.request)


def test_a_read_timeout_is_lost(server):
    with pytest.raises(Lost, match="no answer from"):
        Http(timeout=0.2).request("POST", server.url + "/slow", body=b"{}")
    # The connection is not kept: its late answer would be read as the next's.
    http = Http(timeout=0.2)
    with pytest.raises(Lost):
        http.request("GET", server.url + "/slow")
    assert not any(http._idle.values())
    assert http.request("GET", server.url + "/next").json() == {"path": "/next"}


def test_a_server_that_hangs_up_before_answering_is_lost():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def hang_up():
        conn, _ = listener.accept()
        conn.recv(65536)
        conn.close()

    threading.Thread(target=hang_up, daemon=True).start()
    try:
        with pytest.raises(Lost):
            Http().request("POST", "http://127.0.0.1:%d/" % listener.getsockname()[1],
                           body=b"{}")
    finally:
        listener.close()
