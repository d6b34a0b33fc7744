"""The versioned schema of the store, created or migrated forward on start.

``START`` creates schema version ``START_VERSION`` in a file that has none:
the pre-release migrations squashed into one (nothing before 0.1.0 was
released). A file at a lower version was written by a pre-release a2a_flask
and is refused (``errors.schema_refusal``); no code reads those schemas.

Each entry of ``MIGRATIONS`` takes a ``sqlite_utils.Database`` inside the
caller's write transaction and brings the schema one version forward from
``START_VERSION``. Add new versions at the end; never edit one that has
shipped, nor ``START``.
"""

import sqlite3

from ..errors import schema_refusal

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

def _add(owner, amount):
    """Trigger statements adding ``amount`` (SQL) to ``owner``'s stored bytes."""
    return ("INSERT OR IGNORE INTO a2a_stored_bytes (owner, shard, bytes)"
            " VALUES (%s, 0, 0); UPDATE a2a_stored_bytes SET bytes = bytes + (%s)"
            " WHERE owner = %s AND shard = 0;" % (owner, amount, owner))


def _upsert(owner, amount):
    """``_add`` as one statement (an UPSERT: SQLite 3.24 and later)."""
    return ("INSERT INTO a2a_stored_bytes (owner, shard, bytes) VALUES (%s, 0, %s)"
            " ON CONFLICT (owner, shard) DO UPDATE SET bytes = bytes + excluded.bytes;"
            % (owner, amount))


_MESSAGE = "length(CAST(%s.body AS BLOB)) + 256"  # records.OVERHEAD
_TASK = "coalesce(length(CAST(%s.metadata AS BLOB)), 0) + 320"  # records.FIXED_BYTES
_ARTIFACT_OWNER = "(SELECT owner FROM a2a_tasks WHERE id = %s.task_id)"


def _stored_bytes_triggers(add):
    """The triggers that keep a2a_stored_bytes, each adding with ``add``."""
    return (
        "CREATE TRIGGER a2a_messages_in AFTER INSERT ON a2a_messages BEGIN "
        + add("NEW.owner", _MESSAGE % "NEW") + " END",
        "CREATE TRIGGER a2a_messages_out AFTER DELETE ON a2a_messages BEGIN "
        + add("OLD.owner", "-(%s)" % (_MESSAGE % "OLD")) + " END",
        "CREATE TRIGGER a2a_messages_moved AFTER UPDATE OF owner, body ON a2a_messages"
        " BEGIN " + add("OLD.owner", "-(%s)" % (_MESSAGE % "OLD"))
        + add("NEW.owner", _MESSAGE % "NEW") + " END",
        "CREATE TRIGGER a2a_tasks_in AFTER INSERT ON a2a_tasks BEGIN "
        + add("NEW.owner", _TASK % "NEW") + " END",
        "CREATE TRIGGER a2a_tasks_out AFTER DELETE ON a2a_tasks BEGIN "
        + add("OLD.owner", "-(%s)" % (_TASK % "OLD")) + " END",
        # A task moved to another owner takes its artifacts' bytes along.
        "CREATE TRIGGER a2a_tasks_moved AFTER UPDATE OF owner, metadata ON a2a_tasks"
        " BEGIN " + add("OLD.owner", "-(%s)" % (_TASK % "OLD"))
        + add("NEW.owner", _TASK % "NEW")
        + " UPDATE a2a_stored_bytes SET bytes = bytes + (SELECT coalesce(sum("
        + _MESSAGE % "a2a_artifacts" + "), 0) FROM a2a_artifacts WHERE task_id = NEW.id)"
        " * (CASE WHEN owner = OLD.owner THEN -1 ELSE 1 END)"
        " WHERE OLD.owner != NEW.owner AND shard = 0 AND owner IN (OLD.owner, NEW.owner);"
        " END",
        "CREATE TRIGGER a2a_artifacts_in AFTER INSERT ON a2a_artifacts BEGIN "
        + add(_ARTIFACT_OWNER % "NEW", _MESSAGE % "NEW") + " END",
        # Artifacts are deleted before their task (prune), which names the owner.
        "CREATE TRIGGER a2a_artifacts_out AFTER DELETE ON a2a_artifacts BEGIN "
        + add(_ARTIFACT_OWNER % "OLD", "-(%s)" % (_MESSAGE % "OLD")) + " END",
    )


