"""A2A 1.0 operations, shared by its JSON-RPC and HTTP+JSON bindings.

Each takes validated params (``schemas_v10``) and returns the 1.0 ProtoJSON
answer, converted from the service's neutral values (``convert_v10``).
``error_body`` words any ``A2AError`` the 1.0 way: a code, a sentence and
``details``, typed objects (``google.rpc.ErrorInfo`` for A2A errors,
``google.rpc.BadRequest`` naming the field that was wrong).
"""

from datetime import timezone

from ... import errors, service
from ...schemas import load_params
from ...storage import base as storage
from ...storage.common import now_iso
from . import convert
from ..v03.jsonrpc import storage_error as _storage_error_v03
from .schemas import PAGE_SIZE_DEFAULT

VERSION = "1.0"
DOMAIN = "a2a-protocol.org"

#: ErrorInfo.reason of each A2A error (section 11.6: the type, no "Error").
REASONS = {
    errors.TaskNotFound: "TASK_NOT_FOUND",
    errors.TaskNotCancelable: "TASK_NOT_CANCELABLE",
    errors.PushNotificationNotSupported: "PUSH_NOTIFICATION_NOT_SUPPORTED",
    errors.UnsupportedOperation: "UNSUPPORTED_OPERATION",
    errors.ContentTypeNotSupported: "CONTENT_TYPE_NOT_SUPPORTED",
    errors.AuthenticatedExtendedCardNotConfigured: "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    errors.VersionNotSupported: "VERSION_NOT_SUPPORTED",
}
#: 0.3 method names in the service's sentences, as 1.0 names them.
_NAMES = (("message/send", "SendMessage"), ("tasks/get", "GetTask"),
          ("tasks/cancel", "CancelTask"))


def words(text):
    for old, new in _NAMES:
        text = text.replace(old, new)
    return text


def _metadata(data):
    """ErrorInfo.metadata is a map of strings: the scalar items of ``data``."""
    meta = {}
    for key, value in (data or {}).items():
        if key == "state" and isinstance(value, str):
            value = convert.state(value)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            meta[key] = str(value)
    return meta


def details(exc):
    """The typed details of ``exc`` (a list, maybe empty)."""
    data = exc.data if isinstance(exc.data, dict) else None
    found = []
    reason = REASONS.get(type(exc))
    if reason is None and isinstance(exc, errors.StorageUnavailable):
        reason = "STORAGE_UNAVAILABLE"
    if reason is not None:
        info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": reason, "domain": DOMAIN}
        meta = _metadata(data)
        if meta:
            info["metadata"] = meta
        found.append(info)
    if data and isinstance(data.get("field"), str):
        problems = data.get("errors") or {data["field"]: exc.message}
        found.append({"@type": "type.googleapis.com/google.rpc.BadRequest",
                      "fieldViolations": [
                          {"field": field, "description": str(text)}
                          for field, text in problems.items()]})
    return found


def error_body(exc):
    """``{code, message[, data]}``: the JSON-RPC error object of ``exc``."""
    error = {"code": exc.code, "message": words(exc.message)}
    found = details(exc)
    if found:
        error["data"] = found
    return error


def storage_error(exc):
    """The 1.0 error for a neutral storage outcome (the 0.3 one, reworded)."""
    error = _storage_error_v03(exc)
    if isinstance(exc, storage.TaskNotWaiting) and exc.terminal:
        error.message = (
            "message.taskId: task %s is %s, a terminal state, and takes no more "
            "messages; send a new message with its contextId %s to continue "
            "the conversation." % (exc.task_id, convert.state(exc.state),
                                   exc.context_id))
    elif isinstance(exc, storage.TaskNotCancelable):
        error.message = ("Task %s is %s, a terminal state, and cannot be "
                         "canceled." % (exc.task_id, convert.state(exc.state)))
    return error


def run(operation, req, params):
    """``operation(req, params)``; storage outcomes become 1.0 errors."""
    try:
        return operation(req, params)
    except storage.StorageError as exc:
        raise storage_error(exc) from None


def load(schema, params):
    return load_params(schema, params)


# -- operations ---------------------------------------------------------------

def send_message(req, params):
    configuration = params.get("configuration") or {}
    if configuration.get("taskPushNotificationConfig") is not None:
        raise errors.PushNotificationNotSupported(
            "configuration.taskPushNotificationConfig: push notifications are "
            "not supported; poll GetTask instead.",
            data={"field": "configuration.taskPushNotificationConfig"})
    record = service.send(
        req, convert.stored_message(params["message"]),
        configuration.get("acceptedOutputModes"), params.get("metadata"),
        configuration.get("historyLength"),
        return_immediately=configuration.get("returnImmediately") is True)
    return {"task": convert.task(record)}


def get_task(req, params):
    return convert.task(service.get(req, params["id"], params.get("historyLength")))


def cancel_task(req, params):
    return convert.task(service.cancel(req, params["id"]))


def list_tasks(req, params):
    """One page of the caller's tasks of this agent, newest status first.

    ``pageSize`` in the answer is the number of tasks on this page (the
    conformance kit's reading); ``totalSize`` counts every match (one COUNT
    over the same filter).
    """
    after = params.get("statusTimestampAfter")
    if after is not None:
        after = now_iso(after.astimezone(timezone.utc))
    state = params.get("status")
    filters = dict(context_id=params.get("contextId"),
                   state=convert.STORED_STATES[state] if state else None,
                   updated_after=after)
    try:
        page = service.list_tasks(
            req, limit=params.get("pageSize", PAGE_SIZE_DEFAULT),
            cursor=params.get("pageToken"),
            history_length=req.history_length(params.get("historyLength")),
            include_artifacts=params.get("includeArtifacts", False), **filters)
    except ValueError:
        raise errors.InvalidParams(
            "pageToken: not a token this service gave; start again without it.",
            data={"field": "pageToken"}) from None
    tasks = [convert.task(record) for record in page.tasks]
    return {"tasks": tasks, "nextPageToken": page.next_cursor or "",
            "pageSize": len(tasks), "totalSize": service.count_tasks(req, **filters)}


def extended_card(req, params):
    return service.extended_card(req, form=VERSION)


def unsupported(error_class, text):
    def operation(req, params):
        raise error_class(text)
    return operation


SEND_STREAMING = unsupported(
    errors.UnsupportedOperation,
    "Streaming is not supported by this agent: use SendMessage, then GetTask.")
SUBSCRIBE = unsupported(
    errors.UnsupportedOperation,
    "There is no stream to subscribe to: poll GetTask instead.")
PUSH = unsupported(
    errors.PushNotificationNotSupported,
    "Push notifications are not supported by this agent: poll GetTask instead.")
