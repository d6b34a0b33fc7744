"""The sends (message/send, SendMessage) one process runs at once
(A2A_RUNNING_SENDS): the rest wait their turn in order of arrival.

Why: a gthread worker runs each connection's call in its own thread, and
with the interpreter's lock they take turns at it in no order. Eight sends
of a process in flight each get an eighth of it until they end, and an
unlucky one waits behind the others again and again: under gthread a send's
p99 was several times its p99 under sync workers. Letting ``limit`` sends
run and the others wait first come, first served cuts that tail and keeps
the throughput on SQLite; for reads, which are shorter, the hand-overs cost
throughput, and they are not limited (docs/benchmarks.md, "Running sends").

A send gives its place back while it may wait long (``paused``: its agent
running, a blocking send waiting for a background turn) and takes it again
ahead of new sends, to finish. A send that holds its place longer than
``STUCK_SECONDS`` elsewhere (a host callback, a busy or failing database,
an identity provider) is counted out, and a send waiting gets a place of
its own: no wait we did not foresee can stop the process's other sends for
longer than that.
"""

import collections
import threading
import time
from contextlib import nullcontext
from typing import ContextManager, Deque, Dict, Optional

#: How long a send may hold its place before it is counted out.
STUCK_SECONDS = 0.05
#: How often a waiter far from the head of the line looks for sends to count
#: out (the first ones look every STUCK_SECONDS / 2): a burst of hundreds
#: of waiters would otherwise wake tens of thousands of times a second.
FAR_LOOK_SECONDS = 0.25


class _Place:
    """One thread's place: when it was taken, and whether it was counted out
    (its place then given to a waiting send)."""

    __slots__ = ("taken_at", "stuck", "holding")

    def __init__(self) -> None:
        self.taken_at = 0.0
        self.stuck = False
        self.holding = False


class _SendWaiter:
    """A send waiting for a place: ``woken`` is released when one is handed
    to it. ``ahead``: the waiters before it when it came, when ``left``
    (``RunningSends._left``) had left the line."""

    __slots__ = ("woken", "place", "handed", "ahead", "left")

    def __init__(self, place: _Place, ahead: int, left: int) -> None:
        self.woken = threading.Lock()
        self.woken.acquire()
        self.place = place
        self.handed = False
        self.ahead = ahead
        self.left = left


class RunningSends:
    """At most ``limit`` sends of this process running at once (0: no
    limit), each in ``held()``; the others wait, in order of arrival."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        #: Sends counted out since the start (``STUCK_SECONDS``).
        self.stuck = 0
        self._lock = threading.Lock()
        self._free = limit
        self._waiters: Deque[_SendWaiter] = collections.deque()
        self._left = 0  # waiters that left the line so far
        self._holders: Dict[_Place, None] = {}
        self._local = threading.local()

    def held(self) -> ContextManager[None]:
        """This thread's send runs holding a place, once one is free."""
        return _Held(self) if self.limit else NOT_HELD

    def paused(self) -> ContextManager[None]:
        """This thread's send gives its place back while it waits, and
        takes one again ahead of the sends that have not started (a no-op
        in a thread that holds none: a read, a background turn)."""
        return _Paused(self) if self.limit else NOT_HELD

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
            waiter = _SendWaiter(place, 0 if front else len(self._waiters), self._left)
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

    def _look_every(self, waiter: _SendWaiter) -> float:
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


#: ``held()`` and ``paused()`` without a limit; a call that is not a send.
NOT_HELD: ContextManager[None] = nullcontext()


class _Held:
    """``RunningSends.held()``: a class, not a generator, for the
    microsecond it saves on every send."""

    __slots__ = ("_sends", "_place")

    def __init__(self, sends: RunningSends) -> None:
        self._sends = sends
        self._place: Optional[_Place] = None

    def __enter__(self) -> None:
        sends = self._sends
        if sends._holding() is None:  # else an outer held() has the place
            place = self._place = _Place()
            sends._take(place, front=False)
            sends._local.place = place

    def __exit__(self, *exc_info: object) -> None:
        place = self._place
        if place is not None:
            self._sends._local.place = None
            self._sends._give_back(place)


class _Paused:
    """``RunningSends.paused()``."""

    __slots__ = ("_sends", "_place")

    def __init__(self, sends: RunningSends) -> None:
        self._sends = sends
        self._place: Optional[_Place] = None

    def __enter__(self) -> None:
        place = self._sends._holding()
        if place is not None and place.holding:
            self._place = place
            self._sends._give_back(place)

    def __exit__(self, *exc_info: object) -> None:
        if self._place is not None:
            self._sends._take(self._place, front=True)
