"""What the A2A client raises: one base class, the server's error answers
as exceptions carrying the A2A code, the HTTP status and the data, and the
outcomes of the client's own making (no answer, an ambiguous one, a wait
that ran out).

``error_for`` is the one place an error answer (a JSON-RPC ``error`` object
of either version, or a 1.0 HTTP+JSON ``google.rpc.Status``) becomes an
exception; ``a2a_flask.testing`` raises the same classes.
"""

from typing import Any, Dict, Optional, Type

from ..protocol.errors import ANSWERS

#: google.rpc.ErrorInfo.reason (A2A 1.0 section 11.6) -> the JSON-RPC code:
#: the service's own table, plus the reasons of errors it never answers.
REASON_CODES = {answer.reason: cls.code for cls, answer in ANSWERS.items()
                if answer.reason}
REASON_CODES.update(INVALID_AGENT_RESPONSE=-32006, EXTENSION_SUPPORT_REQUIRED=-32008)
#: The code of an HTTP+JSON error without an ErrorInfo, by HTTP status.
STATUS_CODES = {400: -32602, 401: -32600, 403: -32600, 404: -32001,
                405: -32601, 413: -32600, 429: -32600, 501: -32004}


class ClientError(Exception):
    """Base class of everything ``a2a_flask.client`` raises."""


class A2ACallError(ClientError):
    """The agent answered with an error: ``code`` (the A2A/JSON-RPC code),
    ``message`` (its sentence), ``data`` (its details: the 0.3 ``data``
    object, or the 1.0 list of typed details), ``status`` (the HTTP status)
    and ``reason`` (1.0 ``ErrorInfo.reason``, when given)."""

    code = -32603

    def __init__(self, code: Optional[int], message: str, data: Any = None,
                 status: int = 200, reason: Optional[str] = None) -> None:
        if code is not None:
            self.code = code
        self.message, self.data, self.status, self.reason = (
            message, data, status, reason)
        super().__init__("%s %s (HTTP %d)" % (self.code, message, status))


class InvalidParamsError(A2ACallError):
    code = -32602


class TaskNotFoundError(A2ACallError):
    code = -32001


class TaskNotCancelableError(A2ACallError):
    code = -32002


class UnsupportedOperationError(A2ACallError):
    code = -32004


class ContentTypeNotSupportedError(A2ACallError):
    code = -32005


class VersionNotSupportedError(A2ACallError):
    code = -32009


class AuthenticationError(A2ACallError):
    """The agent refused the credentials (HTTP 401 or 403)."""


_BY_CODE: Dict[int, Type[A2ACallError]] = {
    cls.code: cls for cls in (InvalidParamsError, TaskNotFoundError,
                              TaskNotCancelableError, UnsupportedOperationError,
                              ContentTypeNotSupportedError,
                              VersionNotSupportedError)}


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


def error_for(error: Dict[str, Any], status: int, rest: bool = False) -> A2ACallError:
    """The exception for one error answer: a JSON-RPC ``error`` object, or
    (``rest``) the ``error`` member of a 1.0 HTTP+JSON error body."""
    message = str(error.get("message") or "error without a message")
    if rest:
        data = error.get("details")
        reason = _reason(data)
        code = REASON_CODES.get(reason or "", STATUS_CODES.get(status, -32603))
    else:
        data = error.get("data")
        reason = _reason(data)
        found = error.get("code")
        code = found if isinstance(found, int) else -32603
    if status in (401, 403):
        return AuthenticationError(code, message, data, status, reason)
    return _BY_CODE.get(code, A2ACallError)(code, message, data, status, reason)


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
        raise AuthenticationError(-32600, refusal_sentence(body, data), status=status)
    raise TransportError("Not a JSON-RPC answer (HTTP %d): %r" % (status, data[:200]),
                         status)


def refusal_sentence(body: Any, data: bytes) -> str:
    """What a non-A2A refusal (a proxy's, a middleware's 401) says."""
    if isinstance(body, dict):
        for key in ("message", "error", "detail"):
            if isinstance(body.get(key), str):
                return body[key]
    return data[:200].decode("utf-8", "replace") or "refused"
