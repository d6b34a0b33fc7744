"""Exceptions carrying their JSON-RPC / A2A error code.

Raise one of these anywhere on the request path; ``jsonrpc.error_response``
is the one place that turns them into an answer.
"""

from typing import Dict, Optional


#: The most of a caller's own text an answer repeats (a method name, a
#: member, a version): enough to recognise it, never a whole body back.
ECHO_CHARS = 64


def echo(text) -> str:
    """``text`` as an answer may repeat it: its first ECHO_CHARS characters,
    then how long it was when longer."""
    text = text if isinstance(text, str) else str(text)
    if len(text) <= ECHO_CHARS:
        return text
    return "%s... (%d characters)" % (text[:ECHO_CHARS], len(text))


class A2AError(Exception):
    """Base class: a JSON-RPC error with a code, a sentence and optional data."""

    code = -32603
    default_message = "Internal error."
    #: HTTP status of the answer; JSON-RPC errors are 200 unless said otherwise.
    http_status = 200
    #: Extra HTTP headers of the answer.
    headers: Optional[Dict[str, str]] = None

    def __init__(self, message=None, data=None, http_status=None):
        self.message = message or self.default_message
        self.data = data
        if http_status is not None:
            self.http_status = http_status
        super().__init__(self.message)

    def to_dict(self):
        error = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ParseError(A2AError):
    code = -32700
    default_message = "The request body is not valid JSON."


class InvalidRequest(A2AError):
    code = -32600
    default_message = "The request is not a valid JSON-RPC 2.0 request."


class MethodNotFound(A2AError):
    code = -32601
    default_message = "Method not found."


class InvalidParams(A2AError):
    code = -32602
    default_message = "Invalid params."


class InternalError(A2AError):
    code = -32603
    default_message = "Internal error."


class TaskNotFound(A2AError):
    code = -32001
    default_message = "Task not found."


class TaskNotCancelable(A2AError):
    code = -32002
    default_message = "Task cannot be canceled."


class PushNotificationNotSupported(A2AError):
    code = -32003
    default_message = (
        "Push notifications are not supported by this agent; poll tasks/get instead."
    )


class UnsupportedOperation(A2AError):
    code = -32004
    default_message = "This operation is not supported."


class ContentTypeNotSupported(A2AError):
    code = -32005
    default_message = "The agent cannot take this kind of content."


class AuthenticatedExtendedCardNotConfigured(A2AError):
    code = -32007
    default_message = "This agent has no authenticated extended card."


# Refusals before the method runs: HTTP status other than 200, code -32600.


class Unauthenticated(InvalidRequest):
    """No credentials, or wrong ones: HTTP 401 with a bare error object and
    a challenge naming what the service accepts."""

    http_status = 401
    headers = {"WWW-Authenticate": 'Basic realm="a2a", Bearer realm="a2a"'}
    default_message = "Authentication required: send an API key or HTTP Basic credentials."


class Forbidden(InvalidRequest):
    http_status = 403
    default_message = "These credentials may not talk to this agent."


class AgentNotFound(InvalidRequest):
    http_status = 404
    default_message = "No agent of that name can be talked to here."


class PayloadTooLarge(InvalidRequest):
    http_status = 413
    default_message = "The request body is larger than this service accepts."


class SchemaOutdated(InternalError):
    """A2A_AUTO_MIGRATE=0 and the database is not at this package's schema."""

    http_status = 503
    default_message = ("The database schema is out of date: run "
                       "`flask a2a db upgrade`.")


class TooManyRequests(InvalidRequest):
    """Too many failed logins from one address or for one user: HTTP 429."""

    http_status = 429
    default_message = "Too many failed attempts; wait before trying again."

    def __init__(self, message=None, retry_after=60):
        super().__init__(message, data={"retryAfter": retry_after})
        self.headers = {"Retry-After": str(retry_after)}


class IncompleteBody(InvalidRequest):
    """The body ended before its ``Content-Length``: nothing is run."""

    http_status = 400
    default_message = "The request body is shorter than its Content-Length."


# The storage could not be used: nothing was stored, and a retry may succeed.
# ``data.retry`` is true in each.


class StorageUnavailable(InternalError):
    default_message = ("The storage is unavailable: nothing was stored. The call "
                       "may be retried.")


class StorageFull(StorageUnavailable):
    default_message = ("The storage is full (no space left on the disk): nothing "
                       "was stored. The call may be retried once space is freed.")


class StorageBusy(StorageUnavailable):
    default_message = ("The storage is busy (another writer holds it): nothing was "
                       "stored. The call may be retried.")


class VersionNotSupported(A2AError):
    """The ``A2A-Version`` asked for is not one this service speaks."""

    code = -32009
    default_message = "This A2A protocol version is not supported."
