"""The SQLite connections of one process, bounded: a thread that needs one
when ``limit`` are open waits its turn for one handed back, at most until a
deadline (the busy timeout), then gets "database is locked" (answered as
"the storage is busy"); only the holder of the process's write lock never
waits (one past the bound). No SQL here.

Why a bound: each connection costs 100-150 KB of malloc arenas that SQLite
hardly returns after close, and a burst of N calls at once opened about N.
With the interpreter lock only one thread runs Python at a time: a few dozen
connections keep a core busy, more only cost memory.

``ConnectionLeases`` (mixed into ``SqliteConnections``) is a thread's side
of it: its connection taken on first use, handed back or dropped; all a
warm read asks of the file's connections besides its statements.
"""

import collections
import os
import queue
import sqlite3
import threading
import time
from typing import Any


class ConnectionWaitTimeout(sqlite3.OperationalError):
    """No connection was handed back before the deadline: answered as
    SQLite's own "database is locked" (``StorageBusyError``); nothing ran."""

    sqlite_errorname = "SQLITE_BUSY"


class _ConnectionWaiter:
    """One thread waiting for a connection: woken by the release of ``woken``
    with ``handed`` set (a connection, or OPEN: open a new one)."""

    __slots__ = ("woken", "handed")

    def __init__(self):
        self.woken = threading.Lock()
        self.woken.acquire()
        self.handed = None


#: Handed to a waiter instead of a connection: one was closed, open a new one.
OPEN = object()


class _ThisProcess:
    """This process's id, read at import and again in each child ``os.fork``
    makes (gunicorn's workers): the checks that a connection never crosses a
    fork run several times a call, and ``os.getpid()`` is a system call."""

    pid = os.getpid()


def _forked() -> None:
    _ThisProcess.pid = os.getpid()


os.register_at_fork(after_in_child=_forked)


class WriterSlots:
    """``count`` slots for this process's writes in progress: tokens in a
    ``queue.SimpleQueue``, whose get and put are one call into C each, where
    ``threading.Semaphore`` runs a Condition in Python twice per write."""

    __slots__ = ("_tokens",)

    def __init__(self, count: int) -> None:
        self._tokens = queue.SimpleQueue()  # type: queue.SimpleQueue[None]
        for _ in range(count):
            self._tokens.put(None)

    def take(self, timeout: float) -> bool:
        """Whether a slot was free within ``timeout`` seconds (then held)."""
        try:
            self._tokens.get(timeout=timeout)
        except queue.Empty:
            return False
        return True

    def give_back(self) -> None:
        """A slot taken by ``take``, free again."""
        self._tokens.put(None)


