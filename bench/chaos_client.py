"""Chaos row of issue 32 item 10, for bench/chaos.py: a2a_flask's client
against a hostile server (a raw HTTP server in this process, on 127.0.0.1):
a declared 2 GiB answer, an endless chunked one, a drip of one byte every
2 s to a ``timeout=5`` call, 100,000 nested brackets, and a card naming
another origin for the client's key. One figure line: what each raised,
after how long, the growth of the client's peak RSS, and whether the key
reached the other origin.

    python bench/chaos.py --only C1
"""

import json
import resource
import socketserver
import sys
import threading
import time

from chaos_harness import REPO, free_port

if REPO not in sys.path:  # the client of this checkout, as its servers are
    sys.path.insert(0, REPO)

MiB = 1024 * 1024
KEY = "chaos-client-key"
#: What the endless answers send at most, so that a client without bounds
#: ends too (with its memory grown by about that much).
CAP = 256 * MiB


class _Handler(socketserver.StreamRequestHandler):
    def handle(self):
        line = self.rfile.readline(65537)
        if not line:
            return
        headers = {}
        while True:
            header = self.rfile.readline(65537).decode("latin-1").strip()
            if not header:
                break
            name, _, value = header.partition(":")
            headers[name.strip().lower()] = value.strip()
        self.rfile.read(int(headers.get("content-length") or 0))
        self.server.seen.append(headers)
        try:
            self.server.behave(self)
        except OSError:
            pass


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, behave):
        self.behave, self.seen = behave, []
        super().__init__(("127.0.0.1", free_port()), _Handler)
        self.url = "http://127.0.0.1:%d" % self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def card(self):
        return {"name": "hostile", "capabilities": {}, "supportedInterfaces": [
            {"url": self.url + "/a2a", "protocolBinding": "JSONRPC",
             "protocolVersion": "1.0"}]}

    def stop(self):
        self.shutdown()
        self.server_close()


def _write(handler, data):
    handler.wfile.write(data)
    handler.wfile.flush()


def _huge(handler):
    _write(handler, b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (2048 * MiB))
    for _ in range(CAP // MiB):
        handler.wfile.write(b" " * MiB)


def _chunked(handler):
    _write(handler, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    piece = b"%x\r\n%s\r\n" % (MiB, b" " * MiB)
    for _ in range(CAP // MiB):
        handler.wfile.write(piece)


def _drip(handler):
    started = time.monotonic()
    for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}":
        if time.monotonic() - started > 30:
            return
        _write(handler, bytes([byte]))
        time.sleep(2)


def _deep(handler):
    body = b'{"jsonrpc":"2.0","id":1,"result":%s}' % (b"[" * 100000 + b"]" * 100000)
    _write(handler, b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close"
            b"\r\n\r\n%s" % (len(body), body))


def _peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _case(behave, **options):
    from a2a_flask.client import Client
    server = _Server(behave)
    before, started = _peak_mb(), time.monotonic()
    try:
        Client(card=server.card(), retries=0, **options).get("t1")
        outcome = "no error"
    except BaseException as exc:  # the point: what escapes, whatever it is
        outcome = type(exc).__name__
    finally:
        server.stop()
    took = time.monotonic() - started
    return outcome, took, "%s after %.1f s, +%.0f MB" % (outcome, took, _peak_mb() - before)


def _cross_origin():
    from a2a_flask.client import Client
    other = _Server(lambda handler: None)
    home = _Server(lambda handler: _write(handler, (
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close"
        "\r\nContent-Length: %d\r\n\r\n%s" % (len(json.dumps(other.card())),
                                              json.dumps(other.card()))).encode()))
    try:
        try:
            Client(home.url, key=KEY, retries=0, timeout=3).get("t1")
            outcome = "no error"
        except BaseException as exc:
            outcome = type(exc).__name__
        sent = sum(1 for headers in other.seen if KEY in " ".join(headers.values()))
        return outcome, sent, "%s, the key reached the other origin %d time(s)" % (outcome, sent)
    finally:
        other.stop()
        home.stop()


def c1_client_hostile_server():
    from a2a_flask.client import ClientError
    from a2a_flask.client import errors as client_errors
    documented = {name for name in dir(client_errors)
                  if isinstance(getattr(client_errors, name), type)
                  and issubclass(getattr(client_errors, name), ClientError)}
    huge, chunked = _case(_huge), _case(_chunked)
    drip, deep = _case(_drip, timeout=5), _case(_deep)
    other = _cross_origin()
    # The targets: the answer cut at max_answer_bytes, the call ended
    # by its timeout (a second of slack), only ClientErrors, no key elsewhere.
    checks = {
        "2 GiB refused": huge[0] == "AnswerTooLarge",
        "endless chunked cut": chunked[0] == "AnswerTooLarge",
        "timeout=5 ends by 6 s": drip[1] <= 6.0 and drip[0] in documented,
        "nesting a ClientError": deep[0] in documented,
        "no key to another origin": other[0] in documented and other[1] == 0,
    }
    failed = [name for name, ok in checks.items() if not ok]
    return "; ".join([
        "declared 2 GiB: " + huge[2],
        "endless chunked: " + chunked[2],
        "1 byte / 2 s, timeout=5: " + drip[2],
        "100,000 nested: " + deep[2],
        "card naming another origin: " + other[2],
    ]) + "; " + ("PASS" if not failed else "FAIL (%s)" % ", ".join(failed))


FINDINGS = [
    ("C1", "the client against a hostile server", c1_client_hostile_server),
]
