"""Waking waiters on PostgreSQL with LISTEN/NOTIFY.

Every transaction that changes what a waiter waits for (a turn queued, a
task leaving ``working``, a turn released) sends ``NOTIFY a2a_changes``
(``notify_changes``), delivered to listeners when it commits. One connection
per process listens (``ChangeListener``: a thread started on first use, and
again after a fork) and counts the notifications: the count is the storage's
``change_marker``, so blocking sends (``waits.TaskWaits``) and the worker's
dispatcher read the tables at once after a change, and not otherwise. While
the listening connection is down the marker is None: they read on a timer
(``waits.UNMARKED_TICK``, the poll of before) until it listens again.
"""

import logging
import os
import threading
import time
from typing import Any, Optional

import psycopg

log = logging.getLogger("a2a_flask")

CHANNEL = "a2a_changes"
#: Seconds between two tries to listen again after the connection broke.
RETRY_SECONDS = 1.0
#: Seconds the listening thread waits for notifications before it looks
#: whether it should stop (psycopg >= 3.2; older ones wait until closed).
STOP_CHECK_SECONDS = 1.0


def notify_changes(conn: Any) -> None:
    """Tell every listener, once ``conn``'s transaction commits, that what a
    waiter waits for may have changed (several in one transaction are one)."""
    conn.execute("NOTIFY " + CHANNEL)


def _notifications(conn):
    try:
        return conn.notifies(timeout=STOP_CHECK_SECONDS)
    except TypeError:  # psycopg < 3.2: until the connection closes
        return conn.notifies()


class ChangeListener:
    """The listening connection of one process (of one storage)."""

    def __init__(self, url, connect_timeout):
        self._url, self._connect_timeout = url, connect_timeout
        self._lock = threading.Lock()
        self._pid = None
        self._count = 0
        self._listening = False
        self._stopped = False

    def marker(self) -> Optional[int]:
        """The number of notifications seen, None while not listening (the
        first call starts the listener: None until it listens)."""
        if self._pid != os.getpid() and not self._stopped:
            with self._lock:
                if self._pid != os.getpid():
                    self._pid, self._listening = os.getpid(), False
                    threading.Thread(target=self._listen, args=(self._pid,),
                                     daemon=True, name="a2a-listen").start()
        return self._count if self._listening else None

    def stop(self) -> None:
        self._stopped = True
        self._listening = False

    def _current(self, pid):
        return not self._stopped and self._pid == pid == os.getpid()

    def _listen(self, pid):
        failed_at = -60.0
        while self._current(pid):
            try:
                with psycopg.connect(self._url, autocommit=True,
                                     connect_timeout=self._connect_timeout,
                                     keepalives_idle=30) as conn:
                    conn.execute("LISTEN " + CHANNEL)
                    # Listening from here: a change committed before it is
                    # seen by the read this new marker makes waiters do.
                    self._seen(listening=True)
                    while self._current(pid):
                        for _ in _notifications(conn):
                            self._seen()
            except Exception as exc:  # the fallback covers every failure
                self._listening = False
                if time.monotonic() - failed_at > 60:
                    failed_at = time.monotonic()
                    log.warning("waiting on tasks: not listening to PostgreSQL "
                                "(%s: %s); reading on a timer meanwhile",
                                type(exc).__name__, str(exc).strip())
                time.sleep(RETRY_SECONDS)
        self._listening = False

    def _seen(self, listening=None):
        with self._lock:
            self._count += 1
            if listening is not None:
                self._listening = listening
