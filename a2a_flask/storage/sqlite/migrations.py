"""The versioned schema of the store, migrated forward on start.

Each entry of ``MIGRATIONS`` takes a ``sqlite_utils.Database`` inside the
caller's write transaction and brings the schema one version forward. Add new
versions at the end; never edit one that has shipped.
"""


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


MIGRATIONS = [_v1_tasks, _v2_credentials, _v3_task_listing, _v4_turn_queue]


def schema_version(db):
    if not db["a2a_schema_version"].exists():
        return 0
    row = db.execute("SELECT version FROM a2a_schema_version").fetchone()
    return row[0] if row else 0


def migrate(db):
    """Apply the migrations this database lacks; returns the new version."""
    version = schema_version(db)
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
