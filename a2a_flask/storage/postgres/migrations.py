"""The versioned schema of the PostgreSQL backend: the same logical schema as
SQLite's (tables prefixed ``a2a_``, ``a2a_schema_version``), written for
PostgreSQL.

``START`` creates schema version ``START_VERSION`` where there is none: the
pre-release migrations squashed into one (nothing before 0.1.0 was
released). A schema at a lower version was written by a pre-release
a2a_flask and is refused (``errors.schema_refusal``). Each entry of
``MIGRATIONS`` brings the schema one version forward from ``START_VERSION``,
inside the migrating transaction (``connection.migrate``). Add new versions
at the end; never edit one that has shipped, nor ``START``.

Timestamps are ISO 8601 text (``2026-01-02T03:04:05.678Z``) as in SQLite:
they compare and sort as text, exactly as the contract's cursors and cutoffs
expect, and are written from the database's clock (``NOW`` in ``sql.py``).
Ids and timestamps use the "C" collation: byte order, as SQLite sorts them,
and the cheapest comparisons.
"""

#: pg_advisory_xact_lock key serializing migrations across servers.
MIGRATION_LOCK = 0x0A2AF1A5

#: The version ``START`` creates: above every pre-release schema (1 to 6).
START_VERSION = 7

START = """
CREATE TABLE a2a_tasks (
    id text COLLATE "C" PRIMARY KEY,
    agent text NOT NULL,
    owner text NOT NULL,
    context_id text COLLATE "C" NOT NULL,
    state text NOT NULL,
    status_message text,
    updated_at text COLLATE "C" NOT NULL,
    created_at text COLLATE "C" NOT NULL,
    metadata text
);
-- seq orders history; the indexes serve a task's history and a context's.
CREATE TABLE a2a_messages (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id text COLLATE "C" NOT NULL,
    context_id text COLLATE "C" NOT NULL,
    owner text NOT NULL,
    agent text NOT NULL,
    role text NOT NULL,
    message_id text NOT NULL,
    body text NOT NULL
);
CREATE INDEX a2a_messages_task ON a2a_messages (task_id, seq);
CREATE INDEX a2a_messages_context ON a2a_messages (context_id, seq);
CREATE TABLE a2a_artifacts (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id text COLLATE "C" NOT NULL,
    artifact_id text NOT NULL,
    body text NOT NULL
);
CREATE INDEX a2a_artifacts_task ON a2a_artifacts (task_id, seq);
-- One row per (caller, agent, messageId): what makes retries safe.
CREATE TABLE a2a_deliveries (
    owner text NOT NULL,
    agent text NOT NULL,
    message_id text NOT NULL,
    fingerprint text NOT NULL,
    task_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (owner, agent, message_id)
);
-- Keys are found by the SHA-256 of the whole key: never stored in clear.
CREATE TABLE a2a_api_keys (
    id text PRIMARY KEY,
    prefix text NOT NULL,
    key_hash text NOT NULL UNIQUE,
    label text,
    scope text NOT NULL,
    created_at text COLLATE "C" NOT NULL,
    last_used_at text COLLATE "C",
    revoked_at text COLLATE "C"
);
CREATE TABLE a2a_users (
    name text PRIMARY KEY,
    password_hash text NOT NULL,
    created_at text COLLATE "C" NOT NULL
);
-- list_tasks pages a caller's tasks of an agent newest-updated first by the
-- keyset (updated_at, id): one index range per page, at any depth. The
-- second keeps prune (terminal tasks older than a cutoff, in batches) and
-- the operator's list of every caller's tasks from scanning the table.
-- ListTasks filtered by contextId or by status, and its totalSize, read the
-- matching index entries only, not every task of the caller. No more: each
-- index costs every send.
CREATE INDEX a2a_tasks_listing ON a2a_tasks (owner, agent, updated_at DESC, id DESC);
CREATE INDEX a2a_tasks_updated ON a2a_tasks (updated_at, id);
CREATE INDEX a2a_tasks_context ON a2a_tasks (owner, agent, context_id, updated_at DESC, id DESC);
CREATE INDEX a2a_tasks_state ON a2a_tasks (owner, agent, state, updated_at DESC, id DESC);
-- One row per background turn, queued (worker NULL) or leased by a worker
-- until lease_expires (the database's clock); deleted when it ends. seq is
-- the queue order. Several per task (a follow-up queued behind a running
-- turn runs next; only a task's oldest turn is claimed), claimed in
-- caller_round order so that callers take turns (queue.py). trace_context:
-- the trace context (W3C headers, JSON) of the call that queued it, which
-- the worker's span continues (A2A_OTEL).
CREATE TABLE a2a_turns (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id text COLLATE "C" NOT NULL,
    owner text NOT NULL,
    agent text NOT NULL,
    message_seq bigint NOT NULL,
    retry boolean NOT NULL DEFAULT false,
    attempts integer NOT NULL DEFAULT 0,
    worker text,
    lease_expires text COLLATE "C",
    queued_at text COLLATE "C" NOT NULL,
    trace_context text,
    caller_round bigint NOT NULL DEFAULT 0
);
CREATE INDEX a2a_turns_leases ON a2a_turns (lease_expires) WHERE worker IS NOT NULL;
CREATE INDEX a2a_turns_queue ON a2a_turns (caller_round, seq) WHERE worker IS NULL;
CREATE INDEX a2a_turns_task ON a2a_turns (task_id, seq);
CREATE INDEX a2a_turns_caller ON a2a_turns (owner, caller_round);
"""

