"""HTTP for the client with the standard library alone (``http.client``):
what ``transport.Http`` is when urllib3 (the ``client`` extra) is missing,
so that a plain ``pip install`` can call agents (``python -m
a2a_flask.client``).

The same contract as the urllib3 transport: a connect and a read timeout on
every request, no retry and no redirect of its own, keep-alive connections
reused (a few per host, safe to share between threads), and a failure
sorted into ``NotSent`` (no connection was made) or ``Lost`` (the request
may have reached the agent).
"""

import http.client
import select
import ssl
import threading
import urllib.parse
from typing import Dict, List, Mapping, Optional, Tuple, Union

from .transport import USER_AGENT, Answer, Lost, NotSent

_Origin = Tuple[str, str, int]


class Http:
    """Keep-alive connections per origin; safe to share between threads.

    ``connect_timeout``/``read_timeout`` in seconds; ``verify``: check TLS
    certificates (``ca_certs``: a CA bundle path); ``maxsize``: idle
    connections kept per origin.
    """

    def __init__(self, connect_timeout: float = 5.0, read_timeout: float = 60.0,
                 verify: bool = True, ca_certs: Optional[str] = None,
                 maxsize: int = 10) -> None:
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.maxsize = maxsize
        if verify:
            self.tls = ssl.create_default_context(cafile=ca_certs)
        else:
            self.tls = ssl.create_default_context()
            self.tls.check_hostname = False
            self.tls.verify_mode = ssl.CERT_NONE
        self._idle: Dict[_Origin, List[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()

    def request(self, method: str, url: str, body: Union[bytes, None] = None,
                headers: Optional[Mapping[str, str]] = None,
                read_timeout: Optional[float] = None) -> Answer:
        """One exchange; raises ``NotSent`` or ``Lost`` when there is no answer."""
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
        all_headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        all_headers.update(headers or {})
        connection = self._take(origin)
        if connection is None:
            connection = self._connect(origin, url)
        try:
            connection.sock.settimeout(  # type: ignore[union-attr]
                self.read_timeout if read_timeout is None else read_timeout)
            connection.request(method, target, body=body, headers=all_headers)
            response = connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as exc:
            connection.close()
            raise Lost("no answer from %s: %s" % (url, exc or type(exc).__name__)) from exc
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

    def _connect(self, origin: _Origin, url: str) -> http.client.HTTPConnection:
        scheme, host, port = origin
        connection: http.client.HTTPConnection
        if scheme == "https":
            connection = http.client.HTTPSConnection(
                host, port, timeout=self.connect_timeout, context=self.tls)
        else:
            connection = http.client.HTTPConnection(host, port,
                                                    timeout=self.connect_timeout)
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

