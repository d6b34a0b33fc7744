"""Agent Cards: what the service tells callers about each agent."""

import logging
from typing import TYPE_CHECKING, Any, Dict, Iterable, List

from flask import current_app, request
from werkzeug.exceptions import SecurityError

from .. import urls
from ..auth.callers import security_requirements
from ..compat import host_is_trusted

if TYPE_CHECKING:  # pragma: no cover
    from ..agent.registry import Agent
    from ..app_state import AppState
    from ..config import Settings

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


def base_url(settings: "Settings") -> str:
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


def agent_url(settings: "Settings", name: str, at_root: bool = False) -> str:
    """The JSON-RPC endpoint of agent ``name`` (``/a2a`` for the default agent
    reached at the host root)."""
    return base_url(settings) + urls.agent_path(settings, name, at_root)


#: The members of the 1.0 AgentCard (proto ``lf.a2a.v1.AgentCard``) but
#: ``signatures``: of an agent's extra card members (``card=``), the 1.0
#: form keeps these only.
V10_MEMBERS = frozenset((
    "name", "description", "supportedInterfaces", "provider", "version",
    "documentationUrl", "capabilities", "securitySchemes",
    "securityRequirements", "defaultInputModes", "defaultOutputModes",
    "skills", "iconUrl"))


def card_v10(app_state: "AppState", agent: "Agent", at_root: bool = False,
             extended: bool = False) -> Dict[str, Any]:
    """The AgentCard of ``agent`` in pure A2A 1.0 form (unsigned);
    ``at_root``: as the default agent at /a2a."""
    url = agent_url(app_state.settings, agent.name, at_root)
    schemes, security = security_requirements(app_state, agent)
    description = agent.description
    if app_state.settings.auth_off:
        description += " (Authentication is off on this service.)"
    card = {
        "name": agent.name,
        "description": description,
        "supportedInterfaces": supported_interfaces(
            app_state.settings, agent.name, at_root, url,
            app_state.agent_tenants(agent)),
        "version": agent.version,
        "capabilities": {"streaming": False, "pushNotifications": False,
                         "extendedAgentCard": _offers_extended(app_state, agent),
                         "extensions": [MESSAGE_ID_ONCE_EXTENSION]},
        "defaultInputModes": agent.input_modes,
        "defaultOutputModes": agent.output_modes,
        "skills": agent.skills + (agent.extended_skills if extended else []),
    }
    if schemes:
        card["securitySchemes"] = {name: _v10_scheme(scheme)
                                   for name, scheme in schemes.items()}
        card["securityRequirements"] = [
            {"schemes": {name: {"list": scopes} for name, scopes in item.items()}}
            for item in security]
    card.update((key, value) for key, value in agent.card.items()
                if key in V10_MEMBERS)
    return card


def compatible_card(app_state: "AppState", agent: "Agent", v10_card: Dict[str, Any],
                    at_root: bool = False) -> Dict[str, Any]:
    """``v10_card`` with the 0.3 members beside the 1.0 ones (the official
    SDK's compatible form): a 0.3 reader finds ``url``/``preferredTransport``,
    a 1.0 reader ignores them."""
    url = v10_card["supportedInterfaces"][0]["url"]
    schemes, security = security_requirements(app_state, agent)
    capabilities = v10_card["capabilities"]
    # The 0.3 reader's order: its own members first, as the 0.3 schema lists them.
    card = {
        "protocolVersion": PROTOCOL_VERSION,
        "name": v10_card["name"],
        "description": v10_card["description"],
        "url": url,
        "preferredTransport": "JSONRPC",
        # The spec asks the main URL to be repeated here; some clients (and
        # conformance kits) find the JSON-RPC endpoint only through it.
        "additionalInterfaces": [{"url": url, "transport": "JSONRPC"}],
        "version": v10_card["version"],
        "capabilities": dict({"streaming": capabilities["streaming"],
                              "pushNotifications": capabilities["pushNotifications"],
                              "stateTransitionHistory": False}, **capabilities),
        "defaultInputModes": v10_card["defaultInputModes"],
        "defaultOutputModes": v10_card["defaultOutputModes"],
        "skills": v10_card["skills"],
        "supportsAuthenticatedExtendedCard": _offers_extended(app_state, agent),
    }
    for key, value in v10_card.items():
        if key not in ("securitySchemes", "securityRequirements"):
            card.setdefault(key, value)
    if schemes:
        card["securitySchemes"] = {name: _both_forms(scheme)
                                   for name, scheme in schemes.items()}
        card["security"] = security
        card["securityRequirements"] = v10_card["securityRequirements"]
    card.update(agent.card)
    return card


