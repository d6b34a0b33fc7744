"""A2A 0.3 over JSON-RPC: the method table, params (marshmallow schemas of
``schemas.py``), Task rendering and the 0.3 wording of errors.

``find_method`` looks a method up in ``METHODS`` (an unknown one is -32601);
``Method.load`` checks its params with its schema (-32602), once the caller
is authenticated; ``Method.run`` comes after.
"""

from typing import Dict

from ... import errors, service
from ...schemas import (
    MESSAGE_SEND_PARAMS, TASK_ID_PARAMS, TASK_QUERY_PARAMS, load_params,
)
from ...service import Request
from ...storage import base as storage

METHODS: Dict[str, "Method"] = {}


class Method:
    """A method: the schema of its params, and the function that runs it."""

    __slots__ = ("name", "schema", "run", "checks_key_itself")

    def __init__(self, name, schema, run, checks_key_itself=False):
        self.name = name
        self.schema = schema
        self.run = run
        #: Its storage statement checks the caller's API key itself
        #: (``service.get``/``send``: ``live_key``): a key remembered live
        #: needs no lookup first.
        self.checks_key_itself = checks_key_itself

    def load(self, params):
        """The validated params, or ``InvalidParams`` naming the bad field."""
        if self.schema is None:
            return params
        return load_params(self.schema, params)


def method(name, schema=None, checks_key_itself=False):
    def register(func):
        METHODS[name] = Method(name, schema, func, checks_key_itself)
        return func
    return register


def find_method(name):
    found = METHODS.get(name)
    if found is None:
        raise errors.MethodNotFound(
            "Method not found: %r. This agent answers %s." % (name, _ANSWERED),
            data={"method": name})
    return found


def call(found, req, params):
    """Run ``found`` for ``req``: its 0.3 result, or an ``A2AError``."""
    try:
        return found.run(req, params)
    except storage.StorageError as exc:
        raise storage_error(exc) from None


def render_task(task):
    """A Task as A2A 0.3 shows it, from a ``TaskRecord``."""
    status = {"state": task.state, "timestamp": task.updated_at}
    if task.status_message:
        status["message"] = task.status_message
    view = {"kind": "task", "id": task.id, "contextId": task.context_id,
            "status": status, "artifacts": task.artifacts,
            "history": task.history}
    if task.metadata:
        view["metadata"] = task.metadata
    return view


def storage_error(exc):
    """The 0.3 error for a neutral storage outcome."""
    if isinstance(exc, storage.TaskNotFound):
        return errors.TaskNotFound(data={"taskId": exc.task_id})
    if isinstance(exc, storage.MessageIdReused):
        return errors.InvalidParams(
            "message.messageId: this messageId was already used for a "
            "different message; send a new messageId.",
            data={"field": "message.messageId"})
    if isinstance(exc, storage.ContextMismatch):
        return errors.InvalidParams(
            "message.contextId does not match the contextId of task %s."
            % exc.task_id,
            data={"field": "message.contextId",
                  "taskContextId": exc.task_context_id})
    if isinstance(exc, storage.TaskNotWaiting) and exc.terminal:
        return errors.InvalidParams(
            "message.taskId: task %s is %s, a terminal state, and takes no "
            "more messages; send a new message with its contextId %s to "
            "continue the conversation." % (exc.task_id, exc.state, exc.context_id),
            data={"field": "message.taskId", "state": exc.state,
                  "contextId": exc.context_id})
    if isinstance(exc, storage.TaskNotWaiting):
        return errors.InvalidParams(
            "message.taskId: task %s is %s: another request is running it "
            "now; poll tasks/get until it waits for input." % (exc.task_id,
                                                               exc.state),
            data={"field": "message.taskId", "state": exc.state})
    if isinstance(exc, storage.TaskNotCancelable):
        return errors.TaskNotCancelable(
            "Task %s is %s, a terminal state, and cannot be canceled."
            % (exc.task_id, exc.state),
            data={"taskId": exc.task_id, "state": exc.state})
    return errors.InternalError(
        "Internal error: the service could not answer this request.")


@method("message/send", MESSAGE_SEND_PARAMS, checks_key_itself=True)
def message_send(req: Request, params):
    message = params["message"]
    configuration = params.get("configuration") or {}
    if configuration.get("pushNotificationConfig") is not None:
        raise errors.PushNotificationNotSupported(
            "configuration.pushNotificationConfig: push notifications are not "
            "supported; poll tasks/get instead.",
            data={"field": "configuration.pushNotificationConfig"})
    return render_task(service.send(
        req, message, configuration.get("acceptedOutputModes"),
        params.get("metadata"), configuration.get("historyLength"),
        return_immediately=configuration.get("blocking") is False))


@method("tasks/get", TASK_QUERY_PARAMS, checks_key_itself=True)
def tasks_get(req, params):
    return render_task(service.get(req, params["id"], params.get("historyLength")))


@method("tasks/cancel", TASK_ID_PARAMS)
def tasks_cancel(req, params):
    return render_task(service.cancel(req, params["id"]))


@method("agent/getAuthenticatedExtendedCard")
def get_extended_card(req, params):
    return service.extended_card(req)


#: The methods that do something, as the MethodNotFound text lists them.
_ANSWERED = (", ".join(list(METHODS)[:-1]) + " and " + list(METHODS)[-1])


def _unsupported(error_class, text):
    def handler(req, params):
        raise error_class(text)
    return handler


method("message/stream")(_unsupported(
    errors.UnsupportedOperation,
    "This operation is not supported: streaming is not available from this agent; "
    "use message/send, then tasks/get."))
method("tasks/resubscribe")(_unsupported(
    errors.UnsupportedOperation,
    "This operation is not supported: there is no stream to resubscribe to; "
    "poll tasks/get."))
for _name in ("set", "get", "list", "delete"):
    method("tasks/pushNotificationConfig/" + _name)(_unsupported(
        errors.PushNotificationNotSupported,
        "Push notifications are not supported by this agent: poll tasks/get."))
