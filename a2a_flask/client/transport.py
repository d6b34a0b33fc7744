"""HTTP for the client: one urllib3 pool per client (thread-safe, connections
reused), a connect and a read timeout on every request, no retry of its own.

A failure is sorted by what it tells about the request: ``NotSent`` (the
connection was never made: sending again is always safe) or ``Lost`` (the
request may have reached the agent: a read timeout, a connection dropped
before the answer). Which of them is retried is the client's decision.
"""

import json
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Union

try:
    import urllib3
    from urllib3.exceptions import (
        ConnectTimeoutError, HTTPError, MaxRetryError, ProtocolError,
        ReadTimeoutError,
    )
except ImportError:  # the extra is missing: stdlib_transport's Http, below
    urllib3 = None  # type: ignore[assignment]

USER_AGENT = "a2a_flask-client"


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
        except (UnicodeDecodeError, ValueError):
            return None


class Http:
    """A pool of keep-alive connections; safe to share between threads.

    ``connect_timeout``/``read_timeout`` in seconds; ``verify``: check TLS
    certificates (``ca_certs``: a CA bundle path); ``maxsize``: connections
    kept per host (as many as threads that call at once).
    """

    def __init__(self, connect_timeout: float = 5.0, read_timeout: float = 60.0,
                 verify: bool = True, ca_certs: Optional[str] = None,
                 maxsize: int = 10) -> None:
        self.timeout = urllib3.Timeout(connect=connect_timeout, read=read_timeout)
        options: Dict[str, Any] = {"cert_reqs": "CERT_REQUIRED" if verify else "CERT_NONE"}
        if ca_certs:
            options["ca_certs"] = ca_certs
        self.pool = urllib3.PoolManager(num_pools=20, maxsize=maxsize, block=False,
                                        retries=False, timeout=self.timeout, **options)

    def request(self, method: str, url: str, body: Union[bytes, None] = None,
                headers: Optional[Mapping[str, str]] = None,
                read_timeout: Optional[float] = None) -> Answer:
        """One exchange; raises ``NotSent`` or ``Lost`` when there is no answer."""
        timeout = self.timeout if read_timeout is None else urllib3.Timeout(
            connect=self.timeout.connect_timeout, read=read_timeout)
        all_headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        all_headers.update(headers or {})
        try:
            response = self.pool.request(method, url, body=body, headers=all_headers,
                                         timeout=timeout, retries=False,
                                         redirect=False, preload_content=True)
        except MaxRetryError as exc:  # urllib3 wraps some errors even unretried
            raise _sorted(exc.reason or exc, url) from exc
        except HTTPError as exc:
            raise _sorted(exc, url) from exc
        return Answer(response.status, response.headers, response.data)

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
    from .stdlib_transport import Http  # type: ignore[assignment,misc] # noqa: F811,E402
