"""A2A 0.3 over JSON-RPC: the method table, params (marshmallow schemas of
``v03/schemas.py``) and Task rendering.

``find_method`` looks a method up in ``METHODS`` (an unknown one is -32601);
``Method.load`` checks its params with its schema (-32602), once the caller
is authenticated; ``Method.run`` comes after.
"""

from typing import TYPE_CHECKING, Any, Callable, Dict, NoReturn, Optional

from ... import errors, service
from .. import errors as answers
from ..cards import agent_card
from ...validation import load_params
from .schemas import MESSAGE_SEND_PARAMS, TASK_ID_PARAMS, TASK_QUERY_PARAMS
from ...service import CallContext
from ...storage import base as storage

if TYPE_CHECKING:  # pragma: no cover
    from marshmallow import Schema

    from ...storage.records import TaskRecord

METHODS: Dict[str, "Method"] = {}


class Method:
    """A method: the schema of its params, and the function that runs it."""

    __slots__ = ("name", "schema", "run", "checks_remembered_key")

    def __init__(self, name, schema, run, checks_remembered_key=False):
        self.name = name
        self.schema = schema
        self.run = run
        #: Its storage statement checks the caller's API key itself
        #: (``service.get``/``send``: ``remembered_key``): a key remembered live
        #: needs no lookup first.
        self.checks_remembered_key = checks_remembered_key

    def load(self, params: Any) -> Any:
        """The validated params, or ``InvalidParams`` naming the bad field."""
        if self.schema is None:
            return params
        return load_params(self.schema, params)


def method(name: str, schema: Optional["Schema"] = None, checks_remembered_key: bool = False
           ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def register(func: Callable[..., Any]) -> Callable[..., Any]:
        METHODS[name] = Method(name, schema, func, checks_remembered_key)
        return func
    return register


def find_method(name: str) -> Method:
    found = METHODS.get(name)
    if found is None:
        raise errors.MethodNotFoundError(
            "Method not found: %r. This agent answers %s."
            % (errors.echo(name), _ANSWERED),
            data={"method": errors.echo(name)})
    return found


def call(found: Method, context: CallContext, params: Any) -> Any:
    """Run ``found`` for ``context``: its 0.3 result, or an ``A2AError``."""
    try:
        return found.run(context, params)
    except storage.StorageError as exc:
        raise answers.outcome_error(exc, answers.V03) from None


def render_task(task: "TaskRecord") -> Dict[str, Any]:
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


@method("message/send", MESSAGE_SEND_PARAMS, checks_remembered_key=True)
def message_send(context: CallContext, params: Dict[str, Any]) -> Dict[str, Any]:
    message = params["message"]
    configuration = params.get("configuration") or {}
    if configuration.get("pushNotificationConfig") is not None:
        raise errors.PushNotificationNotSupportedError(
            "configuration.pushNotificationConfig: push notifications are not "
            "supported; poll tasks/get instead.",
            data={"field": "configuration.pushNotificationConfig"})
    return render_task(service.send(
        context, message, configuration.get("acceptedOutputModes"),
        params.get("metadata"), configuration.get("historyLength"),
        return_immediately=configuration.get("blocking") is False))


@method("tasks/get", TASK_QUERY_PARAMS, checks_remembered_key=True)
def tasks_get(context: CallContext, params: Dict[str, Any]) -> Dict[str, Any]:
    return render_task(service.get(context, params["id"], params.get("historyLength")))


@method("tasks/cancel", TASK_ID_PARAMS)
def tasks_cancel(context: CallContext, params: Dict[str, Any]) -> Dict[str, Any]:
    return render_task(service.cancel(context, params["id"]))


@method("agent/getAuthenticatedExtendedCard")
def get_extended_card(context: CallContext, params: Any) -> Dict[str, Any]:
    service.check_extended_card(context)
    return agent_card(context.app_state, context.agent, context.at_root,
                      extended=True)


#: The methods that do something, as the MethodNotFound text lists them.
_ANSWERED = (", ".join(list(METHODS)[:-1]) + " and " + list(METHODS)[-1])


def _unsupported(error_class, text):
    def handler(context: CallContext, params: Any) -> NoReturn:
        raise error_class(text)
    return handler


method("message/stream")(_unsupported(
    errors.UnsupportedOperationError,
    "This operation is not supported: streaming is not available from this agent; "
    "use message/send, then tasks/get."))
method("tasks/resubscribe")(_unsupported(
    errors.UnsupportedOperationError,
    "This operation is not supported: there is no stream to resubscribe to; "
    "poll tasks/get."))
for _name in ("set", "get", "list", "delete"):
    method("tasks/pushNotificationConfig/" + _name)(_unsupported(
        errors.PushNotificationNotSupportedError,
        "Push notifications are not supported by this agent: poll tasks/get."))
