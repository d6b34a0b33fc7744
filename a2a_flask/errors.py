"""The A2A errors: exception classes carrying their JSON-RPC / A2A code and
1.0 ``ErrorInfo.reason``, one set for the server and the client.

The server raises one of these anywhere above the storage (the storage
raises its own neutral errors, ``storage/errors.py``, which
``protocol/errors.py`` turns into these); how each is answered over
HTTP+JSON (HTTP status, google.rpc code) is ``protocol/errors.py``'s table,
and each binding renders the answer. ``a2a_flask.client`` raises the same
classes for an agent's error answers (``A2AError.from_answer``), so one
``except TaskNotFoundError`` serves both sides.

This module imports nothing of the package: the server and the client both
import it.
"""

from typing import Any, Collection, Dict, Iterable, Optional


#: The most of a caller's own text an answer repeats (a method name, a
#: member, a version): enough to recognise it, never a whole body back.
ECHO_CHARS = 64


def echo(text: object) -> str:
    """``text`` as an answer may repeat it: its first ECHO_CHARS characters,
    then how long it was when longer."""
    text = text if isinstance(text, str) else str(text)
    if len(text) <= ECHO_CHARS:
        return text
    return "%s... (%d characters)" % (text[:ECHO_CHARS], len(text))


class A2AError(Exception):
    """Base class: a JSON-RPC error with a code, a sentence and optional data.

    Raised by the client, ``http_status`` is the answer's and ``reason`` the
    ``ErrorInfo.reason`` it carried (None when it had none); ``data`` is the
    0.3 ``data`` object, or the 1.0 list of typed details."""

    code = -32603
    #: The 1.0 ``ErrorInfo.reason`` (section 11.6: the type, no "Error"), or
    #: None: errors without one of their own (JSON-RPC's, the refusals).
    reason: Optional[str] = None
    default_message = "Internal error."
    #: HTTP status of the answer; JSON-RPC errors are 200 unless said otherwise.
    http_status = 200
    #: Extra HTTP headers of the answer.
    headers: Optional[Dict[str, str]] = None

    def __init__(self, message: Optional[str] = None, data: Any = None,
                 http_status: Optional[int] = None) -> None:
        self.message = message or self.default_message
        self.data = data
        if http_status is not None:
            self.http_status = http_status
        super().__init__(self.message)

    @classmethod
    def from_answer(cls, code: int, message: str, data: Any, http_status: int,
                    reason: Optional[str] = None) -> "A2AError":
        """The error an agent answered, as a client raises it: this class,
        with the answer's code, sentence, data, HTTP status and reason
        (subclasses' own ``__init__`` build the server's answers, so it is
        not called)."""
        exc = cls.__new__(cls)
        exc.code, exc.message, exc.data = code, message, data
        exc.http_status, exc.reason, exc.headers = http_status, reason, None
        Exception.__init__(exc, "%s %s (HTTP %d)" % (code, message, http_status))
        return exc

    def to_dict(self) -> Dict[str, Any]:
        error: Dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ParseError(A2AError):
    """The body is not JSON (-32700)."""

    code = -32700
    default_message = "The request body is not valid JSON."


class InvalidRequestError(A2AError):
    """Not a valid JSON-RPC 2.0 request (-32600); the base of the refusals
    before a method runs."""

    code = -32600
    default_message = "The request is not a valid JSON-RPC 2.0 request."


class MethodNotFoundError(A2AError):
    """No such method in the version asked for (-32601)."""

    code = -32601
    default_message = "Method not found."


class InvalidParamsError(A2AError):
    """The params are wrong (-32602); ``data.field`` names the first bad one."""

    code = -32602
    default_message = "Invalid params."


class InternalError(A2AError):
    """The service failed (-32603); the sentence names no internals."""

    code = -32603
    default_message = "Internal error."


class TaskNotFoundError(A2AError):
    """No task of that id for this caller and agent (-32001)."""

    reason = "TASK_NOT_FOUND"
    code = -32001
    default_message = "Task not found."


class TaskNotCancelableError(A2AError):
    """The task is in a terminal state (-32002)."""

    reason = "TASK_NOT_CANCELABLE"
    code = -32002
    default_message = "Task cannot be canceled."


class PushNotificationNotSupportedError(A2AError):
    """Push notifications are not offered (-32003)."""

    reason = "PUSH_NOTIFICATION_NOT_SUPPORTED"
    code = -32003
    default_message = (
        "Push notifications are not supported by this agent; poll tasks/get instead."
    )


