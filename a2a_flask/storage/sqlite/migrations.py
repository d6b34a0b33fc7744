"""The versioned schema of the store, created or migrated forward on start.

``START`` creates schema version ``START_VERSION`` in a file that has none:
the pre-release migrations squashed into one (nothing before 0.1.0 was
released). A file at a lower version was written by a pre-release a2a_flask
and is refused (``errors.schema_refusal``); no code reads those schemas.

Each entry of ``MIGRATIONS`` takes the ``sqlite3`` connection inside the
caller's write transaction and brings the schema one version forward from
``START_VERSION``. Add new versions at the end; never edit one that has
shipped, nor ``START``.
"""

import sqlite3

from ..errors import schema_refusal
from .triggers import SINGLE_STATEMENT_WRITES, STORED_BYTES, VALUES_INSERTS

#: The version ``START`` creates: above every pre-release schema (1 to 7).
START_VERSION = 8

START = (
    "CREATE TABLE IF NOT EXISTS a2a_schema_version (version INTEGER NOT NULL)",
    # A message is stored once: the task row points at its status message in
    # its history (status_seq); status_message holds one absent from the
    # history (e.g. imported so). Keyed by its id alone (WITHOUT ROWID): no
    # rowid, no second copy of every id in an automatic index.
    "CREATE TABLE a2a_tasks (id TEXT PRIMARY KEY NOT NULL, agent TEXT NOT NULL,"
    " owner TEXT NOT NULL, context_id TEXT NOT NULL, state TEXT NOT NULL,"
    " status_message TEXT, updated_at TEXT NOT NULL, created_at TEXT NOT NULL,"
    " metadata TEXT, status_seq INTEGER) WITHOUT ROWID",
    # list_tasks pages a caller's tasks of an agent newest-updated first by
    # the keyset (updated_at, id): one index range per page, at any depth.
    # (Rebuilt ascending since: ASCENDING_TASK_INDEXES.)
    # ListTasks filtered by contextId or by status, and its totalSize, read
    # the matching index entries only, not every task of the caller. No more:
    # each index costs every send.
    "CREATE INDEX a2a_tasks_listing ON a2a_tasks"
    " (owner, agent, updated_at DESC, id DESC)",
    "CREATE INDEX a2a_tasks_context ON a2a_tasks"
    " (owner, agent, context_id, updated_at DESC, id DESC)",
    "CREATE INDEX a2a_tasks_state ON a2a_tasks"
    " (owner, agent, state, updated_at DESC, id DESC)",
    # seq orders history; the indexes serve a task's history and a context's.
    # A body leaves out the messageId, taskId and contextId of its row's
    # columns and its "kind": "message" (outcomes.message_body).
    "CREATE TABLE a2a_messages (seq INTEGER PRIMARY KEY, task_id TEXT NOT NULL,"
    " context_id TEXT NOT NULL, owner TEXT NOT NULL, agent TEXT NOT NULL,"
    " role TEXT NOT NULL, message_id TEXT NOT NULL, body TEXT NOT NULL)",
    "CREATE INDEX a2a_messages_task ON a2a_messages (task_id, seq)",
    "CREATE INDEX a2a_messages_context ON a2a_messages (context_id, seq)",
    # A body leaves out the artifactId of its row (outcomes.artifact_body).
    "CREATE TABLE a2a_artifacts (seq INTEGER PRIMARY KEY, task_id TEXT NOT NULL,"
    " artifact_id TEXT NOT NULL, body TEXT NOT NULL)",
    "CREATE INDEX a2a_artifacts_task ON a2a_artifacts (task_id, seq)",
    # One row per (caller, agent, messageId): what makes retries safe. The
    # fingerprint is 16 bytes (outcomes.stored_fingerprint).
    "CREATE TABLE a2a_deliveries (owner TEXT NOT NULL, agent TEXT NOT NULL,"
    " message_id TEXT NOT NULL, fingerprint TEXT NOT NULL,"
    " task_id TEXT NOT NULL, PRIMARY KEY (owner, agent, message_id))"
    " WITHOUT ROWID",
    # Keys are found by the SHA-256 of the whole key: never stored in clear.
    "CREATE TABLE a2a_api_keys (id TEXT PRIMARY KEY, prefix TEXT NOT NULL,"
    " key_hash TEXT NOT NULL, label TEXT, scope TEXT NOT NULL,"
    " created_at TEXT NOT NULL, last_used_at TEXT, revoked_at TEXT)",
    "CREATE UNIQUE INDEX a2a_api_keys_hash ON a2a_api_keys (key_hash)",
    "CREATE TABLE a2a_users (name TEXT PRIMARY KEY, password_hash TEXT NOT NULL,"
    " created_at TEXT NOT NULL)",
    # One row per background turn, queued (worker NULL) or leased by a worker
    # until lease_expires (the storage's clock); deleted when it ends. seq is
    # the queue order. Several per task (a follow-up queued behind a running
    # turn runs next; only a task's oldest turn is claimed), claimed in
    # caller_round order so that callers take turns (queue.py).
    # trace_context: the trace context (W3C headers, JSON) of the call that
    # queued it, which the worker's span continues (A2A_OTEL).
    "CREATE TABLE a2a_turns (seq INTEGER PRIMARY KEY, task_id TEXT NOT NULL,"
    " owner TEXT NOT NULL, agent TEXT NOT NULL, message_seq INTEGER NOT NULL,"
    " retry INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0,"
    " worker TEXT, lease_expires TEXT, queued_at TEXT NOT NULL,"
    " caller_round INTEGER NOT NULL DEFAULT 0, trace_context TEXT)",
    "CREATE INDEX a2a_turns_leases ON a2a_turns (lease_expires)"
    " WHERE worker IS NOT NULL",
    "CREATE INDEX a2a_turns_queue ON a2a_turns (caller_round, seq)"
    " WHERE worker IS NULL",
    "CREATE INDEX a2a_turns_task ON a2a_turns (task_id, seq)",
    "CREATE INDEX a2a_turns_caller ON a2a_turns (owner, caller_round)",
)


