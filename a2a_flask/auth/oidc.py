"""OpenID Connect / OAuth2 access tokens (JWTs), validated in process.

``A2A_OIDC_ISSUER`` names the identity provider; its discovery document
(``<issuer>/.well-known/openid-configuration``) names its JWKS, the public
keys its tokens are signed with. The keys are cached per process; a token
signed with a key not in the cache (the issuer rotated its keys) fetches
them again, at most once a minute, so a rotation needs no restart. The
issuer being down never stops the service: API keys work as usual, and a
token call answers ``IdentityProviderUnavailable`` (HTTP 503) until the
issuer answers again. One thread at a time reads the keys, holding no lock:
while the issuer is slow or silent, a token whose key is cached is verified
with it; only the call that found a refresh due and calls needing keys not
cached wait for that read.

A token is taken when its signature verifies with one of those keys under an
allow-listed asymmetric algorithm (never ``none``, never an HMAC: a public
key is no shared secret), ``iss`` is the issuer, ``aud`` names
``A2A_OIDC_AUDIENCE``, and ``exp``, ``nbf`` and ``iat`` hold, give or take
``A2A_OIDC_LEEWAY_SECONDS``. The caller is ``oidc:<sub>``; its scopes (the
``scope`` claim, or Azure's ``scp``) are checked against an agent's
``required_scopes`` by ``auth.authorize``.

Needs the ``jose`` extra (PyJWT with ``cryptography``).
"""

import base64
import binascii
import json
import logging
import threading
import time
import urllib.error
import urllib.request
from typing import TYPE_CHECKING, Any, Callable, Dict, FrozenSet, Optional, Tuple

import jwt

from .. import errors
from .callers import DISCOVERY_PATH

if TYPE_CHECKING:  # pragma: no cover
    from ..config import Settings

log = logging.getLogger("a2a_flask")

#: A token signed with a key not cached fetches the keys again, at most this
#: often (seconds): a stream of forged ``kid`` values cannot hammer the issuer.
REFRESH_INTERVAL = 60.0
#: Cached keys older than this are fetched again before use, so that a key the
#: issuer withdrew stops being accepted within the hour.
MAX_AGE = 3600.0
#: After the issuer failed to answer, token calls are refused at once (503)
#: for this long before it is asked again.
RETRY_INTERVAL = 2.0
#: How long one request to the issuer may wait on the network (seconds); an
#: answer still trickling in this long after the request began is given up,
#: as is one larger than FETCH_MAX_BYTES.
FETCH_TIMEOUT = 5.0
#: The largest discovery document or JWK set read (bytes).
FETCH_MAX_BYTES = 1024 * 1024
#: Tokens verified lately, remembered per process (by the whole token) with
#: their claims, at most this many: a client sends the same token for
#: minutes, and its signature needs checking once. Only exp and nbf are
#: checked again on each use; a refresh of the keys forgets them all.
VERIFIED_MAX = 1024
#: Claims every token must carry.
REQUIRED_CLAIMS = ["exp", "iat", "iss", "aud", "sub"]


class _IssuerUnreachable(Exception):
    """The issuer's discovery document or JWKS could not be read."""


def _fetch_json(url):
    """The JSON at ``url``; ``_IssuerUnreachable`` when it cannot be read, is
    over FETCH_MAX_BYTES or still arriving FETCH_TIMEOUT after the request
    began (the socket's timeout bounds each read, not a body sent a byte at
    a time)."""
    deadline = time.monotonic() + FETCH_TIMEOUT
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=FETCH_TIMEOUT) as answer:
            body = bytearray()
            while True:
                chunk = answer.read1(65536)
                if not chunk:
                    break
                body += chunk
                if len(body) > FETCH_MAX_BYTES:
                    raise _IssuerUnreachable("%s: the answer is larger than %d bytes"
                                             % (url, FETCH_MAX_BYTES))
                if time.monotonic() > deadline:
                    raise _IssuerUnreachable("%s: the answer took longer than %g s"
                                             % (url, FETCH_TIMEOUT))
            return json.loads(bytes(body).decode("utf-8"))
    except (OSError, ValueError) as exc:  # URLError, timeouts, bad JSON
        raise _IssuerUnreachable("%s: %s" % (url, exc)) from None


def token_scopes(claims: dict) -> FrozenSet[str]:
    """The scopes granted: ``scope`` (space-separated) or ``scp`` (a list)."""
    granted = claims.get("scope", claims.get("scp", ""))
    if isinstance(granted, str):
        granted = granted.split()
    if not isinstance(granted, list):
        return frozenset()
    return frozenset(s for s in granted if isinstance(s, str))


