"""Agent Cards: what the service tells callers about each agent."""

from .auth import security_requirements

PROTOCOL_VERSION = "0.3.0"


def agent_card(state, agent, url, extended=False):
    """The AgentCard of ``agent`` reached at JSON-RPC endpoint ``url``."""
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
