"""The SQLite backend: one file, several worker processes.

``connection`` (the file, its connections, transactions, checkpoints;
a thread's lease of a connection in ``pool``),
``tasks``, ``outcomes`` and ``reading`` (the request path: its writes, a
turn's outcome and its keeping aside, its reads; the stored form of
messages and artifacts, written in ``outcomes``, read in ``reading``),
``admin`` (listing, operations, bulk copy), ``credentials`` (keys and
users), ``queue`` (background turns), ``file`` (lock, identity, failures,
kept outcomes), ``upkeep`` (the schema's migration, the health of writes),
``dashboard`` (the operator's page), ``migrations`` (the versioned schema).
"""

from ..base import Storage
from .admin import AdminOperations
from .connection import SqliteConnections
from .credentials import CredentialOperations
from .dashboard import DashboardOperations
from .queue import QueueOperations
from .reading import TaskReads
from .tasks import TaskOperations


# Ignored for mypy: location is a property here; start_turn takes queue
# (enqueue_turn's) before remembered_key, which callers pass by name.
class SqliteStorage(QueueOperations, TaskOperations, TaskReads, AdminOperations,  # type: ignore[override,misc]
                    DashboardOperations,
                    CredentialOperations, SqliteConnections, Storage):
    """``Storage`` on one SQLite file."""

    #: Its statements run in this process: two sends at once keep it busy.
    RUNNING_SENDS = 2