class ConnectionPool:
    """At most ``limit`` connections open in this process (held by a thread
    or idle); a ``take`` past it (the write lock's holder, one at a time)
    opens one more, closed at the next hand-back no thread waits for.
    ``open_connection()`` makes one. Waiters are served first come, first
    served: a connection handed back goes to the oldest waiter, never to a
    thread that came later. Made anew in a forked child (``pid``)."""

    def __init__(self, limit, open_connection, writers):
        self.limit = max(1, int(limit))
        self.pid = _ThisProcess.pid
        #: The slots of this process's writes in progress (``write_statement``;
        #: ``ConnectionLeases.WRITERS`` of them).
        self.writers = WriterSlots(max(1, int(writers)))
        self._open_connection = open_connection
        self._lock = threading.Lock()
        self._idle = []  # [(connection, file identity)]
        self._open = 0  # held + idle
        self._waiters = collections.deque()
        #: Given back by a thread-local that went (``Lease``), maybe inside
        #: the garbage collector on a thread holding ``_lock``: appended
        #: without it, put in place by the next holder of the lock.
        self._returned = collections.deque()

    def take(self, deadline: float, past_limit: bool = False) -> Any:
        """A (connection, identity): an idle one, a new one while fewer than
        ``limit`` are open, else the next handed back before ``deadline``
        (``time.monotonic()``; ``ConnectionWaitTimeout`` after it).

        ``past_limit``: never wait; with none idle, open one more than
        ``limit`` (closed when handed back while more are open). For the
        holder of the process's write lock, which every other writer waits
        for: it must not wait for a connection held by one of them."""
        with self._lock:
            self._settle_returned()
            waiter = None
            if past_limit:
                if self._idle:
                    return self._idle.pop()
                self._open += 1
            elif self._waiters or self._open >= self.limit and not self._idle:
                waiter = _ConnectionWaiter()
                self._waiters.append(waiter)
            elif self._idle:
                return self._idle.pop()
            else:
                self._open += 1
        if waiter is None:
            return self._opened()
        waiter.woken.acquire(timeout=max(deadline - time.monotonic(), 0))
        with self._lock:
            self._settle_returned()
            handed = waiter.handed
            if handed is None:  # not handed one in time (nor since)
                self._waiters.remove(waiter)
                raise ConnectionWaitTimeout(
                    "database is locked: no connection was free within the "
                    "busy timeout (%d open in this process)" % self.limit)
        return self._opened() if handed is OPEN else handed

    def _opened(self):
        """A new connection, its place already counted."""
        try:
            return self._open_connection()
        except BaseException:
            self.closed()
            raise

    def give_back(self, entry: Any) -> None:
        """A (connection, identity) no longer used by its thread."""
        with self._lock:
            self._settle_returned()
            self._put(entry)

    def closed(self) -> None:
        """A connection of this pool was closed (or never opened)."""
        with self._lock:
            self._settle_returned()
            self._put(OPEN)

    def returned(self, entry: Any) -> None:
        """``give_back`` (or ``closed``, ``entry`` OPEN) from a destructor:
        never waits for the lock (its thread may hold it already)."""
        self._returned.append(entry)
        if self._lock.acquire(blocking=False):
            try:
                self._settle_returned()
            finally:
                self._lock.release()

    def _settle_returned(self):
        while self._returned:
            self._put(self._returned.popleft())

    def _put(self, entry):
        """Under ``_lock``: a connection (or, OPEN, the place of one closed)
        to the oldest waiter, else to the idle ones (or fewer open)."""
        if self._waiters:
            waiter = self._waiters.popleft()
            waiter.handed = entry
            waiter.woken.release()
        elif entry is OPEN:
            self._open -= 1
        elif self._open > self.limit:  # opened past it (``take``)
            self._open -= 1
            _close(entry[0])
        else:
            self._idle.append(entry)

    def in_use(self) -> int:
        """Connections held by threads now."""
        with self._lock:
            self._settle_returned()
            return self._open - len(self._idle)

    def close_idle(self) -> None:
        """Close the idle connections."""
        with self._lock:
            self._settle_returned()
            idle, self._idle = self._idle, []
            self._open -= len(idle)
        for conn, _ in idle:
            try:
                conn.close()
            except sqlite3.Error:
                pass


class Lease:
    """A thread's hold on a pooled connection, kept in its thread-local: a
    thread (or greenlet) that ends holding one gives it back when its
    thread-local goes."""

    __slots__ = ("pool", "entry")

    def __init__(self):
        self.pool = None
        self.entry = None  # (connection, identity) while held

    def end(self) -> Any:
        """The held (connection, identity), no longer the thread's (or None)."""
        entry, self.entry = self.entry, None
        return entry

    def __del__(self):
        entry, pool = self.entry, self.pool
        if entry is not None and pool is not None and pool.pid == _ThisProcess.pid:
            try:
                if entry[0].in_transaction:  # a thread that died mid-write
                    entry[0].close()
                    entry = OPEN
                pool.returned(entry)
            except Exception:  # interpreter shutdown
                pass


def _close(conn):
    try:
        conn.close()
    except sqlite3.Error:
        pass


