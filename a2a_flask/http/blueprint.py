"""The blueprint: every route of the service, laid out by ``urls.py``.

Calls to an agent (JSON-RPC at ``.../a2a``, HTTP+JSON under ``.../rest``) go
through the one call pipeline (``pipeline.answer_call``; the JSON-RPC view,
``pipeline.rpc``, and the hook of the headers every answer carries live
there too, so that a call's view is no hop of its own); the cards, the
agent list and the health check are ``discovery.py``'s; every other path of
ours answers JSON (``json_fallbacks.py``).
"""

from flask import Blueprint

from .. import urls
from ..protocol.v10 import rest
from . import dashboard, discovery
from .json_fallbacks import add_fallbacks
from ..app_state import current_app_state
from .pipeline import add_headers, answer_call, rpc


def _rest_view(route, agent_of, at_root=False):
    """The Flask view of HTTP+JSON ``route``: ``agent_of(kwargs)`` names the
    agent (and takes it out of the path's arguments)."""

    def answer_route(**kwargs):
        name = agent_of(kwargs)
        return answer_call(rest.RestCall(route, kwargs), name, at_root)

    return answer_route


def _add_rest_routes(bp, settings):
    """The HTTP+JSON routes under every agent, and at the root with
    A2A_ROOT_REST; each also below a tenant (``/<tenant>/message:send``,
    the 1.0 proto's paths), at the root only when A2A_TENANTS names some."""
    base = urls.rest_rule(settings)
    default_agent = lambda kw: current_app_state().settings.default_agent  # noqa: E731
    for index, route in enumerate(rest.ROUTES):
        for rule, endpoint in ((base + route.path, "rest_%d"),
                               (base + urls.TENANT_RULE + route.path, "tenant_rest_%d")):
            bp.add_url_rule(rule, endpoint % index,
                            _rest_view(route, lambda kw: kw.pop("name")),
                            methods=[route.http_method])
        if urls.root_rest(settings):
            bp.add_url_rule(route.path, "root_rest_%d" % index,
                            _rest_view(route, default_agent, at_root=True),
                            methods=[route.http_method])
            if settings.tenants:
                bp.add_url_rule(urls.TENANT_RULE + route.path,
                                "root_tenant_rest_%d" % index,
                                _rest_view(route, default_agent, at_root=True),
                                methods=[route.http_method])


def make_blueprint(settings):
    bp = Blueprint("a2a", __name__)

    # The slash rule with strict_slashes=False: Werkzeug 1.0 tries it first
    # and would otherwise redirect /a2a to /a2a/ (both run the same view).
    bp.add_url_rule(urls.rpc_rule(settings), "rpc", rpc, methods=["POST"])
    bp.add_url_rule(urls.rpc_rule(settings) + "/", "rpc", rpc, methods=["POST"],
                    strict_slashes=False)

    for path, endpoint in zip(urls.CARD_PATHS, ("card", "legacy_card")):
        bp.add_url_rule(urls.agent_rule(settings) + path, endpoint, discovery.card,
                        methods=["GET"])
    for index, path in enumerate(urls.CARD_ALIASES):
        bp.add_url_rule(urls.agent_rule(settings) + path, "card_alias_%d" % index,
                        discovery.card, methods=["GET"])
    bp.add_url_rule(urls.agents_tree(settings) + urls.CARD_PATHS[0],
                    "agentless_card", discovery.agentless_card, methods=["GET"])
    # The URL a client is given: the try page, or where the card is.
    bp.add_url_rule(urls.agent_rule(settings) + "/", "agent_base",
                    discovery.agent_base, methods=["GET"])
    bp.add_url_rule(urls.agents_tree(settings), "agent_list", discovery.agent_list,
                    methods=["GET"])
    bp.add_url_rule(urls.health_path(settings), "health", discovery.health,
                    methods=["GET"])

    if settings.card_signing_key:
        bp.add_url_rule(urls.jwks_path(settings), "jwks", discovery.jwks,
                        methods=["GET"])

    if settings.metrics:
        @bp.route(urls.metrics_path(settings), methods=["GET"])
        def metrics():
            return current_app_state().metrics.response()

    if settings.dashboard:
        dashboard.add_routes(bp, settings)

    if settings.default_agent:
        # The single-endpoint shape: the default agent at the host root.
        @bp.route(urls.ROOT_RPC, methods=["POST"])
        @bp.route(urls.ROOT_RPC + "/", methods=["POST"], strict_slashes=False)
        def default_rpc():
            return rpc(current_app_state().settings.default_agent, at_root=True)

        def default_card():
            return discovery.card(current_app_state().settings.default_agent,
                                  at_root=True)

        for path, endpoint in zip(urls.CARD_PATHS, ("card", "legacy_card")):
            bp.add_url_rule(path, "default_" + endpoint, default_card,
                            methods=["GET"])
            # Also below the endpoint: clients (and the 1.0 conformance kit)
            # given http://host/a2a look for the card there.
            bp.add_url_rule(urls.ROOT_RPC + path, "endpoint_" + endpoint,
                            default_card, methods=["GET"])
    _add_rest_routes(bp, settings)
    add_fallbacks(bp, urls.owned_paths(settings),
                  rest=lambda path: urls.is_rest_path(settings, path),
                  rest_error=rest.rest_error,
                  method_hints={"rpc": discovery.rpc_method_hint,
                                "default_rpc": discovery.rpc_method_hint})
    add_headers(bp)
    return bp
