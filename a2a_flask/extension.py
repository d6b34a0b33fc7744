"""The Flask extension: agent registry, ``init_app``, per-app state."""

import logging
from typing import Any, Callable, Dict, Optional, TypeVar, Union

from flask import Flask

from . import errors, store_admin
from .agents import Agent
from .auth import Caller
from .cli import a2a_cli
from .config import DEFAULTS, Settings
from .credentials import Credentials
from .sqlitefile import is_storage_failure, storage_failure
from .hosting import (FirstRequest, check_not_mounted, exempt_from_csrf,
                      warn_about_settings)
from .store import Store
from .views import make_blueprint

log = logging.getLogger("a2a_flask")

#: An agent function: takes a ``Turn``, returns a str, ``Reply``,
#: ``InputRequired``, ``AuthRequired`` or ``Reject``.
AgentFunc = TypeVar("AgentFunc", bound=Callable[..., Any])
HookFunc = TypeVar("HookFunc", bound=Callable[..., Any])


class State:
    """What one app's requests need; kept in ``app.extensions["a2a"]``."""

    def __init__(self, extension, settings, store, session_cookie_name):
        self.extension = extension
        self.settings = settings
        self.store = store
        self.credentials = Credentials(store)
        self.session_cookie_name = session_cookie_name
        #: True once the file is known to be at this package's schema.
        self.schema_current = False
        #: The Prometheus metrics (A2A_METRICS), else None.
        self.metrics = None
        if settings.metrics:
            from .metrics import Metrics  # the optional `metrics` extra
            self.metrics = Metrics(store)

    def schema_problem(self, version=None):
        """None when the database is at the schema this package needs, else
        the ``SchemaOutdated`` error to answer (A2A_AUTO_MIGRATE=0). Given
        ``version`` (read by the health check), it is judged afresh."""
        if version is None:
            if self.schema_current:
                return None
            try:
                version = store_admin.schema_version_now(self.store)
            except store_admin.StorageError:
                return None  # not a schema problem: the call fails its own way
        expected = store_admin.expected_version()
        if version == expected:
            self.schema_current = True
            return None
        remedy = ("Run `flask a2a db upgrade`." if version < expected
                  else "Upgrade a2a_flask.")
        return errors.SchemaOutdated(
            "The database schema is version %d; this a2a_flask needs version "
            "%d. %s" % (version, expected, remedy))

    def _reachable(self, agent):
        """Registered enabled, and not switched off by A2A_DISABLED_AGENTS."""
        return agent.enabled and agent.name not in self.settings.disabled_agents

    def agent(self, name):
        """The agent ``name`` if it may be talked to now, else ``AgentNotFound``."""
        agent = self.extension.agents.get(name)
        if agent is None or not self._reachable(agent):
            raise errors.AgentNotFound(
                "No agent named %r can be talked to here." % name,
                data={"agent": name})
        return agent

    def agents(self):
        """The agents that may be talked to now, by name."""
        return [agent for _, agent in sorted(self.extension.agents.items())
                if self._reachable(agent)]


class A2A:
    """Serve registered agents over A2A JSON-RPC from a Flask app.

    ``A2A(app)`` or ``A2A()`` then ``init_app(app)``. Agents are registered on
    this object (``@a2a.agent("name")``), before or after ``init_app``.
    """

    def __init__(self, app: Optional[Flask] = None) -> None:
        self.agents: Dict[str, Agent] = {}
        #: Host hooks (see the README, "Securing it"); None when not set.
        self.session_loader: Optional[Callable[[], Union[str, Caller, None]]] = None
        self.password_checker: Optional[
            Callable[[str, str], Union[str, Caller, None]]] = None
        self.token_loader: Optional[Callable[[str], Union[str, Caller, None]]] = None
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        check_not_mounted(app)
        warn_about_settings(app.config)
        for key, value in DEFAULTS.items():
            app.config.setdefault(key, value)
        settings = Settings(app.config, app.instance_path)
        store = Store(settings.database, settings.busy_timeout_ms,
                      settings.sqlite_synchronous, settings.stale_turn_seconds,
                      auto_migrate=settings.auto_migrate)
        if settings.auto_migrate:
            try:
                store.migrate()
            except Exception as exc:
                if not is_storage_failure(exc):
                    raise
                # Booting anyway: calls answer "storage unavailable" (and log
                # why) until the file can be opened, then serve, no restart.
                storage_failure(exc, settings.database)
        state = State(self, settings, store,
                      app.config.get("SESSION_COOKIE_NAME", "session"))
        state.schema_current = settings.auto_migrate
        app.extensions["a2a"] = state
        if not settings.auto_migrate:
            problem = state.schema_problem()
            if problem is not None:
                log.warning("%s Calls are refused until then.", problem.message)
        blueprint = make_blueprint(settings)
        app.register_blueprint(blueprint)
        exempt_from_csrf(app, blueprint)
        app.before_request(FirstRequest(app, state, blueprint))
        app.cli.add_command(a2a_cli)
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
        def register(func):
            return self.add_agent(name, func, **options)
        return register

    def session_caller(self, func: HookFunc) -> HookFunc:
        """Decorator: ``func()`` names the host app's logged-in user, or None.

        Called (in the request) when a request carries no key and no Basic
        credentials; return a user id (str) or a ``Caller``.
        """
        self.session_loader = func
        return func

    def password_check(self, func: HookFunc) -> HookFunc:
        """Decorator: ``func(username, password)`` checks HTTP Basic credentials
        against the host app's users instead of the built-in ones; return a
        user id (str) or a ``Caller`` when right, None when wrong.
        """
        self.password_checker = func
        return func

    def token_caller(self, func):
        """Decorator: ``func(token)`` names the host app's user of an
        ``Authorization: Bearer`` token that is not one of the service's API
        keys (a JWT, a token of Flask-Login's ``request_loader``); return a
        user id (str) or a ``Caller``, or None to refuse (401).
        """
        self.token_loader = func
        return func
