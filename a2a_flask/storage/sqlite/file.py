"""The database file as the operating system sees it: its writers' lock,
its identity, and what its failures mean to a caller. No SQL here.
"""

import errno
import json
import logging
import os
import sqlite3
import threading
import time
import weakref
from contextlib import contextmanager
from typing import Any, Dict, Iterator, Optional, Tuple

try:
    import fcntl
except ImportError:  # not POSIX: SQLite's busy timeout alone
    fcntl = None  # type: ignore[assignment]

from ..errors import StorageBusyError, StorageFullError, StorageUnavailableError

log = logging.getLogger("a2a_flask")


def file_identity(path: str) -> Tuple[int, int]:
    """(device, inode) of the file at ``path``: changes when it is replaced."""
    stat = os.stat(path)
    return stat.st_dev, stat.st_ino


def rollback(conn: sqlite3.Connection) -> None:
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error:  # no transaction left to roll back (failed COMMIT)
        pass


_SQLITE_BUGS = (sqlite3.IntegrityError, sqlite3.ProgrammingError,
                sqlite3.InterfaceError, sqlite3.DataError)
_FULL_ERRNOS = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))
# (path, text) -> when last logged: an outage logs, not floods
_logged: Dict[Tuple[str, str], float] = {}


def is_storage_failure(exc: BaseException) -> bool:
    """True for a failure of the storage itself (not of our SQL)."""
    if isinstance(exc, sqlite3.DatabaseError):
        return not isinstance(exc, _SQLITE_BUGS)
    return isinstance(exc, OSError)


def storage_failure(exc: BaseException, path: str) -> StorageUnavailableError:
    """The ``StorageUnavailableError`` for a storage failure, logged with the database path
    (once every 10 s per cause): full, busy, or unavailable, all retryable."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    if (name.startswith("SQLITE_FULL") or "is full" in text
            or getattr(exc, "errno", None) in _FULL_ERRNOS):
        error: StorageUnavailableError = StorageFullError()
    elif name.startswith("SQLITE_BUSY") or "database is locked" in text:
        error = StorageBusyError()
    else:
        error = StorageUnavailableError()
    now = time.monotonic()
    if now - _logged.get((path, text), -60.0) >= 10.0:
        _logged[(path, text)] = now
        log.error("storage unavailable: database %s: %s: %s (%s)", path,
                  type(exc).__name__, text, name or "no SQLite code")
    return error


#: What ``write_failure`` says of a write the file refused as read-only.
READ_ONLY = "the database file is read-only"


def write_failure(exc: BaseException) -> Optional[str]:
    """The few words ``/health`` gives for a write that failed with ``exc``;
    None when ``exc`` says nothing about writes (busy, our own error)."""
    if isinstance(exc, StorageBusyError):
        return None
    if isinstance(exc, StorageFullError):
        return "the disk is full"
    if isinstance(exc, StorageUnavailableError):  # check_same_file's
        return "the database file was deleted or replaced"
    if not is_storage_failure(exc) or isinstance(exc, WriteLockTimeout):
        return None
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    code = getattr(exc, "errno", None)
    if name.startswith("SQLITE_FULL") or "is full" in text or code in _FULL_ERRNOS:
        return "the disk is full"
    if name.startswith("SQLITE_BUSY") or "database is locked" in text:
        return None
    if (name.startswith("SQLITE_READONLY") or "readonly" in text
            or code in (errno.EROFS, errno.EACCES, errno.EPERM)):
        return READ_ONLY
    if (name.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_CORRUPT",
                         "SQLITE_NOTADB"))
            or "disk I/O error" in text or "unable to open" in text
            or "malformed" in text or isinstance(exc, OSError)):
        return "writes fail (%s)" % (name or text)
    return None  # e.g. no schema yet: /health says so itself


class WriteLockTimeout(sqlite3.OperationalError):
    """The writers' lock was not free within the busy timeout: answered as
    SQLite's own "database is locked" (``StorageBusyError``)."""

    sqlite_errorname = "SQLITE_BUSY"


#: Pauses between two tries of another process's writers' lock: from the
#: first, doubling, up to the second (seconds). Only one thread of a process
#: tries at a time; the others wait on its thread lock, woken at once.
LOCK_PAUSES = (0.0001, 0.002)


