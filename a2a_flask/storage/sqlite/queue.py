"""The background-turn queue of ``SqliteStorage`` (``flask a2a worker``):
enqueue, claim with a lease, renew, finish, expire, release, progress.

Every change is a conditional statement whose row count is checked; a claim
is one short ``BEGIN IMMEDIATE`` transaction, preceded by a plain read so
that idle workers never take the write lock.
"""

import json
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, List, Optional, Sequence

from ..base import (
    ClaimedTurn, QueueLimitReachedError,
    RememberedKeyRevokedError,
)
from ..common import WORKER_ROWS_KEPT_SECONDS, dumps, now_iso
from ...messages import agent_message, text_part
from .reading import load_message
from ..turns import QueuedTurn, TurnWrites
from ..records import Artifact, Message, TurnStart


def _placeholders(values):
    return ", ".join("?" * len(values))


#: Outcomes that end a task even with follow-ups queued behind the turn.
ENDING_STATES = ("failed", "rejected")

# The round of a caller's next turn: one after its last one, and no later
# than just before the oldest queued turn, so that a caller with nothing
# queued goes next: claims take callers in turn, whatever one's backlog.
_ROUND = (
    "SELECT max(coalesce((SELECT max(caller_round) + 1 FROM a2a_turns"
    " WHERE owner = :owner AND tenant = :tenant), -9223372036854775807), coalesce((SELECT"
    " min(caller_round) - 1 FROM a2a_turns WHERE worker IS NULL), 0))")

# A turn can be claimed when it is its task's oldest: one turn of a task at
# a time, in the order received.
_CLAIMABLE = ("q.worker IS NULL AND NOT EXISTS (SELECT 1 FROM a2a_turns p"
              " WHERE p.task_id = q.task_id AND p.seq < q.seq)")


class _Enqueue:
    """What ``enqueue_turn`` adds to ``start_turn``'s transaction."""

    def __init__(self, storage: Any, turn: QueuedTurn) -> None:
        self.storage, self.turn = storage, turn

    def admit(self, conn: Any) -> None:
        turn = self.turn
        if turn.queue_limit and conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM a2a_turns WHERE owner = ?"
                " AND tenant = ? AND worker IS NULL LIMIT ?)",
                (turn.owner, turn.tenant, turn.queue_limit)).fetchone()[0] >= turn.queue_limit:
            raise QueueLimitReachedError(turn.owner, turn.queue_limit)

    def add(self, conn: Any, start: TurnStart, follow_up: bool) -> None:
        turn = self.turn
        caller_round = conn.execute(_ROUND, {"owner": turn.owner,
                                             "tenant": turn.tenant}).fetchone()[0]
        # Only while the caller's key is live: a revocation committed before
        # refuses the turn, one after it cancels it (the writers take turns).
        if not conn.execute(
                "INSERT INTO a2a_turns (task_id, owner, agent, message_seq, retry,"
                " queued_at, caller_round, trace_context, tenant) SELECT ?, ?, ?,"
                " ?, ?, ?, ?, ?, ? WHERE ? IS NULL OR EXISTS (SELECT 1 FROM"
                " a2a_api_keys WHERE key_hash = ? AND revoked_at IS NULL)",
                (start.task_id, turn.owner, turn.agent, start.message_seq,
                 int(turn.retry), self.storage._now(), caller_round,
                 turn.trace_context, turn.tenant, turn.live_key,
                 turn.live_key)).rowcount:
            raise RememberedKeyRevokedError()
        if turn.status_message is not None and not follow_up:
            conn.execute(
                "UPDATE a2a_tasks SET status_message = ? WHERE id = ?",
                (dumps(dict(turn.status_message, taskId=start.task_id,
                            contextId=start.context_id)), start.task_id))


