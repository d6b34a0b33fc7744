"""The background-turn queue of ``PostgresStorage`` (``flask a2a worker``):
enqueue, claim with a lease (``FOR UPDATE SKIP LOCKED``: workers on several
servers claim at once without waiting for each other), renew, finish,
expire, release, progress. Leases are on the database's clock.

Every change is a conditional statement whose row count (or RETURNING row)
is checked. An enqueued turn is acknowledged by itself, so it is committed
with ``synchronous_commit`` on (unlike the start of a turn run in a request).
"""

import json

from ..base import (
    ATTEMPTS_EXHAUSTED_TEXT, LEASE_EXPIRED_TEXT, ClaimedTurn, TurnStart,
)
from ..common import delivery_fingerprint, dumps, new_id
from ...messages import agent_message, text_part
from .tasks import _INSERT_MESSAGE, NOW


def _lease_end(seconds):
    return ("to_char((now() + make_interval(secs => %s)) AT TIME ZONE 'UTC',"
            " 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')" % float(seconds))


_AGENTS = " AND (%(agents)s::text[] IS NULL OR agent = ANY(%(agents)s::text[]))"


class QueueOperations:
    """Mixed into ``PostgresStorage`` (needs ``TaskOperations`` and the
    connections)."""

    def enqueue_turn(self, owner, agent, message, context_id=None, task_id=None,
                     metadata=None, retry=False, status_message=None,
                     trace_context=None):
        message_id = message["messageId"]
        digest = delivery_fingerprint(message, task_id, context_id)
        created = task_id is None
        if created:
            task_id = new_id("task_")
        with self.transaction() as conn:
            replayed = self._record_delivery(conn, owner, agent, message,
                                             digest, task_id)
            if replayed is not None:
                return replayed
            if created:
                context_id = context_id or new_id("ctx_")
                conn.execute(
                    "INSERT INTO a2a_tasks (id, agent, owner, context_id, state,"
                    " updated_at, created_at, metadata) VALUES (%s, %s, %s, %s,"
                    " 'working', " + NOW + ", " + NOW + ", %s)",
                    (task_id, agent, owner, context_id,
                     dumps(metadata) if metadata else None))
            else:
                context_id = self._claim_waiting_task(conn, owner, agent, task_id,
                                                      context_id)
            stored = dict(message, kind="message", taskId=task_id,
                          contextId=context_id)
            seq = conn.execute(_INSERT_MESSAGE, (
                task_id, context_id, owner, agent, stored["role"], message_id,
                dumps(stored))).fetchone()[0]
            conn.execute(
                "INSERT INTO a2a_turns (task_id, owner, agent, message_seq, retry,"
                " queued_at, trace_context) VALUES (%s, %s, %s, %s, %s, " + NOW +
                ", %s)", (task_id, owner, agent, seq, bool(retry), trace_context))
            if status_message is not None:
                conn.execute("UPDATE a2a_tasks SET status_message = %s WHERE id = %s",
                             (dumps(dict(status_message, taskId=task_id,
                                         contextId=context_id)), task_id))
        return TurnStart(task_id, context_id, stored, seq, created=created)

    def claim_turns(self, worker, limit, lease_seconds, agents=None):
        if limit <= 0:
            return []
        args = {"agents": list(agents) if agents is not None else None,
                "limit": int(limit), "worker": worker}
        with self.connection() as conn:
            if conn.execute("SELECT FROM a2a_turns WHERE worker IS NULL" + _AGENTS +
                            " LIMIT 1", args).fetchone() is None:
                return []
        claimed = []
        with self.transaction() as conn:
            rows = conn.execute(
                "WITH c AS (SELECT seq FROM a2a_turns WHERE worker IS NULL" + _AGENTS +
                " ORDER BY seq LIMIT %(limit)s FOR UPDATE SKIP LOCKED)"
                " UPDATE a2a_turns q SET worker = %(worker)s, lease_expires = " +
                _lease_end(lease_seconds) + ", attempts = q.attempts + 1 FROM c"
                " WHERE q.seq = c.seq AND q.worker IS NULL RETURNING q.seq,"
                " q.task_id, q.owner, q.agent, q.message_seq, q.retry, q.attempts,"
                " q.trace_context", args).fetchall()
            for (_, task_id, owner, agent, seq, retry, attempts,
                 trace_context) in sorted(rows):
                task = conn.execute(
                    "SELECT t.state, t.context_id, t.metadata, m.body FROM a2a_tasks t"
                    " JOIN a2a_messages m ON m.seq = %s WHERE t.id = %s",
                    (seq, task_id)).fetchone()
                if task is None or task[0] != "working":  # canceled meanwhile
                    conn.execute("DELETE FROM a2a_turns WHERE task_id = %s AND"
                                 " worker = %s", (task_id, worker))
                    continue
                _, context_id, metadata, body = task
                claimed.append(ClaimedTurn(
                    task_id, context_id, owner, agent, json.loads(body), seq,
                    json.loads(metadata) if metadata else None, attempts, retry,
                    trace_context))
        return claimed

    def renew_leases(self, worker, task_ids, lease_seconds):
        task_ids = list(task_ids)
        if not task_ids:
            return []
        with self.connection() as conn:
            rows = conn.execute(
                "UPDATE a2a_turns SET lease_expires = " + _lease_end(lease_seconds) +
                " WHERE worker = %s AND task_id = ANY(%s) RETURNING task_id",
                (worker, task_ids)).fetchall()
        held = {task_id for (task_id,) in rows}
        return [task_id for task_id in task_ids if task_id in held]

    def finish_queued_turn(self, task_id, worker, owner, agent, state,
                           status_message=None, artifacts=()):
        with self.transaction() as conn:
            if not conn.execute(
                    "DELETE FROM a2a_turns WHERE task_id = %s AND worker = %s",
                    (task_id, worker)).rowcount:
                return None  # the lease was lost: another outcome stands
            body = dumps(status_message) if status_message else None
            row = conn.execute(
                "UPDATE a2a_tasks SET state = %s, status_message = %s, updated_at"
                " = " + NOW + " WHERE id = %s AND state = 'working'"
                " RETURNING updated_at, context_id", (state, body, task_id)).fetchone()
            if row is None:
                return None  # canceled meanwhile (the turn row goes all the same)
            if status_message is not None:
                conn.execute(_INSERT_MESSAGE, (
                    task_id, row[1], owner, agent, status_message["role"],
                    status_message["messageId"], body))
            for artifact in artifacts:
                conn.execute("INSERT INTO a2a_artifacts (task_id, artifact_id, body)"
                             " VALUES (%s, %s, %s)",
                             (task_id, artifact["artifactId"], dumps(artifact)))
        return row[0]

    def expire_leases(self, max_attempts=3):
        expired = "worker IS NOT NULL AND lease_expires < " + NOW
        with self.connection() as conn:
            if conn.execute("SELECT FROM a2a_turns WHERE " + expired +
                            " LIMIT 1").fetchone() is None:
                return []
        return self._give_up(expired, (), max_attempts)

    def release_turns(self, worker, task_ids, max_attempts=3):
        task_ids = list(task_ids)
        if not task_ids:
            return []
        return self._give_up("worker = %s AND task_id = ANY(%s)",
                             (worker, task_ids), max_attempts)

    def _give_up(self, where, args, max_attempts):
        """Re-queue (retry agents with attempts left) or fail the turns
        matching ``where``; rows locked (SKIP LOCKED: another worker is on
        them), each change conditional on the row as read."""
        done = []
        with self.transaction() as conn:
            rows = conn.execute(
                "SELECT task_id, worker, owner, agent, retry, attempts FROM"
                " a2a_turns WHERE " + where + " ORDER BY seq FOR UPDATE SKIP LOCKED",
                args).fetchall()
            for task_id, worker, owner, agent, retry, attempts in rows:
                if retry and attempts < max_attempts:
                    if conn.execute(
                            "UPDATE a2a_turns SET worker = NULL, lease_expires ="
                            " NULL WHERE task_id = %s AND worker = %s",
                            (task_id, worker)).rowcount:
                        done.append((task_id, "requeued"))
                    continue
                if not conn.execute(
                        "DELETE FROM a2a_turns WHERE task_id = %s AND worker = %s",
                        (task_id, worker)).rowcount:
                    continue
                text = ATTEMPTS_EXHAUSTED_TEXT % attempts if retry else LEASE_EXPIRED_TEXT
                if self._fail_working(conn, task_id, owner, agent, text):
                    done.append((task_id, "failed"))
        return done

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

    def progress(self, task_id, status_message):
        with self.connection() as conn:
            return bool(conn.execute(
                "UPDATE a2a_tasks SET status_message = %s, updated_at = " + NOW +
                " WHERE id = %s AND state = 'working'",
                (dumps(status_message), task_id)).rowcount)

    def note_metadata(self, task_id, metadata):
        with self.connection() as conn:
            return bool(conn.execute(
                "UPDATE a2a_tasks SET metadata = %s WHERE id = %s AND state = 'working'",
                (dumps(metadata), task_id)).rowcount)
