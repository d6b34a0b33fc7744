"""Agent Cards: what the service tells callers about each agent."""

import logging

from flask import current_app, request
from werkzeug.exceptions import SecurityError

from .. import urls
from ..auth.callers import security_requirements
from ..compat import host_is_trusted

log = logging.getLogger("a2a_flask")

PROTOCOL_VERSION = "0.3.0"
#: What 1.0 clients read in ``supportedInterfaces`` (Major.Minor, section 3.6).
PROTOCOL_VERSION_V10 = "1.0"
#: The A2A extension (``capabilities.extensions``) by which an agent says
#: that a message sent again with the same ``messageId`` by the same caller
#: runs once and answers the same task: a client may retry a send whose
#: answer it lost (a2a_flask.client does, and only then).
MESSAGE_ID_ONCE = "urn:a2a-flask:ext:message-id-once:v1"
MESSAGE_ID_ONCE_EXTENSION = {
    "uri": MESSAGE_ID_ONCE, "required": False,
    "description": "A message sent again with the same messageId by the same "
                   "caller runs once and answers the task it started or "
                   "continued: retrying a send is safe."}


def base_url(settings):
    """The service's URL as callers reach it (A2A_PUBLIC_BASE_URL behind a proxy).

    Without A2A_PUBLIC_BASE_URL it comes from the request's ``Host`` header,
    checked against Flask's ``TRUSTED_HOSTS`` when that is set (Flask 3.1
    checks it itself; older Flask versions are checked here), and the first
    such use in a process logs a warning (not in debug mode).
    """
    if settings.public_base_url:
        return settings.public_base_url
    app = current_app
    trusted = app.config.get("TRUSTED_HOSTS")
    if trusted and not host_is_trusted(request.host, trusted):
        raise SecurityError("Host %r is not in TRUSTED_HOSTS." % request.host)
    if not settings.host_warned:
        settings.host_warned = True
        if not app.debug:
            log.warning(
                "A2A_PUBLIC_BASE_URL is not set: Agent Cards advertise URLs "
                "built from each request's Host header, which a caller can "
                "forge%s. Set A2A_PUBLIC_BASE_URL to the public URL (or Flask's "
                "TRUSTED_HOSTS).", "" if trusted else " (TRUSTED_HOSTS is not set)")
    return request.url_root.rstrip("/")


def agent_url(settings, name, at_root=False):
    """The JSON-RPC endpoint of agent ``name`` (``/a2a`` for the default agent
    reached at the host root)."""
    return base_url(settings) + urls.agent_path(settings, name, at_root)


def agent_card(app_state, agent, at_root=False, extended=False):
    """The AgentCard of ``agent``; ``at_root``: as the default agent at /a2a."""
    url = agent_url(app_state.settings, agent.name, at_root)
    schemes, security = security_requirements(app_state, agent)
    description = agent.description
    if app_state.settings.auth_off:
        description += " (Authentication is off on this service.)"
    card = {
        "protocolVersion": PROTOCOL_VERSION,
        "name": agent.name,
        "description": description,
        "url": url,
        "preferredTransport": "JSONRPC",
        # The spec asks the main URL to be repeated here; some clients (and
        # conformance kits) find the JSON-RPC endpoint only through it.
        "additionalInterfaces": [{"url": url, "transport": "JSONRPC"}],
        "version": agent.version,
        "capabilities": {"streaming": False, "pushNotifications": False,
                         "stateTransitionHistory": False,
                         "extendedAgentCard": (agent.has_extended_card
                                               and not app_state.settings.auth_off),
                         "extensions": [MESSAGE_ID_ONCE_EXTENSION]},
        "defaultInputModes": agent.input_modes,
        "defaultOutputModes": agent.output_modes,
        "skills": agent.skills + (agent.extended_skills if extended else []),
        "supportsAuthenticatedExtendedCard": (
            agent.has_extended_card and not app_state.settings.auth_off),
    }
    card["supportedInterfaces"] = supported_interfaces(app_state.settings,
                                                       agent.name, at_root, url)
    if schemes:
        card["securitySchemes"] = {name: _both_forms(scheme)
                                   for name, scheme in schemes.items()}
        card["security"] = security
        card["securityRequirements"] = [
            {"schemes": {name: {"list": scopes} for name, scopes in item.items()}}
            for item in security]
    card.update(agent.card)
    return card


def supported_interfaces(settings, name, at_root, rpc_url):
    """A2A 1.0's list of interfaces, preferred first: JSON-RPC 1.0, HTTP+JSON
    1.0, then JSON-RPC 0.3 (the same endpoint; the ``A2A-Version`` header
    tells them apart)."""
    rest_at_root = at_root and urls.root_rest(settings)
    rest_url = base_url(settings) + urls.rest_path(settings, name, rest_at_root)
    return [
        {"url": rpc_url, "protocolBinding": "JSONRPC",
         "protocolVersion": PROTOCOL_VERSION_V10},
        {"url": rest_url, "protocolBinding": "HTTP+JSON",
         "protocolVersion": PROTOCOL_VERSION_V10},
        {"url": rpc_url, "protocolBinding": "JSONRPC",
         "protocolVersion": PROTOCOL_VERSION[:3]},
    ]


def _both_forms(scheme):
    """A 0.3 security scheme with its 1.0 form beside it in the same object
    (``apiKeySecurityScheme``/``httpAuthSecurityScheme``), as the official
    SDK's compatible cards do: each version's reader takes its own members."""
    both = dict(scheme)
    if scheme["type"] == "apiKey":
        both["apiKeySecurityScheme"] = {
            "location": scheme["in"], "name": scheme["name"],
            "description": scheme.get("description", "")}
    elif scheme["type"] == "http":
        both["httpAuthSecurityScheme"] = {
            "scheme": scheme["scheme"],
            "description": scheme.get("description", "")}
    elif scheme["type"] == "openIdConnect":
        both["openIdConnectSecurityScheme"] = {
            "openIdConnectUrl": scheme["openIdConnectUrl"],
            "description": scheme["description"]}
    elif scheme["type"] == "oauth2":
        both["oauth2SecurityScheme"] = {"flows": scheme["flows"],
                                        "description": scheme["description"]}
    elif scheme["type"] == "mutualTLS":
        both["mtlsSecurityScheme"] = {"description": scheme["description"]}
    return both
