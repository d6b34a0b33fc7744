"""Settings: every key starts with ``A2A_``; defaults and parsing live here."""

import os
from datetime import timedelta
from typing import Any, Callable, Dict, FrozenSet, Mapping, Optional, Set

from . import tenants

#: Algorithms a bearer token may be signed with: asymmetric ones only (a
#: public key is no HMAC secret; ``none`` is no signature).
ASYMMETRIC = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
                        "ES256", "ES384", "ES512", "EdDSA"})

#: How far over the limit a refused body may go and still be read and
#: dropped, keeping the connection: a client a little over the limit loses
#: nothing; one declaring far more is not read, its connection is closed
#: (``http/pipeline.read_body``; gunicorn.conf.py's ``pre_request``).
REFUSED_BODY_DRAIN_BYTES = 1024 * 1024

DEFAULTS = {
    "A2A_DATABASE": None,  # None: a2a.sqlite3 in the Flask instance folder
    "A2A_URL_PREFIX": "/api/v1",
    "A2A_DEFAULT_AGENT": None,
    "A2A_ROOT_REST": False,  # A2A 1.0 HTTP+JSON of the default agent at /
    "A2A_STRICT_JSONRPC": False,
    "A2A_CONFORMANCE_AGENT": False,  # the demo's wsgi.py: the kit's test agent
    "A2A_MAX_CONTENT_LENGTH": 1024 * 1024,
    "A2A_PUBLIC_BASE_URL": None,
    "A2A_AUTH": "required",
    "A2A_API_KEY_HEADER": "X-API-Key",
    "A2A_PUBLIC_CARDS": True,
    "A2A_CARD_MAX_AGE": 300,  # seconds a public Agent Card may be cached
    # Signed Agent Cards (docs/cards.md; the `jose` extra).
    "A2A_CARD_SIGNING_KEY": None,  # PEM private key: EC P-256, RSA or Ed25519
    "A2A_CARD_SIGNING_KID": None,  # None: the key's RFC 7638 thumbprint
    "A2A_CARD_VERIFY_KEYS": "",  # old public keys still in the JWKS: path,kid=path
    "A2A_DISABLED_AGENTS": "",
    "A2A_TENANTS": "",  # tenants every agent is served to (docs/tenants.md)
    "A2A_BUSY_TIMEOUT_MS": 5000,  # a write waits this long in all, then "busy"
    # Sends one process runs at once; the rest wait in order of arrival
    # (a2a_flask/running.py); 0: no limit; None: the storage's (SQLite 2,
    # PostgreSQL none).
    "A2A_RUNNING_SENDS": None,
    "A2A_SQLITE_SYNCHRONOUS": "NORMAL",
    "A2A_STALE_TURN_SECONDS": 3600,
    "A2A_HISTORY_LENGTH_DEFAULT": None,  # None: the whole history
    # The most bytes of JSON one answer holds (a task, a ListTasks page): a
    # page stops early (nextPageToken); a task's oldest messages are left
    # out (metadata "a2a_flask.historyOmitted" says how many).
    "A2A_MAX_ANSWER_BYTES": 8 * 1024 * 1024,
    # The most bytes of large answers one process builds at once (answers
    # under 64 KiB are not counted); 0: no such bound.
    "A2A_MAX_ANSWER_BYTES_IN_FLIGHT": 32 * 1024 * 1024,
    # How long a call waits for room in that budget before it is answered
    # busy (503, Retry-After).
    "A2A_ANSWER_WAIT_SECONDS": 10,
    # The most bytes one turn may write (status message and artifacts); an
    # agent answering more fails the turn, saying so in its status.
    "A2A_MAX_TURN_OUTPUT_BYTES": 3 * 1024 * 1024,
    # Failed HTTP Basic logins a minute for one name from one address...
    "A2A_LOGIN_FAILURES_PER_MINUTE": 5,
    # ...and for one name from all addresses, before further tries get 429...
    "A2A_LOGIN_FAILURES_PER_NAME_PER_MINUTE": 100,
    # ...and from one address whatever the names (a minute).
    "A2A_LOGIN_FAILURES_PER_ADDRESS": 30,
    # Proxies whose X-Forwarded-For names the client (comma-separated
    # addresses; deploy/ sets nginx's 127.0.0.1). None: the peer is the client.
    "A2A_TRUSTED_PROXIES": "",
    # Access records of calls refused with no caller authenticated, per
    # client address: 20 at once, then this many a minute; the rest are
    # dropped and counted (the next record's ``dropped``).
    "A2A_LOG_REFUSALS_PER_MINUTE": 60,
    # Enterprise identity (docs/securing.md).
    "A2A_OIDC_ISSUER": None,  # OpenID provider whose access tokens are taken
    "A2A_OIDC_AUDIENCE": None,  # the aud a token must name (needed with the issuer)
    "A2A_OIDC_REQUIRED_SCOPES": "",  # scopes every agent requires by default
    "A2A_OIDC_NAME_CLAIM": "name",  # claim naming the caller (else its sub)
    "A2A_OIDC_TENANT_CLAIM": None,  # claim naming the caller's tenant (A2A_TENANTS)
    "A2A_OIDC_ALGORITHMS": "RS256,ES256",  # asymmetric signing algorithms taken
    "A2A_OIDC_LEEWAY_SECONDS": 30,  # clock skew allowed on exp, nbf, iat
    "A2A_OIDC_TOKEN_URL": None,  # a client-credentials token URL for the cards
    "A2A_MTLS_HEADER": None,  # header where the proxy puts a verified cert subject
    # Operations (docs/operating.md).
    "A2A_AUTO_MIGRATE": True,  # False: only `flask a2a db upgrade` migrates
    "A2A_LOG_FORMAT": "plain",  # or "json": read by gunicorn.conf.py
    "A2A_RETENTION": None,  # e.g. "30d": what `flask a2a tasks prune` keeps
    "A2A_METRICS": False,  # GET PREFIX/metrics (the `metrics` extra)
    "A2A_OTEL": False,  # OpenTelemetry spans per call and turn (the `otel` extra)
    "A2A_TRY_PAGE": False,  # a page to try each agent (docs/try-page.md)
    "A2A_DASHBOARD": False,  # PREFIX/dashboard/: the operator's page
    # Background agents (docs/background.md).
    # None: a blocking send waits for the outcome (A2A 1.0 section 3.2.2); a
    # number of seconds is an operator's cap, a deviation from the spec.
    "A2A_BLOCKING_WAIT_SECONDS": None,
    "A2A_WORKER_LEASE_SECONDS": 30,  # a worker silent this long lost its turn
    "A2A_WORKER_MAX_ATTEMPTS": 3,  # runs of a retry=True turn, at most
    # Threads per gunicorn worker that claim background turns, as `flask a2a
    # worker` does; 0: none (production runs `flask a2a worker`).
    "A2A_IN_PROCESS_WORKER": 0,
    "A2A_QUEUE_LIMIT_PER_CALLER": 100,  # turns one caller may have queued; 0: no limit
    # Bytes one caller's stored tasks may take before its sends are refused
    # (messages, artifacts, metadata, as stored); 0: no quota.
    "A2A_MAX_STORED_BYTES_PER_CALLER": 1 << 30,
    # SQLite: free bytes kept on the database's disk for reads, cancels and
    # `tasks prune`: under it new sends are refused; 0: no reserve.
    "A2A_MIN_FREE_DISK_BYTES": 256 << 20,
}

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def parse_value(key: str, text: str) -> Any:
    """An environment string as the type of the setting's default."""
    default = DEFAULTS.get(key)
    if isinstance(default, bool):
        lowered = text.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ValueError("%s=%r: expected one of 1/0, true/false, yes/no, on/off"
                         % (key, text))
    if isinstance(default, int):
        try:
            return int(text)
        except ValueError:
            raise ValueError("%s=%r: expected an integer" % (key, text)) from None
    return text


