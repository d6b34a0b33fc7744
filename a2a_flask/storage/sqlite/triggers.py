"""The SQL of the triggers that the migrations create (migrations.py): what
keeps each caller's stored bytes, and the views whose INSTEAD OF triggers
make a send's start and its outcome ONE statement each (tasks.py,
outcomes.py). Each migration's text stays as it shipped; a later migration
drops and creates a trigger again (``VALUES_INSERTS``), built from the same
pieces."""


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
