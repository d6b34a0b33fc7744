"""A2A 0.3 over JSON-RPC: the method table, params (marshmallow schemas of
``v03/schemas.py``) and Task rendering.

``find_method`` looks a method up in ``METHODS`` (an unknown one is -32601);
``Method.load`` checks its params with its schema (-32602), once the caller
is authenticated; ``Method.run`` comes after (``protocol/call.py``).
"""

from typing import TYPE_CHECKING, Any, Dict, NoReturn

from ... import errors, service
from ..call import Method, Methods
from ..cards import agent_card
from .schemas import MESSAGE_SEND_PARAMS, TASK_ID_PARAMS, TASK_QUERY_PARAMS
from ...service import CallContext

if TYPE_CHECKING:  # pragma: no cover
    from ...storage.records import TaskRecord

METHODS = Methods()
method = METHODS.method


def find_method(name: str) -> Method:
    found = METHODS.get(name)
    if found is None:
        raise errors.MethodNotFoundError(
            "Method not found: %r. This agent answers %s."
            % (errors.echo(name), _ANSWERED),
            data={"method": errors.echo(name)})
    return found


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


@method("message/send", MESSAGE_SEND_PARAMS, checks_remembered_key=True, runs_turn=True)
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