#: What each caller's stored tasks take (A2A_MAX_STORED_BYTES_PER_CALLER),
#: kept by triggers on every write of a message, artifact or task, whatever
#: writes it (a turn, the worker, an import, a prune). The shard is 0 here
#: (one writer at a time); PostgreSQL spreads a caller's writers over shards.
STORED_BYTES = (
    "CREATE TABLE a2a_stored_bytes (owner TEXT NOT NULL, shard INTEGER NOT NULL,"
    " bytes INTEGER NOT NULL, PRIMARY KEY (owner, shard)) WITHOUT ROWID",
) + _stored_bytes_triggers(_add) + (
    # What the database holds already.
    "INSERT INTO a2a_stored_bytes (owner, shard, bytes) SELECT owner, 0,"
    " sum(bytes) FROM (SELECT owner, " + _MESSAGE % "m" + " AS bytes FROM"
    " a2a_messages m UNION ALL SELECT owner, " + _TASK % "t" + " FROM a2a_tasks t"
    " UNION ALL SELECT t.owner, " + _MESSAGE % "a" + " FROM a2a_artifacts a"
    " JOIN a2a_tasks t ON t.id = a.task_id) GROUP BY owner",
)


def _stored_bytes(db):
    for statement in STORED_BYTES:
        db.execute(statement)


def _worker_heartbeats(db):
    # One row per claimer of background turns (`flask a2a worker`, or a web
    # process with A2A_IN_PROCESS_WORKER), written at each of its upkeeps,
    # idle or not: /health says "degraded" when none is recent.
    db.execute("CREATE TABLE a2a_workers (id TEXT PRIMARY KEY NOT NULL,"
               " seen_at TEXT NOT NULL) WITHOUT ROWID")


def _tenants(db):
    """Tenants (A2A_TENANTS): every task, queued turn and retry record
    belongs to one ('' where none is named, as before; a message is its
    task's); a key or a user may be bound to one (NULL: none). A messageId
    is a retry only within its tenant, so the tenant joins the retry
    record's key: a WITHOUT ROWID table takes a new key only by being
    rebuilt."""
    for table in ("a2a_tasks", "a2a_turns"):
        db.execute("ALTER TABLE %s ADD COLUMN tenant TEXT NOT NULL DEFAULT ''"
                   % table)
    for table in ("a2a_api_keys", "a2a_users"):
        db.execute("ALTER TABLE %s ADD COLUMN tenant TEXT" % table)
    # The key's columns first: SQLite's integrity_check (3.40) misreads a
    # WITHOUT ROWID row whose key columns come after others.
    db.execute(
        "CREATE TABLE a2a_deliveries_tenants (owner TEXT NOT NULL,"
        " agent TEXT NOT NULL, message_id TEXT NOT NULL,"
        " tenant TEXT NOT NULL DEFAULT '',"
        " fingerprint TEXT NOT NULL, task_id TEXT NOT NULL,"
        " PRIMARY KEY (owner, agent, message_id, tenant)) WITHOUT ROWID")
    db.execute(
        "INSERT INTO a2a_deliveries_tenants (owner, agent, message_id,"
        " fingerprint, task_id) SELECT owner, agent, message_id, fingerprint,"
        " task_id FROM a2a_deliveries")
    db.execute("DROP TABLE a2a_deliveries")
    db.execute("ALTER TABLE a2a_deliveries_tenants RENAME TO a2a_deliveries")


