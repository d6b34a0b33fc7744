"""The versioned schema of the store, migrated forward on start.

Each entry of ``MIGRATIONS`` takes a ``sqlite_utils.Database`` inside the
caller's write transaction and brings the schema one version forward. Add new
versions at the end; never edit one that has shipped.
"""

import sqlite3


def _v1_tasks(db):
    db.execute(db.create_table_sql("a2a_tasks", {
        "id": str, "agent": str, "owner": str, "context_id": str, "state": str,
        "status_message": str, "updated_at": str, "created_at": str,
        "metadata": str,
    }, pk="id", not_null={"agent", "owner", "context_id", "state",
                          "updated_at", "created_at"}))
    # seq orders history; the indexes serve a task's history and a context's.
    db.execute(db.create_table_sql("a2a_messages", {
        "seq": int, "task_id": str, "context_id": str, "owner": str,
        "agent": str, "role": str, "message_id": str, "body": str,
    }, pk="seq", not_null={"task_id", "context_id", "owner", "agent", "role",
                           "message_id", "body"}))
    db.execute("CREATE INDEX a2a_messages_task ON a2a_messages (task_id, seq)")
    db.execute(
        "CREATE INDEX a2a_messages_context ON a2a_messages (context_id, seq)")
    db.execute(db.create_table_sql("a2a_artifacts", {
        "seq": int, "task_id": str, "artifact_id": str, "body": str,
    }, pk="seq", not_null={"task_id", "artifact_id", "body"}))
    db.execute("CREATE INDEX a2a_artifacts_task ON a2a_artifacts (task_id, seq)")
    # One row per (caller, agent, messageId): what makes retries safe.
    db.execute(
        "CREATE TABLE a2a_deliveries (owner TEXT NOT NULL, agent TEXT NOT NULL,"
        " message_id TEXT NOT NULL, fingerprint TEXT NOT NULL,"
        " task_id TEXT NOT NULL, PRIMARY KEY (owner, agent, message_id))"
        " WITHOUT ROWID")


def _v2_credentials(db):
    # Keys are found by the SHA-256 of the whole key: never stored in clear.
    db.execute(db.create_table_sql("a2a_api_keys", {
        "id": str, "prefix": str, "key_hash": str, "label": str, "scope": str,
        "created_at": str, "last_used_at": str, "revoked_at": str,
    }, pk="id", not_null={"prefix", "key_hash", "scope", "created_at"}))
    db.execute("CREATE UNIQUE INDEX a2a_api_keys_hash ON a2a_api_keys (key_hash)")
    db.execute(db.create_table_sql("a2a_users", {
        "name": str, "password_hash": str, "created_at": str,
    }, pk="name", not_null={"password_hash", "created_at"}))


def _v3_task_listing(db):
    # list_tasks pages a caller's tasks of an agent newest-updated first by
    # the keyset (updated_at, id): one index range per page, at any depth.
    # The only index added: each costs every send (~10 µs per index here).
    db.execute("CREATE INDEX a2a_tasks_listing ON a2a_tasks"
               " (owner, agent, updated_at DESC, id DESC)")


def _v4_turn_queue(db):
    # One row per background turn, queued (worker NULL) or leased by a worker
    # until lease_expires (the storage's clock); deleted when it ends. seq is
    # the queue order; a task has at most one turn at a time.
    db.execute(
        "CREATE TABLE a2a_turns (seq INTEGER PRIMARY KEY, task_id TEXT NOT NULL"
        " UNIQUE, owner TEXT NOT NULL, agent TEXT NOT NULL, message_seq INTEGER"
        " NOT NULL, retry INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL"
        " DEFAULT 0, worker TEXT, lease_expires TEXT, queued_at TEXT NOT NULL)")
    db.execute("CREATE INDEX a2a_turns_leases ON a2a_turns (lease_expires)"
               " WHERE worker IS NOT NULL")


def _fingerprint16(hex_digest):
    return bytes.fromhex(hex_digest[:32])


