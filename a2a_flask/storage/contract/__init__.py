"""The storage contract, one module per concern; ``storage.base.Storage``
inherits them all."""

from .admin import AdminStorage
from .credentials import CredentialStorage
from .queue import QueueStorage
from .tasks import TaskStorage
from .waits import WaitStorage

__all__ = ["AdminStorage", "CredentialStorage", "QueueStorage", "TaskStorage",
           "WaitStorage"]
