"""A2A 1.0 over HTTP+JSON (specification section 11): the routes, their
params (a JSON body for POST, the query string for GET) and errors.

Per agent under ``PREFIX/agents/<name>/rest``; for the default agent also
at the host root with A2A_ROOT_REST. Every request must ask for
``A2A-Version: 1.0`` (header or query parameter): this interface serves no
other version, and none means 0.3 (section 3.6). An error is
``{"error": google.rpc.Status}`` with ``status`` and ``details`` (an
ErrorInfo naming the A2A error), at the HTTP status of section 5.4.
"""

import json
from typing import TYPE_CHECKING, Any, Dict, Iterable, Optional

from flask import Response

from ... import errors
from .. import errors as answers
from ...validation import load_params
from ..call import ProtocolCall, version_error
from ..card_http import card_response
from ..json_body import decode_json, json_chunks
from ..jsonrpc import Envelope
from . import operations as v10
from . import schemas

if TYPE_CHECKING:  # pragma: no cover
    from ...service import CallContext
    from ..errors import Refusal

MEDIA_TYPE = "application/a2a+json"


def rest_error(status: int, message: str, found: Iterable[Dict[str, Any]] = (),
               headers: Optional[Dict[str, str]] = None, name: Optional[str] = None) -> Response:
    """A google.rpc.Status error body at HTTP ``status`` (``name``: its code
    name, by default the status's)."""
    name = name or answers.STATUS_NAMES.get(status, "UNKNOWN")
    error = {"code": status, "status": name, "message": message}
    if found:
        error["details"] = list(found)
    return Response(_json({"error": error}), status=status, headers=headers,
                    mimetype=MEDIA_TYPE)


def error_response(exc: "Refusal") -> Response:
    """The HTTP+JSON answer of ``exc`` (a storage outcome or failure too)."""
    exc = answers.as_a2a_error(exc, v10.WORDING)
    return rest_error(answers.rest_status(exc), exc.message, v10.details(exc),
                      exc.headers, answers.grpc_status(exc))


def _json(payload):
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def _ok(payload):
    return Response(_json(payload), mimetype=MEDIA_TYPE)


def _body(inbound):
    """The JSON object of a POST body ({} when there is none)."""
    raw = inbound.body()
    if not raw.strip():
        return {}
    return decode_json(raw)


def _extended_card(app_state, card):
    """The extended card, revalidated at each use: shown to its caller only."""
    return card_response(app_state, card, public=False, response=_ok(card))


class Route:
    """One HTTP+JSON route: its path below the base, HTTP method, the 1.0
    method it performs (``operations.METHODS``; the access log's and
    metrics' name) and how its params are read."""

    __slots__ = ("path", "http_method", "name", "schema", "operation", "source",
                 "respond", "runs_turn")

    def __init__(self, path, http_method, name, schema=None, source="body",
                 respond=None):
        self.path = path
        #: ``respond(app_state, result)``: the answer of a result (default: JSON).
        self.respond = respond or (lambda app_state, result: _ok(result))
        self.http_method = http_method
        self.name = name
        method = v10.METHODS[name]
        self.operation = method.run
        self.runs_turn = method.runs_turn
        #: The method's own schema, unless the route reads a query string.
        self.schema = schema or method.schema
        self.source = source

    def params(self, inbound: Any, path_args: Dict[str, str]) -> Any:
        if self.source == "query":
            params = inbound.query
        elif self.source == "body":
            params = _body(inbound)
            if not isinstance(params, dict):
                raise errors.InvalidParamsError("The request body must be a JSON object.",
                                           data={"field": "body"})
        else:
            params = {}
        params.update(path_args)
        return params


_PUSH_PATHS = ("/tasks/<id>/pushNotificationConfigs",
               "/tasks/<id>/pushNotificationConfigs/<config_id>")
ROUTES = [
    Route("/message:send", "POST", "SendMessage"),
    Route("/message:stream", "POST", "SendStreamingMessage"),
    Route("/tasks/<id>", "GET", "GetTask", schemas.GET_TASK_QUERY, "query"),
    Route("/tasks", "GET", "ListTasks", schemas.LIST_TASKS_QUERY, "query"),
    Route("/tasks/<id>:cancel", "POST", "CancelTask"),
    Route("/tasks/<id>:subscribe", "POST", "SubscribeToTask", source=None),
    Route("/extendedAgentCard", "GET", "GetExtendedAgentCard", source=None,
          respond=_extended_card),
    Route(_PUSH_PATHS[0], "POST", "CreateTaskPushNotificationConfig", source=None),
    Route(_PUSH_PATHS[0], "GET", "ListTaskPushNotificationConfigs", source=None),
    Route(_PUSH_PATHS[1], "GET", "GetTaskPushNotificationConfig", source=None),
    Route(_PUSH_PATHS[1], "DELETE", "DeleteTaskPushNotificationConfig", source=None),
]


class RestCall(ProtocolCall):
    """A call of one HTTP+JSON route (always A2A 1.0)."""

    version = v10.VERSION

    def __init__(self, route, path_args):
        self.route = route
        self.path_args = path_args
        self.record = Envelope(method=route.name, params=dict(path_args))
        self.runs_turn = route.runs_turn

    def start(self, inbound: Any) -> None:
        asked = inbound.asked_version
        if asked != "1.0":
            raise version_error(asked) or errors.VersionNotSupportedError(
                "This HTTP+JSON interface speaks A2A 1.0 only: send the header "
                "A2A-Version: 1.0 (none means 0.3, served over JSON-RPC at "
                "the agent's /a2a endpoint).",
                data={"requestedVersion": asked or "0.3",
                      "supportedVersions": "1.0"})

    def params(self, inbound):
        params = self.route.params(inbound, self.path_args)
        self.record.params = params
        if self.route.schema is not None:
            params = load_params(self.route.schema, params)
        return params

    def run(self, context: "CallContext", params: Any) -> Any:
        self.app_state = context.app_state  # the card's ETag names its signing key
        return self.route.operation(context, params)

    def answer(self, result: Any, stream: bool = False) -> Response:
        if stream:
            return Response(json_chunks(result), mimetype=MEDIA_TYPE)
        return self.route.respond(self.app_state, result)

    def refuse(self, error: "Refusal") -> Response:
        return error_response(error)
