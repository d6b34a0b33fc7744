"""Settings: every key starts with ``A2A_``; defaults and parsing live here."""

import os
from datetime import timedelta

#: Algorithms a bearer token may be signed with: asymmetric ones only (a
#: public key is no HMAC secret; ``none`` is no signature).
ASYMMETRIC = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
                        "ES256", "ES384", "ES512", "EdDSA"})

DEFAULTS = {
    "A2A_DATABASE": None,  # None: a2a.sqlite3 in the Flask instance folder
    "A2A_URL_PREFIX": "/api/v1",
    "A2A_DEFAULT_AGENT": None,
    "A2A_ROOT_REST": False,  # A2A 1.0 HTTP+JSON of the default agent at /
    "A2A_STRICT_JSONRPC": False,
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
    "A2A_BUSY_TIMEOUT_MS": 5000,  # a write waits this long in all, then "busy"
    "A2A_SQLITE_SYNCHRONOUS": "NORMAL",
    "A2A_STALE_TURN_SECONDS": 3600,
    "A2A_HISTORY_LENGTH_DEFAULT": None,  # None: the whole history
    # The most bytes of JSON one answer holds (a task, a ListTasks page): a
    # page stops early (nextPageToken); a task's oldest messages are left
    # out (metadata "a2a_flask.historyOmitted" says how many).
    "A2A_MAX_ANSWER_BYTES": 8 * 1024 * 1024,
    # The most bytes one turn may write (status message and artifacts); an
    # agent answering more fails the turn, saying so in its status.
    "A2A_MAX_TURN_OUTPUT_BYTES": 3 * 1024 * 1024,
    # Failed HTTP Basic logins a minute for one name from one address...
    "A2A_LOGIN_FAILURES_PER_MINUTE": 5,
    # ...and for one name from all addresses, before further tries get 429.
    "A2A_LOGIN_FAILURES_PER_NAME_PER_MINUTE": 100,
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
    # Background agents (docs/background.md).
    # None: a blocking send waits for the outcome (A2A 1.0 section 3.2.2); a
    # number of seconds is an operator's cap, a deviation from the spec.
    "A2A_BLOCKING_WAIT_SECONDS": None,
    "A2A_WORKER_LEASE_SECONDS": 30,  # a worker silent this long lost its turn
    "A2A_WORKER_MAX_ATTEMPTS": 3,  # runs of a retry=True turn, at most
    "A2A_QUEUE_LIMIT_PER_CALLER": 100,  # turns one caller may have queued; 0: no limit
}

