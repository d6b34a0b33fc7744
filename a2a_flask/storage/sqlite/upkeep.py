"""What keeps the writes of ``SqliteStorage``'s file healthy, beside its
connections and transactions (``connection.py``): ``/health``'s word on
writes (the disk's free space, the reserve, the outcome of the last write
or of a probe), and the checkpoints that copy the WAL into the file after
a commit, outside the writers' lock."""

import logging
import os
import sqlite3
import time
from typing import Optional

from .file import READ_ONLY, write_failure

log = logging.getLogger("a2a_flask")


class WriteUpkeep:
    """Mixed into ``SqliteConnections`` (needs ``path``, ``transaction``,
    ``min_free_disk_bytes`` and the thread-local ``_local``)."""

    #: Free bytes under which ``writes_problem`` calls the disk full: a write
    #: that only overwrites pages the WAL already holds still succeeds there,
    #: the next that needs a new block does not.
    FULL_DISK_BYTES = 1 << 20

    #: What the reserve says for /health (``writes_problem``).
    RESERVE_REACHED = "the disk is at its free-space reserve (A2A_MIN_FREE_DISK_BYTES)"

    def free_disk_bytes(self) -> int:
        """Free bytes on the database's disk (for this process's user); -1
        when its folder cannot be read."""
        try:
            found = os.statvfs(os.path.dirname(os.path.abspath(self.path)))
        except OSError:
            return -1
        return found.f_bavail * found.f_frsize

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

    #: A checkpoint is due once the last one is this old and this thread has
    #: committed CHECKPOINT_COMMITS times since its own last one: at the
    #: benchmark's ~3,000 commits/s that is up to ~1,000 pages a checkpoint
    #: (fewer, more frequent ones cost more CPU: the hot pages are copied
    #: again each time); idle, nothing happens.
    CHECKPOINT_AGE_NS = 50 * 1000000
    CHECKPOINT_COMMITS = 8
    #: SQLite's own checkpoint, inside the COMMIT that crosses this many WAL
    #: pages: the backstop for when ours cannot keep up (the default, 1,000,
    #: would fire before ours under load).
    AUTO_CHECKPOINT_PAGES = 4000

    def _checkpoint_due(self):
        local = self._local
        local.commits = getattr(local, "commits", 0) + 1
        if local.commits < self.CHECKPOINT_COMMITS or time.time_ns() - getattr(
                local, "copied_at_ns", 0) < self.CHECKPOINT_AGE_NS:
            return False
        local.commits = 0
        return True

    @staticmethod
    def _checkpoint(conn):
        """Copy the WAL's new pages into the database file after the write
        lock is released. SQLite's automatic checkpoint runs inside the
        COMMIT that crosses its threshold, so that writer holds the lock for
        the milliseconds of copying while every other writer waits (message/
        send's p99: 23-25 ms against 18-20 ms this way, bench/README.md).
        A passive checkpoint never waits and blocks no writer; one that
        finds another checkpoint running returns at once. The automatic one
        stays as the backstop."""
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error as exc:  # the next one catches up
            log.debug("checkpoint skipped: %s", exc)
