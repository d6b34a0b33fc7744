"""The storage contract, administration: the schema, failures of the storage
itself, operations (``flask a2a tasks`` / ``db``) and bulk copy."""

import abc
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from ..records import KeyRow, OperatorView, TaskRecord


class AdminStorage(abc.ABC):
    """Administration: the schema, storage failures, operations, bulk copy."""

    #: Where the data lives, for messages to an operator (no password in it).
    location: str = ""

    # -- schema -----------------------------------------------------------

    @abc.abstractmethod
    def migrate(self) -> None:
        """Create or upgrade the schema to ``expected_version()``; safe to call
        from every worker and server at once (serialized inside).
        ``SchemaError`` (``errors.schema_refusal``), nothing changed, for a
        schema below ``start_version()`` (pre-release) or above the expected."""

    @abc.abstractmethod
    def schema_version(self) -> Optional[int]:
        """The schema version found (None: no schema yet). ``SchemaError`` or a
        storage failure when it cannot be read."""

    @abc.abstractmethod
    def expected_version(self) -> int:
        """The schema version this code writes."""

    @abc.abstractmethod
    def start_version(self) -> int:
        """The schema version this code creates in a new database, the oldest
        ``migrate`` upgrades: one below it (but 0, no schema) was written by a
        pre-release a2a_flask and is refused (``errors.schema_refusal``)."""

    def close(self) -> None:  # noqa: B027 - a default: nothing to release
        """Release this thread's / process's connections (reopened on use)."""

    @abc.abstractmethod
    def failure(self, exc: BaseException) -> Optional[Exception]:
        """The ``StorageUnavailableError`` (itself, when ``exc`` is one) to
        answer for ``exc``, an exception of this backend's driver (logged,
        with the database, at most once every 10 s per cause; this thread's
        connection is dropped so that the next use reconnects); None when
        ``exc`` is not a failure of the storage (a bug: let it propagate)."""

    @abc.abstractmethod
    def writes_problem(self) -> Optional[str]:
        """None while this process's writes work; else why not, in a few words
        for ``/health`` ("the disk is full"): from the last write, or, when
        none was made for a few seconds, from one that changes nothing. Never
        raises for a failure of the storage."""

    # -- operations (flask a2a tasks / db) ---------------------------------------

    @abc.abstractmethod
    def show_task(self, task_id: str) -> Optional[TaskRecord]:
        """Any owner's task with its whole history and artifacts, or None."""

    @abc.abstractmethod
    def prunable_tasks(self, cutoff: str) -> List[TaskRecord]:
        """Terminal tasks updated before ``cutoff`` (ISO time), oldest first,
        without history or artifacts: what ``prune`` would delete."""

    @abc.abstractmethod
    def prune(self, cutoff: str) -> Iterator[Dict[str, int]]:
        """Delete terminal tasks updated before ``cutoff`` with their messages,
        artifacts and retry records, in batches (one transaction each); each
        DELETE is conditional on the task still terminal and old. Yields
        ``{"tasks", "messages", "artifacts", "deliveries"}`` counts per batch."""

    @abc.abstractmethod
    def cancel_tasks(self, owner: Optional[str] = None,
                     agent: Optional[str] = None,
                     task_id: Optional[str] = None,
                     states: Optional[Sequence[str]] = None,
                     dry_run: bool = False) -> List[TaskRecord]:
        """Cancel every task matching the filters given (None: any) whose
        state is one of ``states`` (None: any state but the terminal ones),
        as ``cancel_task`` cancels one: conditional UPDATEs (the state still
        one of ``states``) in batches, one transaction each, deleting the
        turns no worker has claimed; a running turn sees ``turn.canceled``
        and its outcome is discarded. Returns the tasks canceled as they
        were (no history, no artifacts), by id; ``dry_run``: those that
        would be, with nothing changed."""

    @abc.abstractmethod
    def reassign_tasks(self, from_owner: str, to_owner: str) -> int:
        """Give every task of ``from_owner`` to ``to_owner`` (a caller that
        changed how it authenticates: ``key:ID`` to ``oidc:SUB``), with their
        messages, queued turns and retry records, in one transaction; a retry
        record ``to_owner`` already holds for the same message stays the old
        owner's. Returns the number of tasks moved."""

    @abc.abstractmethod
    def task_counts(self) -> Dict[str, int]:
        """{state: number of tasks}."""

    @abc.abstractmethod
    def operator_view(self, failure_limit: int = 50) -> OperatorView:
        """What the operator's page shows (``records.OperatorView``): tasks
        by agent and state, tasks whose turn ended per minute of the last
        hour, the queue, the workers holding leases, the newest
        ``failure_limit`` failures of the last 24 hours. Read only; its cost
        is one pass over an index of the tasks for the counts and the turns
        per minute together (no table rows read for them, no sort of them),
        a few statements per (owner, agent, state) group, and the rows of
        the failures shown."""

    @abc.abstractmethod
    def check(self) -> List[str]:
        """Problems an integrity check found ([] when none)."""

    @abc.abstractmethod
    def backup(self, target: str) -> None:
        """A consistent copy to ``target`` (a path for SQLite), taken while
        the service runs."""

    # -- bulk copy (bench prefill, ``flask a2a db copy``) ------------------------

    @abc.abstractmethod
    def export_tasks(self, batch_size: int = 1000) -> Iterator[List[TaskRecord]]:
        """Every task, whole (history with user and agent messages, artifacts,
        metadata, created_at), in batches, oldest id first."""

    @abc.abstractmethod
    def import_tasks(self, records: Iterable[TaskRecord],
                     deliveries: bool = True) -> int:
        """Insert whole tasks as they are (ids, timestamps and states kept),
        in one transaction per call; with ``deliveries``, the retry record of
        every user message is recorded too. Returns the number of tasks.
        Fast enough for 1,000,000 tasks in batches of ~10,000."""

    @abc.abstractmethod
    def export_credentials(self) -> Tuple[List[Tuple[KeyRow, str]],
                                          List[Tuple[str, str, str, bool, Optional[str]]]]:
        """(every key with its hash, every user as (name, password hash,
        created_at, operator, tenant)): hashes only, never a secret."""

    @abc.abstractmethod
    def import_credentials(self, keys: Sequence[Tuple[KeyRow, str]],
                           users: Sequence[Tuple]) -> None:
        """Insert keys and users as exported (timestamps, revocations and
        operator flags kept; a user without the fourth field is no
        operator), in one transaction; an id or name already present is
        kept."""
