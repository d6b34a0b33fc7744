"""Tenants (A2A 1.0 ``tenant``): named, isolated spaces of one service.

A2A_TENANTS serves every agent to each tenant it names; an agent registered
with ``tenants=[...]`` is served to those too. A call names its tenant in
the HTTP+JSON path (``<interface url>/<tenant>/message:send``) or in the
JSON-RPC params (``params.tenant``); none named is the space of no tenant,
as without tenants at all. Names are checked at start: a name that is also
one of our path segments would make a URL mean two things.
"""

import re
from typing import Iterable, Optional, Tuple

#: What a tenant name may be: lowercase letters, digits and dashes, 63 at most.
NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,62}\Z")

#: Path segments of ours a tenant name would collide with (below an agent's
#: interface URL, at the host root with A2A_ROOT_REST, or under the prefix).
RESERVED = frozenset((
    "a2a", "rest", "agents", "health", "metrics", "dashboard", "tasks",
    "message", "jwks", "try", "api", "well-known", "extendedagentcard",
))


def check_name(name: str, where: str = "A2A_TENANTS",
               url_prefix: str = "") -> str:
    """``name`` when it is a valid tenant name, else ``ValueError`` saying
    why (``where``: the setting or the registration that named it)."""
    if not isinstance(name, str) or not NAME.match(name):
        raise ValueError(
            "%s: tenant name %r is not [a-z0-9][a-z0-9-]{0,62} (lowercase "
            "letters, digits and dashes, 63 at most)" % (where, name))
    reserved = RESERVED | {segment for segment in url_prefix.split("/") if segment}
    if name in reserved:
        raise ValueError(
            "%s: tenant name %r collides with a path of this service (%s are "
            "taken)" % (where, name, ", ".join(sorted(reserved))))
    return name


def parse(value, where: str = "A2A_TENANTS", url_prefix: str = "") -> Tuple[str, ...]:
    """Comma-separated names (or a list) as a tuple, each checked, in order,
    each once."""
    if value is None:
        return ()
    items: Iterable = value.split(",") if isinstance(value, str) else value
    names = []
    for item in items:
        name = item.strip() if isinstance(item, str) else item
        if name == "":
            continue
        check_name(name, where, url_prefix)
        if name not in names:
            names.append(name)
    return tuple(names)


def requested(value: Optional[str]) -> str:
    """The tenant a call names, '' for none (an absent or empty ``tenant``)."""
    return value or ""
