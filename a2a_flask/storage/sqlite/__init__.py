"""The SQLite backend: one file, several worker processes.

``connection`` (the file, its connections, transactions and schema),
``tasks`` (the request path), ``admin`` (listing, operations, bulk copy),
``credentials`` (keys and users), ``queue`` (background turns), ``file``
(lock, identity, failures, kept outcomes), ``migrations`` (the versioned
schema).
"""

from ..base import Storage
from .admin import AdminOperations
from .connection import SqliteConnections
from .credentials import CredentialOperations
from .queue import QueueOperations
from .tasks import TaskOperations


class SqliteStorage(QueueOperations, TaskOperations, AdminOperations,
                    CredentialOperations, SqliteConnections, Storage):
    """``Storage`` on one SQLite file."""
