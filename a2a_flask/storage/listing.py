"""The tasks a filter selects, written once for both backends:
``list_tasks`` and ``count_tasks`` (``contract/tasks.py``), ``cancel_tasks``
(``contract/admin.py``). The filters and the cursor are shared; each
backend reads its page (``_task_page``) and cancels its batches
(``_cancel_selected``) its own way, and runs a statement with its own
driver (``_one``; ``NAMED``: how it writes a named parameter)."""

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .common import decode_cursor, task_filters, where_clause
from .records import StoredTaskPage, TaskRecord
from .states import OPEN_STATES


class TaskListing:
    """Mixed into each backend's ``AdminOperations``."""

    # The backend's (its connections class, later in the storage's bases).
    NAMED: str
    STATE_TERM: str
    _one: Callable[..., Any]

    def _named(self, name: str) -> str:
        return self.NAMED % name

    def _filters(self, owner: Optional[str], agent: Optional[str],
                 context_id: Optional[str] = None, state: Optional[str] = None,
                 updated_after: Optional[str] = None, tenant: Optional[str] = None,
                 task_id: Optional[str] = None) -> Tuple[List[str], Dict[str, Any]]:
        return task_filters(self._named, owner, agent, context_id, state,
                            updated_after, tenant, self.STATE_TERM, task_id)

    def list_tasks(self, owner: Optional[str] = None, agent: Optional[str] = None,
                   context_id: Optional[str] = None, state: Optional[str] = None,
                   updated_after: Optional[str] = None, limit: int = 50,
                   cursor: Optional[str] = None, history_length: Optional[int] = 0,
                   include_artifacts: bool = False,
                   max_bytes: Optional[int] = None,
                   tenant: Optional[str] = None) -> StoredTaskPage:
        where, params = self._filters(owner, agent, context_id, state,
                                      updated_after, tenant)
        if cursor is not None:
            where.append("(updated_at, id) < (%s, %s)" % (
                self._named("c_at"), self._named("c_id")))
            params["c_at"], params["c_id"] = decode_cursor(cursor)
        params["limit"] = limit + 1
        return self._task_page(where, params, limit, history_length,
                               include_artifacts, max_bytes)

    def _task_page(self, where: List[str], params: Dict[str, Any], limit: int,
                   history_length: Optional[int], include_artifacts: bool,
                   max_bytes: Optional[int]) -> StoredTaskPage:
        """The page of the tasks matching ``where``, newest first, at most
        ``limit`` (``params["limit"]`` is one more: whether more follow)."""
        raise NotImplementedError  # pragma: no cover

    def count_tasks(self, owner: Optional[str] = None, agent: Optional[str] = None,
                    context_id: Optional[str] = None, state: Optional[str] = None,
                    updated_after: Optional[str] = None,
                    tenant: Optional[str] = None) -> int:
        where, params = self._filters(owner, agent, context_id, state,
                                      updated_after, tenant)
        return int(self._one("SELECT count(*) FROM a2a_tasks" + where_clause(where),
                             params)[0])

    def cancel_tasks(self, owner: Optional[str] = None, agent: Optional[str] = None,
                     task_id: Optional[str] = None, states: Optional[Sequence[str]] = None,
                     dry_run: bool = False) -> List[TaskRecord]:
        where, params = self._filters(owner, agent, task_id=task_id)
        return self._cancel_selected(where, params, sorted(states or OPEN_STATES),
                                     dry_run)

    def _cancel_selected(self, where: List[str], params: Dict[str, Any],
                         states: List[str], dry_run: bool) -> List[TaskRecord]:
        """Cancel the tasks matching ``where`` still in ``states``, a batch
        per transaction (none with ``dry_run``); their records."""
        raise NotImplementedError  # pragma: no cover
