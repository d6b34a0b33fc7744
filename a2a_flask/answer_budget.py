"""How large answers may be: one answer within A2A_MAX_ANSWER_BYTES
(``fit``), and the bytes of answers one process builds at once: one budget
per process (A2A_MAX_ANSWER_BYTES_IN_FLIGHT), shared by every thread.

A2A_MAX_ANSWER_BYTES bounds one answer; a process running 1,024 threads
(gunicorn's gthread) could still build that many at once. Each large answer
holds its share of this budget from before it is read until its last byte is
sent: a call finding the budget taken waits its turn (in order of arrival)
for at most A2A_ANSWER_WAIT_SECONDS, then is answered busy
(``errors.ServerBusyError``: 503 with Retry-After). Answers under
``SMALL_ANSWER_BYTES`` are not counted at all, so that the common small get
costs nothing more. Once the last large answer of a burst is sent, the
memory it took is handed back to the system (``give_back_memory``), once no
large answer has been in flight for a second.
"""

import functools
import threading
import time
from collections import deque
from typing import Any, Callable, Deque, Optional, Tuple

from . import errors
from .storage import records
from .storage.base import TaskRecord

#: Answers smaller than this skip the budget.
SMALL_ANSWER_BYTES = 64 * 1024
#: After an answer of at least this many bytes, once none has been in flight
#: for GIVE_BACK_IDLE_SECONDS, the process's free heap goes back to the
#: system: after a burst, not between its answers (trimming takes the heap's
#: locks for milliseconds, and the next answer would take the pages again).
GIVE_BACK_AFTER_BYTES = 1024 * 1024
GIVE_BACK_IDLE_SECONDS = 1.0


@functools.lru_cache(maxsize=None)
def _malloc_trim() -> Optional[Callable[[int], Any]]:
    """glibc's ``malloc_trim``, else None (musl, macOS: nothing to call).

    Looked up at the first give-back, not at import: most processes never
    build a large answer, and ``ctypes`` is memory in every process that
    imports it (each gunicorn worker, the master, ``flask a2a worker``). The
    process's own symbols (``CDLL(None)``) hold libc's: no search for the
    library, which ``ctypes.util.find_library`` does by running
    ``ldconfig``."""
    import ctypes

    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def give_back_memory() -> bool:
    """Hand the free pages of the C heap back to the system (glibc's
    ``malloc_trim``): a large answer's strings are freed to the heap, which
    otherwise keeps them in the process's RSS. False where there is no such
    call."""
    trim = _malloc_trim()  # looked up once (lru_cache)
    if trim is None:
        return False
    trim(0)
    return True


