"""HTTP for the client with the standard library alone (``http.client``):
what ``transport.Http`` is when urllib3 (the ``client`` extra) is missing,
so that a plain ``pip install`` can call agents (``python -m
a2a_flask.client``).

The same contract as the urllib3 transport, bounds included, so that a
client behaves the same whichever is installed: a deadline for the whole
exchange (every socket read gets only the time left, so a server dripping a
byte at a time cannot hold the caller past it), an answer read in chunks and
dropped past ``max_answer_bytes`` (``AnswerTooLarge``) whether its length
was declared or not, no retry and no redirect of its own, keep-alive
connections reused (a few per host, safe to share between threads), and a
failure sorted into ``NotSent`` (no connection was made) or ``Lost`` (the
request may have reached the agent).
"""

import http.client
import select
import socket
import ssl
import threading
import time
import urllib.parse
from typing import Dict, List, Optional, Tuple, Union

from .errors import AnswerTooLarge
from .transport import (
    MAX_ANSWER_BYTES, Answer, BaseHttp, Lost, NotSent, _DeadlineResponse, _exchange,
)

_Origin = Tuple[str, str, int]


class Http(BaseHttp):
    """Keep-alive connections per origin; safe to share between threads.

    The arguments are ``transport.Http``'s: ``connect_timeout`` in seconds;
    ``timeout``: the whole exchange, connect to last byte; ``verify``: check
    TLS certificates (``ca_certs``: a CA bundle path); ``maxsize``: idle
    connections kept per origin; ``max_answer_bytes``: the largest body read.
    """

    def __init__(self, connect_timeout: float = 5.0, timeout: float = 60.0,
                 verify: bool = True, ca_certs: Optional[str] = None,
                 maxsize: int = 10, max_answer_bytes: int = MAX_ANSWER_BYTES) -> None:
        super().__init__(connect_timeout, timeout, max_answer_bytes)
        self.maxsize = maxsize
        if verify:
            self.tls = ssl.create_default_context(cafile=ca_certs)
        else:
            self.tls = ssl.create_default_context()
            self.tls.check_hostname = False
            self.tls.verify_mode = ssl.CERT_NONE
        self._idle: Dict[_Origin, List[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()

    def _send(self, method: str, url: str, body: Union[bytes, None],
              headers: Dict[str, str], deadline: float) -> Answer:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise NotSent("not an http(s) URL: %s" % url)
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError as exc:  # a port that is not a number
            raise NotSent("%s: %s" % (url, exc)) from exc
        origin = (parts.scheme, parts.hostname, port)
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        connection = self._take(origin)
        if connection is None:
            connection = self._connect(origin, url, deadline)
        _exchange.deadline = deadline  # read by _DeadlineResponse
        try:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("timed out (the call's timeout ran out)")
            connection.sock.settimeout(left)  # the send
            connection.request(method, target, body=body, headers=headers)
            response = connection.getresponse()
            data = self._body(response, url)
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            raise Lost("no answer from %s: %s" % (url, exc or type(exc).__name__)) from exc
        except AnswerTooLarge:
            connection.close()  # the rest of the body is never read
            raise
        finally:
            _exchange.deadline = None
        if response.will_close:
            connection.close()
        else:
            self._give_back(origin, connection)
        # HTTPMessage: its get() ignores case, as urllib3's headers do.
        return Answer(response.status, response.msg, data)  # type: ignore[arg-type]

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                connection.close()

    # -- connections ------------------------------------------------------

    def _connect(self, origin: _Origin, url: str,
                 deadline: float) -> http.client.HTTPConnection:
        scheme, host, port = origin
        left = deadline - time.monotonic()
        if left <= 0:
            raise NotSent("not sent to %s: the call's timeout ran out" % url)
        timeout = min(self.connect_timeout, left)
        connection: http.client.HTTPConnection
        if scheme == "https":
            connection = _TlsConnection(host, port, timeout=timeout, context=self.tls)
        else:
            connection = _Connection(host, port, timeout=timeout)
        try:
            connection.connect()  # the TLS handshake too: nothing is sent yet
        except OSError as exc:
            connection.close()
            raise NotSent("could not connect to %s: %s" % (url, exc)) from exc
        return connection

    def _take(self, origin: _Origin) -> Optional[http.client.HTTPConnection]:
        """An idle connection the server has not closed, or None."""
        while True:
            with self._lock:
                idle = self._idle.get(origin)
                if not idle:
                    return None
                connection = idle.pop()
            if not _dropped(connection):
                return connection
            connection.close()

    def _give_back(self, origin: _Origin, connection: http.client.HTTPConnection) -> None:
        with self._lock:
            idle = self._idle.setdefault(origin, [])
            if len(idle) < self.maxsize:
                idle.append(connection)
                return
        connection.close()


class _Connection(http.client.HTTPConnection):
    response_class = _DeadlineResponse


class _TlsConnection(http.client.HTTPSConnection):
    response_class = _DeadlineResponse


def _dropped(connection: http.client.HTTPConnection) -> bool:
    """Whether an idle connection was closed by the server: readable while
    no answer is due means its end (or bytes nobody asked for). A request
    on such a connection would fail after it may have been sent."""
    sock = connection.sock
    if sock is None:
        return True
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)

