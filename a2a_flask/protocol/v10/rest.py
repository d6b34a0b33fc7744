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
import logging

from flask import Response, request

from ...http import access, urls
from ... import errors
from ...auth.callers import authenticate, authorize
from ...http.card_http import card_response
from ..jsonrpc import Envelope, _decode
from ...service import Request
from ..versions import HEADER, asked_version, version_error
from . import schemas, operations as v10

log = logging.getLogger("a2a_flask")

MEDIA_TYPE = "application/a2a+json"
#: google.rpc.Code names by HTTP status.
STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED",
                403: "PERMISSION_DENIED", 404: "NOT_FOUND", 405: "UNIMPLEMENTED",
                409: "ABORTED", 413: "INVALID_ARGUMENT",
                429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 501: "UNIMPLEMENTED",
                503: "UNAVAILABLE"}
_PRECONDITIONS = (errors.TaskNotCancelable, errors.PushNotificationNotSupported,
                  errors.UnsupportedOperation,
                  errors.AuthenticatedExtendedCardNotConfigured,
                  errors.VersionNotSupported)


def http_status(exc):
    """Section 5.4's HTTP status of ``exc``."""
    if exc.http_status != 200:
        return exc.http_status
    if isinstance(exc, (errors.TaskNotFound, errors.MethodNotFound)):
        return 404
    if isinstance(exc, errors.StorageUnavailable):
        return 503
    if isinstance(exc, errors.InternalError):
        return 500
    return 400


def rest_error(status, message, found=(), headers=None, name=None):
    name = name or STATUS_NAMES.get(status, "UNKNOWN")
    error = {"code": status, "status": name, "message": message}
    if found:
        error["details"] = list(found)
    return Response(_json({"error": error}), status=status, headers=headers,
                    mimetype=MEDIA_TYPE)


def error_response(exc):
    status = http_status(exc)
    # Section 5.4's gRPC column names these more precisely than their 400.
    name = "FAILED_PRECONDITION" if isinstance(exc, _PRECONDITIONS) else None
    return rest_error(status, v10.words(exc.message), v10.details(exc),
                      exc.headers, name)


def _json(payload):
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def _ok(payload):
    return Response(_json(payload), mimetype=MEDIA_TYPE)


def _body(runtime):
    """The JSON object of a POST body ({} when there is none)."""
    from ...http.blueprint import _read_body
    raw = _read_body(runtime.settings.max_content_length)
    if not raw.strip():
        return {}
    try:
        return _decode(raw)
    except ValueError:
        raise errors.ParseError("The request body is not valid UTF-8 JSON.") from None


def _extended_card(runtime, card):
    """The extended card, revalidated at each use: shown to its caller only."""
    return card_response(runtime, card, public=False, response=_ok(card))


class Route:
    """One HTTP+JSON route: its path below the base, HTTP method, the 1.0
    method it performs (the access log's and metrics' name), how its params
    are read, and the operation."""

    __slots__ = ("path", "http_method", "name", "schema", "operation", "source",
                 "respond")

    def __init__(self, path, http_method, name, operation, schema=None,
                 source="body", respond=None):
        self.path = path
        #: ``respond(runtime, result)``: the answer of a result (default: JSON).
        self.respond = respond or (lambda runtime, result: _ok(result))
        self.http_method = http_method
        self.name = name
        self.operation = operation
        self.schema = schema
        self.source = source

    def params(self, runtime, path_args):
        if self.source == "query":
            params = request.args.to_dict()
            params.pop(HEADER, None)
        elif self.source == "body":
            params = _body(runtime)
            if not isinstance(params, dict):
                raise errors.InvalidParams("The request body must be a JSON object.",
                                           data={"field": "body"})
        else:
            params = {}
        params.update(path_args)
        return params


_PUSH_PATHS = ("/tasks/<id>/pushNotificationConfigs",
               "/tasks/<id>/pushNotificationConfigs/<config_id>")
