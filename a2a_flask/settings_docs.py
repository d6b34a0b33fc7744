"""One line of documentation per setting (``config.DEFAULTS``), in MyST
Markdown: the settings reference (docs/reference/settings.md) is generated
from DEFAULTS and ``DOCS``, so a new setting gets its line here;
tests/docs/test_docs.py fails without it."""

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
    "A2A_CONFORMANCE_AGENT": "The demo's `wsgi.py` only: `True` also serves "
        "`conformance`, the test agent the A2A conformance kit's scenarios "
        "script (what it answers is chosen by the prefix of the messageId); "
        "with `A2A_DEFAULT_AGENT=conformance` the kit runs against "
        "`gunicorn wsgi:app` (see [Conformance](../conformance.md)). Off by "
        "default; no other app reads it.",
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
    "A2A_TENANTS": "Comma-separated tenant names (or a list), each "
        "`[a-z0-9][a-z0-9-]{0,62}`: every agent is served to each of them, an "
        "isolated space (its own tasks, keys and users) reached at "
        "`<interface url>/<tenant>/...` over HTTP+JSON and with `params.tenant` "
        "over JSON-RPC; the 1.0 card lists an interface per tenant. A name that "
        "is one of the service's path segments (`agents`, `health`, `tasks`...) "
        "is refused at start. Empty: no tenants (docs/tenants.md).",
    "A2A_OIDC_TENANT_CLAIM": "The access-token claim naming the tenant "
        "(A2A_TENANTS) its caller acts in; none: the `caller_tenant` hook "
        "decides, else the caller acts only where no tenant is named.",
    "A2A_BUSY_TIMEOUT_MS": "How long a write waits in all for other writers "
        "(SQLite: the wait for one of the process's 16 connections, the writers' "
        "lock and SQLite's busy wait together, a host app's transaction included; "
        "PostgreSQL: its `lock_timeout`, and how long a call waits for a pooled "
        "connection); then it answers \"The storage is busy\", "
        "retryable.",
    "A2A_RUNNING_SENDS": "How many sends (`message/send`, `SendMessage`) one "
        "process runs at once; the others wait their turn, in order of arrival. "
        "Unset: 2 on SQLite, no limit on PostgreSQL (its sends wait on the "
        "database server, and 2 left the process idle meanwhile). A send gives "
        "its place back while its agent runs and while a blocking send waits, "
        "and one that holds it longer than 50 ms (a slow host callback, a busy "
        "database) is counted out, so that the next send starts. Reads are not "
        "limited. Under gthread workers on SQLite this cuts a send's p99 by a "
        "third to a half at the same throughput. `0`: no limit. See [Serving "
        "agents that wait](../serving.md).",
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
    "A2A_MAX_ANSWER_BYTES_IN_FLIGHT": "The most bytes of large answers one "
        "process builds at once (32 MiB), shared by its threads: each answer of "
        "64 KiB or more holds its size from before it is read (a ListTasks page "
        "holds `A2A_MAX_ANSWER_BYTES` until its tasks are read) until its last "
        "byte is sent; a call finding no room waits its turn, in order of "
        "arrival, for `A2A_ANSWER_WAIT_SECONDS`. Smaller answers are not "
        "counted. An answer larger than the whole budget is built alone. `0`: "
        "no bound (each answer is still bounded by `A2A_MAX_ANSWER_BYTES`). "
        "See [Hardening](../hardening.md).",
    "A2A_ANSWER_WAIT_SECONDS": "How long a read (GetTask, ListTasks, "
        "`tasks/get`) waits for room in `A2A_MAX_ANSWER_BYTES_IN_FLIGHT` "
        "(10 s) before it is answered busy: HTTP 503 with `Retry-After`, "
        "JSON-RPC code `-32603` with `data.retry` true (1.0 reason "
        "`SERVER_BUSY`); nothing was done and the call may be retried as it "
        "is. A send's or a cancel's answer never waits (its work is done): it "
        "is counted all the same. `0`: answer busy at once.",
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
        "is bounded too; a password the worker already verified keeps working, "
        "and past the limit an address that has not failed for the name within "
        "the minute still gets its password checked, so the name's owner is "
        "not locked out).",
    "A2A_LOGIN_FAILURES_PER_ADDRESS": "Failed HTTP Basic logins a minute from "
        "one client address whatever the usernames (in each worker); more are "
        "refused with 429 and `Retry-After`, without hashing anything (an "
        "unknown name costs a hash too). Behind a proxy it needs "
        "`A2A_TRUSTED_PROXIES`, or every client shares the proxy's address "
        "and this limit.",
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
        "`A2A_OIDC_AUDIENCE`; see "
        "[OpenID Connect](../securing.md#openid-connect-and-oauth2-access-tokens).",
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
    "A2A_DASHBOARD": "`True`: serve the operator's page at `PREFIX/dashboard/` "
        "(tasks by agent and state, the queue, workers, failures, keys, "
        "storage) and its JSON (`Accept: application/json`), for operator "
        "keys and users only, with its two actions (cancel a task, cancel a "
        "caller's working tasks); see [Operating it](../operating.md). Off: "
        "404. On in the demo's `wsgi.py` (`A2A_DASHBOARD=0` turns it off).",
    "A2A_BLOCKING_WAIT_SECONDS": "Unset: a blocking send to a background agent "
        "waits until the turn ends or is interrupted (A2A 1.0 section 3.2.2; "
        "[Serving agents that wait](../serving.md)). A number of seconds caps the "
        "wait (`0`: at once), a deviation from the spec: the call then answers "
        "the `working` task and the caller polls.",
    "A2A_WORKER_LEASE_SECONDS": "A worker renews the lease on each turn it runs "
        "every third of this; a turn whose lease expired (its worker was killed) "
        "is failed, or queued again for `retry=True` agents.",
    "A2A_IN_PROCESS_WORKER": "Background turns each gunicorn worker process "
        "runs itself, at most at once (threads started per claimed turn); "
        "`0`: none, `flask a2a worker` runs them. The demo's `wsgi.py` sets "
        "`4`, so that one command serves `slow`; production keeps `0` and runs "
        "`flask a2a worker` (deploy/). Such a process stops claiming on SIGTERM "
        "and on a `max_requests` recycle and finishes or releases its turns "
        "within gunicorn's `graceful_timeout`. Only under gunicorn workers, "
        "without `preload_app`. See [Background agents](../background.md).",
    "A2A_WORKER_MAX_ATTEMPTS": "How many times a `retry=True` agent's turn is "
        "run at most before it is failed.",
    "A2A_QUEUE_LIMIT_PER_CALLER": "Background turns one caller may have waiting "
        "for a worker; more are refused with HTTP 429, `Retry-After` and JSON-RPC "
        "code `-32000`, storing nothing. `0`: no limit. See "
        "[Background agents](../background.md).",
    "A2A_MAX_STORED_BYTES_PER_CALLER": "The most bytes one caller's stored "
        "tasks may take (1 GiB): their messages, artifacts and metadata as "
        "stored, counted by the database as they are written and pruned. Past "
        "it the caller's new messages are refused with HTTP 429, `Retry-After` "
        "and JSON-RPC code `-32000` (1.0 reason `QUOTA_EXCEEDED`, a message "
        "naming the quota), storing nothing, until `flask a2a tasks prune` "
        "frees some; its reads, cancels and retries still work, and other "
        "callers are not affected. Sends in flight together may take it past "
        "the quota by what they write. `0`: no quota. See "
        "[Hardening](../hardening.md).",
    "A2A_MIN_FREE_DISK_BYTES": "SQLite: the free space kept on the database's "
        "disk (256 MiB). Under it new messages are refused (a storage answer, "
        "`data.retry` true) before the disk fills, so that reads, cancels, the "
        "answers of turns already running and `flask a2a tasks prune` still "
        "work; `/health` answers 503 with `writes` \"the disk is at its "
        "free-space reserve\". While over twice the reserve is free, a send "
        "may go by a measure up to 0.1 s old. `0`: no reserve (writes then "
        "fail only once the disk is full).",
}
