"""The Flask extension: agent registry, ``init_app``, the per-app AppState."""

import logging
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, TypeVar, Union

from flask import Flask

from . import urls
from .agent import Agent
from .auth.callers import Caller
from .cli import a2a_cli
from .config import DEFAULTS, Settings
from .host_app import (check_default_agent, check_not_mounted, exempt_from_csrf,
                       warn_about_settings)
from .logs import log_to_stderr
from .app_state import AppState
from .storage import open_storage
from .tenants import parse as parse_tenants
from .http.blueprint import make_blueprint
from .http.pipeline import release_at_teardown

if TYPE_CHECKING:  # pragma: no cover
    from flask import Blueprint

    from .agent import Turn
    from .protocol.signing import CardSigner

log = logging.getLogger("a2a_flask")

#: An agent function: takes a ``Turn``, returns a str, ``Reply``,
#: ``InputRequired``, ``AuthRequired`` or ``Reject``.
AgentFunc = TypeVar("AgentFunc", bound=Callable[..., Any])
HookFunc = TypeVar("HookFunc", bound=Callable[..., Any])


def call_agent(turn: "Turn", agent: Any, text: Optional[str] = None, **options: Any) -> Any:
    """What ``turn.call`` runs: the client sends and waits. Imported on first
    use: an app whose agents call none never loads the client."""
    from .client.calls import call_agent as call
    return call(turn, agent, text, **options)


def _card_signer(settings: Settings) -> "CardSigner":
    """The signer of A2A_CARD_SIGNING_KEY (the ``jose`` extra)."""
    try:
        from .protocol.signing import CardSigner
    except ImportError as exc:
        raise RuntimeError("A2A_CARD_SIGNING_KEY needs the jose extra: pip "
                           "install 'a2a_flask[jose]' (%s)" % exc) from None
    # init_app calls this only when the key is set, and Settings refuses a
    # key without A2A_PUBLIC_BASE_URL.
    jku = settings.public_base_url + urls.jwks_path(settings)  # type: ignore[operator]
    return CardSigner(settings.card_signing_key, jku, settings.card_signing_kid,  # type: ignore[arg-type]
                      settings.card_verify_keys)


class HostHooks:
    """The host app's functions that name a caller (docs: "Securing it");
    each None until its decorator on ``A2A`` sets it."""

    __slots__ = ("session_caller", "password_check", "token_caller",
                 "session_operator", "caller_tenant")

    def __init__(self) -> None:
        #: ``func()``: the logged-in user of the request, or None.
        self.session_caller: Optional[Callable[[], Union[str, Caller, None]]] = None
        #: ``func(name, password)``: the user, or None when wrong.
        self.password_check: Optional[
            Callable[[str, str], Union[str, Caller, None]]] = None
        #: ``func(token)``: the user of a bearer token, or None to refuse.
        self.token_caller: Optional[Callable[[str], Union[str, Caller, None]]] = None
        #: ``func()``: whether the logged-in user of the request (the one
        #: ``session_caller`` named) is an operator (the operator's page).
        self.session_operator: Optional[Callable[[], bool]] = None
        #: ``func(caller)``: the tenant an OIDC, session, client-certificate
        #: or host-hook caller acts in, or None for none (A2A_TENANTS).
        self.caller_tenant: Optional[Callable[[Caller], Optional[str]]] = None


class FirstRequest:
    """A ``before_request`` hook doing its work once, before the first
    request's other hooks run (CSRFProtect's among them, when the host set it
    up after ``init_app``), then taking itself off the app's hooks: no later
    request runs it."""

    def __init__(self, app: Flask, app_state: AppState, blueprint: "Blueprint"):
        self.app, self.app_state, self.blueprint = app, app_state, blueprint
        self.done = False
        self.lock = threading.Lock()

    def __call__(self) -> None:
        if self.done:  # a request that started before it was taken off
            return
        with self.lock:
            if not self.done:
                exempt_from_csrf(self.app, self.blueprint)
                check_default_agent(self.app_state)
                self.done = True
                # A new list, not remove(): Flask is iterating the old one now,
                # and removing from it would skip the hook after this one.
                hooks = self.app.before_request_funcs
                hooks[None] = [hook for hook in hooks.get(None, ()) if hook is not self]


