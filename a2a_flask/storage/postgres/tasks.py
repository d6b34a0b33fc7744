"""The writes of the request path of ``PostgresStorage``: a turn (start,
claim, finish, fail when stale); the reads are in ``reading``, a cancel in
``storage/turns.py``.

Every state change is one conditional UPDATE whose row count (or RETURNING
row) is checked. The usual paths are one statement each, so one round trip
and their own transaction: a new task (retry record + task + message), a
finished turn (task + status message + artifacts), a read (task + artifacts
+ last messages). Timestamps and the stale cutoff come from the database's
clock, so servers with skewed clocks agree.
"""

import logging
import time
from typing import Any, Dict, Optional, Sequence

from ..base import (
    STALE_TURN_TEXT, ArtifactsFullError, ContextMismatchError, RememberedKeyRevokedError,
    MessageIdReusedError, QuotaReachedError, NoSuchTaskError,
    TaskNotWaitingError, TurnStart,
)
from ..common import FINISH_ATTEMPTS, delivery_fingerprint, dumps, new_id, pause_before_retry
from ..records import OVERHEAD, Artifact, Message, stored_artifact_bytes
from ...messages import agent_message, text_part
from .connection import is_storage_failure

log = logging.getLogger("a2a_flask")


class _NotLost(Exception):
    """Rolls back a re-stored start that turned out not to be needed."""


#: The database's clock as an A2A timestamp (UTC, milliseconds, Z).
NOW = """to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')"""
WAITING_SQL = "('auth-required', 'input-required')"


def stale_cutoff_sql(seconds: int) -> str:
    """The stale-turn cutoff on the database's clock, as an A2A timestamp."""
    return ("to_char((now() - interval '%d seconds') AT TIME ZONE 'UTC',"
            " 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')" % int(seconds))


# The start of a turn is acknowledged to nobody: its commit need not wait for
# the disk. The turn's outcome is (synchronous_commit on), and flushing its
# commit flushes the WAL before it, this start included; a crash before then
# loses only a turn nobody was told of. A retry that finds the start
# (``_SEEN``) is answered, so it flushes first: txid_current() gives its
# statement a commit record, which waits for the disk as any other.
# (A start acknowledged by itself, e.g. a queued background turn, must not
# take this path.)
_UNFLUSHED = "SET LOCAL synchronous_commit TO off"

#: Seconds the read after the outcome's last failed try waits for a
#: connection (the tries have used the call's wait; a server that is back
#: has one by then, or within the pool's next pause).
STORED_READ_SECONDS = 1.0
#: The last failure of a request turn's outcome when PostgreSQL could not
#: say whether the unflushed start survived (``_say_what_was_stored``).
START_UNKNOWN = (
    "%s: the agent's answer could not be stored, and the task may not have "
    "been either (a crash of the database may have lost its start); nothing "
    "acknowledged is ever lost. The call may be retried once the storage "
    "works again, with the same messageId: a task that was kept is answered, "
    "not run twice.")

# The caller's API key taken on trust (``remembered_key``, auth.authenticate) is
# still live: NULL when there is none to check.
KEY_IS_LIVE = ("(%(key)s::text IS NULL OR EXISTS (SELECT FROM a2a_api_keys"
               " WHERE key_hash = %(key)s AND revoked_at IS NULL))")

# The task named by its id is the caller's. Not ``=``: with owner and agent
# compared by equality, a listing index (owner, agent, ..., id) matches three
# terms and, before the table's first ANALYZE, costs the planner as little as
# the primary key, and it reads every task of the owner to find one
# (docs/benchmarks.md, "PostgreSQL's first minute"). IS NOT DISTINCT FROM is
# no index's term: the key finds the row, this checks it.
OWNED = ("(owner, agent, tenant) IS NOT DISTINCT FROM"
         " (%(owner)s, %(agent)s, %(tenant)s)")

# What the caller's stored tasks take (migrations.STORED_BYTES).
STORED_BYTES = ("(SELECT coalesce(sum(bytes), 0) FROM a2a_stored_bytes"
                " WHERE owner = %(owner)s)")
# Within the caller's quota, %(quota)s (NULL: none).
WITHIN_QUOTA = "(%(quota)s::bigint IS NULL OR " + STORED_BYTES + " < %(quota)s::bigint)"

