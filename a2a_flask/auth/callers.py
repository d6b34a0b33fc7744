"""Who is calling: credentials to a ``Caller``, and what a caller may reach.

Accepted, in this order: an API key (``Authorization: Bearer`` or the
``A2A_API_KEY_HEADER`` header) or, when a bearer token is none, one the host
app's token hook accepts; HTTP Basic (built-in users, or the host app's
password hook); the host app's login session (its session hook). With
``A2A_AUTH=off`` every caller is one anonymous caller.
"""

import base64
import binascii
from typing import AbstractSet, Optional

from .. import errors
from .credentials import KEY_PREFIX

#: The refusal of a key that is unknown or revoked (auth, service).
KEY_REFUSED = "The API key is not valid: unknown or revoked."


class Caller:
    """An authenticated (or, with auth off, anonymous) caller.

    ``id`` owns tasks: two requests with the same id see the same tasks.
    ``scope`` is None for every agent, else the set of agent names allowed.
    """

    __slots__ = ("id", "kind", "name", "scope", "authenticated", "remembered_key")

    def __init__(self, id: str, kind: str, name: str,
                 scope: Optional[AbstractSet[str]] = None,
                 authenticated: bool = True) -> None:
        self.id = id
        self.kind = kind
        self.name = name
        self.scope = scope
        self.authenticated = authenticated
        #: The hash of an API key remembered live by this process but not
        #: looked up for this call: ``confirm``, or the call's first storage
        #: statement (``remembered_key`` of ``Storage.start_turn``/``get_task``),
        #: checks it. None otherwise.
        self.remembered_key: Optional[str] = None

    #: The name ``remembered_key`` had before 0.2.
    unconfirmed_key = property(lambda self: self.remembered_key)

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


def _key_caller(key, remembered=None):
    caller = Caller("key:" + key.id, "key", key.label or key.id, scope=key.scope)
    caller.remembered_key = remembered
    return caller


def authenticate(app_state, request, use_remembered_key=False):
    """The caller of ``request``, or ``Unauthenticated`` (HTTP 401).

    ``use_remembered_key``: an API key this process found live lately is
    taken without a lookup; the caller's ``remembered_key`` is then set and
    must be checked before anything is answered (``confirm``, or the
    storage statement of the call given it as ``remembered_key``): a lookup saved
    on each ``message/send`` and ``tasks/get``, one round trip on
    PostgreSQL."""
    if app_state.settings.auth_off:
        return ANONYMOUS
    authorization = request.headers.get("Authorization", "")
    scheme, _, credentials = authorization.partition(" ")
    scheme, credentials = scheme.lower(), credentials.strip()
    key = request.headers.get(app_state.settings.api_key_header)
    if scheme == "bearer":
        key = credentials
    if key:
        if use_remembered_key:
            remembered = app_state.credentials.remembered_key(key)
            if remembered is not None:
                return _key_caller(*remembered)
        found = app_state.credentials.find_key(key)
        if found is not None:
            return _key_caller(found)
        if scheme == "bearer" and _takes_host_token(app_state, key):
            caller = _host_caller(app_state.extension.hooks.token_caller(key), "token")
            if caller is None:
                raise errors.UnauthenticatedError(
                    "The bearer token is not valid: neither an API key nor "
                    "a token of this application.")
            return caller
        raise errors.UnauthenticatedError(KEY_REFUSED)
    if scheme == "basic":
        pair = _basic(credentials)
        if pair is None:
            raise errors.UnauthenticatedError("The HTTP Basic credentials are malformed.")
        caller = _check_password(app_state, request, *pair)
        if caller is None:
            raise errors.UnauthenticatedError("Wrong username or password.")
        return caller
    if authorization:
        raise errors.UnauthenticatedError(
            "Unsupported Authorization scheme: use Bearer (an API key) or Basic.")
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


def basic_in_use(app_state):
    """HTTP Basic is offered: the host's password hook is set, or users exist."""
    return (app_state.extension.hooks.password_check is not None
            or app_state.credentials.has_users())


def _check_password(app_state, request, name, password):
    """The caller for these Basic credentials, or None.

    No password is hashed unless Basic is in use, nor once this user or this
    address failed too often lately (429); a built-in user's password already
    verified in this process is accepted without either.
    """
    if not basic_in_use(app_state):
        raise errors.UnauthenticatedError(
            "HTTP Basic is not accepted here (no users are set up): send an "
            "API key.")
    keys = ("user:" + name, "address:%s" % request.remote_addr)

    throttle = app_state.login_throttle

    def before_slow_check():
        throttle.check(*keys)

    checker = app_state.extension.hooks.password_check
    if checker is not None:
        before_slow_check()
        caller = _host_caller(checker(name, password), "user")
    elif app_state.credentials.check_user(name, password, before_slow_check):
        caller = Caller("user:" + name, "user", name)
    else:
        caller = None
    if caller is None:
        throttle.failed(*keys)
    return caller


def _takes_host_token(app_state, token):
    """Whether the host's token hook judges this bearer token (none of our
    live keys). A token shaped like ours (``a2a_...``) is only ever one of our
    keys, never handed to the host: a revoked key is a secret all the same."""
    return (app_state.extension.hooks.token_caller is not None
            and not token.startswith(KEY_PREFIX))


def confirm_remembered_key(app_state, caller):
    """Check now a key taken on trust by ``authenticate`` (a no-op for any
    other caller): ``Unauthenticated`` when it was revoked meanwhile."""
    if caller is None or caller.remembered_key is None:
        return
    if not app_state.credentials.key_is_live(caller.remembered_key):
        raise errors.UnauthenticatedError(KEY_REFUSED)
    caller.remembered_key = None


def authorize(caller, agent):
    if not caller.may_reach(agent.name):
        raise errors.ForbiddenError(
            "These credentials may not talk to agent %s." % agent.name,
            data={"agent": agent.name})


def security_requirements(app_state):
    """(securitySchemes, security) for the cards: what this service accepts."""
    if app_state.settings.auth_off:
        return {}, []
    schemes = {
        "apiKey": {"type": "apiKey", "in": "header",
                   "name": app_state.settings.api_key_header,
                   "description": "An API key made with `flask a2a keys create`."},
        "bearer": {"type": "http", "scheme": "bearer",
                   "description": "The same API key, as a bearer token."},
    }
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
    return schemes, [{name: []} for name in schemes]
