"""Verifying a signed Agent Card (A2A 1.0 section 8.4) with PyJWT (the
``jose`` extra).

The signed payload is the card's canonical form, computed as the official
SDKs compute it (Python ``a2a.utils.signing``, JS ``canonicalizeAgentCard``),
so that their signatures verify here: the card read as the 1.0 ``AgentCard``
message (members outside the 1.0 schema, such as the 0.3 ``url``, dropped;
non-``optional`` scalars at their default value dropped), without
``signatures``, with empty strings, lists and objects removed, serialized by
RFC 8785 (JCS). The spec's own example keeps an empty required
``description``; both SDKs drop it, and so does this module.

Only what the 1.0 schema covers is signed: a verified card is called
through its ``supportedInterfaces`` only (``Client`` does so).
"""

import base64
import json
import urllib.parse
from typing import Any, Callable, Dict, Optional, Union

from .errors import CardError
from .transport import Http, Lost, NotSent

try:
    import jwt
    from jwt import PyJWK, PyJWKSet
except ImportError:  # pragma: no cover - the extra is missing
    jwt = None  # type: ignore[assignment]

JSONObject = Dict[str, Any]
#: Asymmetric algorithms only: an HMAC "signature" checked with a public
#: key would let anyone who has the public key sign.
ALGORITHMS = ("ES256", "ES384", "ES512", "RS256", "RS384", "RS512",
              "PS256", "PS384", "PS512", "EdDSA")

_STR, _BOOL, _OPT, _ANY = "str", "bool", "optional", "any"
_FLOW = {"authorizationUrl": _STR, "tokenUrl": _STR, "refreshUrl": _STR,
         "scopes": ("map", _STR), "pkceRequired": _BOOL,
         "deviceAuthorizationUrl": _STR}
_REQUIREMENTS = ("list", "SecurityRequirement")
#: The 1.0 messages of a card: member -> kind (a proto3 scalar, ``optional``,
#: any JSON, a message name, or ("list" | "map", kind)).
SCHEMA: Dict[str, Dict[str, Any]] = {
    "AgentCard": {
        "name": _STR, "description": _STR, "version": _STR,
        "supportedInterfaces": ("list", "AgentInterface"), "provider": "AgentProvider",
        "documentationUrl": _OPT, "iconUrl": _OPT, "capabilities": "AgentCapabilities",
        "securitySchemes": ("map", "SecurityScheme"),
        "securityRequirements": _REQUIREMENTS,
        "defaultInputModes": ("list", _STR), "defaultOutputModes": ("list", _STR),
        "skills": ("list", "AgentSkill")},
    "AgentInterface": {"url": _STR, "protocolBinding": _STR, "tenant": _STR,
                       "protocolVersion": _STR},
    "AgentProvider": {"url": _STR, "organization": _STR},
    "AgentCapabilities": {"streaming": _OPT, "pushNotifications": _OPT,
                          "extensions": ("list", "AgentExtension"),
                          "extendedAgentCard": _OPT},
    "AgentExtension": {"uri": _STR, "description": _STR, "required": _BOOL,
                       "params": _ANY},
    "AgentSkill": {"id": _STR, "name": _STR, "description": _STR,
                   "tags": ("list", _STR), "examples": ("list", _STR),
                   "inputModes": ("list", _STR), "outputModes": ("list", _STR),
                   "securityRequirements": _REQUIREMENTS},
    "SecurityRequirement": {"schemes": ("map", "StringList")},
    "StringList": {"list": ("list", _STR)},
    "SecurityScheme": {
        "apiKeySecurityScheme": {"description": _STR, "location": _STR, "name": _STR},
        "httpAuthSecurityScheme": {"description": _STR, "scheme": _STR,
                                   "bearerFormat": _STR},
        "oauth2SecurityScheme": {"description": _STR, "flows": "OAuthFlows",
                                 "oauth2MetadataUrl": _STR},
        "openIdConnectSecurityScheme": {"description": _STR, "openIdConnectUrl": _STR},
        "mtlsSecurityScheme": {"description": _STR}},
    "OAuthFlows": {name: _FLOW for name in ("authorizationCode", "clientCredentials",
                                            "implicit", "password", "deviceCode")},
}


def _project(value: Any, kind: Any) -> Any:
    """``value`` read as ``kind`` (None: absent)."""
    if kind == _ANY or kind == _OPT:
        return value
    if kind == _STR:
        return value if isinstance(value, str) and value else None
    if kind == _BOOL:
        return True if value is True else None
    if isinstance(kind, tuple):
        how, inner = kind
        if how == "list" and isinstance(value, list):
            return [_project(item, inner) for item in value]
        if how == "map" and isinstance(value, dict):
            return {key: _project(item, inner) for key, item in value.items()}
        return None
    fields = SCHEMA[kind] if isinstance(kind, str) else kind
    if not isinstance(value, dict):
        return None
    return {name: _project(value[name], fields[name]) for name in fields if name in value}


