"""JSON, never a page of the host app, for errors on the service's own paths.

A 404 or 405 is raised while routing, before any blueprint is chosen, so the
host's ``@app.errorhandler(404)`` would answer it. Catch-all routes of the
blueprint, taking every method, bring those paths inside the blueprint; its
error handlers then answer any HTTP error or exception of its views ahead of
the host's. Nothing is registered on the app itself: the host's pages keep
the host's handlers.
"""

import logging

from flask import current_app, request
from werkzeug.exceptions import (HTTPException, MethodNotAllowed, NotFound,
                                 default_exceptions)
from werkzeug.routing import Rule

from .. import errors
from ..compat import registered_name
from ..protocol.json_body import json_response
from ..protocol.jsonrpc import error_response

log = logging.getLogger("a2a_flask")

UNROUTED = "unrouted"


def http_error_response(exc):
    """An HTTP error (werkzeug's) as the bare JSON error object."""
    code = -32603 if exc.code >= 500 else -32600
    response = json_response({"code": code, "message": "%s: %s" % (
        exc.name, exc.description)}, exc.code)
    if getattr(exc, "valid_methods", None):
        response.headers["Allow"] = ", ".join(exc.valid_methods)
    return response


def _allowed_methods(own_endpoint):
    """The methods some other route takes at this request's path, and those
    routes as {endpoint: its path's arguments}."""
    adapter = current_app.create_url_adapter(request)
    candidates = set()
    for rule in current_app.url_map.iter_rules():
        candidates.update(rule.methods or ())
    allowed = set()
    routes = {}
    for method in candidates:
        try:
            rule, values = adapter.match(method=method, return_rule=True)
        except HTTPException:  # no route, or a redirect: not this method
            continue
        if rule.endpoint != own_endpoint:
            allowed.add(method)
            routes[rule.endpoint] = values
    return sorted(allowed), routes


def _unexpected(exc):
    log.exception("internal error answering %s %s", request.method, request.path)
    return error_response(errors.service_failed(http_status=500), bare=True)


def add_fallbacks(bp, paths, rest=None, rest_error=None, method_hints=None):
    """Catch-all routes at ``paths`` and the blueprint's error handlers.

    ``rest(path)`` tells the paths of an HTTP+JSON interface, whose errors
    are ``rest_error(status, message)`` bodies instead. ``method_hints``
    maps an endpoint of the blueprint (its name without the blueprint's) to
    ``hint(**path_arguments)``: the description of a 405 at its path.
    """
    method_hints = method_hints or {}

    def http_error(exc):
        response = http_error_response(exc)
        if rest is not None and rest(request.path):
            allow = response.headers.get("Allow")
            response = rest_error(exc.code, "%s: %s" % (exc.name, exc.description))
            if allow:
                response.headers["Allow"] = allow
        return response

    def register(setup_state):
        endpoint = "%s.%s" % (registered_name(setup_state), UNROUTED)

        def unrouted(**_):
            allowed, routes = _allowed_methods(endpoint)
            if not allowed:
                return http_error(NotFound())
            description = None
            for route, values in routes.items():
                hint = method_hints.get(route.rpartition(".")[2])
                if hint is not None:
                    description = hint(**values)
                    break
            return http_error(MethodNotAllowed(valid_methods=allowed,
                                               description=description))

        # Added after the blueprint's routes: at an equal path, theirs match
        # first. methods=None takes every method, which Flask's add_url_rule
        # cannot express.
        for path in paths:
            setup_state.app.url_map.add(Rule(path, endpoint=endpoint))
        setup_state.app.view_functions[endpoint] = unrouted

    bp.record(register)
    # By code too: a host handler for a code is looked up before any handler
    # for a class, but a blueprint's before the app's.
    for code in default_exceptions:
        bp.register_error_handler(code, http_error)
    bp.register_error_handler(HTTPException, http_error)
    bp.register_error_handler(Exception, _unexpected)