# A new task: its retry record, the task and its first message, one statement
# (its own transaction, made unflushed by set_config(..., true), read at its
# commit). An existing (owner, agent, messageId) inserts nothing and returns
# no seq.
_START_NEW = (
    "WITH d AS (INSERT INTO a2a_deliveries (owner, agent, message_id,"
    " fingerprint, task_id, tenant) SELECT %(owner)s, %(agent)s, %(mid)s, %(fp)s,"
    " %(id)s, %(tenant)s"
    " WHERE " + KEY_IS_LIVE + " AND " + WITHIN_QUOTA +
    " ON CONFLICT DO NOTHING RETURNING task_id),"
    " t AS (INSERT INTO a2a_tasks (id, agent, owner, context_id, state,"
    " updated_at, created_at, metadata, tenant) SELECT %(id)s, %(agent)s,"
    " %(owner)s, %(ctx)s, 'working', " + NOW + ", " + NOW + ", %(meta)s,"
    " %(tenant)s FROM d RETURNING id)"
    " INSERT INTO a2a_messages (task_id, context_id, owner, agent, role,"
    " message_id, body) SELECT id, %(ctx)s, %(owner)s, %(agent)s, %(role)s,"
    " %(mid)s, %(body)s FROM t,"
    " set_config('synchronous_commit', 'off', true) RETURNING seq")  # _UNFLUSHED

_SEEN = (
    "SELECT d.fingerprint, d.task_id, t.context_id, txid_current()"
    " FROM a2a_deliveries d"
    " JOIN a2a_tasks t ON t.id = d.task_id"
    " WHERE d.owner = %s AND d.agent = %s AND d.message_id = %s"
    " AND d.tenant = %s")

# A turn's artifacts (%(adding)s bytes) fit beside the task's stored ones
# within %(alimit)s (NULL: no limit), as records.stored_artifact_bytes counts.
ARTIFACTS_FIT = (
    "(%%(alimit)s::bigint IS NULL OR %%(adding)s::bigint + (SELECT"
    " coalesce(sum(octet_length(body) + %d), 0) FROM a2a_artifacts"
    " WHERE task_id = %%(id)s) <= %%(alimit)s::bigint)" % OVERHEAD)

_INSERT_MESSAGE = (
    "INSERT INTO a2a_messages (task_id, context_id, owner, agent, role,"
    " message_id, body) VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING seq")

# A turn's outcome: only if the task is still working; then its status message
# joins the history and its artifacts are appended, in the same statement.
_FINISH = (
    "WITH u AS (UPDATE a2a_tasks SET state = %(state)s, status_message = %(body)s,"
    " updated_at = " + NOW + " WHERE id = %(id)s AND state = 'working'"
    " AND " + ARTIFACTS_FIT + " RETURNING updated_at, context_id),"
    " m AS (INSERT INTO a2a_messages (task_id, context_id, owner, agent, role,"
    " message_id, body) SELECT %(id)s, u.context_id, %(owner)s, %(agent)s,"
    " %(role)s, %(mid)s, %(body)s FROM u WHERE %(body)s::text IS NOT NULL),"
    " a AS (INSERT INTO a2a_artifacts (task_id, artifact_id, body)"
    " SELECT %(id)s, x.artifact_id, x.body FROM u, unnest(%(aids)s::text[],"
    " %(abodies)s::text[]) WITH ORDINALITY AS x(artifact_id, body, n) ORDER BY x.n)"
    " SELECT updated_at FROM u")


def artifact_params(task_id: str, artifacts: Sequence[Artifact],
                    max_artifact_bytes: Optional[int]) -> Dict[str, Any]:
    """The parameters of ``ARTIFACTS_FIT`` and of the artifacts' INSERT."""
    bodies = [dumps(a) for a in artifacts]
    return {"id": task_id, "aids": [a["artifactId"] for a in artifacts],
            "abodies": bodies, "alimit": max_artifact_bytes if bodies else None,
            "adding": sum(stored_artifact_bytes(body) for body in bodies)}


def check_artifacts_fit(conn: Any, params: Dict[str, Any]) -> None:
    """After a conditional outcome that changed nothing: ``ArtifactsFullError``
    if the task is still working, so its artifacts were what did not fit."""
    if params["alimit"] is None:
        return
    row = conn.execute("SELECT state = 'working', NOT " + ARTIFACTS_FIT +
                       " FROM a2a_tasks WHERE id = %(id)s", params).fetchone()
    if row is not None and row[0] and row[1]:
        total = conn.execute(
            "SELECT coalesce(sum(octet_length(body) + %s), 0) FROM a2a_artifacts"
            " WHERE task_id = %s", (OVERHEAD, params["id"])).fetchone()[0]
        raise ArtifactsFullError(params["id"], params["adding"] + total,
                                 params["alimit"])


