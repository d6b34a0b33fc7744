"""Outcomes of the storage contract that a caller caused: structured fields,
no wire wording (each binding words them for its protocol version)."""

from typing import Optional

from .states import TERMINAL_STATES


class StorageError(Exception):
    """Base of the outcomes of the contract that a caller caused."""


class NoSuchTaskError(StorageError):
    """No task ``task_id`` of this (owner, agent)."""

    def __init__(self, task_id):
        super().__init__(task_id)
        self.task_id = task_id


class MessageIdReusedError(StorageError):
    """This (owner, agent, messageId) was stored with a different message."""

    def __init__(self, message_id):
        super().__init__(message_id)
        self.message_id = message_id


class ContextMismatchError(StorageError):
    """The message names a contextId other than its task's."""

    def __init__(self, task_id, task_context_id):
        super().__init__(task_id, task_context_id)
        self.task_id = task_id
        self.task_context_id = task_context_id


class TaskNotWaitingError(StorageError):
    """A continuation of a task that does not wait for input: terminal
    (``state in TERMINAL_STATES``) or running (another turn claimed it)."""

    def __init__(self, task_id, state, context_id):
        super().__init__(task_id, state)
        self.task_id = task_id
        self.state = state
        self.context_id = context_id

    @property
    def terminal(self):
        return self.state in TERMINAL_STATES


class TaskEndedError(StorageError):
    """``cancel_task`` of a task already in a terminal state."""

    def __init__(self, task_id, state):
        super().__init__(task_id, state)
        self.task_id = task_id
        self.state = state


class QueueLimitReachedError(StorageError):
    """The caller already has ``limit`` background turns queued (not yet
    started): nothing was stored."""

    def __init__(self, owner, limit):
        super().__init__(owner, limit)
        self.owner = owner
        self.limit = limit


class QuotaReachedError(StorageError):
    """The caller's stored tasks already count ``stored`` bytes, at least its
    quota of ``limit`` (A2A_MAX_STORED_BYTES_PER_CALLER): nothing was
    stored."""

    def __init__(self, owner, limit, stored):
        super().__init__(owner, limit, stored)
        self.owner = owner
        self.limit = limit
        self.stored = stored


class ArtifactsFullError(StorageError):
    """A turn's artifacts would bring its task's artifacts over ``limit``
    bytes (``total``, as ``records.stored_artifact_bytes`` counts them):
    nothing of the outcome was stored."""

    def __init__(self, task_id, total, limit):
        super().__init__(task_id, total, limit)
        self.task_id = task_id
        self.total = total
        self.limit = limit


class RememberedKeyRevokedError(StorageError):
    """The caller's API key (taken on trust: ``remembered_key``) is revoked or gone;
    nothing was written."""


class KeyNotFoundError(StorageError):
    """No API key of that id."""

    def __init__(self, key_id):
        super().__init__(key_id)
        self.key_id = key_id


class UserExistsError(StorageError):
    """A built-in user of that name exists already."""

    def __init__(self, name):
        super().__init__(name)
        self.name = name


class UserNotFoundError(StorageError):
    """No built-in user of that name."""

    def __init__(self, name):
        super().__init__(name)
        self.name = name


class SchemaError(StorageError):
    """The schema cannot be read, is newer than this code, or was written by
    a pre-release a2a_flask."""


def schema_refusal(version: int, start_version: int,
                   expected_version: int) -> Optional[SchemaError]:
    """The ``SchemaError`` for a stored schema ``version`` that ``migrate``
    must not touch, None for one it can bring to ``expected_version`` (0: no
    schema yet). Below ``start_version``: a pre-release a2a_flask's schema,
    whose migrations were squashed into the starting schema before 0.1.0, so
    no code reads it any more."""
    if version > expected_version:
        return SchemaError(
            "The database schema is version %d, newer than this a2a_flask "
            "(version %d): upgrade a2a_flask." % (version, expected_version))
    if 0 < version < start_version:
        return SchemaError(
            "The database schema is version %d, written by a pre-release "
            "a2a_flask: this a2a_flask (schema version %d on) cannot read or "
            "upgrade it. Point A2A_DATABASE at a new, empty database."
            % (version, start_version))
    return None


class UnsupportedSqliteError(StorageError):
    """The SQLite library Python loads is below the floor, or lacks a
    function the schema needs: refused at start, not at the first write."""


# Failures of the storage itself (busy, full, unreachable): nothing was
# stored and the call may be retried. Neutral too: the protocol layer
# (``protocol/errors.py``) answers them.


class StorageUnavailableError(Exception):
    """The storage could not be used: nothing was stored; a retry may
    succeed. ``message`` says why, in a sentence for the caller;
    ``kept_task_id`` names a task whose outcome was kept beside the database
    and is stored by its next read or a retry of the same message."""

    default_message = ("The storage is unavailable: nothing was stored. The call "
                       "may be retried.")
    #: What happened, without what it means for the call.
    what = "The storage is unavailable"

    def __init__(self, message=None, kept_task_id=None):
        self.message = message or self.default_message
        self.kept_task_id = kept_task_id
        #: (task id, its state) when the task was stored but the outcome of
        #: its turn was lost: "nothing was stored" would not be true.
        self.stored_task = None
        super().__init__(self.message)


class StorageFullError(StorageUnavailableError):
    """No space left for the storage."""

    default_message = ("The storage is full (no space left on the disk): nothing "
                       "was stored. The call may be retried once space is freed.")
    what = "The storage is full (no space left on the disk)"


class StorageReserveError(StorageFullError):
    """The disk's free space is under the reserve kept for reads, cancels
    and pruning (A2A_MIN_FREE_DISK_BYTES): new sends are refused."""

    default_message = ("The storage is nearly full: its disk has less free space "
                       "than the reserve kept for reads, cancels and pruning "
                       "(A2A_MIN_FREE_DISK_BYTES), so new messages are refused: "
                       "nothing was stored. The call may be retried once space "
                       "is freed.")
    what = "The storage's disk is at its free-space reserve"


class StorageBusyError(StorageUnavailableError):
    """Another writer held the storage past the busy timeout."""

    default_message = ("The storage is busy (another writer holds it): nothing was "
                       "stored. The call may be retried.")
    what = "The storage is busy (another writer holds it)"
