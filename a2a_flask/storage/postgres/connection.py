"""Connections of ``PostgresStorage``: one pool per worker process, its
failures as the service's storage errors, and the schema.

The pool is opened lazily on first use and again after a fork (a pid check):
gunicorn forks workers after the app is built, and a connection must never
cross a fork. Connections are in autocommit mode: most operations are one
statement (its own transaction, one round trip); the few that need more say
so with ``transaction()``.

A server that is down (at boot or later) or refuses our credentials is
``StorageUnavailable`` (``data.retry`` true), never a crash: the pool tries
to connect again in the background (``RECONNECT_SECONDS``) and the service
answers again, without a restart, within seconds of the server's return.
"""

import logging
import os
import select
import threading
import time
import urllib.parse
from contextlib import contextmanager
from typing import Any, Dict, Hashable, List, Optional, Tuple

import psycopg
import psycopg_pool

from ..common import WriteHealth
from ..errors import (
    StorageBusyError, StorageFullError, StorageUnavailableError, schema_refusal,
)
from ..base import SchemaError
from .changes import ChangeListener
from . import migrations
from .migrations import MIGRATION_LOCK

log = logging.getLogger("a2a_flask")

#: Connections per worker process: a sync gunicorn worker uses one at a time;
#: threaded workers (--threads) share the rest.
POOL_SIZE = 8
#: Seconds a connection attempt may take before it counts as a failure.
CONNECT_TIMEOUT = 5
#: Seconds one round of the pool's connection attempts lasts. psycopg_pool
#: doubles the pause between attempts for the whole round: a longer one
#: would leave the pool asleep long after the server is back (a day's round
#: up to as long as the outage was). A call that finds no connection starts
#: the next round, so the pauses stay under a few seconds.
RECONNECT_SECONDS = 5

#: The pool's name, in psycopg_pool's log records.
POOL_NAME = "a2a_flask"
#: Seconds between two of psycopg_pool's warnings of one kind about our pool.
POOL_WARNING_SECONDS = 60.0

_logged: Dict[Tuple[str, str], float] = {}


class PoolWarnings(logging.Filter):
    """On the ``psycopg.pool`` logger: its warnings about our pool (a failed
    connection attempt, a round of them given up) each at most once every
    ``POOL_WARNING_SECONDS``. ``storage_failure`` logs the outage itself;
    attempts every second or two would write thousands of lines a day of
    an outage. Other pools' records pass untouched."""

    def __init__(self) -> None:
        super().__init__()
        self._last: Dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if not (isinstance(args, tuple) and args and args[0] == POOL_NAME):
            return True
        now = time.monotonic()
        if now - self._last.get(str(record.msg), float("-inf")) < POOL_WARNING_SECONDS:
            return False
        self._last[str(record.msg)] = now
        return True


def _closed_by_server(conn: Any) -> bool:
    """True when the server closed ``conn`` while it sat idle in the pool (a
    restart, a terminated backend): its socket is readable though no query
    is outstanding. One poll, no round trip."""
    try:
        poller = select.poll()
        poller.register(conn.fileno(), select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError, psycopg.Error):
        return True


def _live_connection(pool: Any, deadline: Optional[float] = None) -> Any:
    """A connection of ``pool`` the server has not closed, waited for until
    ``deadline`` (``time.monotonic()``; None: the pool's timeout from now).
    After a restart every idle connection is dead: each is closed (the pool
    replaces it in the background) rather than failing a call."""
    if deadline is None:
        deadline = time.monotonic() + pool.timeout  # one bound for every try
    for _ in range(POOL_SIZE):
        conn = pool.getconn(max(deadline - time.monotonic(), 0.001))
        if not _closed_by_server(conn):
            return conn
        conn.close()
        pool.putconn(conn)
    return pool.getconn(max(deadline - time.monotonic(), 0.001))


def _filter_pool_warnings() -> None:
    pool_log = logging.getLogger("psycopg.pool")
    if not any(isinstance(f, PoolWarnings) for f in pool_log.filters):
        pool_log.addFilter(PoolWarnings())