class UnsupportedOperationError(A2AError):
    """An A2A operation this service does not offer (-32004): streaming."""

    reason = "UNSUPPORTED_OPERATION"
    code = -32004
    default_message = "This operation is not supported."


class ContentTypeNotSupportedError(A2AError):
    """The agent cannot take or give this content (-32005)."""

    reason = "CONTENT_TYPE_NOT_SUPPORTED"
    code = -32005
    default_message = "The agent cannot take this kind of content."


class InvalidAgentResponseError(A2AError):
    """The agent's answer is not valid A2A (-32006); this service never
    answers it, a client may receive it."""

    code = -32006
    reason = "INVALID_AGENT_RESPONSE"
    default_message = "The agent gave an answer that is not valid A2A."


class ExtendedAgentCardNotConfiguredError(A2AError):
    """No extended card for this agent or caller (-32007)."""

    reason = "EXTENDED_AGENT_CARD_NOT_CONFIGURED"
    code = -32007
    default_message = "This agent has no authenticated extended card."


# Refusals before the method runs: HTTP status other than 200, code -32600.


class UnauthenticatedError(InvalidRequestError):
    """No credentials, or wrong ones: HTTP 401 with a bare error object and
    a challenge naming what the service accepts."""

    http_status = 401
    headers = {"WWW-Authenticate": 'Basic realm="a2a", Bearer realm="a2a"'}
    default_message = "Authentication required: send an API key or HTTP Basic credentials."


class ForbiddenError(InvalidRequestError):
    """Valid credentials that may not reach this agent: HTTP 403."""

    http_status = 403
    default_message = "These credentials may not talk to this agent."


class NotAnOperatorError(ForbiddenError):
    """Valid credentials that are not an operator's, on the operator's page:
    HTTP 403."""

    default_message = (
        "These credentials are not an operator's: the operator's page needs "
        "a key made with `flask a2a keys create --operator`, a user made with "
        "`flask a2a users create --operator`, or a host session its "
        "session_operator hook names an operator.")


class OperatorActionError(InvalidRequestError):
    """An action of the operator's page refused (no such task: 404; a task
    already ended: 409; a malformed request: 400); nothing changed."""

    http_status = 400
    default_message = "The action is malformed."


def bearer_challenge(error: str, description: str,
                     scope: Optional[Iterable[str]] = None) -> str:
    """An RFC 6750 ``WWW-Authenticate`` value (section 3): its quoted strings
    may not hold a quote or a backslash."""
    clean = "".join(c for c in description if c not in '"\\' and " " <= c <= "~")
    challenge = 'Bearer realm="a2a", error="%s", error_description="%s"' % (
        error, clean)
    if scope:
        challenge += ', scope="%s"' % " ".join(sorted(scope))
    return challenge


class InvalidTokenError(UnauthenticatedError):
    """A bearer access token refused: expired, forged, not for this service
    (RFC 6750 ``invalid_token``, HTTP 401)."""

    default_message = "The access token is not valid."

    def __init__(self, message: Optional[str] = None, data: Any = None) -> None:
        super().__init__(message, data)
        self.headers = {"WWW-Authenticate": bearer_challenge("invalid_token",
                                                             self.message)}


class InsufficientScopeError(ForbiddenError):
    """A valid access token without a scope the agent requires (RFC 6750
    ``insufficient_scope``, HTTP 403)."""

    def __init__(self, message: str, required: Collection[str]) -> None:
        super().__init__(message, data={"requiredScopes": " ".join(sorted(required))})
        self.headers = {"WWW-Authenticate": bearer_challenge(
            "insufficient_scope", self.message, required)}


class AgentNotFoundError(InvalidRequestError):
    """No reachable agent of that name: HTTP 404."""

    http_status = 404
    default_message = "No agent of that name can be talked to here."


def agent_not_found(name: str) -> AgentNotFoundError:
    """The answer to a call of no agent ``name`` (or of one not served to
    the tenant the call names: the same words)."""
    return AgentNotFoundError(
        "No agent named %r can be talked to here." % echo(name),
        data={"agent": echo(name)})


class PayloadTooLargeError(InvalidRequestError):
    """The body is over the size limit: HTTP 413, unread."""

    http_status = 413
    default_message = "The request body is larger than this service accepts."


#: The one sentence of an unexpected failure: it names no internals (the log
#: has them).
SERVICE_FAILED = "Internal error: the service could not answer this request."


def service_failed(http_status: Optional[int] = None) -> "InternalError":
    """The answer to an unexpected failure (the log has what happened)."""
    return InternalError(SERVICE_FAILED, http_status=http_status)