def agent_card(app_state: "AppState", agent: "Agent", at_root: bool = False,
               extended: bool = False, form: str = "0.3") -> Dict[str, Any]:
    """The card served to a caller of protocol version ``form`` ("1.0": the
    pure 1.0 card; else the 0.3-compatible one), signed when
    A2A_CARD_SIGNING_KEY is set: both forms carry the signature of the 1.0
    card, which a 1.0 reader of either finds."""
    card = card_v10(app_state, agent, at_root, extended)
    signer = app_state.card_signer
    signatures = signer.signatures(card) if signer is not None else None
    if form != PROTOCOL_VERSION_V10:
        card = compatible_card(app_state, agent, card, at_root)
    if signatures:
        card["signatures"] = signatures
    return card


def v10_reading(card: Dict[str, Any]) -> Dict[str, Any]:
    """What a 1.0 reader finds in a card of either form: its 1.0 members
    only (each security scheme its 1.0 member), as a verifier of its
    signature reads it."""
    found = {key: value for key, value in card.items()
             if key in V10_MEMBERS or key == "signatures"}
    capabilities = dict(found.get("capabilities") or {})
    capabilities.pop("stateTransitionHistory", None)
    found["capabilities"] = capabilities
    if "securitySchemes" in found:
        kinds = {kind for kind, _ in _V10_SCHEMES.values()}
        found["securitySchemes"] = {
            name: {kind: body for kind, body in scheme.items() if kind in kinds}
            for name, scheme in found["securitySchemes"].items()}
    return found


def _offers_extended(app_state, agent):
    return agent.has_extended_card and not app_state.settings.auth_off


def supported_interfaces(settings: "Settings", name: str, at_root: bool,
                         rpc_url: str, tenants: Iterable[str] = ()
                         ) -> List[Dict[str, Any]]:
    """A2A 1.0's list of interfaces, preferred first: JSON-RPC 1.0, HTTP+JSON
    1.0, then JSON-RPC 0.3 (the same endpoint; the ``A2A-Version`` header
    tells them apart); then, for each of ``tenants``, the two 1.0 ones with
    its ``tenant``, which a client sends in every request (0.3 has none).
    Those of no tenant stay first: a client that reads the first interface
    works as before."""
    rest_at_root = at_root and urls.root_rest(settings)
    rest_url = base_url(settings) + urls.rest_path(settings, name, rest_at_root)
    return _interfaces(rpc_url, rest_url) + [
        dict(item, tenant=tenant) for tenant in tenants
        for item in _interfaces(rpc_url, rest_url)[:2]]


def _interfaces(rpc_url, rest_url):
    return [
        {"url": rpc_url, "protocolBinding": "JSONRPC",
         "protocolVersion": PROTOCOL_VERSION_V10},
        {"url": rest_url, "protocolBinding": "HTTP+JSON",
         "protocolVersion": PROTOCOL_VERSION_V10},
        {"url": rpc_url, "protocolBinding": "JSONRPC",
         "protocolVersion": PROTOCOL_VERSION[:3]},
    ]


#: 0.3 security scheme ``type`` -> (the 1.0 SecurityScheme member naming
#: that kind, {0.3 member: 1.0 member}).
_V10_SCHEMES = {
    "apiKey": ("apiKeySecurityScheme", {"in": "location", "name": "name"}),
    "http": ("httpAuthSecurityScheme", {"scheme": "scheme",
                                        "bearerFormat": "bearerFormat"}),
    "oauth2": ("oauth2SecurityScheme", {"flows": "flows",
                                        "oauth2MetadataUrl": "oauth2MetadataUrl"}),
    "openIdConnect": ("openIdConnectSecurityScheme",
                      {"openIdConnectUrl": "openIdConnectUrl"}),
    "mutualTLS": ("mtlsSecurityScheme", {}),
}


def _v10_scheme(scheme):
    """The 1.0 SecurityScheme of a 0.3 one (a oneof: one member naming the
    kind); empty members are left out, as 1.0 omits default values."""
    kind, members = _V10_SCHEMES[scheme["type"]]
    body = {new: scheme[old] for old, new in members.items() if scheme.get(old)}
    if scheme.get("description"):
        body["description"] = scheme["description"]
    return {kind: body}


def _both_forms(scheme):
    """A 0.3 security scheme with its 1.0 form beside it in the same object
    (``apiKeySecurityScheme``/``httpAuthSecurityScheme``), as the official
    SDK's compatible cards do: each version's reader takes its own members."""
    both = dict(scheme)
    both.update(_v10_scheme(scheme))
    return both