def check_quota(conn: Any, owner: str, max_stored_bytes: Optional[int]) -> None:
    """``QuotaReachedError`` when the caller's stored tasks take its quota
    (None: no quota) or more."""
    if max_stored_bytes is None:
        return
    stored = conn.execute("SELECT " + STORED_BYTES, {"owner": owner}).fetchone()[0]
    if stored >= max_stored_bytes:
        raise QuotaReachedError(owner, max_stored_bytes, int(stored))


def task_for_message(conn: Any, owner: str, agent: str, task_id: str,
                     context_id: Optional[str], lock: bool = False,
                     tenant: str = "") -> Any:
    """(state, context id) of the task a message names (its row locked with
    ``lock``): NoSuchTaskError, or ContextMismatchError when the message
    names another context."""
    row = conn.execute(
        "SELECT state, context_id FROM a2a_tasks WHERE id = %(id)s AND " + OWNED +
        (" FOR UPDATE" if lock else ""),
        {"id": task_id, "owner": owner, "agent": agent, "tenant": tenant}).fetchone()
    if row is None:
        raise NoSuchTaskError(task_id)
    if context_id is not None and context_id != row[1]:
        raise ContextMismatchError(task_id, row[1])
    return row


class TaskOperations:
    """Mixed into ``PostgresStorage`` (needs ``connection``/``transaction``)."""

    def _task_sql(self):
        cutoff = stale_cutoff_sql(self.stale_turn_seconds)
        self._fail_stale_sql = (
            "WITH u AS (UPDATE a2a_tasks SET state = 'failed', status_message ="
            " (%(body)s::jsonb || jsonb_build_object('contextId', context_id))::text,"
            " updated_at = " + NOW + " WHERE id = %(id)s AND state = 'working'"
            " AND updated_at < " + cutoff + " AND NOT EXISTS (SELECT FROM"
            " a2a_turns WHERE task_id = %(id)s)"  # leases decide queued turns
            " RETURNING context_id, owner, agent,"
            " status_message)"
            " INSERT INTO a2a_messages (task_id, context_id, owner, agent, role,"
            " message_id, body) SELECT %(id)s, context_id, owner, agent, 'agent',"
            " %(mid)s, status_message FROM u RETURNING seq")

    # -- a turn of a send ------------------------------------------------------

    def start_turn(self, owner: str, agent: str, message: Message, context_id: Optional[str] = None,
                   task_id: Optional[str] = None, metadata: Optional[dict] = None,
                   remembered_key: Optional[str] = None,
                   max_stored_bytes: Optional[int] = None,
                   tenant: str = "") -> TurnStart:
        message_id = message["messageId"]
        # The message's taskId/contextId are those given (service.py): a
        # context other than the task's is refused (ContextMismatchError), which
        # rolls the retry record back.
        digest = delivery_fingerprint(message, task_id, context_id)
        if task_id is None:
            task_id = new_id("task_")
            context_id = context_id or new_id("ctx_")
            stored = dict(message, kind="message", taskId=task_id, contextId=context_id)
            with self.connection() as conn:
                row = conn.execute(_START_NEW, {
                    "owner": owner, "agent": agent, "mid": message_id,
                    "fp": digest, "id": task_id, "ctx": context_id,
                    "role": stored["role"], "body": dumps(stored),
                    "meta": dumps(metadata) if metadata else None,
                    "key": remembered_key, "quota": max_stored_bytes,
                    "tenant": tenant}).fetchone()
                if row is not None:
                    return TurnStart(task_id, context_id, stored, row[0],
                                     created=True, metadata=metadata, tenant=tenant)
                self._check_live(conn, remembered_key)  # a retry, or a key revoked
                return self._replayed(conn, owner, agent, message, tenant,
                                      max_stored_bytes)
        with self.transaction() as conn:
            self._check_live(conn, remembered_key)
            replayed = self._record_delivery(conn, owner, agent, message,
                                             digest, task_id, tenant)
            if replayed is not None:
                return replayed
            check_quota(conn, owner, max_stored_bytes)
            conn.execute(_UNFLUSHED)  # read at COMMIT: a replay above still waits
            context_id = self._claim_waiting_task(conn, owner, agent, task_id,
                                                  context_id, tenant)
            stored = dict(message, kind="message", taskId=task_id, contextId=context_id)
            seq = conn.execute(_INSERT_MESSAGE, (
                task_id, context_id, owner, agent, stored["role"], message_id,
                dumps(stored))).fetchone()[0]
        return TurnStart(task_id, context_id, stored, seq, tenant=tenant)

    @staticmethod
    def _check_live(conn, remembered_key):
        if remembered_key is not None and conn.execute(
                "SELECT " + KEY_IS_LIVE, {"key": remembered_key}).fetchone()[0] is not True:
            raise RememberedKeyRevokedError()

    @classmethod
    def _record_delivery(cls, conn, owner, agent, message, digest, task_id,
                         tenant=""):
        """The retry record of ``message`` to ``task_id`` (``digest``: its
        ``delivery_fingerprint``); when this messageId was seen, the replayed
        ``TurnStart`` (or ``MessageIdReusedError``)."""
        if conn.execute(
                "INSERT INTO a2a_deliveries (owner, agent, message_id,"
                " fingerprint, task_id, tenant) VALUES (%s, %s, %s, %s, %s, %s)"
                " ON CONFLICT DO NOTHING", (owner, agent, message["messageId"],
                                            digest, task_id, tenant)).rowcount != 1:
            return cls._replayed(conn, owner, agent, message, tenant)
        return None

    @staticmethod
    def _replayed(conn, owner, agent, message, tenant="", max_stored_bytes=None):
        message_id = message["messageId"]
        seen = conn.execute(_SEEN, (owner, agent, message_id, tenant)).fetchone()
        if seen is None:
            check_quota(conn, owner, max_stored_bytes)  # refused for that?
        if seen is None or seen[0] != delivery_fingerprint(message, seen[1], seen[2]):
            raise MessageIdReusedError(message_id)
        return TurnStart(seen[1], seen[2], replayed=True)

    @staticmethod
    def _claim_waiting_task(conn, owner, agent, task_id, context_id, tenant=""):
        """One conditional UPDATE claims the task; when it changes no row, a
        read says why (and the transaction rolls back)."""
        row = conn.execute(
            "UPDATE a2a_tasks SET state = 'working', updated_at = " + NOW +
            " WHERE id = %(id)s AND " + OWNED + " AND state IN " + WAITING_SQL +
            " AND (%(ctx)s::text IS NULL OR context_id = %(ctx)s) RETURNING context_id",
            {"id": task_id, "owner": owner, "agent": agent, "ctx": context_id,
             "tenant": tenant}).fetchone()
        if row is not None:
            return row[0]
        state, task_context = task_for_message(conn, owner, agent, task_id,
                                               context_id, tenant=tenant)
        raise TaskNotWaitingError(task_id, state, task_context)

    def finish_turn(self, task_id: str, owner: str, agent: str, state: str,
                    status_message: Optional[Message] = None, artifacts: Sequence[Artifact] = (),
                    max_artifact_bytes: Optional[int] = None,
                    start: Optional[TurnStart] = None) -> Optional[str]:
        body = dumps(status_message) if status_message else None
        params = dict(artifact_params(task_id, artifacts, max_artifact_bytes),
                      state=state, body=body, owner=owner, agent=agent,
                      role=status_message["role"] if status_message else None,
                      mid=status_message["messageId"] if status_message else None)
        # The tries share one wait (a server that is down is answered within
        # it, not after a full wait per try).
        deadline = time.monotonic() + self.wait_seconds()
        for attempt in range(1, FINISH_ATTEMPTS + 1):
            try:
                with self.connection(deadline) as conn:
                    row = conn.execute(_FINISH, params).fetchone()
                    if row is None:
                        check_artifacts_fit(conn, params)
                if row is None and start is not None:
                    return self._finish_lost_start(start, owner, agent, params)
                return row[0] if row else None
            except Exception as exc:
                cause = exc.__cause__
                if not is_storage_failure(cause):
                    raise
                if attempt == FINISH_ATTEMPTS:
                    self._say_what_was_stored(exc, task_id, start)
                    raise
                pause_before_retry(attempt)

    def _say_what_was_stored(self, exc: Exception, task_id: str,
                             start: Optional[TurnStart]) -> None:
        """Make ``exc``, the last failure of an outcome's write, true about
        the task. Its start was committed, but unflushed (_UNFLUSHED) when
        the turn ran in a request (``start``): a crash may have lost it, and
        "task X was stored" would then answer a task that does not exist.
        A read that finds its retry record says it is there (flushed by now:
        the WAL writer's delay is far below the retries' pauses); a read
        that fails too (PostgreSQL still down) leaves it unknown: the outage,
        retryable, a retry of the same messageId answered with the task if
        it was kept, else run as new (it was never acknowledged)."""
        if start is None:  # a background turn's start is flushed (queue.py)
            exc.stored_task = task_id, "working"
            return
        try:
            with self.connection(time.monotonic() + STORED_READ_SECONDS) as conn:
                found = conn.execute(
                    "SELECT 1 FROM a2a_deliveries WHERE task_id = %s AND"
                    " message_id = %s", (task_id, start.message["messageId"])
                ).fetchone() is not None
        except Exception as read_failure:
            if not is_storage_failure(read_failure.__cause__):
                raise
            found = None
        if found:
            exc.stored_task = task_id, "working"
            return
        what = getattr(exc, "what", "The storage is unavailable")
        exc.message = START_UNKNOWN % what
        exc.args = (exc.message,)

    def _finish_lost_start(self, start: TurnStart, owner: str, agent: str,
                           params: Dict[str, Any]) -> Optional[str]:
        """The outcome that found no working task, when the reason is that a
        crash lost the turn's start (committed unflushed: _UNFLUSHED): its
        retry record is missing. Then the start is stored again and the
        outcome with it, one transaction (flushed, as every outcome): the
        send is answered with its task, and a retry of its messageId is
        answered with this task instead of running the agent again. When the
        retry record is there, the task left ``working`` meanwhile (canceled,
        stale): None, the outcome is discarded, as before."""
        message = start.message
        lost = {"id": start.task_id, "owner": owner, "agent": agent,
                "tenant": start.tenant, "ctx": start.context_id,
                "mid": message["messageId"], "fp": delivery_fingerprint(
                    message, start.task_id, start.context_id),
                "meta": dumps(start.metadata) if start.metadata else None}
        try:
            with self.transaction() as conn:
                if conn.execute(
                        "INSERT INTO a2a_deliveries (owner, agent, message_id,"
                        " fingerprint, task_id, tenant) VALUES (%(owner)s, %(agent)s,"
                        " %(mid)s, %(fp)s, %(id)s, %(tenant)s) ON CONFLICT DO NOTHING",
                        lost).rowcount != 1:
                    return None  # the start is there: a genuine discard
                if start.created:
                    added = conn.execute(
                        "INSERT INTO a2a_tasks (id, agent, owner, context_id, state,"
                        " updated_at, created_at, metadata, tenant) VALUES (%(id)s,"
                        " %(agent)s, %(owner)s, %(ctx)s, 'working', " + NOW + ", " +
                        NOW + ", %(meta)s, %(tenant)s) ON CONFLICT DO NOTHING",
                        lost).rowcount
                else:  # the claim of the waiting task was lost with it
                    added = conn.execute(
                        "UPDATE a2a_tasks SET state = 'working', updated_at = " + NOW +
                        " WHERE id = %(id)s AND " + OWNED + " AND state IN " +
                        WAITING_SQL, lost).rowcount
                if added != 1:
                    raise _NotLost()
                conn.execute(_INSERT_MESSAGE, (
                    start.task_id, start.context_id, owner, agent, message["role"],
                    message["messageId"], dumps(message)))
                row = conn.execute(_FINISH, params).fetchone()
                if row is None:
                    check_artifacts_fit(conn, params)
                    raise _NotLost()
        except _NotLost:
            return None
        log.warning("task %s: its start was lost (PostgreSQL stopped before it "
                    "reached the disk); stored again with its turn's outcome",
                    start.task_id)
        return row[0]

    def fail_stale_turn(self, task_id: str) -> bool:
        message = agent_message([text_part(STALE_TURN_TEXT)], task_id)
        with self.connection() as conn:
            return conn.execute(self._fail_stale_sql, {
                "id": task_id, "mid": message["messageId"],
                "body": dumps(message)}).fetchone() is not None
