"""Who is calling: credentials to a ``Caller`` (what a caller may reach:
``permissions``), and the schemes the cards say are accepted.

Accepted, in this order: an API key (``Authorization: Bearer`` or the
``A2A_API_KEY_HEADER`` header) or, when a bearer token is none, one the host
app's token hook accepts; HTTP Basic (built-in users, or the host app's
password hook); the host app's login session (its session hook). With
``A2A_AUTH=off`` every caller is one anonymous caller.
"""

import base64
import binascii
from typing import TYPE_CHECKING, AbstractSet, Any, Dict, List, Optional, Tuple

from .. import errors
from .credentials import KEY_PREFIX, hash_key, key_owner
from .proxies import client_address

if TYPE_CHECKING:  # pragma: no cover
    from flask import Request

    from ..agent.registry import Agent
    from ..app_state import AppState

#: Where an OpenID provider publishes its configuration (OIDC Discovery 1.0).
DISCOVERY_PATH = "/.well-known/openid-configuration"
#: The refusal of a key that is unknown or revoked (auth, service).
KEY_REFUSED = "The API key is not valid: unknown or revoked."


class Caller:
    """An authenticated (or, with auth off, anonymous) caller.

    ``id`` owns tasks: two requests with the same id see the same tasks.
    ``scope`` is None for every agent, else the set of agent names allowed.
    ``operator``: may open the operator's page (``dashboard.py``); a host
    hook may return a Caller made with ``operator=True``. ``tenant`` is the
    one tenant it acts in ('' or None: only where no tenant is named).
    """

    __slots__ = ("id", "kind", "name", "scope", "authenticated", "remembered_key",
                 "token_scopes", "key_hash", "operator", "tenant")

    def __init__(self, id: str, kind: str, name: str,
                 scope: Optional[AbstractSet[str]] = None,
                 authenticated: bool = True,
                 token_scopes: Optional[AbstractSet[str]] = None,
                 operator: bool = False, tenant: Optional[str] = None) -> None:
        self.id = id
        self.operator = operator
        self.tenant = tenant or ""
        self.kind = kind
        self.name = name
        self.scope = scope
        self.authenticated = authenticated
        #: The OAuth scopes an access token granted (an ``oidc`` caller),
        #: checked against an agent's ``required_scopes``; None otherwise.
        self.token_scopes = token_scopes
        #: The hash of an API key remembered live by this process but not
        #: looked up for this call: ``confirm``, or the call's first storage
        #: statement (``remembered_key`` of ``Storage.start_turn``/``get_task``),
        #: checks it. None otherwise.
        self.remembered_key: Optional[str] = None
        #: The hash of the API key the caller presented (None for any other
        #: caller): a write that must not outlive the key (a queued turn,
        #: which ``keys revoke`` cancels) is stored only while it is live.
        self.key_hash: Optional[str] = None

    def may_reach(self, agent_name: str) -> bool:
        return self.scope is None or agent_name in self.scope

    def __repr__(self):
        return "Caller(%r)" % self.id


ANONYMOUS = Caller("anonymous", "anonymous", "anonymous", authenticated=False)


def _host_caller(value, kind):
    """A host hook's answer (a user id, or a Caller) as a Caller, or None."""
    if value is None or value is False:
        return None
    if isinstance(value, Caller):
        return value
    return Caller("host:%s" % value, kind, str(value))


