"""Finding an agent's card from the URL a user gives (``find_card``), the
origin its credentials may go to (``origin``), and the interface to
call from what the card lists.

URL forms (``card_urls``): the card's own URL (``...json``); a base the
card is below (``https://host``, ``https://host/api/v1/agents/echo`` with or
without the trailing slash: it is always read as a folder, unlike the JS
SDK's ``new URL(path, base)``, which drops the last segment without one);
an endpoint (``.../agents/echo/a2a``, ``.../rest``), whose card is below its
folder or the host's root. A card found anywhere but below the URL itself
counts only if it lists that URL as one of its interfaces: an endpoint never
resolves to another agent's card.
"""

import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

# what a2a_flask's own cards declare (re-exported: a2a_flask.client's)
from ..protocol.cards import MESSAGE_ID_ONCE as MESSAGE_ID_ONCE
from .errors import CardError

if TYPE_CHECKING:  # pragma: no cover
    from .transport import Answer

JSONObject = Dict[str, Any]
#: What a far side's malformed answer or card makes the readers raise.
MALFORMED = (AttributeError, KeyError, TypeError, ValueError, RecursionError)
#: (scheme, host, port): where credentials may go.
Origin = Tuple[str, str, int]

CARD_PATHS = (".well-known/agent-card.json", ".well-known/agent.json")
#: (version, binding) pairs this client speaks, in no order of preference:
#: the card's order decides.
SPOKEN = (("1.0", "JSONRPC"), ("1.0", "HTTP+JSON"), ("0.3", "JSONRPC"))


@dataclass(frozen=True)
class Interface:
    """One way to call the agent: ``version`` ("1.0" / "0.3"), ``binding``
    ("JSONRPC" / "HTTP+JSON"), ``url``, and the 1.0 ``tenant`` if any."""

    version: str
    binding: str
    url: str
    tenant: Optional[str] = None


def card_urls(url: str) -> List[str]:
    """Where to look for the card of ``url``, in order; the first is the one
    below ``url`` itself (the others must list ``url`` as an interface)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise CardError("Not an http(s) URL: %r" % url)
    if parts.path.endswith(".json"):
        return [url]
    origin = "%s://%s" % (parts.scheme, parts.netloc)
    path = parts.path.rstrip("/")
    folders = [path]
    if path:
        folders.append(path.rsplit("/", 1)[0])
    if "" not in folders:
        folders.append("")
    return ["%s%s/%s" % (origin, folder, name) for folder in folders
            for name in CARD_PATHS]


def find_card(url: str, get: Callable[[str], "Answer"]) -> Tuple[JSONObject, str]:
    """The card of ``url`` and where it was found, trying ``card_urls(url)``
    in order with ``get`` (a card URL -> its answer); ``CardError`` saying
    what each place answered when none has it."""
    tried = []
    for index, card_url in enumerate(card_urls(url)):
        answer = get(card_url)
        body = answer.json()
        if answer.status != 200:
            why = _said(body)
        elif not isinstance(body, dict):
            why = "not JSON" if body is None else "not a JSON object"
        elif "name" not in body:
            why = "not an Agent Card: no name"
        elif index < len(CARD_PATHS) or _lists(body, url):
            return body, card_url
        else:  # a card further up, e.g. the host's default agent's
            why = "the card of %s, which does not list %s" % (
                _printable(body.get("name")), url)
        tried.append("%s (HTTP %d%s)" % (card_url, answer.status,
                                         ": " + why if why else ""))
    raise CardError("No Agent Card for %s; tried %s." % (url, "; ".join(tried)))


def origin(url: str) -> Origin:
    """(scheme, host, port) of ``url``, the port filled in, as a browser
    compares origins."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return (scheme, (parts.hostname or "").lower(),
            port or {"http": 80, "https": 443}.get(scheme, 0))


def major_minor(version: Any) -> str:
    return ".".join(str(version or "").strip().split(".")[:2])


def _is_url(value: Any) -> bool:
    return isinstance(value, str) and value.lower().startswith(("http://", "https://"))


def interfaces(card: JSONObject, signed_only: bool = False) -> List[Interface]:
    """Every interface the card lists, in its order of preference: 1.0
    ``supportedInterfaces``, then 0.3 ``url``/``preferredTransport`` and
    ``additionalInterfaces`` (at the card's ``protocolVersion``), which a
    card's signature does not cover (``signed_only``: not those)."""
    found: List[Interface] = []
    for item in card.get("supportedInterfaces") or ():
        if isinstance(item, dict) and _is_url(item.get("url")):
            found.append(Interface(major_minor(item.get("protocolVersion") or "1.0"),
                                   str(item.get("protocolBinding", "")).upper(),
                                   item["url"], item.get("tenant") or None))
    version = major_minor(card.get("protocolVersion") or "0.3")
    if signed_only:
        return found
    if _is_url(card.get("url")):
        found.append(Interface(version, str(card.get("preferredTransport")
                                             or "JSONRPC").upper(), card["url"]))
    for item in card.get("additionalInterfaces") or ():
        if isinstance(item, dict) and _is_url(item.get("url")):
            found.append(Interface(version, str(item.get("transport", "")).upper(),
                                   item["url"]))
    unique: List[Interface] = []
    for item in found:
        if item not in unique:
            unique.append(item)
    return unique


def choose(card: JSONObject, version: Optional[str] = None,
           binding: Optional[str] = None, signed_only: bool = False) -> Interface:
    """The first interface of the card this client speaks (and that matches
    ``version``/``binding`` when given)."""
    listed = interfaces(card, signed_only)
    for item in listed:
        if (item.version, item.binding) not in SPOKEN:
            continue
        if version and item.version != major_minor(version):
            continue
        if binding and item.binding != binding.upper():
            continue
        return item
    offered = ", ".join("%s %s" % (i.version, i.binding) for i in listed) or "none"
    raise CardError("The card of %r lists no interface this client speaks%s "
                    "(it lists: %s; this client speaks 1.0 JSONRPC, 1.0 "
                    "HTTP+JSON, 0.3 JSONRPC)." % (
                        card.get("name"), " as asked" if version or binding else "",
                        offered))


def lists_url(card: JSONObject, url: str) -> bool:
    """Whether ``url`` is one of the card's interfaces (or below one)."""
    wanted = url.rstrip("/")
    return any(wanted == i.url.rstrip("/") or wanted.startswith(i.url.rstrip("/") + "/")
               for i in interfaces(card))


def runs_message_id_once(card: JSONObject) -> bool:
    """Whether the agent declares ``MESSAGE_ID_ONCE``: a send may be retried."""
    extensions = (card.get("capabilities") or {}).get("extensions") or ()
    return any(isinstance(e, dict) and e.get("uri") == MESSAGE_ID_ONCE
               for e in extensions)


def _printable(value: Any, most: int = 160) -> str:
    """A server's text, fit for an error message on a terminal: no control
    characters (escape sequences), not too long."""
    text = "".join(c if c.isprintable() else " " for c in str(value))
    return text if len(text) <= most else text[:most - 3] + "..."


def _lists(card: JSONObject, url: str) -> bool:
    """Whether ``card`` lists ``url`` among its interfaces; a malformed card
    lists nothing."""
    try:
        return bool(lists_url(card, url))
    except MALFORMED:
        return False


def _said(body: Any) -> str:
    """The sentence of an error answer (a bare error object, a JSON-RPC or
    HTTP+JSON error), or ""."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    message = body.get("message") if isinstance(body, dict) else None
    return _printable(message) if isinstance(message, str) and message else ""
