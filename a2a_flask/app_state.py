"""``AppState``: what one app's requests need, kept in ``app.extensions["a2a"]``
(settings, the storage, credentials, the agents that may be reached)."""

import time
from types import MappingProxyType
from typing import TYPE_CHECKING, List, Optional, Set, Tuple

from flask import current_app

from . import errors
from .answer_budget import AnswerBudget
from .auth.credentials import Credentials
from .auth.throttle import LoginThrottle
from .logs import RefusalBudget
from .running import RunningSends
from .storage.errors import schema_refusal
from .waits import TaskWaits

if TYPE_CHECKING:  # pragma: no cover
    from .agent import Agent


class AppState:
    """The A2A state of one Flask app (``app.extensions["a2a"]``): its
    settings, storage, credentials, metrics and registered agents. Not a
    task's state."""

    def __init__(self, extension, settings, storage, session_cookie_name,
                 call_agent=None):
        self.extension = extension
        self.settings = settings
        #: The sends this process runs at once (A2A_RUNNING_SENDS).
        self.running_sends = RunningSends(
            storage.RUNNING_SENDS if settings.running_sends is None
            else settings.running_sends)
        #: The OpenTelemetry spans (A2A_OTEL), else None.
        self.tracing = None
        if settings.otel:
            from .tracing import Tracing  # the optional `otel` extra
            self.tracing = Tracing()
            storage = self.tracing.storage(storage)
        self.storage = storage
        self.credentials = Credentials(storage)
        #: Failed HTTP Basic logins counted in this process.
        self.login_throttle = LoginThrottle(
            settings.login_failures_per_minute,
            name_limit=settings.login_failures_per_name,
            address_limit=settings.login_failures_per_address)
        #: The bytes of large answers this process builds at once
        #: (A2A_MAX_ANSWER_BYTES_IN_FLIGHT), else None.
        self.answer_budget = None if settings.max_answer_bytes_in_flight is None \
            else AnswerBudget(settings.max_answer_bytes_in_flight,
                              settings.answer_wait_seconds)
        #: Blocking sends waiting on background turns (one watcher a process).
        self.task_waits = TaskWaits(storage)
        self.session_cookie_name = session_cookie_name
        #: How many records of anonymous refusals the access log takes.
        self.refusals = RefusalBudget(settings.log_refusals_per_minute,
                                      trusted_proxies=settings.trusted_proxies)
        #: The OIDC access-token verifier (A2A_OIDC_ISSUER), else None.
        self.tokens = None
        if settings.oidc_issuer and not settings.auth_off:
            try:
                from .auth.oidc import TokenVerifier  # the optional `jose` extra
            except ImportError:
                raise RuntimeError("A2A_OIDC_ISSUER needs PyJWT with "
                                   "cryptography: pip install 'a2a_flask[jose]'"
                                   ) from None
            self.tokens = TokenVerifier(settings)
        #: True once the database is known to be at this package's schema.
        self.schema_current = False
        #: Signs the Agent Cards (A2A_CARD_SIGNING_KEY), else None.
        self.card_signer = None
        #: The Prometheus metrics (A2A_METRICS), else None: set by
        #: ``init_app``, since they are of the HTTP layer, above this one.
        self.metrics = None
        #: The claimer of background turns in this web process
        #: (A2A_IN_PROCESS_WORKER, under gunicorn), else None.
        self.in_process_worker = None
        #: When this app was built (time.monotonic), for /health.
        self.started = time.monotonic()
        #: Whether /health warned that no claimer was seen (once, until one is).
        self.worker_warned = False
        #: What ``run_turn`` takes from the app, in a request and in the
        #: worker alike: tracing, the limits on an outcome, what
        #: ``turn.call`` runs (``call_agent``: the client, from
        #: ``init_app``). Made once: all of it is fixed at start.
        self.turn_options = MappingProxyType(dict(
            tracing=self.tracing, max_output_bytes=settings.max_turn_output_bytes,
            max_artifact_bytes=settings.max_task_artifact_bytes,
            call_agent=call_agent))

    def schema_problem(self, version: Optional[int] = None
                       ) -> Optional[errors.SchemaOutdatedError]:
        """None when the database is at the schema this package needs, else
        the ``SchemaOutdatedError`` to answer (A2A_AUTO_MIGRATE=0). Given
        ``version`` (read by the health check), it is judged afresh."""
        if version is None:
            if self.schema_current:
                return None
            try:
                version = self.storage.schema_version()
            except Exception as exc:
                if self.storage.failure(exc) is None:
                    raise
                return None  # not a schema problem: the call fails its own way
        expected = self.storage.expected_version()
        if version == expected:
            self.schema_current = True
            return None
        if 0 < version < self.storage.start_version():
            return errors.SchemaOutdatedError(str(schema_refusal(
                version, self.storage.start_version(), expected)))
        remedy = ("Run `flask a2a db upgrade`." if version < expected
                  else "Upgrade a2a_flask.")
        return errors.SchemaOutdatedError(
            "The database schema is version %d; this a2a_flask needs version "
            "%d. %s" % (version, expected, remedy))

    def agent_tenants(self, agent: "Agent") -> Tuple[str, ...]:
        """The tenants ``agent`` is served to: A2A_TENANTS' and its own."""
        return tuple(self.settings.tenants) + tuple(
            t for t in agent.tenants if t not in self.settings.tenants)

    def known_tenants(self) -> Set[str]:
        """Every tenant some agent is served to: a key or a user of another
        is refused (its tenant was removed; its data stays)."""
        known = set(self.settings.tenants)
        for agent in self.extension.agents.values():
            known.update(agent.tenants)
        return known

    def reachable(self, agent: "Agent") -> bool:
        """Registered enabled, and not switched off by A2A_DISABLED_AGENTS."""
        return agent.enabled and agent.name not in self.settings.disabled_agents

    def reachable_agents(self) -> List["Agent"]:
        """The agents that may be talked to now, by name."""
        return [agent for _, agent in sorted(self.extension.agents.items())
                if self.reachable(agent)]

    def reachable_agent(self, name: str) -> "Agent":
        """The agent ``name`` if it may be talked to now, else
        ``AgentNotFound`` (asked before ``authorize``, which checks that
        the caller may)."""
        agent = self.extension.agents.get(name)
        if agent is None or not self.reachable(agent):
            raise errors.agent_not_found(name)
        return agent


def current_app_state() -> AppState:
    """The A2A state of the app in context: a request's, or a ``flask a2a``
    command's."""
    return current_app._get_current_object().extensions["a2a"]  # type: ignore[attr-defined]