_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_age(text: object, name: str = "--older-than") -> timedelta:
    """``30d``, ``12h``, ``90m``, ``2w``, ``3600s`` as a ``timedelta``."""
    text = str(text).strip().lower()
    number, unit = text[:-1], text[-1:]
    if unit not in _AGE_UNITS or not number.isdigit() or int(number) <= 0:
        raise ValueError("%s=%r: expected a number and a unit, s, m, h, d or w "
                         "(e.g. 30d)" % (name, text))
    return timedelta(seconds=int(number) * _AGE_UNITS[unit])


def config_from_env(environ: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """Every ``A2A_*`` environment variable, parsed, for ``app.config``."""
    environ = os.environ if environ is None else environ
    return {key: parse_value(key, value)
            for key, value in environ.items() if key.startswith("A2A_")}


def _names(value: Any) -> Set[str]:
    if isinstance(value, str):
        return {name.strip() for name in value.split(",") if name.strip()}
    return set(value or ())


def scope_set(value: Any) -> FrozenSet[str]:
    """OAuth scopes given as "a b", "a,b" or a list, as a frozenset."""
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    return frozenset(value or ())


def _history_length(value: Any) -> Optional[int]:
    """None (the whole history) for no value or "all", else a count >= 0."""
    if value is None or str(value).strip().lower() in ("", "all"):
        return None
    try:
        count = int(value)
    except ValueError:
        count = -1
    if count < 0:
        raise ValueError("A2A_HISTORY_LENGTH_DEFAULT=%r: expected a number of "
                         "messages (0 or more) or 'all'" % (value,))
    return count


def _at_least(key: str, value: Any, minimum: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = minimum - 1
    if number < minimum:
        raise ValueError("%s=%r: expected a whole number, %d or more"
                         % (key, value, minimum))
    return number


def _cap(key: str, value: Any) -> Optional[int]:
    """None (no cap) for no value or "none", else a whole number >= 0."""
    if value is None or str(value).strip().lower() in ("", "none"):
        return None
    return _at_least(key, value, 0)


class Settings:
    """The extension's settings, read once from ``app.config`` in ``init_app``."""

    def __init__(self, config: Mapping[str, Any], instance_path: str) -> None:
        get = lambda key: config.get(key, DEFAULTS[key])  # noqa: E731
        self.database = get("A2A_DATABASE") or os.path.join(instance_path,
                                                             "a2a.sqlite3")
        self.url_prefix = "/" + get("A2A_URL_PREFIX").strip("/")
        if self.url_prefix == "/":
            self.url_prefix = ""
        self.default_agent = get("A2A_DEFAULT_AGENT") or None
        self.root_rest = bool(get("A2A_ROOT_REST"))
        self.strict_jsonrpc = bool(get("A2A_STRICT_JSONRPC"))
        self.max_content_length = int(get("A2A_MAX_CONTENT_LENGTH"))
        base_url = get("A2A_PUBLIC_BASE_URL")
        self.public_base_url = base_url.rstrip("/") if base_url else None
        self.auth = get("A2A_AUTH")
        #: Read on every call: an attribute, not a property.
        self.auth_off: bool = self.auth == "off"
        if self.auth not in ("required", "off"):
            raise ValueError("A2A_AUTH=%r: expected 'required' or 'off'" % self.auth)
        self.api_key_header = get("A2A_API_KEY_HEADER")
        self.public_cards = bool(get("A2A_PUBLIC_CARDS"))
        self.card_max_age = _at_least("A2A_CARD_MAX_AGE", get("A2A_CARD_MAX_AGE"), 0)
        self.card_signing_key = get("A2A_CARD_SIGNING_KEY") or None
        self.card_signing_kid = get("A2A_CARD_SIGNING_KID") or None
        self.card_verify_keys = get("A2A_CARD_VERIFY_KEYS") or ""
        if self.card_signing_key and not self.public_base_url:
            raise ValueError(
                "A2A_CARD_SIGNING_KEY needs A2A_PUBLIC_BASE_URL: a signed card "
                "must not carry URLs taken from a request's Host header.")
        self.disabled_agents = _names(get("A2A_DISABLED_AGENTS"))
        self.tenants = tenants.parse(get("A2A_TENANTS"), "A2A_TENANTS",
                                     self.url_prefix)
        self.busy_timeout_ms = int(get("A2A_BUSY_TIMEOUT_MS"))
        #: None: the storage's own (``Storage.RUNNING_SENDS``).
        self.running_sends = _cap("A2A_RUNNING_SENDS", get("A2A_RUNNING_SENDS"))
        self.stale_turn_seconds = int(get("A2A_STALE_TURN_SECONDS"))
        if self.stale_turn_seconds <= 0:
            raise ValueError("A2A_STALE_TURN_SECONDS=%r: expected a number of "
                             "seconds above 0" % self.stale_turn_seconds)
        self.history_length_default = _history_length(get("A2A_HISTORY_LENGTH_DEFAULT"))
        self.max_answer_bytes = _at_least(
            "A2A_MAX_ANSWER_BYTES", get("A2A_MAX_ANSWER_BYTES"), 64 * 1024)
        #: None: no bound (``answer_budget``).
        self.max_answer_bytes_in_flight = _at_least(
            "A2A_MAX_ANSWER_BYTES_IN_FLIGHT", get("A2A_MAX_ANSWER_BYTES_IN_FLIGHT"),
            0) or None
        self.answer_wait_seconds = _at_least(
            "A2A_ANSWER_WAIT_SECONDS", get("A2A_ANSWER_WAIT_SECONDS"), 0)
        self.max_turn_output_bytes = _at_least(
            "A2A_MAX_TURN_OUTPUT_BYTES", get("A2A_MAX_TURN_OUTPUT_BYTES"), 1024)
        if self.max_turn_output_bytes * 2 > self.max_answer_bytes:
            raise ValueError(
                "A2A_MAX_TURN_OUTPUT_BYTES=%d: expected at most half of "
                "A2A_MAX_ANSWER_BYTES (%d), so that any task fits an answer"
                % (self.max_turn_output_bytes, self.max_answer_bytes))
        #: What a task's artifacts may count together (storage.records), so
        #: that the task fits an answer: the budget less one turn's output
        #: (the status message) and an eighth for the rest (envelope, ids,
        #: metadata, the newest message).
        self.max_task_artifact_bytes = (self.max_answer_bytes - self.max_turn_output_bytes
                                        - self.max_answer_bytes // 8)
        self.login_failures_per_minute = int(get("A2A_LOGIN_FAILURES_PER_MINUTE"))
        if self.login_failures_per_minute <= 0:
            raise ValueError("A2A_LOGIN_FAILURES_PER_MINUTE=%r: expected a number "
                             "above 0" % self.login_failures_per_minute)
        self.login_failures_per_name = _at_least(
            "A2A_LOGIN_FAILURES_PER_NAME_PER_MINUTE",
            get("A2A_LOGIN_FAILURES_PER_NAME_PER_MINUTE"), 1)
        self.login_failures_per_address = _at_least(
            "A2A_LOGIN_FAILURES_PER_ADDRESS", get("A2A_LOGIN_FAILURES_PER_ADDRESS"), 1)
        self.trusted_proxies = frozenset(_names(get("A2A_TRUSTED_PROXIES")))
        self.log_refusals_per_minute = _at_least(
            "A2A_LOG_REFUSALS_PER_MINUTE", get("A2A_LOG_REFUSALS_PER_MINUTE"), 1)
        self._identity(get)
        self.sqlite_synchronous = str(get("A2A_SQLITE_SYNCHRONOUS")).upper()
        if self.sqlite_synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError("A2A_SQLITE_SYNCHRONOUS=%r: expected NORMAL, FULL, "
                             "EXTRA or OFF" % self.sqlite_synchronous)

        #: Whether a card has warned, in this process, that A2A_PUBLIC_BASE_URL
        #: is unset (protocol/cards.base_url).
        self.host_warned = False
        self.auto_migrate = bool(get("A2A_AUTO_MIGRATE"))
        self.log_format = str(get("A2A_LOG_FORMAT")).strip().lower()
        if self.log_format not in ("plain", "json"):
            raise ValueError("A2A_LOG_FORMAT=%r: expected 'plain' or 'json'"
                             % self.log_format)
        self.retention = get("A2A_RETENTION") or None
        if self.retention is not None:
            parse_age(self.retention, "A2A_RETENTION")
        self.metrics = bool(get("A2A_METRICS"))
        self.otel = bool(get("A2A_OTEL"))
        self.try_page = bool(get("A2A_TRY_PAGE"))
        self.dashboard = bool(get("A2A_DASHBOARD"))
        self.blocking_wait_seconds = _cap("A2A_BLOCKING_WAIT_SECONDS",
                                          get("A2A_BLOCKING_WAIT_SECONDS"))
        self.worker_lease_seconds = _at_least("A2A_WORKER_LEASE_SECONDS",
                                              get("A2A_WORKER_LEASE_SECONDS"), 1)
        self.worker_max_attempts = _at_least("A2A_WORKER_MAX_ATTEMPTS",
                                             get("A2A_WORKER_MAX_ATTEMPTS"), 1)
        self.in_process_worker = _at_least("A2A_IN_PROCESS_WORKER",
                                           get("A2A_IN_PROCESS_WORKER"), 0)
        #: None: no limit.
        self.queue_limit_per_caller = _at_least(
            "A2A_QUEUE_LIMIT_PER_CALLER", get("A2A_QUEUE_LIMIT_PER_CALLER"), 0) or None
        #: None: no quota.
        self.max_stored_bytes_per_caller = _at_least(
            "A2A_MAX_STORED_BYTES_PER_CALLER",
            get("A2A_MAX_STORED_BYTES_PER_CALLER"), 0) or None
        self.min_free_disk_bytes = _at_least(
            "A2A_MIN_FREE_DISK_BYTES", get("A2A_MIN_FREE_DISK_BYTES"), 0)

    def _identity(self, get: Callable[[str], Any]) -> None:
        """The OIDC and client-certificate settings (docs/securing.md)."""
        self.oidc_issuer = get("A2A_OIDC_ISSUER") or None
        self.oidc_audience = get("A2A_OIDC_AUDIENCE") or None
        if self.oidc_issuer and not self.oidc_audience:
            raise ValueError("A2A_OIDC_ISSUER is set but A2A_OIDC_AUDIENCE is "
                             "not: name the audience tokens must be issued for")
        self.oidc_required_scopes = scope_set(get("A2A_OIDC_REQUIRED_SCOPES"))
        self.oidc_name_claim = get("A2A_OIDC_NAME_CLAIM") or "sub"
        self.oidc_tenant_claim = get("A2A_OIDC_TENANT_CLAIM") or None
        self.oidc_algorithms = frozenset(_names(get("A2A_OIDC_ALGORITHMS")))
        refused = sorted(a for a in self.oidc_algorithms if a not in ASYMMETRIC)
        if refused or not self.oidc_algorithms:
            raise ValueError("A2A_OIDC_ALGORITHMS=%r: only asymmetric algorithms "
                             "(%s) are taken, never none or HS*"
                             % (get("A2A_OIDC_ALGORITHMS"),
                                ", ".join(sorted(ASYMMETRIC))))
        self.oidc_leeway_seconds = _at_least(
            "A2A_OIDC_LEEWAY_SECONDS", get("A2A_OIDC_LEEWAY_SECONDS"), 0)
        self.oidc_token_url = get("A2A_OIDC_TOKEN_URL") or None
        self.mtls_header = get("A2A_MTLS_HEADER") or None
