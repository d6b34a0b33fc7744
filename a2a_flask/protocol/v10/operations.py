"""A2A 1.0 operations, shared by its JSON-RPC and HTTP+JSON bindings.

Each takes validated params (``schemas_v10``) and returns the 1.0 ProtoJSON
answer, converted from the service's neutral values (``convert_v10``).
``error_body`` renders any ``A2AError`` the 1.0 way: a code, a sentence and
``details``, typed objects (``google.rpc.ErrorInfo`` for A2A errors,
``google.rpc.BadRequest`` naming the field that was wrong).
"""

from datetime import timezone
from typing import TYPE_CHECKING, Any, Callable, Dict, List, NoReturn, Type

from ... import errors, service
from ..call import Methods
from ..cards import agent_card
from ...storage.common import now_iso
from .. import errors as answers
from ..errors import Wording
from . import convert, schemas
from .schemas import PAGE_SIZE_DEFAULT

if TYPE_CHECKING:  # pragma: no cover
    from ...service import CallContext

VERSION = "1.0"
DOMAIN = "a2a-protocol.org"

#: How 1.0 names what storage outcomes speak of.
WORDING = Wording("GetTask", convert.state)
#: The 1.0 methods by their proto names: JSON-RPC's table; each HTTP+JSON
#: route (``rest.ROUTES``) names the one it performs.
METHODS = Methods()
method = METHODS.method


def _metadata(data):
    """ErrorInfo.metadata is a map of strings: the scalar items of ``data``."""
    meta = {}
    for key, value in (data or {}).items():
        if key == "state" and isinstance(value, str):
            value = convert.state(value)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            meta[key] = str(value)
    return meta


def details(exc: errors.A2AError) -> List[Dict[str, Any]]:
    """The typed details of ``exc`` (a list, maybe empty)."""
    data = exc.data if isinstance(exc.data, dict) else None
    found: List[Dict[str, Any]] = []
    reason = answers.reason(exc)
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


def error_body(exc: errors.A2AError) -> Dict[str, Any]:
    """``{code, message[, data]}``: the JSON-RPC error object of ``exc``."""
    error = {"code": exc.code, "message": exc.message}
    found = details(exc)
    if found:
        error["data"] = found
    return error


# -- operations ---------------------------------------------------------------

@method("SendMessage", schemas.SEND_MESSAGE, checks_remembered_key=True, runs_turn=True)
def send_message(context: "CallContext", params: Dict[str, Any]) -> Dict[str, Any]:
    configuration = params.get("configuration") or {}
    if configuration.get("taskPushNotificationConfig") is not None:
        raise errors.PushNotificationNotSupportedError(
            "configuration.taskPushNotificationConfig: push notifications are "
            "not supported; poll GetTask instead.",
            data={"field": "configuration.taskPushNotificationConfig"})
    record = service.send(
        context, convert.stored_message(params["message"]),
        configuration.get("acceptedOutputModes"), params.get("metadata"),
        configuration.get("historyLength"),
        return_immediately=configuration.get("returnImmediately") is True)
    return {"task": convert.task(record)}


@method("GetTask", schemas.GET_TASK, checks_remembered_key=True)
def get_task(context: "CallContext", params: Dict[str, Any]) -> Dict[str, Any]:
    return convert.task(service.get(context, params["id"], params.get("historyLength")))


@method("CancelTask", schemas.CANCEL_TASK)
def cancel_task(context: "CallContext", params: Dict[str, Any]) -> Dict[str, Any]:
    return convert.task(service.cancel(context, params["id"]))


@method("ListTasks", schemas.LIST_TASKS)
def list_tasks(context: "CallContext", params: Dict[str, Any]) -> Dict[str, Any]:
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
            context, limit=params.get("pageSize", PAGE_SIZE_DEFAULT),
            cursor=params.get("pageToken"),
            history_length=context.history_length(params.get("historyLength")),
            include_artifacts=params.get("includeArtifacts", False), **filters)
    except ValueError:
        raise errors.InvalidParamsError(
            "pageToken: not a token this service gave; start again without it.",
            data={"field": "pageToken"}) from None
    tasks = [convert.task(record) for record in page.tasks]
    return {"tasks": tasks, "nextPageToken": page.next_cursor or "",
            "pageSize": len(tasks), "totalSize": service.count_tasks(context, **filters)}


@method("GetExtendedAgentCard")
def extended_card(context: "CallContext", params: Any) -> Dict[str, Any]:
    service.check_extended_card(context)
    return agent_card(context.app_state, context.agent, context.at_root,
                      extended=True, form=VERSION)


def unsupported(error_class: Type[errors.A2AError], text: str
                ) -> Callable[["CallContext", Any], NoReturn]:
    def operation(context: "CallContext", params: Any) -> NoReturn:
        raise error_class(text)
    return operation


SEND_STREAMING = unsupported(
    errors.UnsupportedOperationError,
    "Streaming is not supported by this agent: use SendMessage, then GetTask.")
SUBSCRIBE = unsupported(
    errors.UnsupportedOperationError,
    "There is no stream to subscribe to: poll GetTask instead.")
PUSH = unsupported(
    errors.PushNotificationNotSupportedError,
    "Push notifications are not supported by this agent: poll GetTask instead.")
#: What the method-not-found answer lists: the methods that do something.
ANSWERED = ", ".join(METHODS)
method("SendStreamingMessage")(SEND_STREAMING)
method("SubscribeToTask")(SUBSCRIBE)
for _name in ("Create", "Get", "Delete"):
    method(_name + "TaskPushNotificationConfig")(PUSH)
method("ListTaskPushNotificationConfigs")(PUSH)
