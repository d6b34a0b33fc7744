"""The outcome of a turn run in the request of ``SqliteStorage``
(``finish_turn``): ONE statement (an INSERT into the view
``a2a_outcome_rows``, triggers.SINGLE_STATEMENT_WRITES), tried
``FINISH_ATTEMPTS`` times when the file refuses it; then kept aside in a
file beside the database (``file.KeptOutcomes``) and stored by the next
read of its task (``_store_kept_outcome``), or, when even that fails, the
task failed in place. The queue's outcomes (``finish_queued_turn``) use the
same conditional write inside their transaction (``_write_outcome``).

Here too: the stored forms every write of the request path gives a message,
an artifact and a message's retry fingerprint (``message_body``,
``artifact_body``, ``stored_fingerprint``; ``tasks`` imports them from here,
it already derives from ``OutcomeWrites``); ``reading`` turns them back."""

import logging
import sqlite3
from typing import Optional, Sequence

from ..base import ARTIFACTS_FULL_TEXT, ArtifactsFullError
from ..common import FINISH_ATTEMPTS, dumps, pause_before_retry
from ..errors import StorageUnavailableError
from ..records import OVERHEAD, Artifact, Message, TurnStart, stored_artifact_bytes
from ...messages import agent_message, text_part
from .file import is_storage_failure
from .triggers import OUTCOME_COLUMNS

log = logging.getLogger("a2a_flask")

# What the triggers of triggers.SINGLE_STATEMENT_WRITES raise (RAISE(ABORT)).
_REFUSED_ARTIFACTS = "a2a: artifacts full"
_REFUSED_NOT_WORKING = "a2a: not working"
_OUTCOME_SQL = "INSERT INTO a2a_outcome_rows (%s) VALUES (%s)" % (
    ", ".join(OUTCOME_COLUMNS), ", ".join("?" * len(OUTCOME_COLUMNS)))
# Each artifact's row after the outcome's: task_id, body, artifact_id.
_ARTIFACT_ROW = ", (?, %s?, ?)" % ("NULL, " * (len(OUTCOME_COLUMNS) - 3))

# What a task's stored artifacts count against its allowance, as
# records.stored_artifact_bytes counts one.
_ARTIFACT_BYTES = ("(SELECT coalesce(sum(length(CAST(body AS BLOB)) + %d), 0)"
                   " FROM a2a_artifacts WHERE task_id = a2a_tasks.id)" % OVERHEAD)


# A message is stored once, in a2a_messages, without the ids that its row's
# columns hold (messageId, taskId, contextId; an artifact without its
# artifactId) nor its constant "kind": "message": a task's status message is
# its row's status_seq, a pointer into its history, not a second copy.
_ROW_IDS = ("kind", "messageId", "taskId", "contextId")


def message_body(message: Message, task_id: str, context_id: str) -> str:
    """The stored JSON of ``message``, in the history of task ``task_id``
    (``reading.load_message`` reads it back)."""
    if message.get("taskId") == task_id and message.get("contextId") == context_id:
        return dumps({k: v for k, v in message.items() if k not in _ROW_IDS})
    return dumps({k: v for k, v in message.items()
                  if k not in ("kind", "messageId")})


def artifact_body(artifact: Artifact) -> str:
    return dumps({k: v for k, v in artifact.items() if k != "artifactId"})


def stored_fingerprint(digest: str) -> bytes:
    """A message's fingerprint as a2a_deliveries keeps it: the first 128
    bits of the SHA-256, as bytes (16 bytes, not 64 hex digits); enough to
    tell a retry of one caller's message from a different message."""
    return bytes.fromhex(digest[:32])


