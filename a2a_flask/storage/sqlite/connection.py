"""The SQLite file of ``SqliteStorage``: its connections opened (a thread's
lease of one from the process's bounded pool is in ``pool.py``), short
write transactions behind the process's writers' lock, and what every write
runs (the disk's free space for the reserve, the checkpoints after commits);
the schema's migration at open and ``/health``'s word on writes are in
``upkeep.py``.

WAL journal, a busy timeout, short ``BEGIN IMMEDIATE`` write transactions (so
a writer takes the lock up front instead of failing to upgrade a read lock).
Writers queue on an advisory file lock (``<database>-lock``) before ``BEGIN
IMMEDIATE``: the threads of a process on a lock that wakes the next at once,
one thread per process on the file lock, tried every 0.1 ms doubling to
2 ms, where SQLite's busy handler sleeps 1, 2, 5, 10... ms between tries.
The two waits together stay within the busy timeout. A write that is one
statement (``write_statement``: a send's start and outcome) skips that queue:
it holds SQLite's lock only inside one ``sqlite3_step``; at most ``WRITERS``
of a process are in SQLite at once (``pool.py``), the next waiting for a
slot, then in SQLite's busy handler, within the same bound.
"""

import logging
import os
import sqlite3
import threading
import time
import urllib.parse
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any, List, Optional, Sequence

from ..errors import StorageUnavailableError
from ..common import WriteHealth, now_iso
from .file import (
    READ_ONLY, KeptOutcomes, ProcessWriteLock, file_identity, is_storage_failure,
    rollback, storage_failure, write_failure,
)
from . import migrations
from .library import check_sqlite_library
from .migrations import stored_version
from .pool import ConnectionLeases, ConnectionWaitTimeout
from .upkeep import WriteUpkeep

log = logging.getLogger("a2a_flask")


def _utc_now():
    return datetime.now(timezone.utc)


