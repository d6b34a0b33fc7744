"""The background-turn queue of ``PostgresStorage`` (``flask a2a worker``):
enqueue, claim with a lease (``FOR UPDATE SKIP LOCKED``: workers on several
servers claim at once without waiting for each other), renew, finish,
expire, release, progress. Leases are on the database's clock.

Every change is a conditional statement whose row count (or RETURNING row)
is checked. An enqueued turn is acknowledged by itself, so it is committed
with ``synchronous_commit`` on (unlike the start of a turn run in a request).
"""

import json
from typing import Any, Dict, List, Optional, Sequence

from ..base import (
    WAITING_STATES, ClaimedTurn,
    QueueLimitReachedError, RememberedKeyRevokedError, TaskNotWaitingError, TurnStart,
)
from ..common import WORKER_ROWS_KEPT_SECONDS, delivery_fingerprint, dumps, new_id
from ...messages import agent_message, text_part
from .changes import notify_changes
from .tasks import (
    _INSERT_MESSAGE, ARTIFACTS_FIT, NOW, OWNED, WAITING_SQL, artifact_params,
    check_artifacts_fit, check_quota, task_for_message,
)
from ..turns import QueuedTurn, TurnWrites
from ..records import Artifact, Message


def _lease_end(seconds):
    return ("to_char((now() + make_interval(secs => %s)) AT TIME ZONE 'UTC',"
            " 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')" % float(seconds))


_AGENTS = " AND (%(agents)s::text[] IS NULL OR agent = ANY(%(agents)s::text[]))"
# A turn can be claimed when it is its task's oldest: one turn of a task at
# a time, in the order received.
_CLAIMABLE = (" worker IS NULL AND NOT EXISTS (SELECT FROM a2a_turns p"
              " WHERE p.task_id = q.task_id AND p.seq < q.seq)")
#: pg_advisory_xact_lock(QUEUE_LOCK, hashtext(owner)) serializes one caller's
#: enqueues: its rounds and its queued count are read and written in turn.
QUEUE_LOCK = 0x0A2A
# The round of a caller's next turn: one after its last one, and no later
# than just before the oldest queued turn, so that a caller with nothing
# queued goes next: claims take callers in turn, whatever one's backlog.
_ROUND = (
    "SELECT greatest((SELECT max(caller_round) + 1 FROM a2a_turns"
    " WHERE owner = %(owner)s AND tenant = %(tenant)s), coalesce((SELECT"
    " min(caller_round) - 1"
    " FROM a2a_turns WHERE worker IS NULL), 0))")
#: Outcomes that end a task even with follow-ups queued behind the turn.
ENDING_STATES = ("failed", "rejected")