def _basic(header):
    try:
        decoded = base64.b64decode(header, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    name, sep, password = decoded.partition(":")
    return (name, password) if sep else None


def _key_caller(key, key_hash, remembered=False):
    caller = Caller(key_owner(key.id), "key", key.label or key.id, scope=key.scope,
                    operator=key.operator, tenant=key.tenant)
    caller.key_hash = key_hash
    if remembered:
        caller.remembered_key = key_hash
    return caller


def authenticate(app_state: "AppState", request: "Request",
                 use_remembered_key: bool = False) -> Caller:
    """The caller of ``request``, or ``Unauthenticated`` (HTTP 401).

    Every credential the request presents must be valid: an API key header
    beside an ``Authorization`` header is refused unless both are valid and
    name the same caller (an invalid one is never passed over for a valid
    one).

    ``use_remembered_key``: an API key this process found live lately is
    taken without a lookup; the caller's ``remembered_key`` is then set and
    must be checked before anything is answered (``confirm``, or the
    storage statement of the call given it as ``remembered_key``): a lookup saved
    on each ``message/send`` and ``tasks/get``, one round trip on
    PostgreSQL."""
    if app_state.settings.auth_off:
        return ANONYMOUS
    caller = _authenticate(app_state, request, use_remembered_key)
    hook = app_state.extension.hooks.caller_tenant
    kept = caller.kind == "key" or caller.id.startswith("user:")
    if hook is not None and not kept and not caller.tenant:
        # A caller the service does not keep (a token, a certificate, a host
        # hook's): its tenant is the host's word.
        caller.tenant = hook(caller) or ""
    return caller


def _authenticate(app_state, request, use_remembered_key):
    authorization = request.headers.get("Authorization", "")
    header_key = request.headers.get(app_state.settings.api_key_header)
    if authorization:
        caller = _from_authorization(app_state, request, authorization,
                                     use_remembered_key and not header_key)
        if header_key and header_key != authorization.partition(" ")[2].strip():
            other = _from_key(app_state, header_key, False, bearer=False)
            if other.id != caller.id:
                raise errors.UnauthenticatedError(
                    "The %s header and the Authorization header name different "
                    "callers: send one credential." % app_state.settings.api_key_header)
        return caller
    if header_key:
        return _from_key(app_state, header_key, use_remembered_key, bearer=False)
    subject = (request.headers.get(app_state.settings.mtls_header)
               if app_state.settings.mtls_header else None)
    if subject:
        # Set by the TLS proxy alone, from a certificate it verified (it
        # replaces any such header a client sends: deploy/nginx-a2a-mtls.conf).
        return Caller("mtls:" + subject, "mtls", _common_name(subject))
    loader = app_state.extension.hooks.session_caller
    # A session rides on a cookie the browser sends by itself: only a JSON body
    # (which a cross-site form cannot send without a CORS preflight) may use it.
    if loader is not None and (request.method == "GET"
                               or request.mimetype == "application/json"):
        caller = _host_caller(loader(), "session")
        if caller is not None:
            return caller
    raise errors.UnauthenticatedError(
        "Authentication required: send an API key (Authorization: Bearer, or "
        "the %s header) or HTTP Basic credentials." % app_state.settings.api_key_header)


def _from_authorization(app_state, request, authorization, use_remembered_key):
    scheme, _, credentials = authorization.partition(" ")
    scheme, credentials = scheme.lower(), credentials.strip()
    if scheme == "bearer" and not credentials:
        # Most often a shell variable that was meant to hold a key and is empty.
        raise errors.UnauthenticatedError(
            "The Authorization header's Bearer token is empty: send an API key "
            "after \"Bearer \".")
    if scheme == "bearer":
        if app_state.tokens is not None and looks_like_jwt(credentials):
            caller = _token_caller(app_state, credentials)
            if caller is not None:
                return caller
        return _from_key(app_state, credentials, use_remembered_key, bearer=True)
    if scheme == "basic":
        pair = _basic(credentials)
        if pair is None:
            raise errors.UnauthenticatedError("The HTTP Basic credentials are malformed.")
        caller = _check_password(app_state, request, *pair)
        if caller is None:
            raise errors.UnauthenticatedError("Wrong username or password.")
        return caller
    raise errors.UnauthenticatedError(
        "Unsupported Authorization scheme: use Bearer (an API key) or Basic.")


def _from_key(app_state, key, use_remembered_key, bearer):
    """The caller of an API key (or, as a bearer token, of the host's token
    hook), or ``Unauthenticated``."""
    if use_remembered_key:
        remembered = app_state.credentials.remembered_key(key)
        if remembered is not None:
            return _key_caller(*remembered, remembered=True)
    found = app_state.credentials.find_key(key)
    if found is not None:
        return _key_caller(found, hash_key(key))
    if bearer and _takes_host_token(app_state, key):
        caller = _host_caller(_host_hook(app_state, app_state.extension.hooks.token_caller,
                                         key), "token")
        if caller is None:
            raise errors.UnauthenticatedError(
                "The bearer token is not valid: neither an API key nor "
                "a token of this application.")
        return caller
    raise errors.UnauthenticatedError(KEY_REFUSED)


def basic_in_use(app_state: "AppState") -> bool:
    """HTTP Basic is offered: the host's password hook is set, or users exist."""
    return (app_state.extension.hooks.password_check is not None
            or app_state.credentials.has_users())


def _check_password(app_state, request, name, password):
    """The caller for these Basic credentials, or None.

    No password is hashed unless Basic is in use, nor once this name failed
    too often lately from this address, or from all (429); a built-in user's
    password already verified in this process is accepted without either.
    """
    if not basic_in_use(app_state):
        raise errors.UnauthenticatedError(
            "HTTP Basic is not accepted here (no users are set up): send an "
            "API key.")
    keys = (client_address(app_state.settings.trusted_proxies, request.environ),
            name)

    throttle = app_state.login_throttle
    checked = []

    def before_slow_check() -> None:
        throttle.check(*keys)
        checked.append(True)

    caller = None
    try:
        checker = app_state.extension.hooks.password_check
        if checker is not None:
            before_slow_check()
            caller = _host_caller(_host_hook(app_state, checker, name, password), "user")
        elif app_state.credentials.check_user(name, password, before_slow_check):
            caller = Caller("user:" + name, "user", name,
                            tenant=app_state.credentials.user_tenant(name))
    except BaseException:
        if checked:  # not a wrong password (a storage failure, a host's error)
            throttle.passed(*keys)
        raise
    if caller is None:
        throttle.failed(*keys, checked=bool(checked))
    elif checked:
        throttle.passed(*keys)
    return caller


def _host_hook(app_state, hook, *args):
    """``hook(*args)`` holding no SQLite connection: a host's check may ask
    an identity provider over the network, and a process has few."""
    app_state.storage.release_connection()
    return hook(*args)


def _takes_host_token(app_state, token):
    """Whether the host's token hook judges this bearer token (none of our
    live keys). A token shaped like ours (``a2a_...``) is only ever one of our
    keys, never handed to the host: a revoked key is a secret all the same."""
    return (app_state.extension.hooks.token_caller is not None
            and not token.startswith(KEY_PREFIX))


def confirm_remembered_key(app_state: "AppState", caller: Optional[Caller]) -> None:
    """Check now a key taken on trust by ``authenticate`` (a no-op for any
    other caller): ``Unauthenticated`` when it was revoked meanwhile."""
    if caller is None or caller.remembered_key is None:
        return
    if not app_state.credentials.key_is_live(caller.remembered_key):
        raise errors.UnauthenticatedError(KEY_REFUSED)
    caller.remembered_key = None


def looks_like_jwt(token: str) -> bool:
    """A compact JWS: three base64url segments. No API key of ours has a dot."""
    return token.count(".") == 2


def _token_caller(app_state, token):
    """The caller of an access token of the OIDC issuer; None for a JWT of
    another issuer when the host's token hook may judge it instead."""
    if (app_state.extension.hooks.token_caller is not None
            and not app_state.tokens.issued(token)):
        return None
    id, name, scopes, tenant = app_state.tokens.caller_fields(token)
    return Caller(id, "oidc", name, token_scopes=scopes, tenant=tenant)


def _common_name(subject):
    """The CN of a certificate subject (RFC 2253 ``CN=a,O=b`` or OpenSSL's
    ``/O=b/CN=a``), else the whole subject."""
    for part in reversed(subject.replace("/", ",").split(",")):
        name, sep, value = part.strip().partition("=")
        if sep and name.upper() == "CN" and value:
            return value
    return subject


def security_requirements(app_state: "AppState", agent: Optional["Agent"] = None
                          ) -> Tuple[Dict[str, Any], List[Dict[str, List[str]]]]:
    """(securitySchemes, security) for the cards: what this service accepts
    (an access token with the scopes ``agent`` requires)."""
    settings = app_state.settings
    if settings.auth_off:
        return {}, []
    schemes = {
        "apiKey": {"type": "apiKey", "in": "header",
                   "name": settings.api_key_header,
                   "description": "An API key made with `flask a2a keys create`."},
        "bearer": {"type": "http", "scheme": "bearer",
                   "description": "The same API key, as a bearer token."},
    }
    scopes = {}
    if settings.oidc_issuer:
        required = settings.oidc_required_scopes
        if agent is not None and agent.required_scopes is not None:
            required = agent.required_scopes
        scopes = dict.fromkeys(("oidc", "oauth2"), sorted(required))
        schemes["oidc"] = {
            "type": "openIdConnect",
            "openIdConnectUrl": settings.oidc_issuer.rstrip("/") + DISCOVERY_PATH,
            "description": "An access token of the organisation's identity "
                           "provider (Authorization: Bearer)."}
        if settings.oidc_token_url:
            schemes["oauth2"] = {
                "type": "oauth2", "description": "The same access token, "
                "got with the client-credentials grant.",
                "flows": {"clientCredentials": {
                    "tokenUrl": settings.oidc_token_url,
                    "scopes": {scope: scope for scope in scopes["oauth2"]}}}}
    if settings.mtls_header:
        schemes["mtls"] = {"type": "mutualTLS",
                           "description": "A client certificate the service's "
                                          "TLS proxy verifies."}
    if basic_in_use(app_state):
        schemes["basic"] = {"type": "http", "scheme": "basic",
                            "description": "A username and password."}
    if app_state.extension.hooks.token_caller is not None:
        schemes["hostToken"] = {"type": "http", "scheme": "bearer",
                                "description": "A bearer token of the host "
                                               "application."}
    if app_state.extension.hooks.session_caller is not None:
        schemes["session"] = {"type": "apiKey", "in": "cookie",
                              "name": app_state.session_cookie_name,
                              "description": "A logged-in session of the host "
                                             "application (JSON bodies only)."}
    return schemes, [{name: scopes.get(name, [])} for name in schemes]
