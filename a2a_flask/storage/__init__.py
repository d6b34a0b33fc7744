"""Storage backends behind one contract (``base.Storage``).

``open_storage(settings)`` picks the backend from ``A2A_DATABASE``: a plain
path or ``sqlite:///path`` is SQLite (the default, one file);
``postgresql://...`` is PostgreSQL (the ``postgres`` extra), imported only then.
"""

from typing import TYPE_CHECKING

from .base import Storage  # noqa: F401  (the contract, for backends)

if TYPE_CHECKING:  # pragma: no cover
    from ..config import Settings

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def sqlite_path(database: str) -> str:
    """The file path of a SQLite ``A2A_DATABASE`` (plain or ``sqlite:///``)."""
    # sqlite:///relative/path, sqlite:////absolute/path (SQLAlchemy's form)
    if database.startswith("sqlite:///"):
        return database[len("sqlite:///"):]
    return database


def is_postgres(database: str) -> bool:
    return database.startswith(POSTGRES_SCHEMES)


def open_storage(settings: "Settings") -> Storage:
    """The backend for ``settings.database`` (not migrated: see ``migrate``)."""
    if is_postgres(settings.database):
        try:
            from .postgres import open_postgres
        except ImportError as exc:
            raise RuntimeError(
                "A2A_DATABASE is a PostgreSQL URL, but the PostgreSQL backend "
                "cannot be imported (%s): install the postgres extra, "
                "pip install 'a2a_flask[postgres]'" % exc) from exc
        return open_postgres(settings)
    from .sqlite import SqliteStorage
    return SqliteStorage(sqlite_path(settings.database), settings.busy_timeout_ms,
                         settings.sqlite_synchronous, settings.stale_turn_seconds,
                         auto_migrate=settings.auto_migrate,
                         min_free_disk_bytes=getattr(settings, "min_free_disk_bytes", 0))