#: The migrations after ``START``: entry i brings version START_VERSION + i
#: to START_VERSION + i + 1.
def _operators(db):
    """Operators (the operator's page): a key or a built-in user flagged so
    may read every caller's tasks there and cancel them; an operator key
    reaches no agent unless its scope says so."""
    db.execute("ALTER TABLE a2a_api_keys ADD COLUMN operator INTEGER NOT NULL"
               " DEFAULT 0")
    db.execute("ALTER TABLE a2a_users ADD COLUMN operator INTEGER NOT NULL"
               " DEFAULT 0")


#: The columns of ``a2a_turn_starts``: what one turn's start writes.
TURN_START_COLUMNS = (
    "owner", "agent", "message_id", "fingerprint", "task_id", "tenant",
    "live_key", "reserve_reached", "max_stored_bytes", "created", "context_id",
    "now", "metadata", "role", "body")

#: The columns of ``a2a_outcome_rows``: a turn's outcome (``artifact_id``
#: NULL: the state and status message) and each of its artifacts.
OUTCOME_COLUMNS = (
    "task_id", "owner", "agent", "context_id", "state", "now", "max_bytes",
    "adding", "message_id", "role", "body", "artifact_id")

_WAITING = "('auth-required', 'input-required')"

# The pieces of the one-statement writes' triggers (SINGLE_STATEMENT_WRITES,
# then VALUES_INSERTS). The RAISE texts are what tasks.py and outcomes.py read.
_START_CHECKS = (
    # The caller's key, live now (a revocation is seen by every process).
    " SELECT RAISE(ABORT, 'a2a: key revoked') WHERE NEW.live_key IS NOT NULL"
    " AND NOT EXISTS (SELECT 1 FROM a2a_api_keys WHERE key_hash = NEW.live_key"
    " AND revoked_at IS NULL);"
    # The retry record: a messageId already delivered writes nothing.
    " INSERT OR IGNORE INTO a2a_deliveries (owner, agent, message_id,"
    " fingerprint, task_id, tenant) VALUES (NEW.owner, NEW.agent,"
    " NEW.message_id, NEW.fingerprint, NEW.task_id, NEW.tenant);"
    " SELECT RAISE(ABORT, 'a2a: replay') WHERE changes() = 0;"
    " SELECT RAISE(ABORT, 'a2a: reserve') WHERE NEW.reserve_reached;"
    " SELECT RAISE(ABORT, 'a2a: quota') WHERE NEW.max_stored_bytes IS NOT NULL"
    " AND (SELECT coalesce(sum(bytes), 0) FROM a2a_stored_bytes"
    " WHERE owner = NEW.owner) >= NEW.max_stored_bytes;")
_NEW_TASK_COLUMNS = (
    " INSERT INTO a2a_tasks (id, agent, owner, context_id, state, updated_at,"
    " created_at, metadata, tenant)")
_NEW_TASK_VALUES = (
    " NEW.task_id, NEW.agent, NEW.owner,"
    " NEW.context_id, 'working', NEW.now, NEW.now, NEW.metadata, NEW.tenant")
# A continuation claims a waiting task of the caller's, in its context.
_CLAIM = (
    " UPDATE a2a_tasks SET state = 'working', updated_at = NEW.now"
    " WHERE NOT NEW.created AND id = NEW.task_id AND owner = NEW.owner"
    " AND agent = NEW.agent AND tenant = NEW.tenant AND state IN " + _WAITING
    + " AND (NEW.context_id IS NULL OR context_id = NEW.context_id);"
    " SELECT RAISE(ABORT, 'a2a: not claimed') WHERE NOT NEW.created"
    " AND changes() = 0;")
_START_MESSAGE_COLUMNS = (
    " INSERT INTO a2a_messages (task_id, context_id, owner, agent, role,"
    " message_id, body)")
_START_MESSAGE_VALUES = (
    " NEW.task_id, coalesce(NEW.context_id,"
    " (SELECT context_id FROM a2a_tasks WHERE id = NEW.task_id)), NEW.owner,"
    " NEW.agent, NEW.role, NEW.message_id, NEW.body")
