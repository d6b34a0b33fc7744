"""The reading side of ``SqliteStorage``: a task (with its kept outcome
stored, or its stale turn failed, on the way), its history, its state.

One statement reads one state of the file (see ``_READ_TASK``). The stored
forms are read back here (``load_message``, ``load_artifact``: what
``outcomes.message_body`` and ``artifact_body`` wrote), for ``queue`` and
``admin`` too.
"""

import json
from typing import Any, Dict, Hashable, List, Optional, Sequence, Tuple

from ..base import NoSuchTaskError, TaskRecord
from ..records import FIXED_BYTES, OVERHEAD, Artifact, Message, most_messages
from ..history import HistoryReads


def load_message(body: str, task_id: str, context_id: str, message_id: str) -> Message:
    """A message as stored by ``message_body``, or whole (a status message
    absent from the history, kept in its task row)."""
    message = json.loads(body)
    if "kind" not in message:
        message = dict({"kind": "message"}, **message)
    message.setdefault("messageId", message_id)
    if "taskId" not in message:
        message["taskId"] = task_id
        message["contextId"] = context_id
    return message


def load_artifact(body: str, artifact_id: str) -> Artifact:
    return dict({"artifactId": artifact_id}, **json.loads(body))


class TaskReads(HistoryReads):
    """Mixed into ``SqliteStorage`` (needs ``connection``, and
    ``TaskOperations`` for the writes a read may do)."""

    #: A history's messages in their stored form (``load_message``).
    MESSAGE_COLUMNS = "body, task_id, context_id, message_id"

    @staticmethod
    def _loaded(row: Sequence[Any]) -> Message:
        return load_message(*row)

    def get_task(self, task_id: str, owner: str, agent: str, history_length: Optional[int] = None,
                 remembered_key: Optional[str] = None,
                 max_bytes: Optional[int] = None, tenant: str = "") -> TaskRecord:
        """See ``Storage.get_task``; a ``working`` task whose outcome was kept
        aside (the file refused it) gets it stored here."""
        task = self._read_task(task_id, owner, agent, history_length, remembered_key,
                               max_bytes, tenant)
        if task.state != "working":
            return task
        if self._store_kept_outcome(task_id):
            return self._read_task(task_id, owner, agent, history_length,
                                   max_bytes=max_bytes, tenant=tenant)
        if task.updated_at < self._stale_cutoff() and not self._queued(task_id):
            self.fail_stale_turn(task_id)  # or another worker just did
            task = self._read_task(task_id, owner, agent, history_length,
                                   max_bytes=max_bytes, tenant=tenant)
        return task

    def _queued(self, task_id):
        """A queued or leased turn: never stale (leases decide), and known
        without the write transaction of ``fail_stale_turn``, which every
        poll of a long-queued task would otherwise open."""
        return self.connection().execute(
            "SELECT 1 FROM a2a_turns WHERE task_id = ?", (task_id,)).fetchone() is not None

    # One statement reads one state of the file: the task row, its artifacts
    # and its last messages as of the same moment, whatever other workers
    # write meanwhile (and one statement costs less than a transaction of four).
    # %(limit)s: how many of the newest messages (``_LIMIT_FITTING``).
    _READ_TASK_SQL = (
        "SELECT 0, 0, context_id, state, status_message, updated_at, metadata"
        " FROM a2a_tasks WHERE id = :id AND owner = :owner AND agent = :agent"
        " AND tenant = :tenant AND (:key IS NULL OR EXISTS (SELECT 1 FROM a2a_api_keys"
        " WHERE key_hash = :key AND revoked_at IS NULL))"
        " UNION ALL SELECT 1, seq, body, artifact_id, NULL, NULL, NULL"
        " FROM a2a_artifacts WHERE task_id = :id"
        " UNION ALL SELECT * FROM (SELECT 2, seq, body, message_id, NULL, NULL,"
        " NULL FROM a2a_messages WHERE task_id = :id ORDER BY seq DESC"
        " LIMIT %(limit)s)"
        " UNION ALL SELECT 3, m.seq, m.body, m.message_id, NULL, NULL, NULL"
        " FROM a2a_tasks t JOIN a2a_messages m ON m.seq = t.status_seq"
        " WHERE t.id = :id"
        " ORDER BY 1, 2")
    _READ_TASK = _READ_TASK_SQL % {"limit": ":limit"}

    # The bytes of :bytes that the task's status, artifacts and metadata
    # leave to its history (a column of ``t``, the task's row).
    _ROOM = (
        ":bytes - %(fixed)d"
        " - coalesce(length(CAST(t.metadata AS BLOB)), 0)"
        " - coalesce(length(CAST(t.status_message AS BLOB)) + %(each)d, (SELECT"
        " length(CAST(body AS BLOB)) + %(each)d FROM a2a_messages"
        " WHERE seq = t.status_seq), 0)"
        " - (SELECT coalesce(sum(length(CAST(body AS BLOB)) + %(each)d), 0)"
        " FROM a2a_artifacts WHERE task_id = :id)") % {"fixed": FIXED_BYTES, "each": OVERHEAD}

    # Within :bytes, when the task's last :scan messages all fit (most tasks):
    # the plain read, its history limited to none when they do not, so that
    # no body of a large history is read. The sizes are summed in one scalar
    # subquery of the LIMIT, evaluated once: no temporary table, which the
    # running sums of ``_READ_TASK_WITHIN`` need (a b-tree opened and closed
    # at every read). An empty history read so is read again within.
    _LIMIT_FITTING = (
        "CASE WHEN (SELECT %(room)s - (SELECT coalesce(sum(length(CAST(body"
        " AS BLOB)) + %(each)d), 0) FROM (SELECT body FROM a2a_messages WHERE task_id"
        " = :id ORDER BY seq DESC LIMIT :scan)) FROM a2a_tasks t WHERE t.id = :id)"
        " >= 0 THEN :limit ELSE 0 END") % {"room": _ROOM, "each": OVERHEAD}
    _READ_TASK_FITTING = _READ_TASK_SQL % {"limit": _LIMIT_FITTING}

    # Within :bytes whatever the task holds: the newest messages are sized
    # first (their stored bytes, newest first, no more of them than could
    # fit), and only those that fit beside the task's status, artifacts and
    # metadata are read; the task row carries how many of its last :limit
    # there are.
    _READ_TASK_WITHIN = (
        "WITH room(bytes) AS (SELECT %(room)s FROM a2a_tasks t WHERE t.id = :id),"
        " recent(seq, running) AS (SELECT seq, sum(bytes) OVER (ORDER BY seq DESC)"
        " FROM (SELECT seq, length(CAST(body AS BLOB)) + %(each)d AS bytes"
        " FROM a2a_messages WHERE task_id = :id ORDER BY seq DESC LIMIT :scan))"
        " SELECT 0, (SELECT count(*) FROM (SELECT 1 FROM a2a_messages"
        " WHERE task_id = :id LIMIT :limit)), context_id, state, status_message,"
        " updated_at, metadata"
        " FROM a2a_tasks WHERE id = :id AND owner = :owner AND agent = :agent"
        " AND tenant = :tenant AND (:key IS NULL OR EXISTS (SELECT 1 FROM a2a_api_keys"
        " WHERE key_hash = :key AND revoked_at IS NULL))"
        " UNION ALL SELECT 1, seq, body, artifact_id, NULL, NULL, NULL"
        " FROM a2a_artifacts WHERE task_id = :id"
        " UNION ALL SELECT 2, m.seq, m.body, m.message_id, NULL, NULL, NULL"
        " FROM recent r JOIN a2a_messages m ON m.seq = r.seq"
        " WHERE r.running <= (SELECT bytes FROM room)"
        " UNION ALL SELECT 3, m.seq, m.body, m.message_id, NULL, NULL, NULL"
        " FROM a2a_tasks t JOIN a2a_messages m ON m.seq = t.status_seq"
        " WHERE t.id = :id"
        " ORDER BY 1, 2") % {"room": _ROOM, "each": OVERHEAD}

    def _read_task(self, task_id, owner, agent, history_length, remembered_key=None,
                   max_bytes=None, tenant=""):
        limit = -1 if history_length is None else min(history_length, 2 ** 63 - 1)
        params = {"id": task_id, "owner": owner, "agent": agent, "limit": limit,
                  "key": remembered_key, "tenant": tenant}
        conn = self.connection()
        if max_bytes is None:
            rows = conn.execute(self._READ_TASK, params).fetchall()
        else:
            params.update(bytes=max_bytes, scan=most_messages(max_bytes, history_length))
            rows = None
            if limit:
                rows = conn.execute(self._READ_TASK_FITTING, params).fetchall()
                # Its history whole, or none read: then within, its count too.
                if rows and rows[0][0] == 0 and not any(row[0] == 2 for row in rows):
                    rows = None
            if rows is None:
                rows = conn.execute(self._READ_TASK_WITHIN, params).fetchall()
        if not rows or rows[0][0] != 0:
            raise NoSuchTaskError(task_id)
        _, count, context_id, state, status_message, updated_at, metadata = rows[0]
        status = None
        if status_message is not None:  # a copy in the row
            status = load_message(status_message, task_id, context_id, None)
        elif rows[-1][0] == 3:
            status = load_message(rows[-1][2], task_id, context_id, rows[-1][3])
        history = [load_message(row[2], task_id, context_id, row[3])
                   for row in rows if row[0] == 2]
        record = TaskRecord(
            task_id, context_id, agent, owner, state, updated_at, status,
            [load_artifact(row[2], row[3]) for row in rows if row[0] == 1],
            history, json.loads(metadata) if metadata else None)
        if max_bytes is not None and count:
            record.history_omitted = count - len(history)
        return record

    def history_within(self, task_id: str, history_length: Optional[int],
                       max_bytes: int) -> Tuple[List[Message], int]:
        """(the newest of the last ``history_length`` messages whose stored
        JSON fits in ``max_bytes``, sized in SQL before any body is read;
        how many of the last ``history_length`` were left out)."""
        limit = -1 if history_length is None else min(history_length, 2 ** 63 - 1)
        conn = self.connection()
        rows = conn.execute(
            "SELECT m.body, m.task_id, m.context_id, m.message_id FROM (SELECT seq,"
            " sum(bytes) OVER (ORDER BY seq DESC) AS running FROM (SELECT seq,"
            " length(CAST(body AS BLOB)) + :each AS bytes FROM a2a_messages"
            " WHERE task_id = :id ORDER BY seq DESC LIMIT :scan)) r"
            " JOIN a2a_messages m ON m.seq = r.seq WHERE r.running <= :bytes"
            " ORDER BY m.seq", {"id": task_id, "each": OVERHEAD, "bytes": max_bytes,
                                "scan": most_messages(max_bytes, history_length)}
        ).fetchall()
        count = conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM a2a_messages WHERE task_id = ?"
            " LIMIT ?)", (task_id, limit)).fetchone()[0]
        return [load_message(*row) for row in rows], count - len(rows)

    def task_states(self, task_ids: List[str]) -> Dict[str, Optional[str]]:
        found = dict.fromkeys(task_ids)
        ids = list(found)
        conn = self.connection()
        for start in range(0, len(ids), 500):  # SQLite's bound on parameters
            chunk = ids[start:start + 500]
            found.update(conn.execute(
                "SELECT id, state FROM a2a_tasks WHERE id IN (%s)"
                % ", ".join("?" * len(chunk)), chunk).fetchall())
        return found

    def change_marker(self) -> Optional[Hashable]:
        # Changes when another connection (of any process) commits: a read of
        # the WAL index in shared memory, no table is touched.
        return self.connection().execute("PRAGMA data_version").fetchone()[0]