ROUTES = [
    Route("/message:send", "POST", "SendMessage", v10.send_message,
          schemas.SEND_MESSAGE),
    Route("/message:stream", "POST", "SendStreamingMessage", v10.SEND_STREAMING),
    Route("/tasks/<id>", "GET", "GetTask", v10.get_task, schemas.GET_TASK_QUERY,
          "query"),
    Route("/tasks", "GET", "ListTasks", v10.list_tasks, schemas.LIST_TASKS_QUERY,
          "query"),
    Route("/tasks/<id>:cancel", "POST", "CancelTask", v10.cancel_task,
          schemas.CANCEL_TASK),
    Route("/tasks/<id>:subscribe", "POST", "SubscribeToTask", v10.SUBSCRIBE,
          source=None),
    Route("/extendedAgentCard", "GET", "GetExtendedAgentCard", v10.extended_card,
          source=None, respond=_extended_card),
    Route(_PUSH_PATHS[0], "POST", "CreateTaskPushNotificationConfig", v10.PUSH,
          source=None),
    Route(_PUSH_PATHS[0], "GET", "ListTaskPushNotificationConfigs", v10.PUSH,
          source=None),
    Route(_PUSH_PATHS[1], "GET", "GetTaskPushNotificationConfig", v10.PUSH,
          source=None),
    Route(_PUSH_PATHS[1], "DELETE", "DeleteTaskPushNotificationConfig", v10.PUSH,
          source=None),
]


def _answer(runtime, route, name, at_root, path_args, record):
    caller = None
    try:
        asked = asked_version(request)
        if asked != "1.0":
            raise version_error(asked) or errors.VersionNotSupported(
                "This HTTP+JSON interface speaks A2A 1.0 only: send the header "
                "A2A-Version: 1.0 (none means 0.3, served over JSON-RPC at "
                "the agent's /a2a endpoint).",
                data={"requestedVersion": asked or "0.3",
                      "supportedVersions": "1.0"})
        caller = authenticate(runtime, request)
        agent = runtime.reachable_agent(name)
        authorize(caller, agent)
        params = route.params(runtime, path_args)
        record.params = params
        if route.schema is not None:
            params = v10.load(route.schema, params)
        return route.respond(runtime, v10.run(
            route.operation, Request(runtime, agent, caller, at_root), params))
    except errors.A2AError as exc:
        return error_response(exc)
    except Exception as exc:
        failure = runtime.storage.failure(exc)
        if failure is not None:
            return error_response(failure)
        log.exception("internal error answering agent %r", name)
        return error_response(errors.InternalError(
            "Internal error: the service could not answer this request."))
    finally:
        access.note(record, caller, v10.VERSION)


def view(route, runtime_of, agent_of, at_root=False):
    """The Flask view of ``route``: ``agent_of(kwargs)`` names the agent."""

    def answer_route(**kwargs):
        runtime = runtime_of()
        name = agent_of(kwargs)
        record = Envelope(method=route.name, params=dict(kwargs))

        def answer():
            problem = runtime.schema_problem()
            if problem is not None:
                return error_response(problem)
            return _answer(runtime, route, name, at_root, kwargs, record)

        return access.logged_call(
            name, answer, runtime.metrics.observe_call if runtime.metrics else None)

    return answer_route


def add_routes(bp, settings, runtime_of):
    """The routes under every agent, and at the root when A2A_ROOT_REST."""
    base = urls.rest_rule(settings)
    for index, route in enumerate(ROUTES):
        bp.add_url_rule(base + route.path, "rest_%d" % index,
                        view(route, runtime_of, lambda kw: kw.pop("name")),
                        methods=[route.http_method])
        if urls.root_rest(settings):
            bp.add_url_rule(route.path, "root_rest_%d" % index,
                            view(route, runtime_of,
                                 lambda kw: runtime_of().settings.default_agent,
                                 at_root=True),
                            methods=[route.http_method])


def is_rest_path(settings, path):
    """Whether ``path`` is under an HTTP+JSON tree (its errors are REST's)."""
    prefix = urls.agents_tree(settings) + "/"
    if path.startswith(prefix):
        rest = path[len(prefix):].split("/")
        return len(rest) >= 2 and rest[1] == "rest"
    return urls.root_rest(settings) and path.startswith(urls.REST_TREES)
