"""HTTP for the client: one urllib3 pool per client (thread-safe, connections
reused), no retry of its own, and bounds on what the far side can make it
do: each exchange has a deadline (connect to last byte: every socket read
gets only the time left, so a server dripping a byte at a time cannot hold
the caller past it) and an answer is read in chunks, counted, and dropped
past ``max_answer_bytes`` (``AnswerTooLarge``), whether its length was
declared or not.

A failure is sorted by what it tells about the request: ``NotSent`` (the
connection was never made: sending again is always safe) or ``Lost`` (the
request may have reached the agent: a read timeout, a connection dropped
before the answer). Which of them is retried is the client's decision.
"""

import http.client
import io
import json
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Union

try:
    import urllib3
    from urllib3.exceptions import (
        ConnectTimeoutError, HTTPError, MaxRetryError, ProtocolError,
        ReadTimeoutError,
    )
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
except ImportError:  # the extra is missing: stdlib_transport's Http, below
    urllib3 = None  # type: ignore[assignment]
    # Stand-ins, so that the classes below are defined (and never used).
    HTTPConnection = HTTPSConnection = object  # type: ignore[assignment,misc]
    HTTPConnectionPool = HTTPSConnectionPool = object  # type: ignore[assignment,misc]

from .errors import AnswerTooLarge

USER_AGENT = "a2a_flask-client"
#: The default bound of one answer's body.
MAX_ANSWER_BYTES = 16 * 1024 * 1024
_CHUNK = 64 * 1024
#: The deadline of the exchange the current thread is in (urllib3 makes the
#: response object deep inside its pool; this is how the deadline gets there).
_exchange = threading.local()


class NotSent(Exception):
    """The request never reached the agent (no connection)."""


class Lost(Exception):
    """The request may have reached the agent; no answer came back."""