class A2A:
    """Serve registered agents over A2A JSON-RPC from a Flask app.

    ``A2A(app)`` or ``A2A()`` then ``init_app(app)``. Agents are registered on
    this object (``@a2a.agent("name")``), before or after ``init_app``.
    """

    def __init__(self, app: Optional[Flask] = None) -> None:
        self.agents: Dict[str, Agent] = {}
        #: The host app's functions that name a caller, set by the decorators
        #: of the same names (``session_caller``, ``password_check``,
        #: ``token_caller``).
        self.hooks = HostHooks()
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        check_not_mounted(app)
        for key, value in DEFAULTS.items():
            app.config.setdefault(key, value)
        settings = Settings(app.config, app.instance_path)
        for agent in self.agents.values():  # their names, against the prefix
            parse_tenants(agent.tenants, "agent %r: tenants" % agent.name,
                          settings.url_prefix)
        # The handler first: the warnings below are formatted like the rest.
        log_to_stderr(settings.log_format, unless_root=True)
        warn_about_settings(app.config)
        storage = open_storage(settings)
        if settings.auto_migrate:
            try:
                storage.migrate()
            except Exception as exc:
                # Booting anyway: calls answer "storage unavailable" (and log
                # why) until the database can be opened, then serve, no restart.
                if storage.failure(exc) is None:
                    raise
        app_state = AppState(self, settings, storage,
                             app.config.get("SESSION_COOKIE_NAME", "session"),
                             call_agent=call_agent)
        if settings.metrics:
            from .http.metrics import Metrics  # the optional `metrics` extra
            app_state.metrics = Metrics(app_state.storage)
        app_state.schema_current = settings.auto_migrate
        if settings.card_signing_key:
            app_state.card_signer = _card_signer(settings)
        app.extensions["a2a"] = app_state
        if not settings.auto_migrate:
            problem = app_state.schema_problem()
            storage.release_connection()  # read on the thread building the app
            if problem is not None:
                log.warning("%s Calls are refused until then.", problem.message)
        blueprint = make_blueprint(settings)
        app.register_blueprint(blueprint)
        exempt_from_csrf(app, blueprint)
        app.before_request(FirstRequest(app, app_state, blueprint))
        # Every request, the host app's too: a no-op unless it used ours.
        app.teardown_request(release_at_teardown(storage))
        app.cli.add_command(a2a_cli)
        # Under gunicorn: blocking waits that answer at the process's stop,
        # and the in-process claimer (A2A_IN_PROCESS_WORKER).
        from .worker import start_in_process
        app_state.in_process_worker = start_in_process(app_state)
        if settings.auth_off:
            log.warning("A2A_AUTH=off: every caller is one anonymous caller; "
                        "do not expose this service.")

    def add_agent(self, name: str, func: AgentFunc, **options: Any) -> AgentFunc:
        """Register ``func`` as agent ``name``; see ``Agent`` for the options."""
        if name in self.agents:
            raise ValueError("an agent named %r is already registered" % name)
        self.agents[name] = Agent(name, func, **options)
        return func

    def agent(self, name: str, **options: Any) -> Callable[[AgentFunc], AgentFunc]:
        """Decorator form of ``add_agent``."""
        def register(func: AgentFunc) -> AgentFunc:
            return self.add_agent(name, func, **options)
        return register

    def session_caller(self, func: HookFunc) -> HookFunc:
        """Decorator: ``func()`` names the host app's logged-in user, or None.

        Called (in the request) when a request carries no key and no Basic
        credentials; return a user id (str) or a ``Caller``.
        """
        self.hooks.session_caller = func
        return func

    def caller_tenant(self, func: HookFunc) -> HookFunc:
        """Decorator: ``func(caller)`` names the tenant (A2A_TENANTS) a
        caller the service does not keep acts in: an OIDC token's (after
        A2A_OIDC_TENANT_CLAIM), a client certificate's, a host hook's; return
        a tenant name, or None for none. Our API keys and built-in users
        carry their own (``--tenant``) and are not asked about.
        """
        self.hooks.caller_tenant = func
        return func

    def password_check(self, func: HookFunc) -> HookFunc:
        """Decorator: ``func(username, password)`` checks HTTP Basic credentials
        against the host app's users instead of the built-in ones; return a
        user id (str) or a ``Caller`` when right, None when wrong.
        """
        self.hooks.password_check = func
        return func

    def token_caller(self, func: HookFunc) -> HookFunc:
        """Decorator: ``func(token)`` names the host app's user of an
        ``Authorization: Bearer`` token that is not one of the service's API
        keys (a JWT, a token of Flask-Login's ``request_loader``); return a
        user id (str) or a ``Caller``, or None to refuse (401).
        """
        self.hooks.token_caller = func
        return func

    def session_operator(self, func: HookFunc) -> HookFunc:
        """Decorator: ``func()`` says whether the host app's logged-in user
        (the one ``session_caller`` named) is an operator: True opens the
        operator's page (``A2A_DASHBOARD``) with that session. Called in
        the request, for the operator's page only; its actions are POSTs,
        which the host's CSRF protection (Flask-WTF's ``CSRFProtect``)
        checks for a session user.
        """
        self.hooks.session_operator = func
        return func
