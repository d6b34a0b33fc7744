"""The URL layout of the service, in one place: the routes
(``http/blueprint.py``), the paths whose errors are ours
(``http/json_fallbacks.py``), the URLs the cards and the agent list advertise
(``protocol/cards.py``, ``http/discovery.py``) all come from here."""

from typing import TYPE_CHECKING, List

if TYPE_CHECKING:  # pragma: no cover
    from .config import Settings

#: The Agent Card, and its pre-0.3 name, under an agent (and at the root).
CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")
#: Where clients look for an agent's card (below PREFIX/agents/<name>) when
#: given another of its URLs as their base URL: its JSON-RPC endpoint or
#: HTTP+JSON base (a resolver appending the card path), or the card URL
#: itself (appended to: Python SDKs; resolved against, dropping its last
#: segment: JS SDKs).
CARD_ALIASES = ("/a2a" + CARD_PATHS[0], "/rest" + CARD_PATHS[0],
                CARD_PATHS[0] + CARD_PATHS[0], "/.well-known" + CARD_PATHS[0])
#: The JSON-RPC endpoint of the default agent at the host root.
ROOT_RPC = "/a2a"


def agents_tree(settings: "Settings") -> str:
    """``PREFIX/agents``: the agent list; every agent's paths are below it."""
    return settings.url_prefix + "/agents"


def agent_rule(settings: "Settings") -> str:
    """The rule of one agent's paths (``<name>`` is the agent)."""
    return agents_tree(settings) + "/<name>"


def rpc_rule(settings: "Settings") -> str:
    return agent_rule(settings) + "/a2a"


def rest_rule(settings: "Settings") -> str:
    """The base of an agent's A2A 1.0 HTTP+JSON routes (``<name>``)."""
    return agent_rule(settings) + "/rest"


def rest_path(settings: "Settings", name: str, at_root: bool = False) -> str:
    """The base URL path of agent ``name``'s HTTP+JSON routes ("" for the
    default agent at the host root, A2A_ROOT_REST)."""
    if at_root:
        return ""
    return "%s/%s/rest" % (agents_tree(settings), name)


#: The segment naming a tenant, before an HTTP+JSON route's own path.
TENANT_RULE = "/<tenant>"

#: The first segment of every HTTP+JSON route (section 11.3), for the root.
REST_TREES = ("/message:send", "/message:stream", "/tasks",
              "/extendedAgentCard")


def root_rest(settings: "Settings") -> bool:
    """Whether the default agent's HTTP+JSON routes are at the host root."""
    return bool(settings.default_agent and settings.root_rest)


def health_path(settings: "Settings") -> str:
    return settings.url_prefix + "/health"


def jwks_path(settings: "Settings") -> str:
    """The public keys of signed cards (A2A_CARD_SIGNING_KEY), as a JWKS."""
    return settings.url_prefix + "/jwks.json"


def dashboard_path(settings: "Settings") -> str:
    """The operator's page (A2A_DASHBOARD); its actions are below it."""
    return settings.url_prefix + "/dashboard/"


def metrics_path(settings: "Settings") -> str:
    return settings.url_prefix + "/metrics"


def agent_path(settings: "Settings", name: str, at_root: bool = False) -> str:
    """The path of agent ``name``'s JSON-RPC endpoint (``/a2a`` for the
    default agent reached at the host root)."""
    if at_root:
        return ROOT_RPC
    return "%s/%s/a2a" % (agents_tree(settings), name)


def agent_base_path(settings: "Settings", name: str) -> str:
    """The path of the URL to give a client for agent ``name`` (clients
    resolve it to the card; a browser gets the try page there)."""
    return "%s/%s/" % (agents_tree(settings), name)


def card_path(settings: "Settings", name: str) -> str:
    return "%s/%s%s" % (agents_tree(settings), name, CARD_PATHS[0])


def owned_paths(settings: "Settings") -> List[str]:
    """The URL rules (besides the routes) whose errors the service answers."""
    trees = [agents_tree(settings)]
    paths: List[str] = []
    if settings.default_agent:
        trees.append(ROOT_RPC)
        paths.extend(CARD_PATHS)
    for tree in trees:
        paths.extend((tree, tree + "/", tree + "/<path:rest>"))
    if root_rest(settings):
        paths.extend(REST_TREES)
        paths.append("/tasks/<path:rest>")
    # Single routes of ours: any other method there is our JSON 405.
    paths.append(health_path(settings))
    if settings.metrics:
        paths.append(metrics_path(settings))
    if settings.dashboard:
        base = dashboard_path(settings)
        paths.extend((base, base + "cancel-task", base + "cancel-caller"))
    if settings.card_signing_key:
        paths.append(jwks_path(settings))
    return paths


def is_rest_path(settings: "Settings", path: str) -> bool:
    """Whether ``path`` is under an HTTP+JSON tree (its errors are REST's)."""
    prefix = agents_tree(settings) + "/"
    if path.startswith(prefix):
        rest = path[len(prefix):].split("/")
        return len(rest) >= 2 and rest[1] == "rest"
    return root_rest(settings) and path.startswith(REST_TREES)
