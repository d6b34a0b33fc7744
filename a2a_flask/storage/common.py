"""Helpers every backend shares: timestamps, digests, list cursors, the
rows of a bulk import (ids are ``a2a_flask.ids``'s, re-exported here), and
statements alike in both backends but for the driver's placeholder."""

import base64
import hashlib
import json
import time
from datetime import datetime, timezone
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from ..ids import new_id  # noqa: F401  (the backends' ids)

def now_iso(moment: Optional[datetime] = None) -> str:
    """ISO 8601 UTC with milliseconds and ``Z``, as A2A timestamps are."""
    now = moment or datetime.now(timezone.utc)
    text = now.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (now.microsecond // 1000)
    if now.year < 1000:  # strftime writes year 5 as "5": compared as text, wrong
        text = "%04d%s" % (now.year, text[text.index("-"):])
    return text


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def fingerprint(message: Dict[str, Any]) -> str:
    """A stable digest of a message, to tell a retry from a different message."""
    canonical = json.dumps(message, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def delivery_fingerprint(message: Dict[str, Any], task_id: Optional[str],
                         context_id: Optional[str]) -> str:
    """The fingerprint of a delivery (retry record) of ``message`` to task
    ``task_id`` in ``context_id``: of the message without the members its
    stored form does not keep as sent (``kind``, always ``"message"``;
    ``taskId``/``contextId`` when absent, null or those of the task), so that
    the same digest comes from the message as a client sends it and from the
    message as a task's history keeps it (``import_tasks``). A ``taskId`` or
    ``contextId`` naming another task or context stays: a different message."""
    return fingerprint({k: v for k, v in message.items()
                        if k != "kind" and not (
                            k == "taskId" and v in (None, task_id)) and not (
                            k == "contextId" and v in (None, context_id))})


def encode_cursor(updated_at: str, task_id: str) -> str:
    """The opaque ``next_cursor`` of ``list_tasks``: the keyset (updated_at, id)."""
    text = "%s|%s" % (updated_at, task_id)
    return base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii")


def decode_cursor(cursor: str) -> Tuple[str, str]:
    """(updated_at, id) of a cursor; ``ValueError`` when it is not ours."""
    try:
        updated_at, task_id = base64.urlsafe_b64decode(
            cursor.encode("ascii")).decode("utf-8").split("|")
    except (UnicodeError, ValueError, TypeError) as exc:
        raise ValueError("not a cursor of this list") from exc
    if "\x00" in updated_at or "\x00" in task_id:  # no backend stores one
        raise ValueError("not a cursor of this list")
    return updated_at, task_id


def import_rows(records, deliveries=True):
    """The rows ``import_tasks`` inserts for whole tasks: (tasks, messages,
    artifacts, retry records), in the column order of the tables."""
    tasks, messages, artifacts, retries = [], [], [], []
    for task in records:
        tasks.append((task.id, task.agent, task.owner, task.context_id,
                      task.state, dumps(task.status_message)
                      if task.status_message else None, task.updated_at,
                      task.created_at or task.updated_at,
                      dumps(task.metadata) if task.metadata else None,
                      task.tenant))
        for message in task.history or ():
            messages.append((task.id, task.context_id, task.owner,
                             task.agent, message["role"],
                             message["messageId"], dumps(message)))
            if deliveries and message["role"] == "user":
                retries.append((task.owner, task.agent, message["messageId"],
                                delivery_fingerprint(message, task.id,
                                                     task.context_id),
                                task.id, task.tenant))
        artifacts.extend((task.id, a["artifactId"], dumps(a))
                         for a in task.artifacts or ())
    return tasks, messages, artifacts, retries


def reassign_owner(conn: Any, mark: str, from_owner: str, to_owner: str) -> int:
    """``Storage.reassign_tasks`` in the caller's transaction on ``conn``
    (``mark``: the driver's placeholder); the number of tasks moved. Each
    UPDATE is conditional on the old owner: a second run moves nothing."""
    def run(sql: str, args: Sequence[Any]) -> int:
        return conn.execute(sql.replace("?", mark), args).rowcount

    run("UPDATE a2a_deliveries SET owner = ? WHERE owner = ? AND NOT EXISTS"
        " (SELECT 1 FROM a2a_deliveries d WHERE d.owner = ? AND d.agent ="
        " a2a_deliveries.agent AND d.message_id = a2a_deliveries.message_id"
        " AND d.tenant = a2a_deliveries.tenant)",
        (to_owner, from_owner, to_owner))
    for table in ("a2a_messages", "a2a_turns"):
        run("UPDATE " + table + " SET owner = ? WHERE owner = ?", (to_owner, from_owner))
    return run("UPDATE a2a_tasks SET owner = ? WHERE owner = ?", (to_owner, from_owner))


#: Seconds a claimer's heartbeat row is kept unseen (a killed claimer's):
#: far past any lease, so that /health can still say how long ago.
WORKER_ROWS_KEPT_SECONDS = 7 * 24 * 3600


class WriteHealth:
    """Whether this process's writes work, for ``/health``: the outcome of its
    last write, and when none was tried for ``PROBE_SECONDS``, of one write
    that changes nothing. A load balancer then stops sending calls to a
    process whose writes fail (disk full, read-only, file deleted) while its
    reads still work.

    ``reason(exc)`` is the backend's: a few words for a failed write, or None
    when ``exc`` says nothing about writes (busy: someone else writes)."""

    PROBE_SECONDS = 5.0

    def __init__(self, reason: Callable[[BaseException], Optional[str]]) -> None:
        self._reason = reason
        self._problem: Optional[str] = None
        self._at: Optional[float] = None  # monotonic time of the last outcome; None: none yet

    def succeeded(self) -> None:
        self._problem, self._at = None, time.monotonic()

    def failed(self, exc: BaseException) -> None:
        reason = self._reason(exc)
        if reason is not None:
            self._problem, self._at = reason, time.monotonic()

    def problem(self, probe: Callable[[], object]) -> Optional[str]:
        """None while writes work, else why not. ``probe()`` makes one write,
        whose transaction reports its outcome here."""
        if self._at is None or time.monotonic() - self._at >= self.PROBE_SECONDS:
            try:
                probe()
            except Exception as exc:
                if self._reason(exc) is None:
                    self._at = time.monotonic()  # busy: asked again later
        return self._problem