# One line of documentation per setting, in MyST Markdown: the settings
# reference (docs/reference/settings.md) is generated from DEFAULTS and this,
# so a new setting gets its line here; tests/docs/test_docs.py fails without it.
DOCS = {
    "A2A_DATABASE": "Where tasks are kept. None: `a2a.sqlite3` in the Flask "
        "instance folder. A path of the SQLite file (created, with its folder, on "
        "start), also written `sqlite:///relative/path` or "
        "`sqlite:////absolute/path`; a `postgresql://user:password@host:5432/dbname` "
        "URL selects the PostgreSQL backend (the `postgres` extra, see "
        "[PostgreSQL](../postgresql.md)).",
    "A2A_URL_PREFIX": "Prefix of the per-agent routes (`PREFIX` in these docs).",
    "A2A_DEFAULT_AGENT": "The agent also served at `POST /a2a` and "
        "`/.well-known/agent-card.json` (the demo's `wsgi.py`: `chat`). Empty is "
        "the same as unset (a warning says so): those paths stay your app's. "
        "Naming no registered agent logs an error at the first request, and "
        "`/a2a` answers a JSON 404.",
    "A2A_ROOT_REST": "Also serve the default agent's A2A 1.0 HTTP+JSON routes "
        "at the host root (`/message:send`, `/tasks`, `/tasks/{id}`, "
        "`/extendedAgentCard`, ...), where the 1.0 conformance kit looks for them. "
        "Off by default: your app's own `/tasks` comes first. Needs "
        "`A2A_DEFAULT_AGENT` (a warning at start says so when it is missing).",
    "A2A_STRICT_JSONRPC": "`True`: a `jsonrpc` member other than the string "
        "`\"2.0\"` is `-32600`. `False`: it must be present, any value is accepted.",
    "A2A_MAX_CONTENT_LENGTH": "Larger request bodies (bytes; the default is "
        "1 MiB) are refused: HTTP 413, `-32600`.",
    "A2A_PUBLIC_BASE_URL": "The base URL the cards advertise; None: taken from "
        "the request. Set it behind a proxy, e.g. `https://agents.example.com`. "
        "It must include the mount path when the app is served under a sub-path "
        "(`https://example.com/portal`): without it every card URL loses "
        "`/portal`, and calls to them get your front server's 404.",
    "A2A_AUTH": "`required` or `off`. `off`: no credentials needed, every "
        "caller is one anonymous caller (a warning is logged and shown in the "
        "cards).",
    "A2A_API_KEY_HEADER": "The header that carries an API key (besides "
        "`Authorization: Bearer`), e.g. `X-Embabel-Api-Key`.",
    "A2A_PUBLIC_CARDS": "`False`: the card routes need credentials too.",
    "A2A_CARD_MAX_AGE": "Seconds a public Agent Card may be cached "
        "(`Cache-Control: public, max-age=N`; `0`: revalidate each time); see "
        "[Agent Cards](../cards.md).",
    "A2A_CARD_SIGNING_KEY": "Path of an unencrypted PEM private key that signs "
        "every Agent Card (JWS, A2A 1.0 section 8.4): EC P-256 (`ES256`), RSA "
        "(`RS256`) or Ed25519 (`EdDSA`). None: cards are unsigned. Needs "
        "`A2A_PUBLIC_BASE_URL` (refused at start without it) and the `jose` "
        "extra; see [Agent Cards](../cards.md).",
    "A2A_CARD_SIGNING_KID": "The `kid` of the signing key; None: its RFC 7638 "
        "thumbprint.",
    "A2A_CARD_VERIFY_KEYS": "Older keys still published in the JWKS during a "
        "rotation: comma-separated PEM paths, each maybe `kid=path` (only the "
        "public part is published).",
    "A2A_DISABLED_AGENTS": "Comma-separated agent names (or a list) to switch "
        "off: they answer 404.",
    "A2A_BUSY_TIMEOUT_MS": "How long a write waits in all for other writers "
        "(SQLite: the writers' lock and SQLite's busy wait together, a host app's "
        "transaction included; PostgreSQL: its `lock_timeout`, and how long a call "
        "waits for a pooled connection); then it answers \"The storage is busy\", "
        "retryable.",
    "A2A_SQLITE_SYNCHRONOUS": "SQLite `synchronous`: `NORMAL` survives a crash "
        "of any process; `FULL` also survives a power cut, at a cost per write "
        "(`EXTRA` and `OFF` too).",
    "A2A_STALE_TURN_SECONDS": "A task still `working` this long after its turn "
        "began lost its worker (killed mid-turn): `tasks/get` marks it `failed` "
        "(on PostgreSQL, measured by the database server's clock).",
    "A2A_HISTORY_LENGTH_DEFAULT": "The `historyLength` applied when a caller "
        "asks none (`message/send`, `tasks/get`): a number of messages, or `all` "
        "(None: all). A long task's answer grows with its history; e.g. `20` "
        "bounds it.",
    "A2A_MAX_ANSWER_BYTES": "The most bytes of JSON one answer holds (8 MiB): "
        "a ListTasks page ends early with a `nextPageToken`, a task shows its "
        "newest messages that fit (its metadata `a2a_flask.historyOmitted` says "
        "how many were left out); see [Hardening](../hardening.md).",
    "A2A_MAX_TURN_OUTPUT_BYTES": "The most bytes one turn may write, its status "
        "message and artifacts together (3 MiB); an agent answering more fails "
        "the turn, saying so. At most half of `A2A_MAX_ANSWER_BYTES`. A task's "
        "artifacts together may take the answer budget less this less an "
        "eighth of it: a turn going over fails the same way.",
    "A2A_LOGIN_FAILURES_PER_MINUTE": "Failed HTTP Basic logins a minute "
        "allowed per username from one client address (in each worker); more are "
        "refused with 429 and `Retry-After`, without hashing anything. Other "
        "users at the same address are not affected.",
    "A2A_LOGIN_FAILURES_PER_NAME_PER_MINUTE": "The same, per username from all "
        "addresses (much higher, so that guessing at a name from many addresses "
        "is bounded too; a password the worker already verified keeps working).",
    "A2A_TRUSTED_PROXIES": "Comma-separated addresses of the proxies in front "
        "(`deploy/a2a.env`: `127.0.0.1`, the shipped nginx): their "
        "`X-Forwarded-For` names the client address, for the login throttle and "
        "the log. Empty: the peer is the client, the header is ignored.",
    "A2A_LOG_REFUSALS_PER_MINUTE": "Access records of anonymous refusals per "
        "client address: 20 at once, then this many a minute; the rest are "
        "dropped and counted in the next record (`dropped=N`).",
    "A2A_OIDC_ISSUER": "The OpenID provider whose access tokens are taken as "
        "bearer tokens: its issuer identifier (the tokens' `iss`); discovery at "
        "`<issuer>/.well-known/openid-configuration`. Needs the `jose` extra and "
        "`A2A_OIDC_AUDIENCE`; see [OpenID Connect](../securing.md#openid-connect-and-oauth2-access-tokens).",
    "A2A_OIDC_AUDIENCE": "The `aud` an access token must name (this service's "
        "identifier at the provider); required with `A2A_OIDC_ISSUER`.",
    "A2A_OIDC_REQUIRED_SCOPES": "OAuth scopes (space- or comma-separated) an "
        "access token must grant to talk to an agent registered without "
        "`required_scopes`; none by default. API keys are not concerned.",
    "A2A_OIDC_NAME_CLAIM": "The token claim that names the caller "
        "(`caller.name`: `preferred_username`, `client_id`...); its `sub` when "
        "the claim is absent.",
    "A2A_OIDC_ALGORITHMS": "Signing algorithms an access token may use, "
        "comma-separated, among RS/PS/ES 256/384/512 and EdDSA; `none` and "
        "`HS*` are refused at start.",
    "A2A_OIDC_LEEWAY_SECONDS": "Clock skew allowed on a token's `exp`, `nbf` "
        "and `iat`, in seconds.",
    "A2A_OIDC_TOKEN_URL": "The provider's token endpoint: the cards then also "
        "declare an `oauth2` scheme with a client-credentials flow there.",
    "A2A_MTLS_HEADER": "The request header in which the TLS proxy passes the "
        "subject of a client certificate it verified (the caller "
        "`mtls:<subject>`); set it only behind that proxy, see "
        "[Client certificates](../securing.md#client-certificates-mutual-tls-behind-nginx).",
    "A2A_AUTO_MIGRATE": "`False`: the app never changes the schema at start; "
        "on an old schema it answers every call `-32603` (HTTP 503) and `/health` "
        "503, naming `flask a2a db upgrade`, until that command has run.",
    "A2A_LOG_FORMAT": "`plain` or `json`: with `json`, the shipped "
        "`gunicorn.conf.py` writes the error log as one JSON object per line.",
    "A2A_RETENTION": "How long `flask a2a tasks prune` keeps finished tasks, "
        "e.g. `30d` (`s`, `m`, `h`, `d`, `w`); its `--older-than` overrides it. "
        "None: prune needs `--older-than`.",
    "A2A_METRICS": "`True`: serve `GET PREFIX/metrics` (needs the `metrics` "
        "extra).",
    "A2A_OTEL": "`True`: OpenTelemetry spans per call, storage operation, "
        "agent turn and worker turn, exported over OTLP/HTTP (needs the `otel` "
        "extra); see [Tracing](../tracing.md).",
    "A2A_TRY_PAGE": "`True`: a browser opening `PREFIX/agents/<name>/` gets a "
        "page to try the agent: its card, a message form (the API key stays in "
        "the page), the answer and the caller's recent tasks; see "
        "[The try page](../try-page.md). On in the demo's `wsgi.py`. Other "
        "clients get the same answer as with it off.",
    "A2A_BLOCKING_WAIT_SECONDS": "Unset: a blocking send to a background agent "
        "waits until the turn ends or is interrupted (A2A 1.0 section 3.2.2; "
        "[Serving agents that wait](../serving.md)). A number of seconds caps the "
        "wait (`0`: at once), a deviation from the spec: the call then answers "
        "the `working` task and the caller polls.",
    "A2A_WORKER_LEASE_SECONDS": "A worker renews the lease on each turn it runs "
        "every third of this; a turn whose lease expired (its worker was killed) "
        "is failed, or queued again for `retry=True` agents.",
    "A2A_WORKER_MAX_ATTEMPTS": "How many times a `retry=True` agent's turn is "
        "run at most before it is failed.",
    "A2A_QUEUE_LIMIT_PER_CALLER": "Background turns one caller may have waiting "
        "for a worker; more are refused with HTTP 429, `Retry-After` and JSON-RPC "
        "code `-32000`, storing nothing. `0`: no limit. See "
        "[Background agents](../background.md).",
}

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def parse_value(key, text):
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


