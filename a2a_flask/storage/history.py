"""The reads of a task's history and state, written once for both backends:
each gives the columns a stored message is read back from
(``MESSAGE_COLUMNS``) and how it reads one back (``_loaded``), and runs a
statement with its own driver (``_one``, ``_all``, its marks)."""

from typing import Any, Callable, List, Optional, Sequence

from .common import Dialect, history_limit
from .records import Message


class HistoryReads(Dialect):
    """Mixed into each backend's ``TaskReads``."""

    #: The backend's: the columns of a message row ``_loaded`` reads.
    MESSAGE_COLUMNS: str
    _loaded: Callable[[Sequence[Any]], Message]
    _one: Callable[..., Any]
    _all: Callable[..., List[Any]]

    def _history(self, where: str, args: List[Any], before_seq: Optional[int],
                 limit: Optional[int]) -> List[Message]:
        """The messages matching ``where`` (``?`` marks), oldest first: all,
        or the last ``limit``, before ``before_seq`` when given."""
        sql = "SELECT " + self.MESSAGE_COLUMNS + " FROM a2a_messages WHERE " + where
        if before_seq is not None:
            sql += " AND seq < ?"
            args.append(before_seq)
        if limit is None:
            rows = self._all(self._marked(sql + " ORDER BY seq"), args)
        else:
            rows = self._all(self._marked(sql + " ORDER BY seq DESC LIMIT ?"),
                             args + [history_limit(limit)])[::-1]
        return [self._loaded(row) for row in rows]

    def task_history(self, task_id: str, before_seq: Optional[int] = None,
                     limit: Optional[int] = None) -> List[Message]:
        return self._history("task_id = ?", [task_id], before_seq, limit)

    def context_history(self, owner: str, agent: str, context_id: str,
                        before_seq: Optional[int] = None,
                        limit: Optional[int] = None, tenant: str = "") -> List[Message]:
        return self._history(
            "context_id = ? AND owner = ? AND agent = ? AND EXISTS (SELECT 1 FROM"
            " a2a_tasks t WHERE t.id = a2a_messages.task_id AND t.tenant = ?)",
            [context_id, owner, agent, tenant], before_seq, limit)

    def message_seq(self, task_id: str, message_id: str, role: str) -> Optional[int]:
        row = self._latest_message(task_id, message_id, role)
        return row[0] if row else None

    def _latest_message(self, task_id: str, message_id: str, role: str) -> Any:
        """(seq, context_id) of the task's latest message of ``role`` with
        that id (a message sent again is stored again), or None."""
        return self._one(self._marked(
            "SELECT seq, context_id FROM a2a_messages WHERE task_id = ? AND"
            " message_id = ? AND role = ? ORDER BY seq DESC LIMIT 1"),
            (task_id, message_id, role))

    def task_state(self, task_id: str) -> Optional[str]:
        row = self._one(self._marked("SELECT state FROM a2a_tasks WHERE id = ?"),
                        (task_id,))
        return row[0] if row else None
