"""Waiting on the store without polling it per waiter: a blocking send waits
for its background turn to end, the worker's dispatcher for a turn to queue.

A storage that can tell cheaply whether anything was committed since it last
looked (``Storage.change_marker``: SQLite's ``PRAGMA data_version``, a read
of shared memory; PostgreSQL's count of the NOTIFYs its listener heard) is
looked at every ``TICK`` (``BUSY_TICK`` while the store is busy: ``Pace``);
the task states are read only after a commit, in one query for every task
this process waits on (``TaskWaits``). A storage that cannot tell is read
every ``UNMARKED_TICK``.
No transaction is held while waiting.
"""

import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Hashable, Optional

if TYPE_CHECKING:  # pragma: no cover
    from .storage.base import Storage

from .stopping import PROCESS

log = logging.getLogger("a2a_flask")

#: Seconds between two looks at the change marker.
TICK = 0.01
#: ... while the store is busy: within BUSY_SECONDS of the last change the
#: watcher saw. A turn queued then is claimed (and a turn's end seen) within
#: about a millisecond of its commit, not TICK / 2 later; an idle watcher
#: keeps to TICK (docs/benchmarks.md, "Background turns: the first look").
BUSY_TICK = 0.001
BUSY_SECONDS = 2.0
#: Seconds between two reads of the states when the storage has no marker.
UNMARKED_TICK = 0.05
#: Seconds between two tries after the storage failed (logged once a minute).
FAILED_TICK = 0.5
#: Seconds after which the states are read again, the marker unchanged: a
#: writer that does not signal (PostgreSQL: an older version of this package
#: during an upgrade sends no NOTIFY) delays a waiter by at most this.
MARKED_READ_EVERY = 5.0


class Pace:
    """How often a watcher looks at the change marker: every BUSY_TICK for
    BUSY_SECONDS after a change it saw, else every TICK."""

    def __init__(self) -> None:
        self.changed_at = float("-inf")  # none seen yet: idle

    def saw_change(self) -> None:
        self.changed_at = time.monotonic()

    def tick(self) -> float:
        return BUSY_TICK if time.monotonic() - self.changed_at < BUSY_SECONDS else TICK


def settled(state: Optional[str]) -> bool:
    """A state a blocking send may answer: terminal or interrupted (A2A 1.0
    section 3.2.2), or no task at all (deleted meanwhile)."""
    return state != "working"


class TaskWaits:
    """The threads of one process waiting for tasks to leave ``working``.

    One watcher thread (started with the first waiter, gone with the last)
    reads the states of every awaited task in one query when the store
    changed, and wakes the waiters of those that settled. Safe across fork:
    a child starts with no waiters and no watcher.
    """

    def __init__(self, storage):
        self._storage = storage
        self._reset()

    def _reset(self):
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._waiting = {}  # task id -> [threading.Event]
        self._fresh = False  # a waiter came since the last read
        self._watching = False
        self._failed_at = -60.0
        self._stop_noted = False

    def _wake_all(self):
        with self._lock:
            for events in self._waiting.values():
                for event in events:
                    event.set()

    def wait(self, task_id: str, seconds: Optional[float] = None) -> bool:
        """Block until ``task_id`` settles (True) or ``seconds`` pass (False;
        None: no bound). False at once, whatever the task, once the process
        is stopping (``stopping.PROCESS``): the caller answers the task as it
        stands rather than hold the process past its server's grace."""
        if seconds is not None and seconds <= 0:
            return False
        if self._pid != os.getpid():
            self._reset()
        if not self._stop_noted:
            self._stop_noted = True
            PROCESS.on_stop(self._wake_all)
        event = threading.Event()
        with self._lock:
            self._waiting.setdefault(task_id, []).append(event)
            self._fresh = True
            stopping = PROCESS.stopping()  # read under the lock _wake_all takes
            if not self._watching and not stopping:
                self._watching = True
                threading.Thread(target=self._watch, daemon=True,
                                 name="a2a-task-waits").start()
        try:
            return (not stopping and event.wait(seconds)
                    and not PROCESS.stopping())
        finally:
            with self._lock:
                events = self._waiting.get(task_id, [])
                if event in events:
                    events.remove(event)
                if not events:
                    self._waiting.pop(task_id, None)

    def _watch(self):
        marker = object()  # matches nothing: the first pass reads
        read_at = 0.0
        pace = Pace()
        while True:
            with self._lock:
                if not self._waiting:
                    self._watching = False
                    return
                fresh, self._fresh = self._fresh, False
            try:
                found = self._storage.change_marker()
                # No marker (none at all, or PostgreSQL's listener down): a
                # timer; the marker is still looked at, at the pace, so that
                # its return (a listener up again) is used at once.
                every = UNMARKED_TICK if found is None else MARKED_READ_EVERY
                if found != marker:
                    pace.saw_change()
                if fresh or found != marker or time.monotonic() - read_at >= every:
                    marker, read_at = found, time.monotonic()
                    self._wake_settled()
            except Exception as exc:
                self._note_failure(exc)
                marker = object()
                time.sleep(FAILED_TICK)
                continue
            time.sleep(pace.tick())

    def _wake_settled(self):
        # Only the waiters there before the read: one that came meanwhile
        # (a follow-up queued on a task the read found interrupted) waits
        # for a read that sees its own turn queued (``_fresh`` asks for it).
        with self._lock:
            awaited = {task_id: list(events)
                       for task_id, events in self._waiting.items()}
        states = self._storage.task_states(list(awaited))
        for task_id, events in awaited.items():
            if settled(states.get(task_id)):
                for event in events:
                    event.set()

    def _note_failure(self, exc):
        if self._storage.failure(exc) is None:
            log.exception("waiting on tasks: unexpected error; trying again")
        elif time.monotonic() - self._failed_at > 60:
            self._failed_at = time.monotonic()
            log.warning("waiting on tasks: the storage is unavailable; trying "
                        "again every %.1f s", FAILED_TICK)


def change_marker(storage: "Storage") -> Optional[Hashable]:
    """``storage.change_marker()``, None when the storage failed (logged by
    ``storage.failure``; the caller then waits on a timer)."""
    try:
        return storage.change_marker()
    except Exception as exc:
        if storage.failure(exc) is None:
            raise
        return None


def wait_for_change(storage: "Storage", since: Optional[Hashable], seconds: float,
                    interrupt: threading.Event, pace: Optional[Pace] = None) -> None:
    """Return once the store's change marker differs from ``since`` (read
    before the caller last looked at the store), ``interrupt`` is set, or
    ``seconds`` pass; with no marker, after at most UNMARKED_TICK. Looks
    at the marker every ``pace.tick()`` (TICK without one), and tells
    ``pace`` of the change it saw."""
    if since is None:
        interrupt.wait(min(seconds, UNMARKED_TICK))
        return
    pace = pace or Pace()
    deadline = time.monotonic() + seconds
    while not interrupt.wait(min(pace.tick(), max(deadline - time.monotonic(), 0))):
        if time.monotonic() >= deadline:
            return
        if change_marker(storage) != since:
            pace.saw_change()
            return