# The state, conditional on working and on the artifacts' allowance.
_OUTCOME_STATE = (
    " UPDATE a2a_tasks SET state = NEW.state, status_message = NULL,"
    " status_seq = CASE WHEN NEW.body IS NULL THEN NULL ELSE"
    " (SELECT coalesce(max(seq), 0) + 1 FROM a2a_messages) END,"
    " updated_at = NEW.now WHERE id = NEW.task_id AND state = 'working'"
    " AND (NEW.max_bytes IS NULL OR NEW.adding + (SELECT"
    " coalesce(sum(" + _MESSAGE % "a2a_artifacts" + "), 0) FROM a2a_artifacts"
    " WHERE task_id = NEW.task_id) <= NEW.max_bytes);"
    " SELECT RAISE(ABORT, 'a2a: artifacts full') WHERE changes() = 0"
    " AND EXISTS (SELECT 1 FROM a2a_tasks WHERE id = NEW.task_id"
    " AND state = 'working');"
    " SELECT RAISE(ABORT, 'a2a: not working') WHERE changes() = 0;")
_OUTCOME_MESSAGE_COLUMNS = (
    " INSERT INTO a2a_messages (seq, task_id, context_id, owner, agent, role,"
    " message_id, body)")
_OUTCOME_MESSAGE_VALUES = (
    "(SELECT coalesce(max(seq), 0) + 1 FROM"
    " a2a_messages), NEW.task_id, NEW.context_id, NEW.owner, NEW.agent,"
    " NEW.role, NEW.message_id, NEW.body")

SINGLE_STATEMENT_WRITES = (
    # A turn's start as ONE statement from Python (an INSERT into this view):
    # its checks and writes run inside one sqlite3_step, which holds the
    # write lock from the first write to the commit without giving the
    # interpreter away (tasks.py).
    "CREATE VIEW a2a_turn_starts AS SELECT "
    + ", ".join("NULL AS %s" % c for c in TURN_START_COLUMNS) + " WHERE 0",
    "CREATE TRIGGER a2a_turn_starts_insert INSTEAD OF INSERT ON a2a_turn_starts"
    " BEGIN" + _START_CHECKS + _NEW_TASK_COLUMNS + " SELECT" + _NEW_TASK_VALUES
    + " WHERE NEW.created;" + _CLAIM + _START_MESSAGE_COLUMNS + " SELECT"
    + _START_MESSAGE_VALUES + ";"
    " END",
    # A turn's outcome as ONE statement: the first row (artifact_id NULL)
    # the state, conditional on working and on the artifacts' allowance
    # (``adding`` + what the task holds <= ``max_bytes``), and the status
    # message; the next rows its artifacts, in order.
    "CREATE VIEW a2a_outcome_rows AS SELECT "
    + ", ".join("NULL AS %s" % c for c in OUTCOME_COLUMNS) + " WHERE 0",
    "CREATE TRIGGER a2a_outcome_rows_state INSTEAD OF INSERT ON a2a_outcome_rows"
    " WHEN NEW.artifact_id IS NULL BEGIN" + _OUTCOME_STATE
    + _OUTCOME_MESSAGE_COLUMNS + " SELECT " + _OUTCOME_MESSAGE_VALUES
    + " WHERE NEW.body IS NOT NULL;"
    " END",
    "CREATE TRIGGER a2a_outcome_rows_artifact INSTEAD OF INSERT ON"
    " a2a_outcome_rows WHEN NEW.artifact_id IS NOT NULL BEGIN"
    " INSERT INTO a2a_artifacts (task_id, artifact_id, body)"
    " VALUES (NEW.task_id, NEW.artifact_id, NEW.body);"
    " END",
)


def _single_statement_writes(db):
    """A send's two write transactions (its start, its outcome) as one
    statement each (tasks.py): views whose INSTEAD OF triggers do the
    checks and writes. Nothing stored changes."""
    for statement in SINGLE_STATEMENT_WRITES:
        db.execute(statement)


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