def parse_age(text, name="--older-than"):
    """``30d``, ``12h``, ``90m``, ``2w``, ``3600s`` as a ``timedelta``."""
    text = str(text).strip().lower()
    number, unit = text[:-1], text[-1:]
    if unit not in _AGE_UNITS or not number.isdigit() or int(number) <= 0:
        raise ValueError("%s=%r: expected a number and a unit, s, m, h, d or w "
                         "(e.g. 30d)" % (name, text))
    return timedelta(seconds=int(number) * _AGE_UNITS[unit])


def config_from_env(environ=None):
    """Every ``A2A_*`` environment variable, parsed, for ``app.config``."""
    environ = os.environ if environ is None else environ
    return {key: parse_value(key, value)
            for key, value in environ.items() if key.startswith("A2A_")}


def _names(value):
    if isinstance(value, str):
        return {name.strip() for name in value.split(",") if name.strip()}
    return set(value or ())


def scope_set(value):
    """OAuth scopes given as "a b", "a,b" or a list, as a frozenset."""
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    return frozenset(value or ())


def _history_length(value):
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


def _at_least(key, value, minimum):
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = minimum - 1
    if number < minimum:
        raise ValueError("%s=%r: expected a whole number, %d or more"
                         % (key, value, minimum))
    return number


def _cap(key, value):
    """None (no cap) for no value or "none", else a whole number >= 0."""
    if value is None or str(value).strip().lower() in ("", "none"):
        return None
    return _at_least(key, value, 0)