def _clean(value: Any) -> Any:
    """Empty strings, lists and objects (and nulls) removed, recursively."""
    if isinstance(value, dict):
        cleaned = {k: c for k, c in ((k, _clean(v)) for k, v in value.items())
                   if c is not None}
        return cleaned or None
    if isinstance(value, list):
        items = [c for c in (_clean(v) for v in value) if c is not None]
        return items or None
    if value == "" or value is None:
        return None
    return value


def jcs(value: Any) -> str:
    """RFC 8785 serialization (keys in UTF-16 order, no whitespace, numbers
    that are integers written as such)."""
    if isinstance(value, dict):
        return "{%s}" % ",".join(
            "%s:%s" % (json.dumps(key, ensure_ascii=False), jcs(value[key]))
            for key in sorted(value, key=lambda k: k.encode("utf-16-be")))
    if isinstance(value, list):
        return "[%s]" % ",".join(jcs(item) for item in value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 2 ** 53:
        return str(int(value))
    return json.dumps(value, ensure_ascii=False)


def canonical_card(card: JSONObject) -> bytes:
    """The bytes a card's signatures sign."""
    projected = _project(card, "AgentCard")
    return jcs(_clean(projected) or {}).encode("utf-8")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


KeySource = Union[None, JSONObject, Callable[[Optional[str], Optional[str]], Any]]


def _key(header: JSONObject, keys: KeySource, http: Http,
         card_url: Optional[str]) -> Any:
    kid, jku = header.get("kid"), header.get("jku")
    if callable(keys):
        found = keys(kid, jku)
    elif isinstance(keys, dict) and isinstance(keys.get("keys"), list):
        found = _from_jwks(keys, kid)
    elif isinstance(keys, dict):
        found = keys.get(kid)  # type: ignore[arg-type]  # None: not found
    else:
        found = _from_jwks(_fetch_jwks(jku, http, card_url), kid)
    if isinstance(found, dict):
        found = PyJWK(found)
    if isinstance(found, PyJWK):
        found = found.key
    if found is None:
        raise CardError("no key for kid %r" % kid)
    return found


def _from_jwks(jwks: JSONObject, kid: Optional[str]) -> Any:
    for key in PyJWKSet.from_dict(jwks).keys:
        if key.key_id == kid:
            return key
    return None


def _fetch_jwks(jku: Optional[str], http: Http, card_url: Optional[str]) -> JSONObject:
    """The key set at ``jku``, trusted only on the card's own origin (give
    ``card_keys`` to trust another, or a key store of your own)."""
    if not jku:
        raise CardError("the signature names no jku, and no card_keys were given")
    if not card_url:
        raise CardError("a card given as such has no origin to trust its jku on: "
                        "give card_keys")
    same = urllib.parse.urlsplit(jku)[:2] == urllib.parse.urlsplit(card_url)[:2]
    if not same:
        raise CardError("jku %s is not on the card's origin: give card_keys to "
                        "trust it" % jku)
    try:
        answer = http.request("GET", jku)
    except (NotSent, Lost) as exc:
        raise CardError("jku %s: %s" % (jku, exc)) from exc
    found = answer.json()
    if answer.status != 200 or not isinstance(found, dict):
        raise CardError("jku %s: HTTP %d, no key set" % (jku, answer.status))
    return found


def verify_card(card: JSONObject, keys: KeySource = None, http: Optional[Http] = None,
                card_url: Optional[str] = None) -> JSONObject:
    """Check that one of the card's signatures verifies; its protected header.

    ``keys``: a JWKS (``{"keys": [...]}``), ``{kid: key}`` (a PEM, a JWK
    dict, a cryptography public key), or ``f(kid, jku) -> key``; None: the
    key set at the signature's ``jku``, on ``card_url``'s origin only.
    Raises ``CardError`` when no signature verifies."""
    if jwt is None:
        raise CardError("Verifying a card needs PyJWT: pip install 'a2a_flask[jose]'")
    signatures = card.get("signatures")
    if not isinstance(signatures, list) or not signatures:
        raise CardError("The card of %r is not signed." % card.get("name"))
    payload = _b64(canonical_card(card))
    reasons = []
    for signature in signatures:
        try:
            protected = signature["protected"]
            header = json.loads(_unb64(protected))
            if header.get("alg") not in ALGORITHMS:
                raise CardError("algorithm %r is not accepted" % header.get("alg"))
            key = _key(header, keys, http or Http(), card_url)
            jwt.api_jws.PyJWS().decode_complete(
                "%s.%s.%s" % (protected, payload, signature["signature"]), key,
                algorithms=[header["alg"]])
            return header
        except (CardError, jwt.PyJWTError, KeyError, TypeError, ValueError) as exc:
            reasons.append(str(exc) or type(exc).__name__)
    raise CardError("No signature of the card of %r verifies: %s."
                    % (card.get("name"), "; ".join(reasons)))