def _ascending_task_indexes(db):
    """The three task indexes rebuilt ascending (``ASCENDING_TASK_INDEXES``):
    the same keys and the same plans; nothing stored changes. It reads every
    task once, inside the migration's write transaction."""
    for statement in ASCENDING_TASK_INDEXES:
        db.execute(statement)


_STORED_BYTES_UPSERTS = _stored_bytes_triggers(_upsert)

#: The one-statement writes' triggers again, each INSERT of a row into a
#: table that has triggers (a2a_tasks, a2a_messages: the stored bytes) as
#: ``INSERT ... VALUES``: SQLite runs an ``INSERT ... SELECT`` into such a
#: table through a temporary table, a b-tree and a pager opened and closed
#: at every send (three per send before, none now). Where the SELECT's
#: WHERE chose whether to insert, the trigger's WHEN does: a new task and a
#: continuation are two triggers, an outcome with and without its status
#: message two more. Same checks, same writes, same order. And each trigger
#: that keeps a2a_stored_bytes adds with one UPSERT where it made two
#: statements (INSERT OR IGNORE, UPDATE): four such triggers run at a send.
VALUES_INSERTS = tuple(
    "DROP TRIGGER %s" % statement.split()[2] for statement in _STORED_BYTES_UPSERTS
) + _STORED_BYTES_UPSERTS + (
    "DROP TRIGGER a2a_turn_starts_insert",
    "DROP TRIGGER a2a_outcome_rows_state",
    "CREATE TRIGGER a2a_turn_starts_new INSTEAD OF INSERT ON a2a_turn_starts"
    " WHEN NEW.created BEGIN" + _START_CHECKS + _NEW_TASK_COLUMNS + " VALUES ("
    + _NEW_TASK_VALUES + ");" + _START_MESSAGE_COLUMNS + " VALUES ("
    + _START_MESSAGE_VALUES + "); END",
    "CREATE TRIGGER a2a_turn_starts_continued INSTEAD OF INSERT ON"
    " a2a_turn_starts WHEN NOT NEW.created BEGIN" + _START_CHECKS + _CLAIM
    + _START_MESSAGE_COLUMNS + " VALUES (" + _START_MESSAGE_VALUES + "); END",
    "CREATE TRIGGER a2a_outcome_rows_state INSTEAD OF INSERT ON a2a_outcome_rows"
    " WHEN NEW.artifact_id IS NULL AND NEW.body IS NULL BEGIN" + _OUTCOME_STATE
    + " END",
    "CREATE TRIGGER a2a_outcome_rows_message INSTEAD OF INSERT ON"
    " a2a_outcome_rows WHEN NEW.artifact_id IS NULL AND NEW.body IS NOT NULL"
    " BEGIN" + _OUTCOME_STATE + _OUTCOME_MESSAGE_COLUMNS + " VALUES ("
    + _OUTCOME_MESSAGE_VALUES + "); END",
)


def _values_inserts(db):
    """The one-statement writes' triggers without temporary tables
    (``VALUES_INSERTS``); nothing stored changes."""
    for statement in VALUES_INSERTS:
        db.execute(statement)


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


def migrate(db):
    """Create the schema or apply the migrations this database lacks; returns
    the new version. ``SchemaError`` for a pre-release or a newer schema."""
    version = stored_version(db.conn)
    refusal = schema_refusal(version, START_VERSION, EXPECTED_VERSION)
    if refusal is not None:
        raise refusal
    if version == EXPECTED_VERSION:
        return version
    if version == 0:
        for statement in START:
            db.execute(statement)
        version = START_VERSION
    for step in MIGRATIONS[version - START_VERSION:]:
        step(db)
    db.execute("DELETE FROM a2a_schema_version")
    db.execute("INSERT INTO a2a_schema_version (version) VALUES (?)",
               (EXPECTED_VERSION,))
    return EXPECTED_VERSION
