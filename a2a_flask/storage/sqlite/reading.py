"""The reading side of ``SqliteStorage``: a task (with its kept outcome
stored, or its stale turn failed, on the way), its history, its state.

One statement reads one state of the file (see ``_READ_TASK``). The stored
forms are read back here (``load_message``, ``load_artifact``: what
``outcomes.message_body`` and ``artifact_body`` wrote), for ``queue`` and
``admin`` too.
"""

import json
from operator import itemgetter
from typing import Any, Dict, Hashable, List, Optional, Sequence, Tuple

from ..base import NoSuchTaskError, TaskRecord
from ..records import FIXED_BYTES, OVERHEAD, Artifact, Message, most_messages
from ..history import HistoryReads


def load_message(body: str, task_id: str, context_id: str, message_id: str) -> Message:
    """A message as stored by ``message_body``, or whole (a status message
    absent from the history, kept in its task row)."""
    return _filled(json.loads(body), task_id, context_id, message_id)


def _filled(message: Message, task_id: str, context_id: str,
            message_id: Optional[str]) -> Message:
    """A stored message, parsed, with what its row kept out of its body."""
    if "kind" not in message:
        message = dict({"kind": "message"}, **message)
    message.setdefault("messageId", message_id)
    if "taskId" not in message:
        message["taskId"] = task_id
        message["contextId"] = context_id
    return message


def load_artifact(body: str, artifact_id: str) -> Artifact:
    return _artifact(json.loads(body), artifact_id)


def _artifact(body: Dict[str, Any], artifact_id: str) -> Artifact:
    """A stored artifact, parsed, with the id its row kept out of its body."""
    return dict({"artifactId": artifact_id}, **body)


def _unpacked(packed: Optional[str]) -> List[Tuple[str, Any]]:
    """(id, parsed body) of each row a ``_PACKED`` column holds, by seq; none
    for NULL (no row)."""
    if packed is None:
        return []
    seqs, ids, bodies = json.loads(packed)
    return [(row_id, body) for _, row_id, body in sorted(zip(seqs, ids, bodies),
                                                          key=itemgetter(0))]


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
    # Its answer is one row: the artifacts and the messages are each packed
    # into one JSON text (``_PACKED``), parsed by one call. A row each was a
    # step of the statement each (which lets the interpreter's lock go) and a
    # parse each: most of the read's CPU for a task with a history
    # (docs/benchmarks.md, "A task read as one row").
    # The ids and bodies come out of one pass in the same order; the seqs
    # put them in order (an aggregate's order is the rows', not promised).
    # A body is the JSON ``common.dumps`` wrote: joined by commas, an array.
    _PACKED = ("(SELECT '[' || json_group_array(seq) || ',' || json_group_array(%s)"
               " || ',[' || group_concat(body, ',') || ']]' FROM (%s))")
    # %(with)s: the statement's WITH clause, if any; %(count)s: its first
    # column; %(history)s: the rows (seq, message_id, body) of the history.
    _READ_TASK_TEMPLATE = (
        "%(with)sSELECT %(count)s, t.context_id, t.state, t.status_message,"
        " t.updated_at, t.metadata, "
        + _PACKED % ("artifact_id", "SELECT seq, artifact_id, body FROM a2a_artifacts"
                     " WHERE task_id = :id")
        + ", " + _PACKED % ("message_id", "%(history)s")
        + ", CASE WHEN t.status_message IS NULL THEN (SELECT '[' ||"
        " json_array(message_id) || ',' || body || ']' FROM a2a_messages"
        " WHERE seq = t.status_seq) END"
        " FROM a2a_tasks t WHERE t.id = :id AND t.owner = :owner AND t.agent = :agent"
        " AND t.tenant = :tenant AND (:key IS NULL OR EXISTS (SELECT 1 FROM a2a_api_keys"
        " WHERE key_hash = :key AND revoked_at IS NULL))")
    # %(limit)s: how many of the newest messages (``_LIMIT_FITTING``).
    _READ_TASK_SQL = _READ_TASK_TEMPLATE % {
        "with": "", "count": "0",
        "history": "SELECT seq, message_id, body FROM a2a_messages WHERE task_id = :id"
                   " ORDER BY seq DESC LIMIT %(limit)s"}
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
    # metadata are read; the row carries how many of its last :limit there are.
    _READ_TASK_WITHIN = _READ_TASK_TEMPLATE % {
        "with": (
            "WITH room(bytes) AS (SELECT %(room)s FROM a2a_tasks t WHERE t.id = :id),"
            " recent(seq, running) AS (SELECT seq, sum(bytes) OVER (ORDER BY seq DESC)"
            " FROM (SELECT seq, length(CAST(body AS BLOB)) + %(each)d AS bytes"
            " FROM a2a_messages WHERE task_id = :id ORDER BY seq DESC LIMIT :scan)) "
        ) % {"room": _ROOM, "each": OVERHEAD},
        "count": "(SELECT count(*) FROM (SELECT 1 FROM a2a_messages"
                 " WHERE task_id = :id LIMIT :limit))",
        "history": "SELECT m.seq, m.message_id, m.body FROM recent r JOIN a2a_messages m"
                   " ON m.seq = r.seq WHERE r.running <= (SELECT bytes FROM room)"}

    def _read_task(self, task_id, owner, agent, history_length, remembered_key=None,
                   max_bytes=None, tenant=""):
        limit = -1 if history_length is None else min(history_length, 2 ** 63 - 1)
        params = {"id": task_id, "owner": owner, "agent": agent, "limit": limit,
                  "key": remembered_key, "tenant": tenant}
        conn = self.connection()
        if max_bytes is None or not limit:
            # No budget, or no history shown: none of it to size (a poll's
            # read, historyLength 0).
            row = conn.execute(self._READ_TASK, params).fetchone()
        else:
            params.update(bytes=max_bytes, scan=most_messages(max_bytes, history_length))
            row = conn.execute(self._READ_TASK_FITTING, params).fetchone()
            # No such task, or its history whole: read. None of its history
            # read (or none there): within, its count too.
            if row is not None and row[7] is None:
                row = conn.execute(self._READ_TASK_WITHIN, params).fetchone()
        if row is None:
            raise NoSuchTaskError(task_id)
        (count, context_id, state, status_message, updated_at, metadata, artifacts,
         history, status_in_history) = row
        status = None
        if status_message is not None:  # a copy in the row
            status = load_message(status_message, task_id, context_id, None)
        elif status_in_history is not None:
            (message_id,), body = json.loads(status_in_history)
            status = _filled(body, task_id, context_id, message_id)
        messages = [_filled(body, task_id, context_id, message_id)
                    for message_id, body in _unpacked(history)]
        record = TaskRecord(
            task_id, context_id, agent, owner, state, updated_at, status,
            [_artifact(body, artifact_id) for artifact_id, body in _unpacked(artifacts)],
            messages, json.loads(metadata) if metadata else None)
        if max_bytes is not None and count:
            record.history_omitted = count - len(messages)
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
