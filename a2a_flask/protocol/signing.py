"""Signed Agent Cards (A2A 1.0, section 8.4): a JWS over the card's
canonical form, and the JWKS that publishes the public keys.

Needs the ``jose`` extra (PyJWT with ``cryptography``, and ``rfc8785``).

The canonical form is computed over the pure 1.0 card, as the official
SDKs' verifiers compute it (a2a-sdk 1.x ``a2a.utils.signing``, @a2a-js/sdk
1.x ``verifyAgentCardSignature``): the card read as the 1.0 proto and
written back as ProtoJSON (so a value that is the proto default of a field
without presence is left out), ``signatures`` dropped, then every empty
string, list and object removed, then RFC 8785. The signature of a card is
therefore the same for its two forms: a 1.0 reader of the 0.3-compatible
card ignores the 0.3 members and finds the same 1.0 card.

Section 8.4.1 keeps REQUIRED members even when empty (``"tags": []``); the
SDKs drop them. We follow the SDKs, whose verifiers are the ones clients
run; a card with no empty REQUIRED member canonicalizes alike both ways.
"""

import base64
import hashlib
import json
import logging
from typing import Any, Dict, List, Optional

import jwt
import rfc8785
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import get_default_algorithms

log = logging.getLogger("a2a_flask")

#: Paths (member names from the card's root) of the ``optional`` scalars of
#: the 1.0 AgentCard: ProtoJSON keeps them when set, even to false.
_PRESENT_WHEN_SET = {("capabilities", "streaming"),
                     ("capabilities", "pushNotifications"),
                     ("capabilities", "extendedAgentCard"),
                     ("documentationUrl",), ("iconUrl",)}
#: google.protobuf.Struct members (AgentExtension.params): ProtoJSON keeps
#: every value inside.
_STRUCTS = {"params"}
#: Signatures kept per process: one per card content, not one per request.
_CACHE_SIZE = 512


