"""The calls one process runs at once (A2A_RUNNING_CALLS): the rest wait
their turn in order of arrival.

Why: a gthread worker runs each connection's call in its own thread, and
with the interpreter's lock they take turns at it in no order. Eight calls
of a process in flight each get an eighth of it until they end, and an
unlucky one waits behind the others again and again: under gthread a short
call's p99 was several times its p99 under sync workers, at the same
throughput. Letting ``limit`` calls run and the others wait first come,
first served cuts that tail and keeps the throughput on SQLite
(docs/benchmarks.md, "Running calls").

A call gives its place back while it may wait long (``paused``: its agent
running, a blocking send waiting for a background turn, a read waiting for
room in the answer budget) and takes it again ahead of new calls, to finish.
A call that holds its place longer than ``STUCK_SECONDS`` elsewhere (a host
callback, a busy or failing database, an identity provider) is counted out,
and a call waiting gets a place of its own: no wait we did not foresee can
stop the process's other calls for longer than that.
"""

import collections
import threading
import time
from contextlib import nullcontext
from typing import ContextManager, Deque, Dict, Optional

#: How long a call may hold its place before it is counted out.
STUCK_SECONDS = 0.05
#: How often a waiter far from the head of the line looks for calls to count
#: out (the first ones look every STUCK_SECONDS / 2): a burst of hundreds
#: of waiters would otherwise wake tens of thousands of times a second.
FAR_LOOK_SECONDS = 0.25


class _Place:
    """One thread's place: when it was taken, and whether it was counted out
    (its place then given to a waiting call)."""

    __slots__ = ("taken_at", "stuck", "holding")

    def __init__(self) -> None:
        self.taken_at = 0.0
        self.stuck = False
        self.holding = False


class _Waiter:
    """A call waiting for a place: ``woken`` is released when one is handed
    to it. ``ahead``: the waiters before it when it came, when ``left``
    (``RunningCalls._left``) had left the line."""

    __slots__ = ("woken", "place", "handed", "ahead", "left")

    def __init__(self, place: _Place, ahead: int, left: int) -> None:
        self.woken = threading.Lock()
        self.woken.acquire()
        self.place = place
        self.handed = False
        self.ahead = ahead
        self.left = left


class RunningCalls:
    """At most ``limit`` calls of this process running at once (0: no
    limit), each call in ``held()``; the others wait, in order of arrival."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        #: Calls counted out since the start (``STUCK_SECONDS``).
        self.stuck = 0
        self._lock = threading.Lock()
        self._free = limit
        self._waiters: Deque[_Waiter] = collections.deque()
        self._left = 0  # waiters that left the line so far
        self._holders: Dict[_Place, None] = {}
        self._local = threading.local()

    def held(self) -> ContextManager[None]:
        """This thread's call runs holding a place, once one is free."""
        return _Held(self) if self.limit else _NOTHING

    def paused(self) -> ContextManager[None]:
        """This thread's call gives its place back while it waits, and
        takes one again ahead of the calls that have not started."""
        return _Paused(self) if self.limit else _NOTHING

    def _holding(self) -> Optional[_Place]:
        return getattr(self._local, "place", None)

    def _take(self, place: _Place, front: bool) -> None:
        with self._lock:
            now = time.monotonic()
            self._count_out_stuck(now)  # each arrival looks, as waiters do
            if self._free > 0 and (front or not self._waiters):
                self._free -= 1
                self._hold(place, now)
                return
            waiter = _Waiter(place, 0 if front else len(self._waiters), self._left)
            if front:
                self._waiters.appendleft(waiter)
            else:
                self._waiters.append(waiter)
        try:
            while not waiter.woken.acquire(timeout=self._look_every(waiter)):
                with self._lock:
                    self._count_out_stuck(time.monotonic())
        except BaseException:
            with self._lock:
                if not waiter.handed:
                    self._waiters.remove(waiter)
                    self._left += 1
                    raise
            self._give_back(place)
            raise

    def _look_every(self, waiter: _Waiter) -> float:
        # Read without the lock: a guess is enough to pick a pace.
        ahead = waiter.ahead - (self._left - waiter.left)
        return STUCK_SECONDS / 2 if ahead < 2 * self.limit else FAR_LOOK_SECONDS

    def _hold(self, place: _Place, now: float) -> None:
        place.taken_at = now
        place.stuck = False
        place.holding = True
        self._holders[place] = None

    def _give_back(self, place: _Place) -> None:
        with self._lock:
            if not place.holding:  # its re-take after a pause was interrupted
                return
            del self._holders[place]
            place.holding = False
            if not place.stuck:  # a counted-out place was replaced already
                self._free += 1
                if self._waiters:
                    self._hand_on(time.monotonic())

    def _count_out_stuck(self, now: float) -> None:
        """(Under ``_lock``.) Every holder past ``STUCK_SECONDS`` counted
        out, its place handed to a waiter."""
        since = now - STUCK_SECONDS
        for place in self._holders:
            if not place.stuck and place.taken_at < since:
                place.stuck = True
                self.stuck += 1
                self._free += 1
        self._hand_on(now)

    def _hand_on(self, now: float) -> None:
        """(Under ``_lock``.) Free places to the first waiters."""
        while self._free > 0 and self._waiters:
            waiter = self._waiters.popleft()
            self._left += 1
            self._free -= 1
            self._hold(waiter.place, now)
            waiter.handed = True
            waiter.woken.release()


#: ``held()`` and ``paused()`` without a limit.
_NOTHING: ContextManager[None] = nullcontext()


class _Held:
    """``RunningCalls.held()``: a class, not a generator, for the
    microsecond it saves on every call."""

    __slots__ = ("_calls", "_place")

    def __init__(self, calls: RunningCalls) -> None:
        self._calls = calls
        self._place: Optional[_Place] = None

    def __enter__(self) -> None:
        calls = self._calls
        if calls._holding() is None:  # else an outer held() has the place
            place = self._place = _Place()
            calls._take(place, front=False)
            calls._local.place = place

    def __exit__(self, *exc_info: object) -> None:
        place = self._place
        if place is not None:
            self._calls._local.place = None
            self._calls._give_back(place)


class _Paused:
    """``RunningCalls.paused()``."""

    __slots__ = ("_calls", "_place")

    def __init__(self, calls: RunningCalls) -> None:
        self._calls = calls
        self._place: Optional[_Place] = None

    def __enter__(self) -> None:
        place = self._calls._holding()
        if place is not None and place.holding:
            self._place = place
            self._calls._give_back(place)

    def __exit__(self, *exc_info: object) -> None:
        if self._place is not None:
            self._calls._take(self._place, front=True)
