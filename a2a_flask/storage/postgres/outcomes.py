"""A turn's outcome in ``PostgresStorage`` (``finish_turn``): one statement
(``_FINISH``: the task, its status message and its artifacts), tried
``FINISH_ATTEMPTS`` times within one wait when the server fails; and the
repair of a start that a crash of the server lost (committed unflushed,
``tasks._UNFLUSHED``), stored again with its outcome. The start and the
rest of the request path's writes are in ``tasks``.
"""

import logging
import time
from typing import Any, Dict, Optional, Sequence

from ..base import TurnStart
from ..common import FINISH_ATTEMPTS, delivery_fingerprint, dumps, pause_before_retry
from ..records import Artifact, Message
from .connection import is_storage_failure
from .tasks import (
    _INSERT_MESSAGE, ARTIFACTS_FIT, NOW, OWNED, WAITING_SQL, artifact_params,
    check_artifacts_fit,
)

log = logging.getLogger("a2a_flask")


class _NotLost(Exception):
    """Rolls back a re-stored start that turned out not to be needed."""


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


class OutcomeWrites:
    """Mixed into ``PostgresStorage`` (needs ``connection``/``transaction``)."""

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