class QueueOperations(TurnWrites):
    """Mixed into ``PostgresStorage`` (needs ``TaskOperations`` and the
    connections)."""

    # The dialect of ``TurnWrites``.
    STATUS_CLEARED = "status_message = NULL"
    LOCKED_TASK = " FOR UPDATE"
    LOCKED_TURNS = " FOR UPDATE SKIP LOCKED"  # another worker is on those
    OWNED = OWNED  # tasks.py: the primary key finds the row, whatever the statistics

    def _among(self, column: str, values: List[Any], params: Dict[str, Any]) -> str:
        params[column] = values
        return "%s = ANY(%s)" % (column, self.NAMED % column)

    def _now_term(self, params: Dict[str, Any]) -> str:
        return NOW

    def _write_one(self, sql: str, params: Dict[str, Any]) -> int:
        with self.connection() as conn:  # autocommit: its own transaction
            return conn.execute(sql, params).rowcount

    def _changed(self, conn: Any) -> None:
        notify_changes(conn)

    def _enqueue(self, turn: QueuedTurn) -> TurnStart:
        owner, agent, message, task_id, context_id, tenant = (
            turn.owner, turn.agent, turn.message, turn.task_id, turn.context_id,
            turn.tenant)
        message_id = message["messageId"]
        digest = delivery_fingerprint(message, task_id, context_id)
        created = task_id is None
        if created:
            task_id = new_id("task_")
        follow_up = False
        with self.transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                         (QUEUE_LOCK, owner))
            # The key's row, share-locked until this commits: a revocation
            # committed before refuses the turn; one after waits for this
            # commit, so that its cancel of the key's turns sees this one.
            if turn.live_key is not None and conn.execute(
                    "SELECT FROM a2a_api_keys WHERE key_hash = %s AND"
                    " revoked_at IS NULL FOR SHARE", (turn.live_key,)).fetchone() is None:
                raise RememberedKeyRevokedError()
            replayed = self._record_delivery(conn, owner, agent, message,
                                             digest, task_id, tenant)
            if replayed is not None:
                return replayed
            if turn.queue_limit and conn.execute(
                    "SELECT count(*) FROM (SELECT FROM a2a_turns WHERE owner = %s"
                    " AND tenant = %s AND worker IS NULL LIMIT %s) q",
                    (owner, tenant, turn.queue_limit)).fetchone()[0] >= turn.queue_limit:
                raise QueueLimitReachedError(owner, turn.queue_limit)
            check_quota(conn, owner, turn.max_stored_bytes)
            if created:
                context_id = context_id or new_id("ctx_")
                conn.execute(
                    "INSERT INTO a2a_tasks (id, agent, owner, context_id, state,"
                    " updated_at, created_at, metadata, tenant) VALUES (%s, %s,"
                    " %s, %s, 'working', " + NOW + ", " + NOW + ", %s, %s)",
                    (task_id, agent, owner, context_id,
                     dumps(turn.metadata) if turn.metadata else None, tenant))
            else:
                context_id, follow_up = self._take_task(conn, owner, agent,
                                                        task_id, context_id, tenant)
            stored = dict(message, kind="message", taskId=task_id,
                          contextId=context_id)
            seq = conn.execute(_INSERT_MESSAGE, (
                task_id, context_id, owner, agent, stored["role"], message_id,
                dumps(stored))).fetchone()[0]
            conn.execute(
                "INSERT INTO a2a_turns (task_id, owner, agent, message_seq, retry,"
                " queued_at, caller_round, trace_context, tenant) VALUES (%(id)s,"
                " %(owner)s, %(agent)s, %(seq)s, %(retry)s, " + NOW + ", (" +
                _ROUND + "), %(trace)s, %(tenant)s)",
                {"id": task_id, "owner": owner, "agent": agent, "seq": seq,
                 "retry": bool(turn.retry), "trace": turn.trace_context, "tenant": tenant})
            if turn.status_message is not None and not follow_up:
                conn.execute("UPDATE a2a_tasks SET status_message = %s WHERE id = %s",
                             (dumps(dict(turn.status_message, taskId=task_id,
                                         contextId=context_id)), task_id))
            notify_changes(conn)  # a turn to claim
        return TurnStart(task_id, context_id, stored, seq, created=created,
                         tenant=tenant)

    @staticmethod
    def _take_task(conn, owner, agent, task_id, context_id, tenant=""):
        """(context id, follow-up?) of a message to an existing task: a task
        waiting for input is claimed (conditional UPDATE); one working on a
        queued or running turn takes it as a follow-up. The task row is
        locked first, so that the turn before cannot end unseen meanwhile."""
        state, task_context = task_for_message(conn, owner, agent, task_id,
                                               context_id, lock=True, tenant=tenant)
        if state in WAITING_STATES and conn.execute(
                "UPDATE a2a_tasks SET state = 'working', updated_at = " + NOW +
                " WHERE id = %s AND state IN " + WAITING_SQL,
                (task_id,)).rowcount == 1:
            return task_context, False
        if state == "working" and conn.execute(
                "SELECT FROM a2a_turns WHERE task_id = %s LIMIT 1",
                (task_id,)).fetchone() is not None:
            return task_context, True
        raise TaskNotWaitingError(task_id, state, task_context)

    def claim_turns(self, worker: str, limit: int, lease_seconds: float,
                    agents: Optional[Sequence[str]] = None) -> List[ClaimedTurn]:
        if limit <= 0:
            return []
        args = {"agents": list(agents) if agents is not None else None,
                "limit": int(limit), "worker": worker}
        with self.connection() as conn:
            if conn.execute("SELECT FROM a2a_turns q WHERE" + _CLAIMABLE + _AGENTS +
                            " LIMIT 1", args).fetchone() is None:
                return []
        claimed = []
        with self.transaction() as conn:
            rows = conn.execute(
                "WITH c AS (SELECT seq FROM a2a_turns q WHERE" + _CLAIMABLE + _AGENTS +
                " ORDER BY caller_round, seq LIMIT %(limit)s FOR UPDATE SKIP LOCKED)"
                " UPDATE a2a_turns q SET worker = %(worker)s, lease_expires = " +
                _lease_end(lease_seconds) + ", attempts = q.attempts + 1 FROM c"
                " WHERE q.seq = c.seq AND q.worker IS NULL RETURNING"
                " q.caller_round, q.seq, q.task_id, q.owner, q.agent,"
                " q.message_seq, q.retry, q.attempts, q.trace_context",
                args).fetchall()
            for (_, turn_seq, task_id, owner, agent, seq, retry, attempts,
                 trace_context) in sorted(rows):
                task = conn.execute(
                    "SELECT t.state, t.context_id, t.metadata, m.body, t.tenant"
                    " FROM a2a_tasks t"
                    " JOIN a2a_messages m ON m.seq = %s WHERE t.id = %s",
                    (seq, task_id)).fetchone()
                if task is None or task[0] != "working":  # canceled meanwhile
                    conn.execute("DELETE FROM a2a_turns WHERE task_id = %s AND"
                                 " (worker = %s OR worker IS NULL)",
                                 (task_id, worker))
                    continue
                _, context_id, metadata, body, tenant = task
                claimed.append(ClaimedTurn(
                    task_id, context_id, owner, agent, json.loads(body), seq,
                    json.loads(metadata) if metadata else None, attempts, retry,
                    trace_context, tenant))
        return claimed

    def _renew(self, worker: str, task_ids: List[str], lease_seconds: float) -> List[str]:
        with self.connection() as conn:
            return [task_id for (task_id,) in conn.execute(
                "UPDATE a2a_turns SET lease_expires = " + _lease_end(lease_seconds) +
                " WHERE worker = %s AND task_id = ANY(%s) RETURNING task_id",
                (worker, task_ids)).fetchall()]

    def _settle_turn(self, conn: Any, task_id: str, owner: str, agent: str, state: str,
                     status_message: Optional[Message], artifacts: Sequence[Artifact],
                     max_artifact_bytes: Optional[int]) -> Optional[str]:
        # The task row first (a follow-up's enqueue locks it too), then
        # the follow-ups as committed by then.
        if conn.execute("SELECT FROM a2a_tasks WHERE id = %s AND state ="
                        " 'working' FOR UPDATE", (task_id,)).fetchone() is None:
            return None  # canceled meanwhile (the turn row goes all the same)
        follow_ups = conn.execute(
            "SELECT seq, message_seq FROM a2a_turns WHERE task_id = %s"
            " ORDER BY seq", (task_id,)).fetchall()
        going_on = bool(follow_ups) and state not in ENDING_STATES
        body = dumps(status_message) if status_message else None
        params = dict(artifact_params(task_id, artifacts, max_artifact_bytes),
                      state="working" if going_on else state, body=body)
        row = conn.execute(
            "UPDATE a2a_tasks SET state = %(state)s, status_message = %(body)s,"
            " updated_at = " + NOW + " WHERE id = %(id)s AND state = 'working'"
            " AND " + ARTIFACTS_FIT + " RETURNING updated_at, context_id",
            params).fetchone()
        if row is None:
            check_artifacts_fit(conn, params)  # rolls the turn row back
            return None
        if status_message is not None:
            conn.execute(_INSERT_MESSAGE, (
                task_id, row[1], owner, agent, status_message["role"],
                status_message["messageId"], body))
        for artifact_id, artifact_body in zip(params["aids"], params["abodies"]):
            conn.execute("INSERT INTO a2a_artifacts (task_id, artifact_id, body)"
                         " VALUES (%s, %s, %s)", (task_id, artifact_id, artifact_body))
        if going_on:
            # The follow-ups' messages move after this turn's answer: a
            # turn's history is what came before its message.
            for turn_seq, message_seq in follow_ups:
                conn.execute(
                    "WITH m AS (UPDATE a2a_messages SET seq = DEFAULT WHERE"
                    " seq = %s RETURNING seq) UPDATE a2a_turns SET message_seq"
                    " = (SELECT seq FROM m) WHERE seq = %s",
                    (message_seq, turn_seq))
        elif follow_ups:  # the task ended: they never start
            conn.execute("DELETE FROM a2a_turns WHERE task_id = %s AND"
                         " worker IS NULL", (task_id,))
        notify_changes(conn)  # the task settled, or its next turn is claimable
        return row[0]

    @staticmethod
    def _fail_working(conn, task_id, owner, agent, text):
        message = agent_message([text_part(text)], task_id)
        row = conn.execute(
            "UPDATE a2a_tasks SET state = 'failed', status_message = (%s::jsonb ||"
            " jsonb_build_object('contextId', context_id))::text, updated_at = " +
            NOW + " WHERE id = %s AND state = 'working'"
            " RETURNING context_id, status_message", (dumps(message), task_id)).fetchone()
        if row is None:
            return False
        conn.execute(_INSERT_MESSAGE, (task_id, row[0], owner, agent, "agent",
                                       message["messageId"], row[1]))
        return True

    def _seen(self, worker: str) -> bool:
        with self.connection() as conn:
            conn.execute("DELETE FROM a2a_workers WHERE seen_at < " + _lease_end(
                -WORKER_ROWS_KEPT_SECONDS))
            return bool(conn.execute(
                "INSERT INTO a2a_workers (id, seen_at) VALUES (%s, " + NOW + ")"
                " ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at",
                (worker,)).rowcount)

    def worker_last_seen(self) -> Optional[float]:
        with self.connection() as conn:
            seen = conn.execute(
                "SELECT extract(epoch FROM now() - max(seen_at)::timestamptz)"
                " FROM a2a_workers").fetchone()[0]
        return None if seen is None else max(float(seen), 0.0)