def _v5_messages_once(db):
    # A message is stored once: the task row points at its status message in
    # its history (status_seq) instead of holding a copy (status_message stays
    # for a status message absent from the history, e.g. imported so), and a
    # message body leaves out the messageId, taskId and contextId of its row's
    # columns and its "kind": "message" (an artifact its artifactId). A
    # delivery's fingerprint: 16 bytes instead of 64 hex digits (tasks.py,
    # stored_fingerprint). And a2a_tasks is keyed by its id alone (WITHOUT
    # ROWID): no rowid, no second copy of every id in an automatic index.
    # ~700 of ~2,050 bytes of a one-turn task.
    db.execute(
        "CREATE TABLE a2a_tasks_v5 (id TEXT PRIMARY KEY NOT NULL,"
        " agent TEXT NOT NULL, owner TEXT NOT NULL, context_id TEXT NOT NULL,"
        " state TEXT NOT NULL, status_message TEXT, updated_at TEXT NOT NULL,"
        " created_at TEXT NOT NULL, metadata TEXT, status_seq INTEGER)"
        " WITHOUT ROWID")
    db.execute(
        "INSERT INTO a2a_tasks_v5 (id, agent, owner, context_id, state,"
        " status_message, updated_at, created_at, metadata) SELECT id, agent,"
        " owner, context_id, state, status_message, updated_at, created_at,"
        " metadata FROM a2a_tasks")
    db.execute("DROP TABLE a2a_tasks")  # and its index a2a_tasks_listing
    db.execute("ALTER TABLE a2a_tasks_v5 RENAME TO a2a_tasks")
    _v3_task_listing(db)
    db.execute(
        "UPDATE a2a_tasks SET status_seq = (SELECT max(m.seq) FROM a2a_messages m"
        " WHERE m.task_id = a2a_tasks.id AND m.body = a2a_tasks.status_message)"
        " WHERE status_message IS NOT NULL")
    db.execute("UPDATE a2a_tasks SET status_message = NULL"
               " WHERE status_seq IS NOT NULL")
    db.execute(
        "UPDATE a2a_messages SET body = json_remove(body, '$.taskId',"
        " '$.contextId') WHERE json_extract(body, '$.taskId') = task_id"
        " AND json_extract(body, '$.contextId') = context_id")
    db.execute("UPDATE a2a_messages SET body = json_remove(body, '$.messageId')"
               " WHERE json_extract(body, '$.messageId') = message_id")
    db.execute("UPDATE a2a_messages SET body = json_remove(body, '$.kind')"
               " WHERE json_extract(body, '$.kind') = 'message'")
    db.execute("UPDATE a2a_artifacts SET body = json_remove(body, '$.artifactId')"
               " WHERE json_extract(body, '$.artifactId') = artifact_id")
    db.conn.create_function("a2a_fingerprint16", 1, _fingerprint16)
    db.execute("UPDATE a2a_deliveries SET fingerprint ="
               " a2a_fingerprint16(fingerprint) WHERE typeof(fingerprint) = 'text'")


def _v6_turn_trace(db):
    # The trace context (W3C headers, JSON) of the call that queued a turn:
    # the worker's span for the turn continues that trace (A2A_OTEL).
    db.execute("ALTER TABLE a2a_turns ADD COLUMN trace_context TEXT")


def _v7_fair_queue(db):
    # Turns: several per task (a follow-up queued behind a running turn runs
    # next; only a task's oldest turn is claimed), claimed in caller_round
    # order so that callers take turns (queue.py). Rows queued before keep
    # their order (round = seq).
    db.execute(
        "CREATE TABLE a2a_turns_v7 (seq INTEGER PRIMARY KEY, task_id TEXT NOT"
        " NULL, owner TEXT NOT NULL, agent TEXT NOT NULL, message_seq INTEGER"
        " NOT NULL, retry INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL"
        " DEFAULT 0, worker TEXT, lease_expires TEXT, queued_at TEXT NOT NULL,"
        " caller_round INTEGER NOT NULL DEFAULT 0, trace_context TEXT)")
    db.execute(
        "INSERT INTO a2a_turns_v7 (seq, task_id, owner, agent, message_seq,"
        " retry, attempts, worker, lease_expires, queued_at, caller_round,"
        " trace_context) SELECT seq, task_id, owner, agent, message_seq, retry,"
        " attempts, worker, lease_expires, queued_at, seq, trace_context"
        " FROM a2a_turns")
    db.execute("DROP TABLE a2a_turns")
    db.execute("ALTER TABLE a2a_turns_v7 RENAME TO a2a_turns")
    db.execute("CREATE INDEX a2a_turns_leases ON a2a_turns (lease_expires)"
               " WHERE worker IS NOT NULL")
    db.execute("CREATE INDEX a2a_turns_queue ON a2a_turns (caller_round, seq)"
               " WHERE worker IS NULL")
    db.execute("CREATE INDEX a2a_turns_task ON a2a_turns (task_id, seq)")
    db.execute("CREATE INDEX a2a_turns_caller ON a2a_turns (owner, caller_round)")
    # ListTasks filtered by contextId or by status, and its totalSize, read
    # the matching index entries only, not every task of the caller.
    db.execute("CREATE INDEX a2a_tasks_context ON a2a_tasks"
               " (owner, agent, context_id, updated_at DESC, id DESC)")
    db.execute("CREATE INDEX a2a_tasks_state ON a2a_tasks"
               " (owner, agent, state, updated_at DESC, id DESC)")


MIGRATIONS = [_v1_tasks, _v2_credentials, _v3_task_listing, _v4_turn_queue,
              _v5_messages_once, _v6_turn_trace, _v7_fair_queue]


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
    """Apply the migrations this database lacks; returns the new version."""
    version = stored_version(db.conn)
    if version > len(MIGRATIONS):
        raise RuntimeError(
            "The database schema is version %d, newer than this a2a_flask "
            "(version %d): upgrade a2a_flask." % (version, len(MIGRATIONS)))
    if version == len(MIGRATIONS):
        return version
    if version == 0:
        db.execute("CREATE TABLE IF NOT EXISTS a2a_schema_version"
                   " (version INTEGER NOT NULL)")
    for step in MIGRATIONS[version:]:
        step(db)
    db.execute("DELETE FROM a2a_schema_version")
    db.execute("INSERT INTO a2a_schema_version (version) VALUES (?)",
               (len(MIGRATIONS),))
    return len(MIGRATIONS)
