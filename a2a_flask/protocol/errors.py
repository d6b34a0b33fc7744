"""How every error is answered, in one place.

``ANSWERS`` maps each A2A error class to the HTTP status of the HTTP+JSON
binding (1.0 section 5.4) and, where section 5.4's gRPC column is more
precise than the HTTP status, its google.rpc code name. (The JSON-RPC code
and the 1.0 ``ErrorInfo.reason`` are the class's own ``code`` and
``reason``.)

``as_a2a_error`` turns what the storage raises (its neutral outcomes and
failures, ``storage/errors.py``) into A2A errors, worded for the protocol
version that answers (``Wording``: how it names the get method and states).
"""

from typing import Callable, Dict, NamedTuple, Optional, Type, Union

from .. import errors
from ..storage import errors as storage


class ErrorAnswer(NamedTuple):
    """How one A2A error is answered over HTTP+JSON."""

    #: The HTTP status; None: the class's own ``http_status``.
    rest_status: Optional[int]
    #: The google.rpc code name, where more precise than the HTTP status's.
    grpc_status: Optional[str] = None


_PRECONDITION = "FAILED_PRECONDITION"
ANSWERS: Dict[Type[errors.A2AError], ErrorAnswer] = {
    errors.TaskNotFoundError: ErrorAnswer(404),
    errors.MethodNotFoundError: ErrorAnswer(404),
    errors.TaskNotCancelableError: ErrorAnswer(400, _PRECONDITION),
    errors.PushNotificationNotSupportedError: ErrorAnswer(400, _PRECONDITION),
    errors.UnsupportedOperationError: ErrorAnswer(400, _PRECONDITION),
    errors.ContentTypeNotSupportedError: ErrorAnswer(400),
    errors.InvalidAgentResponseError: ErrorAnswer(502, "INTERNAL"),
    errors.ExtendedAgentCardNotConfiguredError: ErrorAnswer(400, _PRECONDITION),
    errors.ExtensionSupportRequiredError: ErrorAnswer(400, _PRECONDITION),
    errors.VersionNotSupportedError: ErrorAnswer(400, _PRECONDITION),
    errors.ServiceUnavailableError: ErrorAnswer(503),
    errors.IdentityProviderUnavailableError: ErrorAnswer(503),
    errors.QueueFullError: ErrorAnswer(429),
    errors.QuotaExceededError: ErrorAnswer(429),
    errors.ServerBusyError: ErrorAnswer(503),
    errors.InternalError: ErrorAnswer(500),
}
_DEFAULT = ErrorAnswer(400)

#: google.rpc.Code names by HTTP status.
STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED",
                403: "PERMISSION_DENIED", 404: "NOT_FOUND", 405: "UNIMPLEMENTED",
                409: "ABORTED", 413: "INVALID_ARGUMENT",
                429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 501: "UNIMPLEMENTED",
                503: "UNAVAILABLE"}


def answer_of(exc: errors.A2AError) -> ErrorAnswer:
    """The table's row for ``exc``: its class's, else its nearest base's."""
    for cls in type(exc).__mro__:
        found = ANSWERS.get(cls)
        if found is not None:
            return found
    return _DEFAULT


def reason(exc: errors.A2AError) -> Optional[str]:
    """The 1.0 ``ErrorInfo.reason`` of ``exc``, exactly of its class (a
    subclass without its own, such as SchemaOutdatedError, answers none)."""
    return vars(type(exc)).get("reason")


def rest_status(exc: errors.A2AError) -> int:
    """Section 5.4's HTTP status of ``exc`` (its own, when it has one)."""
    if exc.http_status != 200:
        return exc.http_status
    status = answer_of(exc).rest_status
    return status if status is not None else exc.http_status


def grpc_status(exc: errors.A2AError) -> str:
    """The google.rpc code name of ``exc`` over HTTP+JSON."""
    found = ANSWERS.get(type(exc))
    if found is not None and found.grpc_status:
        return found.grpc_status
    return STATUS_NAMES.get(rest_status(exc), "UNKNOWN")


class Wording(NamedTuple):
    """How a protocol version names what storage outcomes speak of."""

    #: The method that reads a task ("tasks/get", "GetTask").
    get_task: str
    #: A stored state as the version names it in a sentence.
    state: Callable[[str], str]


