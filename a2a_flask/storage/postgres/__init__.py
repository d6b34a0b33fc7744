"""The PostgreSQL backend: several app servers sharing one database.

Selected by ``A2A_DATABASE=postgresql://user@host/db`` (the ``postgres``
extra: psycopg 3 and psycopg_pool). ``connection`` (one pool per worker
process, failures, schema), ``tasks``, ``outcomes`` and ``reading`` (the
request path: a turn's start, its outcome, the reads), ``admin`` (listing,
operations, bulk copy), ``credentials`` (keys and users), ``queue``
(background turns, claimed with FOR UPDATE SKIP LOCKED), ``dashboard`` (the
operator's page), ``migrations`` (the versioned schema, serialized by an
advisory lock).
"""

from typing import TYPE_CHECKING

from ..base import Storage
from .admin import AdminOperations
from .connection import PostgresConnections, is_storage_failure, storage_failure  # noqa: F401
from .credentials import CredentialOperations
from .dashboard import DashboardOperations
from .outcomes import OutcomeWrites
from .queue import QueueOperations
from .reading import TaskReads
from .tasks import TaskOperations

if TYPE_CHECKING:  # pragma: no cover
    from ...config import Settings


class PostgresStorage(QueueOperations, TaskOperations, OutcomeWrites, TaskReads, AdminOperations,
                      DashboardOperations,
                      CredentialOperations, PostgresConnections, Storage):
    """``Storage`` on one PostgreSQL database."""

    def __init__(self, url, busy_timeout_ms=5000, stale_turn_seconds=3600,
                 auto_migrate=True):
        PostgresConnections.__init__(self, url, busy_timeout_ms, stale_turn_seconds,
                                     auto_migrate)
        self._task_sql()
        self._read_sqls()


def open_postgres(settings: "Settings") -> Storage:
    """The backend for ``settings.database`` (a ``postgresql://`` URL)."""
    url = settings.database
    if url.startswith("postgres://"):  # libpq takes both; keep one spelling
        url = "postgresql://" + url[len("postgres://"):]
    return PostgresStorage(url, settings.busy_timeout_ms, settings.stale_turn_seconds,
                           auto_migrate=settings.auto_migrate)