class AnswerBudget:
    """A weighted semaphore of ``capacity`` bytes of answers in flight,
    granted in order of arrival; a call waits at most ``wait_seconds``."""

    def __init__(self, capacity: int, wait_seconds: float) -> None:
        self.capacity = capacity
        self.wait_seconds = wait_seconds
        self.in_flight = 0
        self._ready = threading.Condition()
        self._queue: Deque[object] = deque()
        #: Whether an answer of GIVE_BACK_AFTER_BYTES or more ended since the
        #: memory was last given back.
        self._large_ended = False
        #: The timer that gives it back once idle, while one is set.
        self._idle_timer: Optional[threading.Timer] = None

    def _weight(self, weight: int) -> int:
        # One answer larger than the whole budget still runs, alone.
        return max(0, min(weight, self.capacity))

    def try_reserve(self, weight: int) -> Optional["Reservation"]:
        """``weight`` bytes now, or None when others hold or wait for them."""
        weight = self._weight(weight)
        with self._ready:
            if self._queue or self.in_flight + weight > self.capacity:
                return None
            self.in_flight += weight
        return Reservation(self, weight)

    def reserve(self, weight: int, wait: bool = True) -> "Reservation":
        """``weight`` bytes, once the answers before this one leave room;
        ``ServerBusyError`` after ``wait_seconds``. With ``wait`` False the
        bytes are counted at once, over the budget if need be (an answer
        whose work is done: a send's, a cancel's)."""
        weight = self._weight(weight)
        with self._ready:
            if not wait or (not self._queue
                            and self.in_flight + weight <= self.capacity):
                self.in_flight += weight
                return Reservation(self, weight)
            ticket = object()
            self._queue.append(ticket)
            deadline = time.monotonic() + self.wait_seconds
            try:
                while (self._queue[0] is not ticket
                       or self.in_flight + weight > self.capacity):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise errors.ServerBusyError(
                            retry_after=max(1, int(round(self.wait_seconds))))
                    self._ready.wait(left)
                self.in_flight += weight
            finally:
                self._queue.remove(ticket)
                self._ready.notify_all()
        return Reservation(self, weight)

    def _change(self, old: int, new: int) -> None:
        with self._ready:
            self.in_flight += new - old
            if new < old:
                self._ready.notify_all()
            if old >= GIVE_BACK_AFTER_BYTES and new == 0:
                self._large_ended = True
            if (self._large_ended and self.in_flight == 0 and not self._queue
                    and self._idle_timer is None):
                self._idle_timer = threading.Timer(GIVE_BACK_IDLE_SECONDS,
                                                   self._give_back)
                self._idle_timer.daemon = True
                self._idle_timer.start()

    def _give_back(self) -> None:
        with self._ready:
            self._idle_timer = None
            if self.in_flight or self._queue:  # busy again: its end gives back
                return
            self._large_ended = False
        give_back_memory()  # outside the lock: trimming a large heap takes ms


class Reservation:
    """Bytes of an ``AnswerBudget`` one answer holds, until ``release``."""

    __slots__ = ("budget", "weight")

    def __init__(self, budget: AnswerBudget, weight: int) -> None:
        self.budget = budget
        self.weight = weight

    def resize(self, weight: int) -> None:
        """Hold ``weight`` bytes instead (never waits: the answer is built)."""
        weight = self.budget._weight(weight)
        old, self.weight = self.weight, weight
        self.budget._change(old, weight)

    def release(self) -> None:
        """Give the bytes back (again: nothing)."""
        self.resize(0)


# -- one answer within A2A_MAX_ANSWER_BYTES ----------------------------------

#: Task metadata key of an answer that left out the oldest messages of the
#: task's history to fit A2A_MAX_ANSWER_BYTES: how many it left out.
HISTORY_OMITTED = "a2a_flask.historyOmitted"
#: Room kept in an answer for what surrounds the task (JSON-RPC envelope,
#: the page's own members).
ENVELOPE_BYTES = 1024


def fit(record: TaskRecord, budget: int) -> TaskRecord:
    """``record`` as an answer of at most ``budget`` bytes may show it: its
    newest messages that fit, the rest of the history left out and counted
    in its metadata (``HISTORY_OMITTED``, with those the storage already
    left out: ``TaskRecord.history_omitted``); status and artifacts whole.
    A task well under the budget is left as it is, measured cheaply."""
    return measured_fit(record, budget)[0]


def measured_fit(record: TaskRecord, budget: int) -> Tuple[TaskRecord, Optional[int]]:
    """``fit``, and the rough size of the record it answers when measured
    on the way (None when not, or changed since)."""
    history = record.history
    omitted = record.history_omitted
    rough = records.rough_task_size(record) if history else None
    if rough is not None and records.may_exceed(rough, budget):
        rough = None
        room = budget - records.FIXED_BYTES - records.size(record.status_message) - sum(
            records.size(a) for a in record.artifacts or ()) - records.size(record.metadata)
        kept = 0
        for message in reversed(history):
            room -= records.size(message)
            if room < 0:
                break
            kept += 1
        if kept < len(history):
            record.history = history[len(history) - kept:]
            omitted += len(history) - kept
    if omitted:
        record.metadata = dict(record.metadata or {}, **{HISTORY_OMITTED: omitted})
        rough = None
    return record, rough