class ConnectionLeases:
    """Mixed into ``SqliteConnections`` (needs its ``_local``, ``_pool``,
    ``_pool_lock``, ``_generation``, ``busy_timeout_ms``, ``_open`` and, for
    a file not opened yet, ``_ready``, ``auto_migrate``, ``_retry_migrate``):
    this thread's connection, leased from the process's ``ConnectionPool``.

    A thread's connection lives in a ``threading.local`` while the thread
    uses it. ``release_connection`` (the end of each web request, before a
    blocking send waits, before and after an agent's reads: anything that
    then waits on something else) hands it back to the process's pool,
    whose next user takes it: as many connections as calls using the
    storage at once, not as threads or greenlets, and never more than
    MAX_CONNECTIONS (a thread needing one then waits, within the busy
    timeout). A thread that ends holding one gives it back with its
    thread-local.
    """

    #: Connections a process keeps open at most (held by its threads or idle;
    #: one more while the write lock's holder finds none idle).
    #: Each costs 100-150 KB that SQLite hardly returns; with the interpreter
    #: lock one thread runs at a time, and a connection is held only while a
    #: call uses the storage (not while an agent or a blocking send waits).
    #: Measured on 2 idle cores (bench/waiting.py, 2 workers): 8, 16 and 32
    #: all served 1,000 callers without an error; 16 gave the RSS of 8 (8-28
    #: MB less than 32 at 400-1,000 callers) and the echo req/s of 32 (8
    #: lost 15%). A thread past the bound waits for one, first come first
    #: served, within A2A_BUSY_TIMEOUT_MS.
    MAX_CONNECTIONS = 16
    #: Write statements of this process in SQLite at once (``write_statement``);
    #: a later one waits its turn here, woken as soon as one ends. Let into
    #: SQLite all together, gthread's threads found the write lock taken and
    #: waited in SQLite's busy handler, whose sleeps (1, 2, 5, 10, 15, 20,
    #: 25 ms...) outlast a write's fraction of a millisecond. Four: one or
    #: two cost message/send throughput (the next write waits while the last
    #: one's thread waits for the interpreter), four kept it and cut its p99
    #: by a third (docs/benchmarks.md).
    WRITERS = 4

    def _holds_connection(self) -> bool:
        """Whether this thread holds a connection of this process now."""
        local = self._local
        return getattr(local, "conn", None) is not None and local.pid == _ThisProcess.pid

    def connection(self, deadline=None, past_limit=False):
        """This thread's connection, taken from the pool on first use (a wait
        past ``deadline``, by default the busy timeout from now: "database
        is locked"; ``past_limit``: see ``ConnectionPool.take``).

        Keyed by process id too: a connection must never cross a fork (gunicorn
        --preload forks workers after the app is built).
        """
        local = self._local
        conn = getattr(local, "conn", None)
        if conn is not None and local.generation != self._generation \
                and local.pid == _ThisProcess.pid and not conn.in_transaction:
            self.drop_connection()  # opened before a read-only write: retired
            conn = None
        if conn is None or local.pid != _ThisProcess.pid:
            local.conn = None
            pool = self._connection_pool()
            lease = getattr(local, "lease", None)
            if lease is None:
                lease = local.lease = Lease()
            if deadline is None:
                deadline = time.monotonic() + self.busy_timeout_ms / 1000.0
            lease.entry = None  # an inherited one is the parent's
            lease.pool, lease.entry = pool, pool.take(deadline, past_limit)
            conn, local.identity = lease.entry
            local.conn, local.pid = conn, _ThisProcess.pid
            local.generation = self._generation
        return conn

    def _connection_pool(self):
        pool = self._pool
        # ``_own_pool`` inline: every write statement asks for the pool.
        if pool is None or pool.pid != _ThisProcess.pid:  # none yet, or the parent's
            with self._pool_lock:
                pool = self._own_pool()
                if pool is None:
                    pool = self._pool = ConnectionPool(self.MAX_CONNECTIONS,
                                                       self._open_for_pool, self.WRITERS)
        return pool

    def _own_pool(self):
        """This process's pool, or None (none yet, or the parent's)."""
        pool = self._pool
        return pool if pool is not None and pool.pid == _ThisProcess.pid else None

    def _open_for_pool(self):
        if not self._ready and self.auto_migrate:
            self._retry_migrate()
        opened = self._open(create=not self._ready)
        self._ready = True
        return opened

    def _end_lease(self):
        """This thread's (connection, pool) if it holds one of this process,
        no longer the thread's; else (None, None)."""
        local = self._local
        conn = getattr(local, "conn", None)
        local.conn = None
        if conn is None or local.pid != _ThisProcess.pid:
            return None, None  # none, or the parent's (never closed here)
        lease = local.lease
        entry = lease.end()
        return (conn, lease.pool) if entry is not None else (None, None)

    def release_connection(self) -> None:
        """Hand this thread's connection back to the process's pool (see the
        class); the thread takes one again on its next use."""
        conn, pool = self._end_lease()
        if conn is None:
            return
        if conn.in_transaction or self._local.generation != self._generation:
            # A transaction left open: never shared. Retired: never reused.
            _close(conn)
            pool.closed()
        else:
            pool.give_back((conn, self._local.identity))

    def drop_connection(self):
        """Close this thread's connection; the next use takes another."""
        conn, pool = self._end_lease()
        if conn is not None:
            _close(conn)
            pool.closed()
