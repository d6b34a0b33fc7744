"""The last use of each API key, recorded a few keys per write.

A key's ``last_used_at`` is kept to the minute (``a2a keys list`` shows it).
One write per key and minute was one more write of the writers' lock for
each new caller: 1,000 callers arriving together made 1,000 such writes
beside their 1,000 sends. A process notes the uses instead and records
those of the last second in one write, on the request that finds the last
write a second old, else on a timer thread a second later, and when the
process exits (a worker recycled, stopped). A process killed in that
second loses the record of those uses (not the calls).
"""

import atexit
import logging
import os
import threading
import time
import weakref

log = logging.getLogger("a2a_flask")


class KeyUses:
    """The key uses of one process not yet written to ``storage``."""

    #: Seconds between two writes of the uses of one process.
    WRITE_EVERY = 1.0
    #: Uses noted at most while the storage refuses the write (then dropped:
    #: a record of use is not worth unbounded memory).
    MAX_PENDING = 10000

    def __init__(self, storage, cutoff):
        self.storage = storage
        self._cutoff = cutoff  # () -> the text a last use must be older than
        self._reset()

    def _reset(self):
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._pending = set()
        self._written_at = -self.WRITE_EVERY  # the first use is written at once
        self._timer = None
        self._at_exit = False

    def note(self, key_id: str) -> None:
        """Record that ``key_id`` was used now (at once, or within a second)."""
        if self._pid != os.getpid():  # forked: the parent's are the parent's
            self._reset()
        with self._lock:
            self._pending.add(key_id)
            due = time.monotonic() - self._written_at >= self.WRITE_EVERY
            if not due and self._timer is None:
                self._timer = threading.Timer(self.WRITE_EVERY, self._write_later)
                self._timer.daemon = True
                self._timer.start()
            at_exit, self._at_exit = self._at_exit, True
        if not at_exit:  # once per process: the timer thread dies with it
            atexit.register(_write_at_exit, weakref.ref(self))
        if due:
            self.write()

    def _write_later(self):
        with self._lock:
            self._timer = None
        try:
            self.write()
        finally:
            self.storage.release_connection()  # the timer thread ends here

    def write(self) -> None:
        """Write the uses noted so far, in one write. A refusal of the storage
        is logged and the uses are tried again with the next ones: a call
        does not fail for the record of its key's use."""
        with self._lock:
            key_ids, self._pending = self._pending, set()
            self._written_at = time.monotonic()
        if not key_ids:
            return
        try:
            self.storage.touch_keys(sorted(key_ids), self._cutoff())
        except Exception as exc:
            if self.storage.failure(exc) is None:
                raise
            log.warning("could not record the last use of %d API key(s) now "
                        "(%s); trying again with the next ones", len(key_ids), exc)
            with self._lock:
                if len(self._pending) + len(key_ids) <= self.MAX_PENDING:
                    self._pending |= key_ids


def _write_at_exit(uses_ref):
    uses = uses_ref()  # weak: an app that went is not kept for this
    if uses is None or uses._pid != os.getpid():
        return
    try:
        uses.write()
    except Exception:  # exiting: the uses are lost, as when killed
        pass