def _stored_bytes(conn):
    for statement in STORED_BYTES:
        conn.execute(statement)


def _worker_heartbeats(conn):
    # One row per claimer of background turns (`flask a2a worker`, or a web
    # process with A2A_IN_PROCESS_WORKER), written at each of its upkeeps,
    # idle or not: /health says "degraded" when none is recent.
    conn.execute("CREATE TABLE a2a_workers (id TEXT PRIMARY KEY NOT NULL,"
                 " seen_at TEXT NOT NULL) WITHOUT ROWID")


def _tenants(conn):
    """Tenants (A2A_TENANTS): every task, queued turn and retry record
    belongs to one ('' where none is named, as before; a message is its
    task's); a key or a user may be bound to one (NULL: none). A messageId
    is a retry only within its tenant, so the tenant joins the retry
    record's key: a WITHOUT ROWID table takes a new key only by being
    rebuilt."""
    for table in ("a2a_tasks", "a2a_turns"):
        conn.execute("ALTER TABLE %s ADD COLUMN tenant TEXT NOT NULL DEFAULT ''"
                     % table)
    for table in ("a2a_api_keys", "a2a_users"):
        conn.execute("ALTER TABLE %s ADD COLUMN tenant TEXT" % table)
    # The key's columns first: SQLite's integrity_check (3.40) misreads a
    # WITHOUT ROWID row whose key columns come after others.
    conn.execute(
        "CREATE TABLE a2a_deliveries_tenants (owner TEXT NOT NULL,"
        " agent TEXT NOT NULL, message_id TEXT NOT NULL,"
        " tenant TEXT NOT NULL DEFAULT '',"
        " fingerprint TEXT NOT NULL, task_id TEXT NOT NULL,"
        " PRIMARY KEY (owner, agent, message_id, tenant)) WITHOUT ROWID")
    conn.execute(
        "INSERT INTO a2a_deliveries_tenants (owner, agent, message_id,"
        " fingerprint, task_id) SELECT owner, agent, message_id, fingerprint,"
        " task_id FROM a2a_deliveries")
    conn.execute("DROP TABLE a2a_deliveries")
    conn.execute("ALTER TABLE a2a_deliveries_tenants RENAME TO a2a_deliveries")