@dataclass
class Answer:
    status: int
    headers: Mapping[str, str]
    data: bytes

    def json(self) -> Any:
        """The body as JSON, or None when it is not JSON."""
        try:
            return json.loads(self.data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            # RecursionError: deep nesting (the far side chooses the depth).
            return None


class BaseHttp:
    """What both transports' ``Http`` share: the timeouts, the headers of
    every request, the bounded read of a body. Each sends one exchange its
    own way (``_send``).

    ``connect_timeout`` in seconds; ``timeout``: the whole exchange, connect
    to last byte; ``max_answer_bytes``: the largest body read.
    """

    def __init__(self, connect_timeout: float, timeout: float,
                 max_answer_bytes: int) -> None:
        self.connect_timeout, self.total_timeout = connect_timeout, timeout
        self.max_answer_bytes = max_answer_bytes

    def deadline(self) -> float:
        """The deadline of an exchange (or call) starting now."""
        return time.monotonic() + self.total_timeout

    def request(self, method: str, url: str, body: Union[bytes, None] = None,
                headers: Optional[Mapping[str, str]] = None,
                deadline: Optional[float] = None) -> Answer:
        """One exchange, over by ``deadline`` (``time.monotonic()``; default:
        ``timeout`` from now); raises ``NotSent`` or ``Lost`` when there is
        no answer, ``AnswerTooLarge`` for a body over ``max_answer_bytes``."""
        all_headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        all_headers.update(headers or {})
        return self._send(method, url, body, all_headers,
                          self.deadline() if deadline is None else deadline)

    def _send(self, method: str, url: str, body: Union[bytes, None],
              headers: Dict[str, str], deadline: float) -> Answer:
        raise NotImplementedError  # pragma: no cover

    def _body(self, response: Any, url: str) -> bytes:
        """The body of ``response`` (either library's: ``headers``, ``read``,
        ``close``), ``AnswerTooLarge`` as soon as it is over the bound."""
        limit = self.max_answer_bytes
        declared = response.headers.get("Content-Length")
        if declared is not None and declared.strip().isdigit() and int(declared) > limit:
            response.close()  # not drained: the rest is never read
            raise AnswerTooLarge(url, limit, response.status, int(declared))
        chunks: List[bytes] = []
        size = 0
        while True:
            chunk = response.read(_CHUNK)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > limit:
                response.close()
                raise AnswerTooLarge(url, limit, response.status)
            chunks.append(chunk)


class _DeadlineReader(io.RawIOBase):
    """A socket's reader giving each read only the time left until the
    exchange's deadline: http.client reads a line or a body with as many
    socket reads as it takes, each of which a plain timeout bounds alone."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__()
        self._sock, self._deadline = sock, deadline
        self._raw = sock.makefile("rb", buffering=0)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> Optional[int]:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("timed out (the call's timeout ran out)")
        self._sock.settimeout(left)
        return self._raw.readinto(buffer)

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class _DeadlineResponse(http.client.HTTPResponse):
    def __init__(self, sock: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        deadline = getattr(_exchange, "deadline", None)
        if deadline is not None:
            self.fp.close()  # http.client's own reader: nothing read from it yet
            self.fp = io.BufferedReader(_DeadlineReader(sock, deadline))


class _Connection(HTTPConnection):
    response_class = _DeadlineResponse


class _TlsConnection(HTTPSConnection):
    response_class = _DeadlineResponse


class _Pool(HTTPConnectionPool):
    ConnectionCls = _Connection


class _TlsPool(HTTPSConnectionPool):
    ConnectionCls = _TlsConnection


class Http(BaseHttp):
    """A pool of keep-alive connections (urllib3's); safe to share between
    threads.

    ``connect_timeout`` in seconds; ``timeout``: the whole exchange, connect
    to last byte; ``verify``: check TLS certificates (``ca_certs``: a CA
    bundle path); ``maxsize``: connections kept per host (as many as threads
    that call at once); ``max_answer_bytes``: the largest body read.
    """

    def __init__(self, connect_timeout: float = 5.0, timeout: float = 60.0,
                 verify: bool = True, ca_certs: Optional[str] = None,
                 maxsize: int = 10, max_answer_bytes: int = MAX_ANSWER_BYTES) -> None:
        super().__init__(connect_timeout, timeout, max_answer_bytes)
        options: Dict[str, Any] = {"cert_reqs": "CERT_REQUIRED" if verify else "CERT_NONE"}
        if ca_certs:
            options["ca_certs"] = ca_certs
        self.pool = urllib3.PoolManager(num_pools=20, maxsize=maxsize, block=False,
                                        retries=False, **options)
        self.pool.pool_classes_by_scheme = {"http": _Pool, "https": _TlsPool}

    def _send(self, method: str, url: str, body: Union[bytes, None],
              headers: Dict[str, str], deadline: float) -> Answer:
        left = deadline - time.monotonic()
        if left <= 0:
            raise NotSent("not sent to %s: the call's timeout ran out" % url)
        timeout = urllib3.Timeout(connect=min(self.connect_timeout, left), read=left)
        _exchange.deadline = deadline
        try:
            response = self.pool.request(method, url, body=body, headers=headers,
                                         timeout=timeout, retries=False,
                                         redirect=False, preload_content=False)
            try:
                data = self._body(response, url)
            finally:
                response.release_conn()
        except MaxRetryError as exc:  # urllib3 wraps some errors even unretried
            raise _sorted(exc.reason or exc, url) from exc
        except HTTPError as exc:
            raise _sorted(exc, url) from exc
        finally:
            _exchange.deadline = None
        return Answer(response.status, response.headers, data)

    def close(self) -> None:
        self.pool.clear()


def _sorted(exc: BaseException, url: str) -> Exception:
    if isinstance(exc, ConnectTimeoutError):  # NewConnectionError is one too
        return NotSent("could not connect to %s: %s" % (url, exc))
    if isinstance(exc, (ReadTimeoutError, ProtocolError)):
        return Lost("no answer from %s: %s" % (url, exc))
    return Lost("%s: %s" % (url, exc))


if urllib3 is None:
    # Imported last: it takes the names above from this module.
    from .stdlib_transport import Http  # noqa: F401,F811,E402 (the module's Http)
