"""The storage contract: what the service asks of a backend, and what each
operation guarantees. ``storage/sqlite`` and ``storage/postgres`` implement it.

Rules every backend keeps:

- **Stored form.** Messages, parts and artifacts are kept and returned exactly
  as given (today's A2A 0.3-shaped JSON dicts: ``kind``, ``messageId``,
  ``parts``...). The storage never converts them; bindings convert at the edge.
- **Conditional updates.** Every state change is one UPDATE whose WHERE clause
  states the state it leaves (``state = 'working'``, ``state IN
  WAITING_STATES``, ``state NOT IN TERMINAL_STATES``) and whose row count is
  checked: correctness never depends on one writer at a time. A terminal state
  is never overwritten.
- **The storage's clock.** Timestamps (``updated_at``, ``created_at``) and the
  stale-turn cutoff are decided inside the storage (PostgreSQL: the database's
  clock, so servers with skewed clocks agree); the service passes none.
  Timestamps are ISO 8601 UTC text with milliseconds and ``Z``
  (``2026-01-02T03:04:05.678Z``), which sort as text.
- **Errors.** Outcomes the caller caused are the ``StorageError`` subclasses
  of ``storage/errors.py``, with structured fields and no wire wording
  (bindings word them).
  Failures of the storage itself (busy, full, unreachable) are raised as
  ``StorageUnavailableError`` (``StorageBusyError``, ``StorageFullError``):
  nothing was stored, the call may be retried. Neither kind carries a wire
  code: ``protocol/errors.py`` answers them.
- **Ownership.** Every per-caller read and write is keyed by (owner, agent):
  another caller's task is ``NoSuchTaskError``, never "forbidden".
"""

# The records, states and errors are part of the contract (re-exported here).
from .contract import (
    AdminStorage, CredentialStorage, QueueStorage, TaskStorage, WaitStorage,
)
from .errors import (  # noqa: F401
    ArtifactsFullError, ContextMismatchError, KeyNotFoundError, MessageIdReusedError,
    NoSuchTaskError, QueueLimitReachedError, QuotaReachedError, RememberedKeyRevokedError,
    SchemaError, StorageBusyError, StorageError, StorageFullError, StorageReserveError,
    StorageUnavailableError, TaskEndedError, TaskNotWaitingError, UserExistsError,
    UserNotFoundError,
)
from .records import (  # noqa: F401
    Artifact, ClaimedTurn, KeyRow, Message, OperatorView, StoredTaskPage, TaskRecord,
    TurnStart,
)
from .states import (  # noqa: F401
    ARTIFACTS_FULL_TEXT, ATTEMPTS_EXHAUSTED_TEXT, LEASE_EXPIRED_TEXT, QUEUED_TEXT,
    STALE_TURN_TEXT,
    TERMINAL_STATES, WAITING_STATES,
)


class Storage(TaskStorage, QueueStorage, CredentialStorage, AdminStorage,
              WaitStorage):
    """Tasks, messages, artifacts, retry records, the turn queue, keys and
    users: the whole contract (``contract/``), one class per backend.

    One instance per app; safe to share between threads and (after a fork)
    processes: connections are per thread / pooled per process, opened lazily.
    """

    #: The sends one process runs at once unless A2A_RUNNING_SENDS says
    #: (``running.RunningSends``); 0: no limit. A backend whose statements
    #: wait on another process (PostgreSQL) needs many in flight to keep its
    #: process busy.
    RUNNING_SENDS = 0