#: The migrations after ``START``: entry i brings version START_VERSION + i
#: to START_VERSION + i + 1.
def _operators(conn):
    """Operators (the operator's page): a key or a built-in user flagged so
    may read every caller's tasks there and cancel them; an operator key
    reaches no agent unless its scope says so."""
    conn.execute("ALTER TABLE a2a_api_keys ADD COLUMN operator INTEGER NOT NULL"
                 " DEFAULT 0")
    conn.execute("ALTER TABLE a2a_users ADD COLUMN operator INTEGER NOT NULL"
                 " DEFAULT 0")


def _single_statement_writes(conn):
    """A send's two write transactions (its start, its outcome) as one
    statement each (tasks.py): views whose INSTEAD OF triggers do the
    checks and writes. Nothing stored changes."""
    for statement in SINGLE_STATEMENT_WRITES:
        conn.execute(statement)


#: The task indexes of ``START``, ascending: (owner, agent[, context_id |
#: state], updated_at, id). Newest first is the same index read backwards
#: (SQLite walks it so, no sort), and a send's entries, which always carry the
#: newest updated_at, go in at the right end of their range. Descending, they
#: went in at the left end, where SQLite's splits wrote about twice the pages
#: to the WAL for each (docs/benchmarks.md, "Ascending task indexes").
ASCENDING_TASK_INDEXES = (
    "DROP INDEX a2a_tasks_listing",
    "DROP INDEX a2a_tasks_context",
    "DROP INDEX a2a_tasks_state",
    "CREATE INDEX a2a_tasks_listing ON a2a_tasks (owner, agent, updated_at, id)",
    "CREATE INDEX a2a_tasks_context ON a2a_tasks"
    " (owner, agent, context_id, updated_at, id)",
    "CREATE INDEX a2a_tasks_state ON a2a_tasks (owner, agent, state, updated_at, id)",
)


def _ascending_task_indexes(conn):
    """The three task indexes rebuilt ascending (``ASCENDING_TASK_INDEXES``):
    the same keys and the same plans; nothing stored changes. It reads every
    task once, inside the migration's write transaction."""
    for statement in ASCENDING_TASK_INDEXES:
        conn.execute(statement)


def _values_inserts(conn):
    """The one-statement writes' triggers without temporary tables
    (``VALUES_INSERTS``); nothing stored changes."""
    for statement in VALUES_INSERTS:
        conn.execute(statement)


MIGRATIONS = [_operators, _stored_bytes, _worker_heartbeats, _tenants,
              _single_statement_writes, _ascending_task_indexes, _values_inserts]

#: The schema version this code writes.
EXPECTED_VERSION = START_VERSION + len(MIGRATIONS)


def stored_version(conn):
    """The schema version of the file on the ``sqlite3`` connection ``conn``,
    by one trivial query (0: none yet)."""
    try:
        row = conn.execute("SELECT version FROM a2a_schema_version").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        return 0
    return row[0] if row else 0


def migrate(conn):
    """Create the schema or apply the migrations this database lacks; returns
    the new version. ``SchemaError`` for a pre-release or a newer schema."""
    version = stored_version(conn)
    refusal = schema_refusal(version, START_VERSION, EXPECTED_VERSION)
    if refusal is not None:
        raise refusal
    if version == EXPECTED_VERSION:
        return version
    if version == 0:
        for statement in START:
            conn.execute(statement)
        version = START_VERSION
    for step in MIGRATIONS[version - START_VERSION:]:
        step(conn)
    conn.execute("DELETE FROM a2a_schema_version")
    conn.execute("INSERT INTO a2a_schema_version (version) VALUES (?)",
                 (EXPECTED_VERSION,))
    return EXPECTED_VERSION
