"""What keeps the schema and the writes of ``SqliteStorage``'s file healthy,
beside its connections and transactions (``connection.py``): the schema's
creation or upgrade when the file is opened (``migrate``, and its retry
while the file is unavailable at start), and ``/health``'s word on writes
(the disk's free space, the reserve, the outcome of the last write or of a
probe). A warm send or read calls nothing here: what every write runs (the
free-disk measure, the checkpoints after commits) is in ``connection.py``."""

import errno
import os
import sqlite3
import time
from typing import Optional

from . import migrations
from .file import READ_ONLY, rollback, write_failure
from .migrations import stored_version


class WriteUpkeep:
    """Mixed into ``SqliteConnections`` (needs its ``path``, ``_open``,
    ``_writer``, ``transaction``, ``_writes``, ``free_disk_bytes``,
    ``min_free_disk_bytes``, ``retire`` and the connection's lease)."""

    #: Free bytes under which ``writes_problem`` calls the disk full: a write
    #: that only overwrites pages the WAL already holds still succeeds there,
    #: the next that needs a new block does not.
    FULL_DISK_BYTES = 1 << 20

    #: What the reserve says for /health (``writes_problem``).
    RESERVE_REACHED = "the disk is at its free-space reserve (A2A_MIN_FREE_DISK_BYTES)"

    def writes_problem(self) -> Optional[str]:
        """See ``Storage.writes_problem``. Under A2A_MIN_FREE_DISK_BYTES the
        sends are refused (``_check_reserve``): the reserve is reached."""
        if not os.path.exists(self.path):
            return "the database file is missing"
        free = self.free_disk_bytes()
        if free < 0:
            return "the database file is missing"
        if free < self.FULL_DISK_BYTES:
            return "the disk is full"
        if free < self.min_free_disk_bytes:
            return self.RESERVE_REACHED
        return self._writes.problem(self._probe_write)

    def _probe_write(self):
        try:
            with self.transaction() as conn:
                conn.execute("UPDATE a2a_schema_version SET version = version")
        except Exception as exc:
            if write_failure(exc) == READ_ONLY:  # as a caller's write would
                self.drop_connection()
                self.retire()
            raise

    def migrate(self) -> None:
        """Create or upgrade the schema; safe to call from every worker."""
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        if not os.path.exists(self.path) and os.path.exists(self.path + "-lock"):
            # Its lock file says it was in use: deleted under the service. An
            # empty new file would silently serve without keys and tasks.
            raise FileNotFoundError(
                errno.ENOENT, "the database file is missing but its lock file "
                "shows it was in use: restore it from a backup, or delete %s-lock "
                "to start with an empty database" % self.path, self.path)
        conn, _ = self._open(create=True)  # the file first, then its lock file
        try:
            # One process at a time, from the switch to WAL on: processes
            # starting together on a new file otherwise meet "database is
            # locked" (changing the journal mode takes no busy wait).
            with self._writer.hold():
                # Both properties of the file, kept by every opener; the page
                # size only takes on a file with no tables yet (a host's own
                # database keeps its own).
                conn.execute("PRAGMA page_size = %d" % self.PAGE_SIZE)
                conn.execute("PRAGMA journal_mode = WAL")
                # A current schema takes no write transaction: SQLite 3.32
                # and older refuse BEGIN IMMEDIATE on a read-only file (3.34
                # begins a read there), and the process could not even read.
                if stored_version(conn) != migrations.EXPECTED_VERSION:
                    conn.execute("BEGIN IMMEDIATE")
                    try:  # reads the version again, in the write transaction
                        migrations.migrate(conn)
                    except BaseException:
                        rollback(conn)
                        raise
                    conn.execute("COMMIT")
        finally:
            conn.close()
        self._ready = True

    def _retry_migrate(self):
        """Open the storage that was unavailable at start, at most once a second."""
        at, error = self._last_attempt
        if error is not None and time.monotonic() - at < 1.0:
            raise error
        try:
            self.migrate()
        except (sqlite3.Error, OSError) as exc:
            self._last_attempt = (time.monotonic(), exc)
            raise