class Settings:
    """The extension's settings, read once from ``app.config`` in ``init_app``."""

    def __init__(self, config, instance_path):
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
        self.busy_timeout_ms = int(get("A2A_BUSY_TIMEOUT_MS"))
        self.stale_turn_seconds = int(get("A2A_STALE_TURN_SECONDS"))
        if self.stale_turn_seconds <= 0:
            raise ValueError("A2A_STALE_TURN_SECONDS=%r: expected a number of "
                             "seconds above 0" % self.stale_turn_seconds)
        self.history_length_default = _history_length(get("A2A_HISTORY_LENGTH_DEFAULT"))
        self.max_answer_bytes = _at_least(
            "A2A_MAX_ANSWER_BYTES", get("A2A_MAX_ANSWER_BYTES"), 64 * 1024)
        self.max_turn_output_bytes = _at_least(
            "A2A_MAX_TURN_OUTPUT_BYTES", get("A2A_MAX_TURN_OUTPUT_BYTES"), 1024)
        if self.max_turn_output_bytes * 2 > self.max_answer_bytes:
            raise ValueError(
                "A2A_MAX_TURN_OUTPUT_BYTES=%d: expected at most half of "
                "A2A_MAX_ANSWER_BYTES (%d), so that any task fits an answer"
                % (self.max_turn_output_bytes, self.max_answer_bytes))
        #: What a task's artifacts may count together (storage.sizes), so
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
        self.blocking_wait_seconds = _cap("A2A_BLOCKING_WAIT_SECONDS",
                                          get("A2A_BLOCKING_WAIT_SECONDS"))
        self.worker_lease_seconds = _at_least("A2A_WORKER_LEASE_SECONDS",
                                              get("A2A_WORKER_LEASE_SECONDS"), 1)
        self.worker_max_attempts = _at_least("A2A_WORKER_MAX_ATTEMPTS",
                                             get("A2A_WORKER_MAX_ATTEMPTS"), 1)
        #: None: no limit.
        self.queue_limit_per_caller = _at_least(
            "A2A_QUEUE_LIMIT_PER_CALLER", get("A2A_QUEUE_LIMIT_PER_CALLER"), 0) or None

    def _identity(self, get):
        """The OIDC and client-certificate settings (docs/securing.md)."""
        self.oidc_issuer = get("A2A_OIDC_ISSUER") or None
        self.oidc_audience = get("A2A_OIDC_AUDIENCE") or None
        if self.oidc_issuer and not self.oidc_audience:
            raise ValueError("A2A_OIDC_ISSUER is set but A2A_OIDC_AUDIENCE is "
                             "not: name the audience tokens must be issued for")
        self.oidc_required_scopes = scope_set(get("A2A_OIDC_REQUIRED_SCOPES"))
        self.oidc_name_claim = get("A2A_OIDC_NAME_CLAIM") or "sub"
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

    @property
    def auth_off(self):
        return self.auth == "off"