# PyJWT's refusals in the words of the answer; the first match wins.
_REFUSALS = (
    (jwt.ExpiredSignatureError, "The token has expired."),
    (jwt.ImmatureSignatureError, "The token is not valid yet (nbf or iat is "
                                 "in the future)."),
    (jwt.InvalidAudienceError, "The token is not meant for this service (aud)."),
    (jwt.InvalidIssuerError, "The token was not issued by this service's "
                             "identity provider (iss)."),
    (jwt.InvalidSignatureError, "The token's signature does not verify."),
)


def _refusal(exc):
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return "The token lacks the %s claim." % exc.claim
    for kind, text in _REFUSALS:
        if isinstance(exc, kind):
            return text
    return "The bearer token is malformed: %s." % str(exc).rstrip(".")


def _header(token):
    """The JOSE header of a compact JWS (unverified), or ``InvalidToken``:
    read here, so that PyJWT parses the whole token once, in ``decode``."""
    segment = token.partition(".")[0]
    try:
        header = json.loads(base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4)))
    except (ValueError, binascii.Error):
        header = None
    if not isinstance(header, dict):
        raise errors.InvalidTokenError("The bearer token is not a valid JWT.")
    return header


class _KeySet:
    """The issuer's keys as read once, with what was worked out from them:
    a refresh replaces it whole, so a call still verifying with the old set
    fills the old set's caches, never the new one's."""

    def __init__(self, keys: Dict[str, dict]):
        self.keys = keys  # kid -> JWK
        self.verifying: Dict[tuple, object] = {}  # (kid, alg) -> key object
        self.verified: Dict[str, dict] = {}  # token -> its claims

    def lookup(self, kid: str) -> Optional[dict]:
        """The JWK ``kid``, or the only one for a token naming none."""
        if kid == "" and len(self.keys) == 1:
            return next(iter(self.keys.values()))
        return self.keys.get(kid)