class QueueOperations(TurnWrites):
    """Mixed into ``SqliteStorage`` (needs ``TaskOperations`` and the
    connections)."""

    # The dialect of ``TurnWrites``.
    STATUS_CLEARED = "status_message = NULL, status_seq = NULL"
    # A write transaction holds the file's write lock: no row locks.
    LOCKED_TASK = LOCKED_TURNS = ""
    # SQLite's planner takes the primary key for ``id =`` whatever else is
    # compared (a unique index matched whole wins).
    OWNED = "owner = :owner AND agent = :agent AND tenant = :tenant"

    def _among(self, column: str, values: List[Any], params: Dict[str, Any]) -> str:
        names = ["%s_%d" % (column, i) for i in range(len(values))]
        params.update(zip(names, values))
        return "%s IN (%s)" % (column, ", ".join(self.NAMED % name for name in names))

    def _now_term(self, params: Dict[str, Any]) -> str:
        params["now"] = self._now()  # the process's clock: SQLite has none
        return self.NAMED % "now"

    def _write_one(self, sql: str, params: Dict[str, Any]) -> int:
        with self.transaction() as conn:
            return conn.execute(sql, params).rowcount

    def _changed(self, conn: Any) -> None:
        """Nothing to send: waiters see the file's ``data_version`` change."""

    def _lease_end(self, lease_seconds):
        return now_iso(self.clock() + timedelta(seconds=lease_seconds))

    def _enqueue(self, turn: QueuedTurn) -> TurnStart:
        # remembered_key: a replay with a revoked key is refused too.
        return self.start_turn(
            turn.owner, turn.agent, turn.message, context_id=turn.context_id,
            task_id=turn.task_id, metadata=turn.metadata, remembered_key=turn.live_key,
            max_stored_bytes=turn.max_stored_bytes, tenant=turn.tenant,
            queue=_Enqueue(self, turn))

    def claim_turns(self, worker: str, limit: int, lease_seconds: float,
                    agents: Optional[Sequence[str]] = None) -> List[ClaimedTurn]:
        where, args = _CLAIMABLE, []
        if agents is not None:
            where += " AND q.agent IN (%s)" % _placeholders(agents)
            args = list(agents)
        if limit <= 0 or self.connection().execute(
                "SELECT 1 FROM a2a_turns q WHERE %s LIMIT 1" % where,
                args).fetchone() is None:
            return []
        claimed = []
        with self.transaction() as conn:
            rows = conn.execute(
                "SELECT q.seq, q.task_id, q.owner, q.agent, q.message_seq,"
                " q.retry, q.attempts, t.state, t.context_id, t.metadata, m.body,"
                " m.message_id, q.trace_context, t.tenant"
                " FROM a2a_turns q JOIN a2a_tasks t ON t.id = q.task_id"
                " JOIN a2a_messages m ON m.seq = q.message_seq"
                " WHERE %s ORDER BY q.caller_round, q.seq LIMIT ?" % where,
                args + [limit]).fetchall()
            lease_end = self._lease_end(lease_seconds)
            for (turn_seq, task_id, owner, agent, seq, retry, attempts, state,
                 context_id, metadata, body, message_id, trace_context,
                 tenant) in rows:
                if state != "working":  # canceled or failed meanwhile
                    conn.execute("DELETE FROM a2a_turns WHERE task_id = ? AND"
                                 " worker IS NULL", (task_id,))
                    continue
                if not conn.execute(
                        "UPDATE a2a_turns SET worker = ?, lease_expires = ?,"
                        " attempts = attempts + 1 WHERE seq = ? AND"
                        " worker IS NULL", (worker, lease_end, turn_seq)).rowcount:
                    continue
                claimed.append(ClaimedTurn(
                    task_id, context_id, owner, agent,
                    load_message(body, task_id, context_id, message_id), seq,
                    json.loads(metadata) if metadata else None, attempts + 1,
                    bool(retry), trace_context, tenant))
        return claimed

    def _renew(self, worker: str, task_ids: List[str], lease_seconds: float) -> List[str]:
        with self.transaction() as conn:
            conn.execute(
                "UPDATE a2a_turns SET lease_expires = ? WHERE worker = ? AND"
                " task_id IN (%s)" % _placeholders(task_ids),
                [self._lease_end(lease_seconds), worker] + task_ids)
            held = conn.execute(
                "SELECT task_id FROM a2a_turns WHERE worker = ? AND task_id IN"
                " (%s)" % _placeholders(task_ids), [worker] + task_ids).fetchall()
        return [task_id for (task_id,) in held]

    def _settle_turn(self, conn: Any, task_id: str, owner: str, agent: str, state: str,
                     status_message: Optional[Message], artifacts: Sequence[Artifact],
                     max_artifact_bytes: Optional[int]) -> Optional[str]:
        now = self._now()
        follow_ups = conn.execute(
            "SELECT seq, message_seq FROM a2a_turns WHERE task_id = ? AND"
            " worker IS NULL ORDER BY seq", (task_id,)).fetchall()
        going_on = bool(follow_ups) and state not in ENDING_STATES
        # A canceled task keeps its state; the turn row goes all the same.
        if not self._write_outcome(conn, task_id, owner, agent,
                                   "working" if going_on else state,
                                   status_message, artifacts, now,
                                   max_artifact_bytes):
            return None
        if going_on:
            # The follow-ups' messages move after this turn's answer: a
            # turn's history is what came before its message.
            for turn_seq, message_seq in follow_ups:
                moved = self._next_seq(conn)
                conn.execute("UPDATE a2a_messages SET seq = ? WHERE seq = ?",
                             (moved, message_seq))
                conn.execute("UPDATE a2a_turns SET message_seq = ? WHERE"
                             " seq = ?", (moved, turn_seq))
        elif follow_ups:  # the task ended: they never start
            conn.execute("DELETE FROM a2a_turns WHERE task_id = ? AND"
                         " worker IS NULL", (task_id,))
        return now

    def _fail_working(self, conn, task_id, owner, agent, text):
        context_id = conn.execute("SELECT context_id FROM a2a_tasks WHERE id = ?",
                                  (task_id,)).fetchone()[0]
        message = agent_message([text_part(text)], task_id, context_id)
        seq = self._next_seq(conn)  # the row points at it (status_seq)
        if not conn.execute(
                "UPDATE a2a_tasks SET state = 'failed', status_message = NULL,"
                " status_seq = ?, updated_at = ? WHERE id = ? AND state = 'working'",
                (seq, self._now(), task_id)).rowcount:
            return False
        self._insert_message(conn, task_id, context_id, owner, agent, message, seq)
        return True

    def _seen(self, worker: str) -> bool:
        with self.transaction() as conn:
            now = self.clock()
            conn.execute("DELETE FROM a2a_workers WHERE seen_at < ?", (now_iso(
                now - timedelta(seconds=WORKER_ROWS_KEPT_SECONDS)),))
            return bool(conn.execute(
                "INSERT OR REPLACE INTO a2a_workers (id, seen_at) VALUES (?, ?)",
                (worker, now_iso(now))).rowcount)

    def worker_last_seen(self) -> Optional[float]:
        seen = self.connection().execute(
            "SELECT max(seen_at) FROM a2a_workers").fetchone()[0]
        if seen is None:
            return None
        moment = datetime.strptime(seen, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=timezone.utc)
        return max((self.clock() - moment).total_seconds(), 0.0)
