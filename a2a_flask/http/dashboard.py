"""The operator's page (``A2A_DASHBOARD``) at ``PREFIX/dashboard/``.

A browser (``Accept`` naming ``text/html`` first) gets one self-contained
page holding no data, served to anyone, with a strict policy like the try
page's; everything it shows comes from the same URL asked for JSON, which
needs an operator: an operator key, an operator user (Basic), a host's
session user its ``session_operator`` hook names an operator, or a
``Caller`` a host hook made with ``operator=True``. Without credentials 401,
with another's 403.

The actions are POSTs with a JSON body (which no cross-site form can send);
for a session user the host's CSRF protection (Flask-WTF's) checks them too,
since the blueprint is otherwise exempt from it.
"""

from functools import lru_cache
from typing import TYPE_CHECKING, Any, Dict

from flask import Blueprint, Response, current_app, request
from marshmallow import Schema, ValidationError
from werkzeug.exceptions import HTTPException

from .. import dashboard, errors, urls
from ..auth.callers import authenticate
from ..protocol.json_body import json_response
from ..protocol.jsonrpc import error_response
from ..validation import NON_EMPTY, Id, Text, flatten_errors
from ..app_state import current_app_state
from .pipeline import storage_error
from .try_page import inline_page, page_response, wants_page

if TYPE_CHECKING:  # pragma: no cover
    from ..app_state import AppState
    from ..auth.callers import Caller
    from ..config import Settings


@lru_cache(maxsize=1)
def _page():
    return inline_page("dashboard.html", "dashboard.js")


def is_operator(app_state: "AppState", caller: "Caller") -> bool:
    """Whether ``caller`` may see the operator's page."""
    if caller.operator:
        return True
    hooks = app_state.extension.hooks
    if caller.kind == "user" and hooks.password_check is None:
        return app_state.credentials.user_is_operator(caller.name)
    if caller.kind == "session" and hooks.session_operator is not None:
        return bool(hooks.session_operator())
    return False


def _operator(app_state):
    """The operator calling, or ``UnauthenticatedError`` / ``NotAnOperatorError``."""
    caller = authenticate(app_state, request)
    if not is_operator(app_state, caller):
        raise errors.NotAnOperatorError()
    return caller


def _answer(work):
    """``work(app_state)``'s JSON, or the error it raised, rendered bare;
    a storage failure is 503 with the storage's own sentence."""
    app_state = current_app_state()
    try:
        body = work(app_state)
    except errors.A2AError as exc:
        response = error_response(exc, bare=True)
        if request.headers.get("X-Requested-With") == "a2a-dashboard":
            # The page asks for a key itself: no browser login dialog.
            response.headers.pop("WWW-Authenticate", None)
        return response
    except Exception as exc:
        failure = storage_error(app_state, exc)
        failure.http_status = 503
        return error_response(failure, bare=True)
    return json_response(body)


def view() -> Response:
    """``GET PREFIX/dashboard/``: the page, or its data."""
    if wants_page():
        return page_response(_page())
    return _answer(lambda app_state: (
        _operator(app_state), dashboard.dashboard_data(app_state, request.environ))[1])


class _TaskAction(Schema):
    task_id = Id(required=True, validate=NON_EMPTY)


class _CallerAction(Schema):
    caller = Text(required=True, validate=NON_EMPTY)


def _body(schema):
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise errors.OperatorActionError("The body must be a JSON object.")
    try:
        return schema().load(body)
    except ValidationError as exc:
        field, text = flatten_errors(exc.messages)[0]
        raise errors.OperatorActionError("%s: %s" % (field, text),
                                         data={"field": field}) from None


def _acting_operator(app_state):
    caller = _operator(app_state)
    if caller.kind == "session":
        csrf = current_app.extensions.get("csrf")
        if csrf is not None and hasattr(csrf, "protect"):
            try:
                csrf.protect()
            except HTTPException as exc:
                raise errors.OperatorActionError(
                    "The host's CSRF check refused this action: %s"
                    % exc.description) from None
    return caller


def _task_row(task):
    return {"task_id": task.id, "agent": task.agent, "caller": task.owner,
            "state": "canceled"}


def cancel_task() -> Response:
    """``POST PREFIX/dashboard/cancel-task`` ``{"task_id"}``."""
    def work(app_state: "AppState") -> Dict[str, Any]:
        caller = _acting_operator(app_state)
        task_id = _body(_TaskAction)["task_id"]
        return {"canceled": [_task_row(dashboard.cancel_task(
            app_state, caller.id, task_id))]}
    return _answer(work)


def cancel_caller() -> Response:
    """``POST PREFIX/dashboard/cancel-caller`` ``{"caller"}``."""
    def work(app_state: "AppState") -> Dict[str, Any]:
        operator = _acting_operator(app_state)
        caller = _body(_CallerAction)["caller"]
        return {"canceled": [_task_row(task) for task in dashboard.cancel_caller(
            app_state, operator.id, caller)]}
    return _answer(work)


def add_routes(bp: Blueprint, settings: "Settings") -> None:
    """The page and its actions, when ``A2A_DASHBOARD`` is on."""
    base = urls.dashboard_path(settings)
    bp.add_url_rule(base, "dashboard", view, methods=["GET"])
    bp.add_url_rule(base + "cancel-task", "dashboard_cancel_task", cancel_task,
                    methods=["POST"])
    bp.add_url_rule(base + "cancel-caller", "dashboard_cancel_caller",
                    cancel_caller, methods=["POST"])
