"""What the A2A client raises: the agent's error answers as the package's
own wire errors (``a2a_flask.errors``: the classes the server raises,
carrying the A2A code, here with the answer's HTTP status, reason and data),
and the failures of the client's own making (``ClientError``: no answer, an
ambiguous one, no usable card, a wait that ran out).

``error_for`` is the one place an error answer (a JSON-RPC ``error`` object
of either version, or a 1.0 HTTP+JSON ``google.rpc.Status``) becomes an
exception; ``a2a_flask.testing`` raises the same classes.
"""

from typing import Any, Dict, Optional, Tuple, Type

from .. import errors
from ..errors import A2AError


def _wire_classes() -> Dict[str, Type[A2AError]]:
    return {name: cls for name, cls in vars(errors).items()
            if isinstance(cls, type) and issubclass(cls, A2AError)}


#: The class of a JSON-RPC code: the one that defines it (subclasses that
#: only differ by HTTP status are ``_BY_STATUS``'s). -32000 is any server's
#: own error: QueueFullError only by its status or reason.
_BY_CODE: Dict[int, Type[A2AError]] = {
    cls.code: cls for cls in _wire_classes().values()
    if "code" in vars(cls) and cls.code != errors.QueueFullError.code}
#: google.rpc.ErrorInfo.reason (A2A 1.0 section 11.6) -> its class.
_BY_REASON: Dict[str, Type[A2AError]] = {
    str(cls.reason): cls for cls in _wire_classes().values()
    if vars(cls).get("reason")}
#: The errors of one code that the HTTP status tells apart: the refusals
#: before a method runs (-32600), and the queue's -32000.
_BY_STATUS: Dict[Tuple[int, int], Type[A2AError]] = {
    (-32600, 401): errors.UnauthenticatedError, (-32600, 403): errors.ForbiddenError,
    (-32600, 404): errors.AgentNotFoundError, (-32600, 413): errors.PayloadTooLargeError,
    (-32600, 429): errors.TooManyRequestsError, (-32000, 429): errors.QueueFullError}
#: The code of an HTTP+JSON error without an ErrorInfo, by HTTP status.
STATUS_CODES = {400: -32602, 401: -32600, 403: -32600, 404: -32001,
                405: -32601, 413: -32600, 429: -32600, 501: -32004}


class ClientError(Exception):
    """Base class of the client's own failures (the agent's error answers
    are ``a2a_flask.errors.A2AError``)."""


class TokenError(ClientError):
    """No bearer token could be had for the call: no token URL, or the token
    endpoint refused the client credentials (``status``: its HTTP status)."""

    def __init__(self, message: str, status: Optional[int] = None) -> None:
        self.status = status
        super().__init__(message)


class TransportError(ClientError):
    """No answer from the agent (it could not be reached, or the answer was
    not A2A), after the retries that were safe."""

    def __init__(self, message: str, status: Optional[int] = None) -> None:
        self.status = status
        super().__init__(message)


class AnswerTooLarge(TransportError):
    """The answer's body was over the client's ``max_answer_bytes``
    (``limit``): the client stopped reading it (``declared``: the length the
    answer announced, when it did). Not retried: the agent would answer
    the same; a send it carried did reach the agent."""

    def __init__(self, url: str, limit: int, status: Optional[int] = None,
                 declared: Optional[int] = None) -> None:
        self.limit, self.declared = limit, declared
        super().__init__("The answer from %s is over max_answer_bytes (%d bytes%s); "
                         "it was not read." % (
                             url, limit, "" if declared is None
                             else ": it declares %d" % declared), status)


class AmbiguousOutcome(TransportError):
    """A message was sent, but whether the agent ran it is unknown (a timeout,
    a dropped connection, an HTTP 5xx), and the agent does not declare that
    it runs a ``messageId`` once, so the client did not send it again.
    ``message_id`` is the id it was sent with: sending the same message with
    it again is the caller's decision."""

    def __init__(self, message: str, message_id: str,
                 status: Optional[int] = None) -> None:
        self.message_id = message_id
        super().__init__(message, status)


class CardError(ClientError):
    """No usable Agent Card at the URL, no interface this client speaks, or a
    signature that does not verify."""


class WaitTimeout(ClientError):
    """The task was not done by the deadline; ``task`` is the last seen."""

    def __init__(self, message: str, task: Any) -> None:
        self.task = task
        super().__init__(message)


def _reason(details: Any) -> Optional[str]:
    for item in details if isinstance(details, list) else ():
        if isinstance(item, dict) and str(item.get("@type", "")).endswith(
                "google.rpc.ErrorInfo"):
            return item.get("reason")
    return None


def error_for(error: Dict[str, Any], status: int, rest: bool = False) -> A2AError:
    """The exception for one error answer: a JSON-RPC ``error`` object, or
    (``rest``) the ``error`` member of a 1.0 HTTP+JSON error body."""
    message = str(error.get("message") or "error without a message")
    if rest:
        data = error.get("details")
        reason = _reason(data)
        known = _BY_REASON.get(reason or "")
        code = known.code if known else STATUS_CODES.get(status, -32603)
    else:
        data = error.get("data")
        reason = _reason(data)
        given = error.get("code")
        code = given if isinstance(given, int) else -32603
    return wire_class(code, status, reason).from_answer(code, message, data,
                                                          status, reason)


def wire_class(code: int, status: int, reason: Optional[str] = None) -> Type[A2AError]:
    """The class of an error answer: by its reason, else its code and HTTP
    status (any code with 401/403 is a refusal of the credentials)."""
    if status in (401, 403):
        code = errors.InvalidRequestError.code
    # The reason first: the quota's and the queue's -32000 are both 429s.
    known = _BY_REASON.get(reason or "")
    if known is not None and known.code == code:
        return known
    found = _BY_STATUS.get((code, status))
    if found is not None:
        return found
    return _BY_CODE.get(code, A2AError)


def rpc_result(status: int, body: Any, data: bytes = b"") -> Any:
    """The ``result`` of a JSON-RPC answer (``body`` decoded, ``data`` as
    received), or the error it carries raised."""
    if isinstance(body, dict):
        if isinstance(body.get("error"), dict):
            raise error_for(body["error"], status)
        if "result" in body:
            return body["result"]
        if isinstance(body.get("code"), int) and isinstance(body.get("message"), str):
            raise error_for(body, status)  # a refusal before the envelope
    if status in (401, 403):
        raise refusal(status, body, data)
    raise TransportError("Not a JSON-RPC answer (HTTP %d): %r" % (status, data[:200]),
                         status)


def refusal(status: int, body: Any, data: bytes) -> A2AError:
    """A 401/403 that is not an A2A answer (a proxy's, a middleware's) as the
    refusal it is."""
    code = errors.InvalidRequestError.code
    return wire_class(code, status).from_answer(code, refusal_sentence(body, data),
                                                None, status)


def refusal_sentence(body: Any, data: bytes) -> str:
    """What a non-A2A refusal (a proxy's, a middleware's 401) says."""
    if isinstance(body, dict):
        for key in ("message", "error", "detail"):
            if isinstance(body.get(key), str):
                return body[key]
    return data[:200].decode("utf-8", "replace") or "refused"