class TokenVerifier:
    """Validates the access tokens of one issuer, its keys cached (thread-safe)."""

    def __init__(self, settings: "Settings", fetch: Callable[[str], Any] = _fetch_json,
                 clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time) -> None:
        self.issuer = settings.oidc_issuer
        self.audience = settings.oidc_audience
        self.algorithms = settings.oidc_algorithms
        self.leeway = settings.oidc_leeway_seconds
        self.name_claim = settings.oidc_name_claim
        self.tenant_claim = settings.oidc_tenant_claim
        self._fetch = fetch
        self._clock = clock
        self._wall_clock = wall_clock
        # Guards the fields below. The keys are read with it released, so that
        # a slow or silent issuer holds up no call whose key is cached.
        self._changed = threading.Condition()
        self._jwks_uri: Optional[str] = None  # the refreshing thread's alone
        self._keys: Optional[_KeySet] = None  # once fetched
        self._fetched_at = None  # when the keys were last read
        self._tried_at = None  # when the issuer was last asked
        self._kid_refresh_at = None  # when an unknown kid last made it so
        self._failed = False  # whether that last ask failed
        self._refreshing = False  # one thread reads the keys at a time

    # -- the issuer's keys ----------------------------------------------------

    def _read_keys(self):
        """The discovery document (once) and the JWKS; ``_IssuerUnreachable``."""
        if self._jwks_uri is None:
            found = self._fetch(self.issuer.rstrip("/") + DISCOVERY_PATH)
            if not isinstance(found, dict) or found.get("issuer") != self.issuer:
                raise _IssuerUnreachable(
                    "the discovery document names issuer %r, not %r"
                    % (found.get("issuer") if isinstance(found, dict) else None,
                       self.issuer))
            if not isinstance(found.get("jwks_uri"), str):
                raise _IssuerUnreachable("the discovery document has no jwks_uri")
            self._jwks_uri = found["jwks_uri"]
        jwks = self._fetch(self._jwks_uri)
        keys = jwks.get("keys") if isinstance(jwks, dict) else None
        if not isinstance(keys, list):
            raise _IssuerUnreachable("%s holds no JWK set" % self._jwks_uri)
        return _KeySet({key.get("kid", ""): key for key in keys
                        if isinstance(key, dict) and key.get("use", "sig") == "sig"})

    def _refresh(self):
        """Read the keys, no lock held, then install them and wake the calls
        waiting for them, whatever happened: none may wait forever."""
        keys = None
        try:
            keys = self._read_keys()
        except _IssuerUnreachable as exc:
            log.warning("OIDC: the identity provider %s did not answer: "
                        "%s", self.issuer, exc)
        finally:
            with self._changed:
                if keys is not None:
                    self._keys = keys
                    self._fetched_at = self._tried_at
                self._failed = keys is None
                self._refreshing = False
                self._changed.notify_all()

    def _lookup(self, kid):
        return None if self._keys is None else self._keys.lookup(kid)

    def _may_ask(self, now, unknown_kid):
        """Whether to read the keys again now."""
        if self._tried_at is None:
            return True
        if self._failed:
            return now - self._tried_at >= RETRY_INTERVAL
        if unknown_kid:
            return (self._kid_refresh_at is None
                    or now - self._kid_refresh_at >= REFRESH_INTERVAL)
        return now - self._fetched_at >= MAX_AGE

    def _jwk(self, kid):
        """The issuer's JWK named ``kid`` ("" when the token names none), and
        the key set it is in."""
        with self._changed:
            while True:
                now = self._clock()
                unknown = self._lookup(kid) is None
                if not self._refreshing:
                    refresh = self._may_ask(now, unknown)
                    break
                if not unknown:
                    refresh = False  # the cached key serves meanwhile
                    break
                # The keys being read may hold it (a rotation): wait for them,
                # as long as the fetch's timeouts let it take, then decide again.
                self._changed.wait()
            if refresh:
                if unknown and self._keys is not None:
                    self._kid_refresh_at = now
                self._tried_at = now
                self._refreshing = True
        if refresh:
            self._refresh()
        with self._changed:
            keys = self._keys
            found = self._lookup(kid)
            if found is None and (keys is None or self._failed):
                raise errors.IdentityProviderUnavailableError(data={"retry": True})
        if found is not None:
            return found, keys
        raise errors.InvalidTokenError(
            "The token is signed with a key the identity provider does not "
            "publish (kid %r)." % kid)

    def _verifying_key(self, kid, alg):
        """The key object to verify with, and the key set it comes from."""
        jwk, keys = self._jwk(kid)
        found = keys.verifying.get((kid, alg))
        if found is None:
            if jwk.get("alg", alg) != alg:
                raise errors.InvalidTokenError(
                    "The token's algorithm %s is not its key's (%s)."
                    % (alg, jwk["alg"]))
            try:
                found = jwt.PyJWK(jwk, algorithm=alg).key
            except (jwt.PyJWTError, ValueError, TypeError, KeyError):
                raise errors.InvalidTokenError(
                    "The token's algorithm %s does not fit its key." % alg) from None
            keys.verifying[(kid, alg)] = found
        return found, keys

    # -- tokens -----------------------------------------------------------------

    def issued(self, token: str) -> bool:
        """Whether ``token`` claims to come from this issuer (unverified: only
        to leave other issuers' tokens to the host's token hook)."""
        try:
            claims = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            return False
        return claims.get("iss") == self.issuer

    def claims(self, token: str) -> dict:
        """The verified claims of ``token``; ``InvalidToken`` (401) or
        ``IdentityProviderUnavailable`` (503) otherwise."""
        current = self._keys
        claims = current.verified.get(token) if current is not None else None
        if claims is not None:
            now = self._wall_clock()
            if claims["exp"] + self.leeway < now:
                raise errors.InvalidTokenError(_refusal(jwt.ExpiredSignatureError()))
            if claims.get("nbf", 0) - self.leeway > now:
                raise errors.InvalidTokenError(_refusal(jwt.ImmatureSignatureError()))
            return claims
        claims, keys = self._verify(token)
        if len(keys.verified) >= VERIFIED_MAX:
            keys.verified.clear()
        keys.verified[token] = claims
        return claims

    def _verify(self, token):
        """The claims of ``token``, and the key set that verified them."""
        header = _header(token)
        alg = header.get("alg")
        if alg not in self.algorithms:
            raise errors.InvalidTokenError(
                "The token is signed with %r; this service accepts %s."
                % (alg, ", ".join(sorted(self.algorithms))))
        kid = header.get("kid", "")
        key, keys = self._verifying_key(kid if isinstance(kid, str) else "", alg)
        try:
            claims = jwt.decode(token, key, algorithms=[alg], audience=self.audience,
                                issuer=self.issuer, leeway=self.leeway,
                                options={"require": REQUIRED_CLAIMS})
        except jwt.PyJWTError as exc:
            raise errors.InvalidTokenError(_refusal(exc)) from None
        iat = claims["iat"]
        if not isinstance(iat, (int, float)) or iat > self._wall_clock() + self.leeway:
            raise errors.InvalidTokenError(_refusal(jwt.ImmatureSignatureError()))
        if not isinstance(claims["sub"], str) or not claims["sub"]:
            raise errors.InvalidTokenError("The token's sub claim is empty.")
        return claims, keys

    def caller_fields(self, token: str
                      ) -> Tuple[str, str, FrozenSet[str], Optional[str]]:
        """(id, name, scopes, tenant) of the caller this token
        authenticates: its tenant is the A2A_OIDC_TENANT_CLAIM claim (a
        string), else None (the ``caller_tenant`` hook may name one)."""
        claims = self.claims(token)
        name = claims.get(self.name_claim)
        tenant = claims.get(self.tenant_claim) if self.tenant_claim else None
        return ("oidc:" + claims["sub"],
                name if isinstance(name, str) and name else claims["sub"],
                token_scopes(claims), tenant if isinstance(tenant, str) else None)
