"""Outcomes of the storage contract that a caller caused: structured fields,
no wire wording (each binding words them for its protocol version)."""

from .states import TERMINAL_STATES


class StorageError(Exception):
    """Base of the outcomes of the contract that a caller caused."""


class TaskNotFound(StorageError):
    """No task ``task_id`` of this (owner, agent)."""

    def __init__(self, task_id):
        super().__init__(task_id)
        self.task_id = task_id


class MessageIdReused(StorageError):
    """This (owner, agent, messageId) was stored with a different message."""

    def __init__(self, message_id):
        super().__init__(message_id)
        self.message_id = message_id


class ContextMismatch(StorageError):
    """The message names a contextId other than its task's."""

    def __init__(self, task_id, task_context_id):
        super().__init__(task_id, task_context_id)
        self.task_id = task_id
        self.task_context_id = task_context_id


class TaskNotWaiting(StorageError):
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


class TaskNotCancelable(StorageError):
    """``cancel_task`` of a task already in a terminal state."""

    def __init__(self, task_id, state):
        super().__init__(task_id, state)
        self.task_id = task_id
        self.state = state


class QueueFull(StorageError):
    """The caller already has ``limit`` background turns queued (not yet
    started): nothing was stored."""

    def __init__(self, owner, limit):
        super().__init__(owner, limit)
        self.owner = owner
        self.limit = limit


class KeyNotLive(StorageError):
    """The caller's API key (taken on trust: ``live_key``) is revoked or gone;
    nothing was written."""


class KeyNotFound(StorageError):
    def __init__(self, key_id):
        super().__init__(key_id)
        self.key_id = key_id


class UserExists(StorageError):
    def __init__(self, name):
        super().__init__(name)
        self.name = name


class UserNotFound(StorageError):
    def __init__(self, name):
        super().__init__(name)
        self.name = name


class SchemaError(StorageError):
    """The schema cannot be read or is newer than this code."""