class SqliteConnections(ConnectionLeases, WriteUpkeep):
    """One SQLite file; one connection per thread (leased from the process's
    pool: ``pool.ConnectionLeases``), one lock per process. The lock file is
    opened once per process and closed when the Store is garbage-collected.
    """

    #: The storage's clock (a test may set a fixed one to make tasks old).
    clock = staticmethod(_utc_now)

    def __init__(self, path, busy_timeout_ms=5000, synchronous="NORMAL",
                 stale_turn_seconds=3600, auto_migrate=True, min_free_disk_bytes=0):
        check_sqlite_library()
        self.path = path
        #: The folder whose disk ``free_disk_bytes`` measures.
        self._folder = os.path.dirname(os.path.abspath(path))
        self.busy_timeout_ms = int(busy_timeout_ms)
        self.synchronous = synchronous
        #: A turn ``working`` for longer lost its worker (killed mid-turn).
        self.stale_turn = timedelta(seconds=stale_turn_seconds)
        self._local = threading.local()
        self._pool = None  # this process's (see pool.ConnectionLeases)
        self._pool_lock = threading.Lock()
        self._writer = ProcessWriteLock(path + "-lock")
        self._kept = KeptOutcomes(path + "-outcomes")
        #: False (A2A_AUTO_MIGRATE=0): the file is opened as it is, and only
        #: ``migrate`` (``flask a2a db upgrade``) changes its schema.
        self.auto_migrate = auto_migrate
        #: The file is in place: from then on it is opened, never created
        #: (a deleted file is an outage, not a fresh empty service).
        self._ready = False
        self._last_attempt = (0.0, None)  # (monotonic time, error) of migrate
        self._writes = WriteHealth(write_failure)
        #: Bumped when a write finds the file read-only: every connection
        #: opened before is closed at its thread's next use (see ``retire``).
        self._generation = 0
        #: A2A_MIN_FREE_DISK_BYTES: under it new sends are refused and
        #: ``writes_problem`` says so (0: no reserve).
        self.min_free_disk_bytes = int(min_free_disk_bytes)
        self._free_disk_seen = (float("-inf"), 0)  # (monotonic time, bytes)

    # -- connections and transactions ----------------------------------

    #: How a statement marks a parameter, positional and named.
    MARK, NAMED = "?", ":%s"
    #: The state compared when a context is given: its index (a conversation's
    #: few tasks) serves, not the state's; "+state" is no index term.
    STATE_TERM = "+state"

    def _one(self, sql: str, args: Any = ()) -> Any:
        return self.connection().execute(sql, args).fetchone()

    def _all(self, sql: str, args: Any = ()) -> List[Any]:
        return self.connection().execute(sql, args).fetchall()

    def _open(self, create):
        if create:
            conn = sqlite3.connect(self.path, isolation_level=None,
                                   check_same_thread=False)
        else:
            uri = "file:%s?mode=rw" % urllib.parse.quote(os.path.abspath(self.path))
            conn = sqlite3.connect(uri, uri=True, isolation_level=None,
                                   check_same_thread=False)
        try:
            conn.execute("PRAGMA busy_timeout = %d" % self.busy_timeout_ms)
            conn.execute("PRAGMA synchronous = %s" % self.synchronous)
            conn.execute("PRAGMA wal_autocheckpoint = %d" % self.AUTO_CHECKPOINT_PAGES)
            conn.execute("PRAGMA journal_size_limit = %d" % self.WAL_KEPT_BYTES)
            identity = file_identity(self.path)
        except BaseException:
            conn.close()
            raise
        return conn, identity

    def failed(self, exc):
        """The ``StorageUnavailableError`` for ``exc`` (logged with the path);
        this thread's connection is dropped: a connection that met a
        read-only or vanished file stays so, a new one sees the file as it is.
        A read-only file retires every connection of the process (``retire``)."""
        self.drop_connection()
        if write_failure(exc) == READ_ONLY:
            self.retire()
        return storage_failure(exc, self.path)

    def retire(self) -> None:
        """Close every connection of this process: the idle ones now, the
        ones threads hold at their next use or hand-back. SQLite shares a
        file's shared memory (``-shm``) between the connections of a process
        that have read it; opened while the file was read-only it stays
        read-only until the last of them closes, and every write of the
        process, on new connections too, then fails with "attempt to write a
        readonly database" long after the file is writable again (a claimer
        loop's connection, which only reads between heartbeats, held it for
        up to a heartbeat, 10 s)."""
        self._generation += 1
        pool = self._own_pool()
        if pool is not None:
            pool.close_idle()

    def failure(self, exc: BaseException) -> Optional[Exception]:
        """See ``Storage.failure``."""
        if isinstance(exc, StorageUnavailableError):
            return exc
        return self.failed(exc) if is_storage_failure(exc) else None

    def check_same_file(self):
        """``StorageUnavailableError`` when the database file was deleted or
        replaced since this thread opened it: a commit would go to a file
        nobody will ever open again. One stat() of the path (a few µs)."""
        expected = getattr(self._local, "identity", None)
        try:
            stat = os.stat(self.path)
        except OSError:
            found = None
        else:
            found = stat.st_dev, stat.st_ino
            # Only checkpoints write the database file in WAL mode: its mtime
            # is when the last one copied pages (see _checkpoint_due).
            self._local.copied_at_ns = stat.st_mtime_ns
        if found != expected:
            self.drop_connection()
            raise StorageUnavailableError(
                "The storage is unavailable: the database file was deleted or "
                "replaced while the service ran; nothing was stored. The call "
                "may be retried once the file is restored.")

    @contextmanager
    def transaction(self):
        """A short write transaction, holding the write lock from the start.

        Commits only into the file the service was configured with: a file
        deleted or replaced meanwhile is detected before the commit. Its
        outcome tells ``writes_problem``.
        """
        try:
            with self._transaction() as conn:
                yield conn
        except BaseException as exc:
            self._writes.failed(exc)
            raise
        self._writes.succeeded()

    @contextmanager
    def _transaction(self):
        # One bound for the waits of a write: for a connection, for our
        # writers' lock and in SQLite's busy handler together.
        deadline = time.monotonic() + self.busy_timeout_ms / 1000.0
        # A thread with no connection yet takes one once it holds the lock, past
        # the pool's bound if none is idle: a burst of writers queued for the
        # lock held every connection of the process (docs/benchmarks.md), and
        # the lock's holder must never wait for one held by those it blocks.
        # A file not opened yet is opened first: its migration takes the lock.
        conn = None
        if self._holds_connection() or not self._ready:
            conn = self.connection(deadline)
        with self._writer.hold(deadline):
            if conn is None:
                conn = self.connection(deadline, past_limit=True)
            # SQLite's busy wait (a host app's writer, a checkpoint) gets
            # what is left of the bound after the wait for our lock.
            shortened = self._busy_wait_until(conn, deadline)
            try:
                conn.execute("BEGIN IMMEDIATE")
            finally:
                if shortened:
                    self._busy_wait_whole(conn)
            try:
                yield conn
                self.check_same_file()
            except BaseException:
                rollback(conn)
                raise
            try:
                conn.execute("COMMIT")
            except BaseException:
                rollback(conn)
                raise
        if self._checkpoint_due():
            self._checkpoint(conn)

    def _busy_wait_until(self, conn, deadline):
        """SQLite's busy wait on ``conn`` cut to what is left until
        ``deadline`` (``time.monotonic()``); True when it was cut (then
        ``_busy_wait_whole`` gives it back its whole length)."""
        left_ms = int((deadline - time.monotonic()) * 1000)
        if left_ms >= self.busy_timeout_ms - 1:
            return False
        conn.execute("PRAGMA busy_timeout = %d" % max(left_ms, 0))
        return True

    def _busy_wait_whole(self, conn):
        conn.execute("PRAGMA busy_timeout = %d" % self.busy_timeout_ms)

    def write_connection(self, deadline: float) -> sqlite3.Connection:
        """This thread's connection, taken for a write: failing to take one
        is a failed write (``writes_problem``)."""
        try:
            return self.connection(deadline)
        except BaseException as exc:
            self._writes.failed(exc)
            raise

    def write_statement(self, sql: str, params: Sequence,
                        deadline: Optional[float] = None) -> sqlite3.Cursor:
        """One write statement in autocommit mode: its own transaction,
        taken, committed and released inside one ``sqlite3_step``, which
        runs without the interpreter's lock. A transaction of several
        statements holds the file's write lock while its thread waits for
        the interpreter between them, and every writer of every process
        waits behind it (docs/benchmarks.md); this one never does, so it
        does not queue on the writers' lock either: at most ``WRITERS`` of
        this process at once, then SQLite's busy wait, within what is left
        of the busy timeout after the waits for a connection and a slot.
        The file is checked as ``transaction`` checks it.
        ``deadline``: the bound's end (``time.monotonic()``), for a caller
        that took the connection first; by default the busy timeout from now."""
        if deadline is None:
            deadline = time.monotonic() + self.busy_timeout_ms / 1000.0
        try:
            conn = self.connection(deadline)
            writers = self._connection_pool().writers
            if not writers.take(max(0.0, deadline - time.monotonic())):
                raise ConnectionWaitTimeout(
                    "database is locked: this process's %d writes in progress "
                    "took the whole busy timeout" % self.WRITERS)
            try:
                # After the wait for a slot: a file replaced during it is seen.
                self.check_same_file()
                shortened = self._busy_wait_until(conn, deadline)
                try:
                    cursor = conn.execute(sql, params)
                finally:
                    if shortened:
                        self._busy_wait_whole(conn)
            finally:
                writers.give_back()
        except BaseException as exc:
            self._writes.failed(exc)
            raise
        self._writes.succeeded()
        if self._checkpoint_due():
            self._checkpoint(conn)
        return cursor

    # -- what every write runs -----------------------------------------

    def free_disk_bytes(self) -> int:
        """Free bytes on the database's disk (for this process's user); -1
        when its folder cannot be read."""
        try:
            found = os.statvfs(self._folder)
        except OSError:
            return -1
        return found.f_bavail * found.f_frsize

    #: How old a measure of the free space the sends' reserve check may reuse,
    #: in seconds, while it found over twice the reserve free. ``os.statvfs``
    #: lets the interpreter's lock go, and under gthread each let-go is a
    #: turn between threads (docs/benchmarks.md); writing the reserve away
    #: within this would take gigabytes a second.
    FREE_DISK_SEEN_SECONDS = 0.1

    def at_reserve(self) -> bool:
        """Whether the disk has less free space than A2A_MIN_FREE_DISK_BYTES
        (never when it is 0), measured anew when the last measure is older
        than ``FREE_DISK_SEEN_SECONDS`` or found less than twice the reserve."""
        reserve = self.min_free_disk_bytes
        if not reserve:
            return False
        now = time.monotonic()
        seen_at, free = self._free_disk_seen
        if now - seen_at > self.FREE_DISK_SEEN_SECONDS or free < 2 * reserve:
            free = self.free_disk_bytes()
            self._free_disk_seen = (now, free)
        return free < reserve

    #: A checkpoint is due once the last one is this old and this thread has
    #: committed CHECKPOINT_COMMITS times since its own last one: at the
    #: benchmark's ~3,000 commits/s that is up to ~1,000 pages a checkpoint
    #: (fewer, more frequent ones cost more CPU: the hot pages are copied
    #: again each time); idle, nothing happens.
    CHECKPOINT_AGE_NS = 50 * 1000000
    CHECKPOINT_COMMITS = 8
    #: The page size of a file the storage creates. Every commit writes each
    #: page it changed to the WAL whole, and each checkpoint copies it again:
    #: a send changes a few dozen pages (rows and index entries of a few
    #: hundred bytes), so SQLite's default of 4,096 bytes writes about three
    #: times the bytes that 1,024 does for the same rows (docs/benchmarks.md,
    #: "Smaller pages").
    PAGE_SIZE = 1024
    #: SQLite's own checkpoint, inside the COMMIT that crosses this many WAL
    #: pages: the backstop for when ours cannot keep up (the default, 1,000,
    #: would fire before ours under load).
    AUTO_CHECKPOINT_PAGES = 4000
    #: What the WAL file keeps of its size when SQLite starts it over (all of
    #: it copied, no reader in it): a burst, or a reader holding checkpoints
    #: back, grows it (70-140 MB seen under the benchmark's load) and SQLite
    #: otherwise keeps that size on disk for good, reusing it from the start.
    WAL_KEPT_BYTES = 64 << 20

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

    @property
    def location(self):
        return self.path

    def close(self) -> None:
        self.drop_connection()
        pool = self._own_pool()
        if pool is not None:
            pool.close_idle()

    def connections_in_use(self):
        """Connections held by this process's threads now (0 before any)."""
        pool = self._own_pool()
        return pool.in_use() if pool is not None else 0

    def expected_version(self) -> int:
        return migrations.EXPECTED_VERSION

    def start_version(self) -> int:
        return migrations.START_VERSION

    def schema_version(self) -> Optional[int]:
        """The schema version of the file, by one trivial query (0: none)."""
        return stored_version(self.connection())

    # The clock is this process's: SQLite has no server clock.
    def _now(self):
        return now_iso(self.clock())

    def _stale_cutoff(self):
        return now_iso(self.clock() - self.stale_turn)