class SigningKeyError(ValueError):
    """A signing or verification key this service cannot use."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _without_defaults(value, path=()):
    """``value`` as ProtoJSON writes it back: false and 0 of a field without
    presence left out (not inside a Struct, not an ``optional`` field)."""
    if isinstance(value, dict):
        if path and path[-1] in _STRUCTS:
            return value
        return {key: _without_defaults(item, path + (key,))
                for key, item in value.items()
                if not _is_default(item, path + (key,))}
    if isinstance(value, list):
        return [_without_defaults(item, path) for item in value]
    return value


def _is_default(value, path):
    if path in _PRESENT_WHEN_SET:
        return False
    return value is False or (type(value) in (int, float) and value == 0)


def _without_empty(value):
    """Every empty string, list and object (and null) removed, recursively;
    None when nothing is left."""
    if isinstance(value, dict):
        kept = {key: cleaned for key, item in value.items()
                if (cleaned := _without_empty(item)) is not None}
        return kept or None
    if isinstance(value, list):
        kept = [cleaned for item in value
                if (cleaned := _without_empty(item)) is not None]
        return kept or None
    if value is None or value == "":
        return None
    return value


def canonical_form(card: dict) -> bytes:
    """The bytes a signature of the 1.0 card ``card`` covers."""
    unsigned = {key: value for key, value in card.items() if key != "signatures"}
    return rfc8785.dumps(_without_empty(_without_defaults(unsigned)) or {})


def _load_key(path: str, private: bool):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise SigningKeyError("%s: %s" % (path, exc.strerror)) from None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        if private:
            raise SigningKeyError(
                "%s: not an unencrypted PEM private key (%s)" % (path, exc)) from None
        try:
            return serialization.load_pem_public_key(data)
        except ValueError:
            raise SigningKeyError("%s: not a PEM public or private key"
                                  % path) from None
    return key if private else key.public_key()


def _algorithm(public_key, path: str) -> str:
    if isinstance(public_key, ec.EllipticCurvePublicKey):
        if not isinstance(public_key.curve, ec.SECP256R1):
            raise SigningKeyError("%s: an EC key must be on P-256 (ES256), not %s"
                                  % (path, public_key.curve.name))
        return "ES256"
    if isinstance(public_key, rsa.RSAPublicKey):
        if public_key.key_size < 2048:
            raise SigningKeyError("%s: an RSA key needs 2048 bits or more"
                                  % path)
        return "RS256"
    if isinstance(public_key, ed25519.Ed25519PublicKey):
        return "EdDSA"
    raise SigningKeyError("%s: expected an EC P-256, RSA or Ed25519 key" % path)


#: RFC 7638: the members of each key type that its thumbprint covers.
_THUMBPRINT_MEMBERS = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"),
                       "OKP": ("crv", "kty", "x")}


def public_jwk(public_key: Any, path: str, kid: Optional[str] = None) -> dict:
    """The public JWK of ``public_key`` with ``alg``, ``use`` and ``kid``
    (default: its RFC 7638 thumbprint)."""
    alg = _algorithm(public_key, path)
    jwk = json.loads(get_default_algorithms()[alg].to_jwk(public_key))
    members = {name: jwk[name] for name in _THUMBPRINT_MEMBERS[jwk["kty"]]}
    thumbprint = _b64(hashlib.sha256(json.dumps(
        members, sort_keys=True, separators=(",", ":")).encode()).digest())
    jwk.update(alg=alg, use="sig", kid=kid or thumbprint)
    return jwk


def _verify_entries(text: str):
    """``A2A_CARD_VERIFY_KEYS``: comma-separated PEM paths, each maybe
    ``kid=path``."""
    for entry in (part.strip() for part in (text or "").split(",")):
        if entry:
            kid, sep, path = entry.partition("=")
            yield (kid.strip(), path.strip()) if sep else (None, entry)


class CardSigner:
    """Signs 1.0 cards with one private key; publishes the JWKS."""

    def __init__(self, key_path: str, jku: str, kid: Optional[str] = None,
                 verify_keys: str = "") -> None:
        self.private_key = _load_key(key_path, private=True)
        own = public_jwk(self.private_key.public_key(), key_path, kid)
        self.alg, self.kid, self.jku = own["alg"], own["kid"], jku
        self.header = {"alg": self.alg, "typ": "JOSE", "kid": self.kid,
                       "jku": jku}
        keys = [own]
        for old_kid, path in _verify_entries(verify_keys):
            keys.append(public_jwk(_load_key(path, private=False), path, old_kid))
        kids = [key["kid"] for key in keys]
        if len(set(kids)) != len(kids):
            raise SigningKeyError("A2A_CARD_VERIFY_KEYS: two keys share a kid "
                                  "(%s)" % ", ".join(kids))
        self.jwks = {"keys": keys}
        self._signed: Dict[bytes, List[dict]] = {}

    def signatures(self, card: dict) -> List[dict]:
        """``[AgentCardSignature]`` of the 1.0 ``card``, made once per card
        content in this process."""
        payload = canonical_form(card)
        digest = hashlib.sha256(payload).digest()
        found = self._signed.get(digest)
        if found is None:
            if len(self._signed) >= _CACHE_SIZE:
                self._signed.clear()
            token = jwt.api_jws.encode(payload, self.private_key,
                                       algorithm=self.alg, headers=self.header)
            protected, _, signature = token.split(".")
            found = self._signed[digest] = [{"protected": protected,
                                             "signature": signature}]
        return [dict(item) for item in found]


def verify(card: dict, jwks: dict) -> dict:
    """The protected header of the first signature of the 1.0 ``card`` that
    a key of ``jwks`` verifies; ``jwt.InvalidSignatureError`` (or another
    ``jwt.PyJWTError``) when none does."""
    payload = _b64(canonical_form(card))
    keys = {key["kid"]: key for key in jwks.get("keys", [])}
    last: jwt.PyJWTError = jwt.InvalidSignatureError("the card has no signatures")
    for entry in card.get("signatures") or []:
        try:
            header = jwt.get_unverified_header(entry["protected"] + "." + payload
                                               + "." + entry["signature"])
            key = keys.get(header.get("kid"))
            if key is None:
                raise jwt.InvalidKeyError("no key %r in the JWKS" % header.get("kid"))
            jwt.api_jws.decode_complete(
                entry["protected"] + "." + payload + "." + entry["signature"],
                jwt.PyJWK(key).key, algorithms=[key["alg"]])
            return header
        except jwt.PyJWTError as exc:
            last = exc
    raise last