class ProcessWriteLock:
    """The writers' queue: one ``flock``'d descriptor per process, and a
    thread lock, since flock does not exclude threads sharing a descriptor.

    ``hold(deadline)`` gives up at ``deadline`` (``time.monotonic()``) with
    ``WriteLockTimeout``: a write waits at most the busy timeout in all, for
    this lock and SQLite's together. flock has no timeout: a process whose
    lock is taken tries again after a pause (LOCK_PAUSES).

    Reopened after a fork (a descriptor inherited from the parent shares its
    lock with every sibling); closed when its Store is garbage-collected.
    """

    def __init__(self, path):
        self.path = path
        self._pid = None
        self._fd = None
        self._threads = threading.Lock()
        self._opening = threading.Lock()
        self._finalizer = None

    def _descriptor(self):
        pid = os.getpid()
        if self._pid != pid:
            with self._opening:
                if self._pid != pid:
                    if self._finalizer is not None:
                        self._finalizer()  # an inherited descriptor: ours only
                    self._threads = threading.Lock()
                    self._fd = self._open_lock_file()
                    self._finalizer = weakref.finalize(self, _close_quietly, self._fd)
                    self._pid = pid
        return self._fd

    def _open_lock_file(self):
        if fcntl is None:
            return None
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            # A read-only lock file (or folder) still locks: flock needs no write.
            return os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)

    @contextmanager
    def hold(self, deadline: Optional[float] = None) -> Iterator["ProcessWriteLock"]:
        """The lock for the block; ``WriteLockTimeout`` at ``deadline``."""
        fd = self._descriptor()
        threads = self._threads
        if deadline is None:
            threads.acquire()
        elif not threads.acquire(timeout=max(deadline - time.monotonic(), 0)):
            raise self._timeout()
        try:
            if fd is not None:
                self._flock(fd, deadline)
            try:
                yield self
            finally:
                if fd is not None:
                    fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            threads.release()

    def _flock(self, fd, deadline):
        if deadline is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return
        pause = LOCK_PAUSES[0]
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._timeout() from None
                time.sleep(min(pause, left))
                pause = min(pause * 2, LOCK_PAUSES[1])

    def _timeout(self):
        return WriteLockTimeout("database is locked (the writers' lock %s was "
                                "not free within the busy timeout)" % self.path)



def _close_quietly(fd):
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass


class KeptOutcomes:
    """Outcomes of turns the database refused, kept as files until stored.

    ``<database>-outcomes/<task id>.json``, written whole (fsync, rename):
    what a worker computed survives the worker, for any worker to store.
    """

    def __init__(self, folder):
        self.folder = folder

    def _path(self, task_id):
        # Our ids are ASCII letters, digits, "_" and "-" (base64url): nothing
        # else reaches a path.
        if not (task_id.isascii()
                and task_id.replace("_", "").replace("-", "").isalnum()):
            return None
        return os.path.join(self.folder, task_id + ".json")

    def keep(self, task_id: str, outcome: Dict[str, Any]) -> bool:
        """True once ``outcome`` is durably on disk; False if that fails too."""
        path = self._path(task_id)
        if path is None:
            return False
        try:
            os.makedirs(self.folder, exist_ok=True)
            with open(path + ".tmp", "w", encoding="utf-8") as out:
                json.dump(outcome, out, separators=(",", ":"), ensure_ascii=False)
                out.flush()
                os.fsync(out.fileno())
            os.replace(path + ".tmp", path)
            return True
        except (OSError, TypeError, ValueError) as exc:
            log.error("could not keep the outcome of task %s aside: %s: %s",
                      task_id, type(exc).__name__, exc)
            try:  # a half-written file would only take more of a full disk
                os.unlink(path + ".tmp")
            except OSError:
                pass
            return False

    def read(self, task_id: str) -> Optional[Dict[str, Any]]:
        """The kept outcome of ``task_id``, or None (one failed open: cheap)."""
        path = self._path(task_id)
        if path is None:
            return None
        try:
            with open(path, encoding="utf-8") as kept:
                return json.load(kept)
        except (OSError, ValueError):
            return None

    def remove(self, task_id: str) -> None:
        try:
            os.unlink(self._path(task_id))
        except OSError:
            pass