def redact(url):
    """``url`` without its password, for messages to an operator."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(":" + parts.password + "@", ":***@", 1)
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def is_storage_failure(exc):
    """True for a failure of the server or of the way to it (not of our SQL)."""
    return isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError,
                            psycopg_pool.PoolTimeout))


def write_failure(exc: BaseException) -> Optional[str]:
    """The few words ``/health`` gives for a write that failed with ``exc``
    (``connection`` has made it a storage error); None when it says nothing
    about writes (busy, our own error)."""
    if any(isinstance(e, psycopg.errors.ReadOnlySqlTransaction) for e in (exc, exc.__cause__)):
        return "the database is read-only"
    if isinstance(exc, StorageBusyError) or not isinstance(exc, StorageUnavailableError):
        return None
    if isinstance(exc, StorageFullError):
        return "the disk is full"
    return "writes fail (%s)" % type(exc.__cause__ or exc).__name__


def storage_failure(exc, location):
    """The ``StorageUnavailableError`` for ``exc``: full, busy or unavailable, all retryable;
    logged with the server (no password) once every 10 s per cause."""
    if isinstance(exc, psycopg.errors.DiskFull):
        error = StorageFullError()
    elif isinstance(exc, (psycopg.errors.LockNotAvailable, psycopg.errors.QueryCanceled,
                          psycopg.errors.TransactionRollback)):
        error = StorageBusyError()
    else:
        error = StorageUnavailableError()
    text = str(exc).strip()
    now = time.monotonic()
    if now - _logged.get((location, text), -60.0) >= 10.0:
        _logged[(location, text)] = now
        log.error("storage unavailable: database %s: %s: %s", location,
                  type(exc).__name__, text)
    return error


class PostgresConnections:
    """Mixed into ``PostgresStorage``: ``connection()``, ``transaction()``,
    the schema operations of the contract and ``close()``."""

    def __init__(self, url, busy_timeout_ms=5000, stale_turn_seconds=3600,
                 auto_migrate=True):
        self.url = url
        self.location = redact(url)
        self.busy_timeout_ms = int(busy_timeout_ms)
        self.stale_turn_seconds = int(stale_turn_seconds)
        self.auto_migrate = auto_migrate
        self._pool = None
        self._pool_pid = None
        self._opening = threading.Lock()
        self._ready = not auto_migrate
        self._last_attempt = (0.0, None)  # (monotonic time, error) of migrate
        self._changes = ChangeListener(url, CONNECT_TIMEOUT)
        self._writes = WriteHealth(write_failure)

    # -- the pool ------------------------------------------------------------

    def _configure(self, conn):
        # A write waiting for a lock longer than the busy timeout is "busy".
        conn.execute("SET lock_timeout = %d" % self.busy_timeout_ms)

    def _get_pool(self):
        pid = os.getpid()
        if self._pool is None or self._pool_pid != pid:
            with self._opening:
                if self._pool is None or self._pool_pid != pid:
                    # an inherited pool belongs to the parent: never closed here
                    _filter_pool_warnings()
                    pool = psycopg_pool.ConnectionPool(
                        self.url, min_size=1, max_size=POOL_SIZE, open=False,
                        kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT},
                        configure=self._configure, timeout=self.wait_seconds(),
                        reconnect_timeout=RECONNECT_SECONDS, name=POOL_NAME)
                    pool.open(wait=False)
                    self._pool, self._pool_pid = pool, pid
        return self._pool

    #: How a statement marks a parameter, positional and named.
    MARK, NAMED = "%s", "%%(%s)s"
    #: The state compared when a context is given (the planner picks the index).
    STATE_TERM = "state"

    def _one(self, sql: str, args: Any = ()) -> Any:
        with self.connection() as conn:
            return conn.execute(sql, args).fetchone()

    def _all(self, sql: str, args: Any = ()) -> List[Any]:
        with self.connection() as conn:
            return conn.execute(sql, args).fetchall()

    def wait_seconds(self) -> float:
        """How long a call waits for a connection: A2A_BUSY_TIMEOUT_MS, at least 1 s."""
        return max(self.busy_timeout_ms, 1000) / 1000

    @contextmanager
    def connection(self, deadline: Optional[float] = None):
        """A pooled connection (autocommit) for the block, waited for until
        ``deadline`` (``time.monotonic()``; None: ``wait_seconds`` from now);
        storage failures come out as ``StorageUnavailableError``
        (``StorageBusyError``, ``StorageFullError``)."""
        try:
            if not self._ready:
                self._retry_migrate()
            pool = self._get_pool()
            conn = _live_connection(pool, deadline)
            try:
                with conn:
                    yield conn
            finally:
                pool.putconn(conn)
        except StorageUnavailableError:
            raise
        except Exception as exc:
            if is_storage_failure(exc):
                raise storage_failure(exc, self.location) from exc
            raise

    @contextmanager
    def transaction(self):
        """A connection inside BEGIN ... COMMIT (ROLLBACK on an exception);
        its outcome tells ``writes_problem``."""
        try:
            with self.connection() as conn:
                with conn.transaction():
                    yield conn
        except BaseException as exc:
            self._writes.failed(exc)
            raise
        self._writes.succeeded()

    def writes_problem(self) -> Optional[str]:
        """See ``Storage.writes_problem``."""
        return self._writes.problem(self._probe_write)

    def _probe_write(self):
        with self.transaction() as conn:
            conn.execute("UPDATE a2a_schema_version SET version = version")

    def failure(self, exc: BaseException) -> Optional[Exception]:
        """See ``Storage.failure``: our operations raise the storage errors
        themselves; a driver exception that escaped is mapped here."""
        if isinstance(exc, StorageUnavailableError):
            return exc
        return storage_failure(exc, self.location) if is_storage_failure(exc) else None

    def change_marker(self) -> Optional[Hashable]:
        """See ``Storage.change_marker``: the notifications this process's
        listening connection counted (``changes``); None while it is down."""
        return self._changes.marker()

    def close(self) -> None:
        self._changes.stop()
        self._changes = ChangeListener(self.url, CONNECT_TIMEOUT)
        pool, self._pool = self._pool, None
        if pool is not None and self._pool_pid == os.getpid():
            pool.close()

    # -- schema ----------------------------------------------------------------

    def expected_version(self) -> int:
        return migrations.EXPECTED_VERSION

    def start_version(self) -> int:
        return migrations.START_VERSION

    def _direct(self):
        """One connection outside the pool (migrations, checks at boot)."""
        try:
            return psycopg.connect(self.url, connect_timeout=CONNECT_TIMEOUT)
        except Exception as exc:
            if is_storage_failure(exc):
                raise storage_failure(exc, self.location) from exc
            raise

    def schema_version(self) -> Optional[int]:
        with self._direct() as conn:
            try:
                return _read_version(conn)
            except Exception as exc:
                if is_storage_failure(exc):
                    raise storage_failure(exc, self.location) from exc
                raise SchemaError(str(exc)) from exc

    def migrate(self) -> None:
        """Serialized across every worker and server by a transaction-level
        advisory lock: the first applies the missing versions, the others
        then find them applied."""
        with self._direct() as conn:
            try:
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
                    conn.execute("CREATE TABLE IF NOT EXISTS a2a_schema_version"
                                 " (version integer NOT NULL)")
                    version = _read_version(conn)
                    start, expected = migrations.START_VERSION, migrations.EXPECTED_VERSION
                    refusal = schema_refusal(version, start, expected)
                    if refusal is not None:
                        raise refusal
                    if version < expected:
                        if version == 0:
                            conn.execute(migrations.START)
                            version = start
                        for step in migrations.MIGRATIONS[version - start:]:
                            conn.execute(step)
                        conn.execute("DELETE FROM a2a_schema_version")
                        conn.execute("INSERT INTO a2a_schema_version (version)"
                                     " VALUES (%s)", (expected,))
            except Exception as exc:
                if is_storage_failure(exc):
                    raise storage_failure(exc, self.location) from exc
                raise
        self._ready = True

    def _retry_migrate(self):
        """Migrate on first use when the server was unreachable at start, at
        most once a second (each try costs a connection attempt)."""
        at, error = self._last_attempt
        if error is not None and time.monotonic() - at < 1.0:
            raise error
        try:
            self.migrate()
        except StorageUnavailableError as exc:
            self._last_attempt = (time.monotonic(), exc)
            raise


def _read_version(conn):
    """The schema version (0: no schema yet, as SQLite says)."""
    if conn.execute("SELECT to_regclass('a2a_schema_version')").fetchone()[0] is None:
        return 0
    row = conn.execute("SELECT max(version) FROM a2a_schema_version").fetchone()
    return row[0] or 0
