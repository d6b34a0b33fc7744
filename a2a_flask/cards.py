"""Agent Cards: what the service tells callers about each agent."""

from flask import request

from .auth import security_requirements

PROTOCOL_VERSION = "0.3.0"


def base_url(settings):
    """The service's URL as callers reach it (A2A_PUBLIC_BASE_URL behind a proxy)."""
    return settings.public_base_url or request.url_root.rstrip("/")


def agent_url(settings, name, at_root=False):
    """The JSON-RPC endpoint of agent ``name`` (``/a2a`` for the default agent
    reached at the host root)."""
    if at_root:
        return base_url(settings) + "/a2a"
    return "%s%s/agents/%s/a2a" % (base_url(settings), settings.url_prefix, name)


def agent_card(state, agent, at_root=False, extended=False):
    """The AgentCard of ``agent``; ``at_root``: as the default agent at /a2a."""
    url = agent_url(state.settings, agent.name, at_root)
    schemes, security = security_requirements(state)
    description = agent.description
    if state.settings.auth_off:
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
                         "stateTransitionHistory": False},
        "defaultInputModes": agent.input_modes,
        "defaultOutputModes": agent.output_modes,
        "skills": agent.skills + (agent.extended_skills if extended else []),
        "supportsAuthenticatedExtendedCard": (
            agent.has_extended_card and not state.settings.auth_off),
    }
    if schemes:
        card["securitySchemes"] = schemes
        card["security"] = security
    card.update(agent.card)
    return card
