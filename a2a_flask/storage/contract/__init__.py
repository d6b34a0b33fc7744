"""The storage contract, one module per concern; ``storage.base.Storage``
inherits all four."""

from .admin import AdminStorage
from .credentials import CredentialStorage
from .queue import QueueStorage
from .tasks import TaskStorage

__all__ = ["AdminStorage", "CredentialStorage", "QueueStorage", "TaskStorage"]