#: What each caller's stored tasks take (A2A_MAX_STORED_BYTES_PER_CALLER),
#: kept by triggers on the writes of messages, tasks and artifacts, whatever
#: writes them; the one delete of artifacts (prune, admin.py) subtracts them
#: in its own statement, where the task's owner is at hand. A caller's
#: concurrent writers add to different shards (their backend's pid), so
#: that its sends do not queue on one row's lock; a transaction keeps to
#: one shard, so two never wait on each other's.
#: 256 and 320: records.OVERHEAD and records.FIXED_BYTES.
STORED_BYTES = """
CREATE TABLE a2a_stored_bytes (
    owner text NOT NULL,
    shard integer NOT NULL,
    bytes bigint NOT NULL,
    PRIMARY KEY (owner, shard)
);
CREATE FUNCTION a2a_add_stored_bytes(who text, amount bigint) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO a2a_stored_bytes (owner, shard, bytes)
    SELECT who, pg_backend_pid() % 8, amount WHERE who IS NOT NULL AND amount <> 0
    ON CONFLICT (owner, shard) DO UPDATE
    SET bytes = a2a_stored_bytes.bytes + excluded.bytes
$$;
CREATE FUNCTION a2a_messages_bytes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM a2a_add_stored_bytes(OLD.owner, -(octet_length(OLD.body) + 256));
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM a2a_add_stored_bytes(NEW.owner, octet_length(NEW.body) + 256);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER a2a_messages_bytes AFTER INSERT OR DELETE OR UPDATE OF owner, body
    ON a2a_messages FOR EACH ROW EXECUTE FUNCTION a2a_messages_bytes();
CREATE FUNCTION a2a_tasks_bytes() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    moved bigint;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM a2a_add_stored_bytes(OLD.owner,
                                     -(coalesce(octet_length(OLD.metadata), 0) + 320));
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM a2a_add_stored_bytes(NEW.owner,
                                     coalesce(octet_length(NEW.metadata), 0) + 320);
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.owner <> NEW.owner THEN
        SELECT coalesce(sum(octet_length(body) + 256), 0) INTO moved
            FROM a2a_artifacts WHERE task_id = NEW.id;
        PERFORM a2a_add_stored_bytes(OLD.owner, -moved);
        PERFORM a2a_add_stored_bytes(NEW.owner, moved);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER a2a_tasks_bytes AFTER INSERT OR DELETE OR UPDATE OF owner, metadata
    ON a2a_tasks FOR EACH ROW EXECUTE FUNCTION a2a_tasks_bytes();
CREATE FUNCTION a2a_artifacts_bytes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM a2a_add_stored_bytes((SELECT owner FROM a2a_tasks WHERE id = NEW.task_id),
                                 octet_length(NEW.body) + 256);
    RETURN NULL;
END $$;
CREATE TRIGGER a2a_artifacts_bytes AFTER INSERT ON a2a_artifacts
    FOR EACH ROW EXECUTE FUNCTION a2a_artifacts_bytes();
INSERT INTO a2a_stored_bytes (owner, shard, bytes)
SELECT owner, 0, sum(bytes) FROM (
    SELECT owner, octet_length(body) + 256 AS bytes FROM a2a_messages
    UNION ALL SELECT owner, coalesce(octet_length(metadata), 0) + 320 FROM a2a_tasks
    UNION ALL SELECT t.owner, octet_length(a.body) + 256
        FROM a2a_artifacts a JOIN a2a_tasks t ON t.id = a.task_id
) counted GROUP BY owner;
"""

#: The migrations after ``START`` (SQL): entry i brings version
#: START_VERSION + i to START_VERSION + i + 1.
MIGRATIONS = [
    # Operators (the operator's page): a key or a built-in user flagged so
    # may read every caller's tasks there and cancel them; an operator key
    # reaches no agent unless its scope says so.
    "ALTER TABLE a2a_api_keys ADD COLUMN operator boolean NOT NULL DEFAULT false;"
    " ALTER TABLE a2a_users ADD COLUMN operator boolean NOT NULL DEFAULT false",
    STORED_BYTES,
    # One row per claimer of background turns (`flask a2a worker`, or a web
    # process with A2A_IN_PROCESS_WORKER), written at each of its upkeeps,
    # idle or not: /health says "degraded" when none is recent.
    """
CREATE TABLE a2a_workers (
    id text COLLATE "C" PRIMARY KEY,
    seen_at text COLLATE "C" NOT NULL
);
""",
    # Tenants (A2A_TENANTS): every task, queued turn and retry record
    # belongs to one ('' where none is named, as before; a message is its
    # task's); a key or a user may be bound to one (NULL: none). A messageId
    # is a retry only within its tenant: the tenant joins the retry record's
    # key.
    """
ALTER TABLE a2a_tasks ADD COLUMN tenant text NOT NULL DEFAULT '';
ALTER TABLE a2a_turns ADD COLUMN tenant text NOT NULL DEFAULT '';
ALTER TABLE a2a_api_keys ADD COLUMN tenant text;
ALTER TABLE a2a_users ADD COLUMN tenant text;
ALTER TABLE a2a_deliveries ADD COLUMN tenant text NOT NULL DEFAULT '';
ALTER TABLE a2a_deliveries DROP CONSTRAINT a2a_deliveries_pkey;
ALTER TABLE a2a_deliveries ADD PRIMARY KEY (owner, agent, message_id, tenant);
""",
]

#: The schema version this code writes.
EXPECTED_VERSION = START_VERSION + len(MIGRATIONS)