class OutcomeWrites:
    """Mixed into ``TaskOperations`` (needs the connections, ``_next_seq``
    and ``_insert_message``)."""

    def finish_turn(self, task_id: str, owner: str, agent: str, state: str,
                    status_message: Optional[Message] = None, artifacts: Sequence[Artifact] = (),
                    max_artifact_bytes: Optional[int] = None,
                    start: Optional[TurnStart] = None) -> Optional[str]:
        """See ``Storage.finish_turn``. A write the file refuses (busy past
        the busy timeout, read-only, full) is tried ``FINISH_ATTEMPTS`` times;
        then the outcome is kept in a file beside the database
        (``<database>-outcomes/<task id>.json``), stored by the next
        ``get_task`` of that task, and the storage error is raised.
        ``start`` is not needed: a start is committed as any write here, and
        a crash that lost it lost the later outcome too."""
        for attempt in range(1, FINISH_ATTEMPTS + 1):
            try:
                return self._store_outcome(task_id, owner, agent, state,
                                           status_message, artifacts,
                                           max_artifact_bytes)
            except StorageUnavailableError:
                raise  # the file was deleted or replaced: nowhere to keep it
            except Exception as exc:
                if not is_storage_failure(exc):
                    raise
                failure = self.failed(exc)
                if attempt < FINISH_ATTEMPTS:
                    pause_before_retry(attempt)
                    continue
                if self._kept.keep(task_id, {
                        "owner": owner, "agent": agent, "state": state,
                        "status_message": status_message,
                        "artifacts": list(artifacts),
                        "max_artifact_bytes": max_artifact_bytes}):
                    failure.kept_task_id = task_id
                else:
                    failure.stored_task = task_id, self._fail_in_place(task_id)
                raise failure from exc

    def _fail_in_place(self, task_id):
        """The task's state once its outcome could be neither stored nor kept:
        ``failed`` by an update of its row alone (no new page: it may succeed
        where the outcome's rows could not), else still ``working`` (until
        A2A_STALE_TURN_SECONDS ends it)."""
        try:
            with self.transaction() as conn:
                changed = conn.execute(
                    "UPDATE a2a_tasks SET state = 'failed', status_message = NULL,"
                    " status_seq = NULL, updated_at = ? WHERE id = ? AND state = 'working'",
                    (self._now(), task_id)).rowcount
        except Exception as exc:
            if not is_storage_failure(exc):
                raise
            self.failed(exc)
            return "working"
        return "failed" if changed == 1 else "working"

    #: More artifacts than this in one outcome are written by a transaction
    #: of several statements (``_write_outcome``): three bound parameters
    #: each, within the 999 of a SQLite built with its defaults.
    ONE_STATEMENT_ARTIFACTS = 300

    def _store_outcome(self, task_id, owner, agent, state, status_message,
                       artifacts, max_artifact_bytes=None):
        """The conditional outcome, as ONE statement: an INSERT into the view
        ``a2a_outcome_rows`` of a row for the state and status message, then
        one per artifact (migrations.py). Its timestamp, or None when the
        task was not working. Many artifacts: one transaction of several."""
        now = self._now()
        if len(artifacts) > self.ONE_STATEMENT_ARTIFACTS:
            with self.transaction() as conn:
                if not self._write_outcome(conn, task_id, owner, agent, state,
                                           status_message, artifacts, now,
                                           max_artifact_bytes):
                    return None
            return now
        bodies = [(a["artifactId"], artifact_body(a)) for a in artifacts]
        adding = sum(stored_artifact_bytes(body) for _, body in bodies)
        limit = max_artifact_bytes if bodies else None
        if status_message is None:
            context_id = message_id = role = body = None
        else:
            context_id = status_message["contextId"]
            message_id, role = status_message["messageId"], status_message["role"]
            body = message_body(status_message, task_id, context_id)
        params = [task_id, owner, agent, context_id, state, now, limit, adding,
                  message_id, role, body, None]
        for artifact_id, artifact in bodies:
            params += (task_id, artifact, artifact_id)
        try:
            self.write_statement(_OUTCOME_SQL + _ARTIFACT_ROW * len(bodies), params)
        except sqlite3.IntegrityError as exc:
            refusal = str(exc)
            if refusal == _REFUSED_NOT_WORKING:
                return None
            if refusal != _REFUSED_ARTIFACTS:
                raise
            held = self.connection().execute(
                "SELECT " + _ARTIFACT_BYTES + " FROM a2a_tasks WHERE id = ?",
                (task_id,)).fetchone()
            raise ArtifactsFullError(task_id, adding + (held[0] if held else 0),
                                     limit) from None
        return now

    def _write_outcome(self, conn, task_id, owner, agent, state, status_message,
                       artifacts, now, max_artifact_bytes=None):
        """The outcome, conditional on ``working`` and on the task's artifacts
        staying within ``max_artifact_bytes``: False when it was not working,
        ``ArtifactsFullError`` when they would not (nothing written)."""
        bodies = [(a["artifactId"], artifact_body(a)) for a in artifacts]
        adding = sum(stored_artifact_bytes(body) for _, body in bodies)
        limit = max_artifact_bytes if bodies else None
        # The status message's seq, known before it is inserted (the
        # write lock is ours): the row points at it in the same UPDATE.
        seq = None if status_message is None else self._next_seq(conn)
        if not conn.execute(
                "UPDATE a2a_tasks SET state = ?, status_message = NULL,"
                " status_seq = ?, updated_at = ?"
                " WHERE id = ? AND state = 'working' AND (? IS NULL OR"
                " ? + " + _ARTIFACT_BYTES + " <= ?)",
                (state, seq, now, task_id, limit, adding, limit)).rowcount:
            row = conn.execute("SELECT state, " + _ARTIFACT_BYTES + " FROM"
                               " a2a_tasks WHERE id = ?", (task_id,)).fetchone()
            if limit is not None and row is not None and row[0] == "working":
                raise ArtifactsFullError(task_id, adding + row[1], limit)
            return False
        if status_message is not None:
            self._insert_message(conn, task_id, status_message["contextId"],
                                 owner, agent, status_message, seq)
        if bodies:
            conn.executemany(
                "INSERT INTO a2a_artifacts (task_id, artifact_id, body)"
                " VALUES (?, ?, ?)", [(task_id, aid, body) for aid, body in bodies])
        return True

    def _store_kept_outcome(self, task_id):
        """Store an outcome kept aside by ``finish_turn``; True if there was one."""
        outcome = self._kept.read(task_id)
        if outcome is None:
            return False
        try:
            self._store_outcome(task_id, outcome["owner"], outcome["agent"],
                                outcome["state"], outcome["status_message"],
                                outcome["artifacts"], outcome.get("max_artifact_bytes"))
        except ArtifactsFullError as full:  # as the turn engine fails it
            context_id = self.connection().execute(
                "SELECT context_id FROM a2a_tasks WHERE id = ?", (task_id,)).fetchone()[0]
            self._store_outcome(task_id, outcome["owner"], outcome["agent"], "failed",
                                agent_message([text_part(ARTIFACTS_FULL_TEXT % (
                                    full.total, full.limit))], task_id, context_id))
        self._kept.remove(task_id)
        log.info("stored the kept outcome of task %s", task_id)
        return True