class SchemaOutdatedError(InternalError):
    """A2A_AUTO_MIGRATE=0 and the database is not at this package's schema."""

    http_status = 503
    default_message = ("The database schema is out of date: run "
                       "`flask a2a db upgrade`.")


class IdentityProviderUnavailableError(InternalError):
    """The OpenID provider could not be reached to check a bearer token: HTTP
    503; API keys and the other ways in work all the same."""

    reason = "IDENTITY_PROVIDER_UNAVAILABLE"
    http_status = 503
    default_message = ("identity provider unavailable: the bearer token cannot "
                       "be checked now. The call may be retried.")
    headers = {"Retry-After": "5"}


class TooManyRequestsError(InvalidRequestError):
    """Too many failed logins from one address or for one user: HTTP 429."""

    http_status = 429
    default_message = "Too many failed attempts; wait before trying again."

    def __init__(self, message: Optional[str] = None, retry_after: int = 60) -> None:
        super().__init__(message, data={"retryAfter": retry_after})
        self.headers = {"Retry-After": str(retry_after)}


class QueueFullError(A2AError):
    """The caller already has A2A_QUEUE_LIMIT_PER_CALLER background turns
    waiting for a worker: nothing was stored; HTTP 429 with Retry-After.
    -32000 is JSON-RPC's implementation-defined server error, outside the
    -32001..-32099 that A2A reserves for its own errors."""

    reason = "QUEUE_FULL"
    code = -32000
    http_status = 429
    default_message = ("Too many background turns of this caller are waiting "
                       "for a worker: nothing was stored. Retry later.")

    def __init__(self, message: Optional[str] = None, limit: Optional[int] = None,
                 retry_after: int = 10) -> None:
        super().__init__(message, data={"retryAfter": retry_after,
                                        "queueLimit": limit})
        self.headers = {"Retry-After": str(retry_after)}


class QuotaExceededError(A2AError):
    """The caller's stored tasks already take its storage quota
    (A2A_MAX_STORED_BYTES_PER_CALLER): nothing was stored; HTTP 429. The
    same -32000 as ``QueueFullError``: the 1.0 reason tells them apart."""

    reason = "QUOTA_EXCEEDED"
    code = -32000
    http_status = 429
    default_message = ("This caller's stored tasks take its storage quota: "
                       "nothing was stored.")

    def __init__(self, message: Optional[str] = None, limit: Optional[int] = None,
                 stored: Optional[int] = None, retry_after: int = 60) -> None:
        super().__init__(message, data={"retryAfter": retry_after,
                                        "quotaBytes": limit, "storedBytes": stored})
        self.headers = {"Retry-After": str(retry_after)}


class ServerBusyError(InternalError):
    """The process is building as many large answers as it may at once
    (A2A_MAX_ANSWER_BYTES_IN_FLIGHT) and this one waited its turn
    A2A_ANSWER_WAIT_SECONDS: HTTP 503 with Retry-After, ``data.retry`` true.
    Only reads wait so: nothing was done, the call may be retried as it is.
    -32603 as the other 503s (``ServiceUnavailableError``); the 1.0 reason
    tells them apart."""

    reason = "SERVER_BUSY"
    http_status = 503
    default_message = ("The service is building other large answers: this "
                       "one waited its turn and was not built. Retry later.")

    def __init__(self, message: Optional[str] = None, retry_after: int = 1) -> None:
        super().__init__(message, data={"retry": True, "retryAfter": retry_after})
        self.headers = {"Retry-After": str(retry_after)}


class IncompleteBodyError(InvalidRequestError):
    """The body ended before its ``Content-Length``: nothing is run."""

    http_status = 400
    default_message = "The request body is shorter than its Content-Length."


class ServiceUnavailableError(InternalError):
    """The storage could not be used (busy, full, unreachable): nothing was
    stored and the call may be retried (``data.retry`` is true). Made from the
    storage's own ``StorageUnavailableError`` by ``protocol/errors.py``."""

    reason = "STORAGE_UNAVAILABLE"
    default_message = ("The storage is unavailable: nothing was stored. The call "
                       "may be retried.")


class VersionNotSupportedError(A2AError):
    """The ``A2A-Version`` asked for is not one this service speaks."""

    reason = "VERSION_NOT_SUPPORTED"
    code = -32009
    default_message = "This A2A protocol version is not supported."


class ExtensionSupportRequiredError(A2AError):
    """The agent requires an extension the caller did not ask for (-32008);
    this service never answers it, a client may receive it."""

    code = -32008
    reason = "EXTENSION_SUPPORT_REQUIRED"
    default_message = "The agent requires an extension the request does not declare."
