"""A2A 1.0 over JSON-RPC: the method table (section 9.4) and its errors
(section 9.5: ``data`` a list of typed details)."""

from typing import TYPE_CHECKING, Any, Dict

from ... import errors
from ..jsonrpc import _json_response
from . import schemas
from . import operations as v10
from ..v03.jsonrpc import Method

if TYPE_CHECKING:  # pragma: no cover
    from flask import Response

    from ...service import CallContext

VERSION = v10.VERSION
METHODS: Dict[str, Method] = {}


def _add(name, operation, schema=None, checks_remembered_key=False):
    METHODS[name] = Method(name, schema, operation, checks_remembered_key)


_add("SendMessage", v10.send_message, schemas.SEND_MESSAGE, checks_remembered_key=True)
_add("GetTask", v10.get_task, schemas.GET_TASK, checks_remembered_key=True)
_add("ListTasks", v10.list_tasks, schemas.LIST_TASKS)
_add("CancelTask", v10.cancel_task, schemas.CANCEL_TASK)
_add("GetExtendedAgentCard", v10.extended_card)
_ANSWERED = ", ".join(METHODS)
_add("SendStreamingMessage", v10.SEND_STREAMING)
_add("SubscribeToTask", v10.SUBSCRIBE)
for _name in ("Create", "Get", "Delete"):
    _add(_name + "TaskPushNotificationConfig", v10.PUSH)
_add("ListTaskPushNotificationConfigs", v10.PUSH)


def find_method(name: str) -> Method:
    found = METHODS.get(name)
    if found is None:
        raise errors.MethodNotFoundError(
            "Method not found: %r. Over A2A 1.0 this agent answers %s."
            % (errors.echo(name), _ANSWERED))
    return found


def call(found: Method, req: "CallContext", params: Any) -> Any:
    return v10.run(found.run, req, params)


def error_response(exc: errors.A2AError, request_id: Any = None,
                   bare: bool = False) -> "Response":
    """The JSON-RPC answer for ``exc``, its details in 1.0's form (a 401 the
    bare error object with its challenge, as in 0.3)."""
    error = v10.error_body(exc)
    if bare or exc.http_status == 401:
        return _json_response(error, exc.http_status, exc.headers)
    return _json_response({"jsonrpc": "2.0", "id": request_id, "error": error},
                          exc.http_status, exc.headers)
