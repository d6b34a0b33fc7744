"""The writes of the request path of ``PostgresStorage``: a turn's start
(a new task, or the claim of a waiting one) and the failure of a stale
turn; a turn's outcome is in ``outcomes``, the reads in ``reading``, a
cancel in ``storage/turns.py``.

Every state change is one conditional UPDATE whose row count (or RETURNING
row) is checked. The usual paths are one statement each, so one round trip
and their own transaction: a new task (retry record + task + message), a
finished turn (task + status message + artifacts), a read (task + artifacts
+ last messages). Timestamps and the stale cutoff come from the database's
clock, so servers with skewed clocks agree.
"""

import logging
from typing import Any, Dict, Optional, Sequence

from ..base import (
    STALE_TURN_TEXT, ArtifactsFullError, ContextMismatchError, RememberedKeyRevokedError,
    MessageIdReusedError, QuotaReachedError, NoSuchTaskError,
    TaskNotWaitingError, TurnStart,
)
from ..common import delivery_fingerprint, dumps, new_id
from ..records import OVERHEAD, Artifact, Message, stored_artifact_bytes
from ...messages import agent_message, text_part

log = logging.getLogger("a2a_flask")


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

    def fail_stale_turn(self, task_id: str) -> bool:
        message = agent_message([text_part(STALE_TURN_TEXT)], task_id)
        with self.connection() as conn:
            return conn.execute(self._fail_stale_sql, {
                "id": task_id, "mid": message["messageId"],
                "body": dumps(message)}).fetchone() is not None