V03 = Wording("tasks/get", str)


def outcome_error(exc: storage.StorageError, wording: Wording) -> errors.A2AError:
    """The A2A error for a neutral storage outcome the caller caused."""
    if isinstance(exc, storage.NoSuchTaskError):
        return errors.TaskNotFoundError(data={"taskId": errors.echo(exc.task_id)})
    if isinstance(exc, storage.MessageIdReusedError):
        return errors.InvalidParamsError(
            "message.messageId: this messageId was already used for a "
            "different message; send a new messageId.",
            data={"field": "message.messageId"})
    if isinstance(exc, storage.ContextMismatchError):
        return errors.InvalidParamsError(
            "message.contextId does not match the contextId of task %s."
            % exc.task_id,
            data={"field": "message.contextId",
                  "taskContextId": exc.task_context_id})
    if isinstance(exc, storage.TaskNotWaitingError) and exc.terminal:
        return errors.InvalidParamsError(
            "message.taskId: task %s is %s, a terminal state, and takes no "
            "more messages; send a new message with its contextId %s to "
            "continue the conversation." % (exc.task_id, wording.state(exc.state),
                                            exc.context_id),
            data={"field": "message.taskId", "state": exc.state,
                  "contextId": exc.context_id})
    if isinstance(exc, storage.TaskNotWaitingError):
        return errors.InvalidParamsError(
            "message.taskId: task %s is %s: another request is running it "
            "now; poll %s until it waits for input." % (exc.task_id, exc.state,
                                                        wording.get_task),
            data={"field": "message.taskId", "state": exc.state})
    if isinstance(exc, storage.QueueLimitReachedError):
        return errors.QueueFullError(
            "This caller already has %d background turns waiting for a "
            "worker (A2A_QUEUE_LIMIT_PER_CALLER): nothing was stored. Retry "
            "once some have started." % exc.limit, limit=exc.limit)
    if isinstance(exc, storage.QuotaReachedError):
        return errors.QuotaExceededError(
            "This caller's stored tasks take %d bytes, its storage quota is %d "
            "(A2A_MAX_STORED_BYTES_PER_CALLER): nothing was stored. Retry once "
            "older tasks were pruned or deleted." % (exc.stored, exc.limit),
            limit=exc.limit, stored=exc.stored)
    if isinstance(exc, storage.TaskEndedError):
        return errors.TaskNotCancelableError(
            "Task %s is %s, a terminal state, and cannot be canceled."
            % (exc.task_id, wording.state(exc.state)),
            data={"taskId": exc.task_id, "state": exc.state})
    return errors.service_failed()


def failure_error(exc: storage.StorageUnavailableError,
                  wording: Wording = V03) -> errors.ServiceUnavailableError:
    """The A2A error for a failure of the storage itself (busy, full,
    unreachable): the storage's sentence, ``data.retry`` true."""
    if exc.stored_task is not None:
        task_id, state = exc.stored_task
        ending = ("it stays working until the service fails it as stale"
                  if state == "working" else "it is %s" % wording.state(state))
        return errors.ServiceUnavailableError(
            "%s: task %s was stored, but its agent's answer could not be: %s. "
            "Send the message again with a new messageId once the storage "
            "works again." % (exc.what, task_id, ending),
            data={"retry": False, "taskId": task_id, "state": state})
    if exc.kept_task_id is None:
        return errors.ServiceUnavailableError(exc.message, data={"retry": True})
    return errors.ServiceUnavailableError(
        "%s The outcome of task %s is kept and is stored by the next %s of the "
        "task or a retry of the same message (same messageId)."
        % (exc.message.replace(" nothing was stored.", ""), exc.kept_task_id,
           wording.get_task),
        data={"retry": True, "taskId": exc.kept_task_id})


#: What a call is refused with: an A2A error, or a storage outcome or failure.
Refusal = Union[errors.A2AError, storage.StorageError]


def as_a2a_error(exc: Refusal, wording: Wording = V03) -> errors.A2AError:
    """``exc`` as an A2A error: itself, or the storage's outcome or failure
    worded for the version that answers."""
    if isinstance(exc, storage.StorageUnavailableError):
        return failure_error(exc, wording)
    if isinstance(exc, storage.StorageError):
        return outcome_error(exc, wording)
    return exc
