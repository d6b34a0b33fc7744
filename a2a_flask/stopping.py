"""A web process that is told to stop: its blocking waits answer at once,
its in-process claimers (``A2A_IN_PROCESS_WORKER``) stop claiming and finish
or release their turns, so that it exits within gunicorn's
``graceful_timeout`` instead of being killed with callers still waiting.

Under a gunicorn worker (found by the SIGTERM handler gunicorn installs
before the app is loaded) a watcher thread looks every ``WATCH_EVERY`` at
the worker's ``alive`` flag, which SIGTERM and a ``max_requests`` recycle
clear, and at its parent: a worker whose master is gone stops too (gunicorn's
own loop sees it, but the threads waiting on turns would hold the process).
gunicorn's signal handlers stay in charge; SIGINT and SIGQUIT (a quick
shutdown: gunicorn's master kills its workers 2 s later) are only noted
first (``quick``), so that claimers release their turns at once instead of
letting them finish.
"""

import logging
import os
import signal
import threading
from typing import Any, Callable, List, Optional

log = logging.getLogger("a2a_flask")

#: Seconds between two looks of the watcher at its gunicorn worker.
WATCH_EVERY = 0.2


def gunicorn_worker() -> Optional[Any]:
    """The gunicorn worker serving this process, else None (a CLI command,
    another server, gunicorn's master with ``preload_app``). Called while
    the app loads: gunicorn has set its signal handlers by then."""
    try:
        handler = signal.getsignal(signal.SIGTERM)
    except (ValueError, OSError):  # pragma: no cover - no signals here
        return None
    owner = getattr(handler, "__self__", None)
    if owner is None or not type(owner).__module__.startswith("gunicorn.workers"):
        return None
    if not all(hasattr(owner, name) for name in ("alive", "ppid", "cfg")):
        return None
    return owner


def graceful_seconds(worker: Any) -> float:
    """gunicorn's ``graceful_timeout`` for ``worker``."""
    try:
        return float(worker.cfg.graceful_timeout)
    except (AttributeError, TypeError, ValueError):
        return 30.0


class ProcessStop:
    """Whether this process is stopping, and what to do when it does. Fresh
    in a forked child (a child of a stopping process is not stopping)."""

    def __init__(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._callbacks: List[Callable[[], None]] = []
        self._watching = False
        #: A quick shutdown was asked (SIGINT, SIGQUIT): no time to finish turns.
        self.quick = False

    def _current(self) -> None:
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._lock = threading.Lock()
            self._event = threading.Event()
            self._callbacks = []
            self._watching = False
            self.quick = False

    def stopping(self) -> bool:
        self._current()
        return self._event.is_set()

    def on_stop(self, func: Callable[[], None]) -> None:
        """Call ``func()`` once when the process stops (at once if it has)."""
        self._current()
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(func)
                return
        func()

    def stop(self, why: str) -> None:
        """Stop now: every ``on_stop`` function is called once."""
        self._current()
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        log.info("stopping (%s): blocking waits answer now", why)
        for func in callbacks:
            try:
                func()
            except Exception:
                log.exception("stopping: a stop step failed; going on")

    def watch(self, worker: Any) -> None:
        """Watch gunicorn ``worker`` (once per process)."""
        self._current()
        with self._lock:
            if self._watching:
                return
            self._watching = True
        self._note_quick_signals()
        threading.Thread(target=self._watch, args=(worker,), daemon=True,
                         name="a2a-stop-watch").start()

    def _note_quick_signals(self) -> None:
        """Note SIGINT and SIGQUIT before gunicorn's own handler runs. The
        note is a plain assignment: the watcher acts on it (a handler that
        took a lock could wait on the very thread it interrupted)."""
        if threading.current_thread() is not threading.main_thread():
            return  # pragma: no cover - gunicorn loads the app on its main thread
        for number in (signal.SIGINT, signal.SIGQUIT):
            previous = signal.getsignal(number)
            if not callable(previous):
                continue

            def noted(signum: int, frame: Any, previous: Any = previous) -> None:
                self.quick = True
                previous(signum, frame)

            signal.signal(number, noted)

    def _watch(self, worker: Any) -> None:
        while True:
            if not worker.alive:
                # SIGTERM and a max_requests recycle both clear it.
                return self.stop("the server stops or recycles this process")
            if os.getppid() != worker.ppid:
                return self.stop("the server's master process is gone")
            if self._event.wait(WATCH_EVERY):
                return


#: This process's stop.
PROCESS = ProcessStop()


# Stop signals a gunicorn worker got before gunicorn set its own handlers.
_STOP_SIGNALS = frozenset((signal.SIGTERM, signal.SIGINT, signal.SIGQUIT))
_early: List[int] = []
_mask_before_fork: List[Any] = []
_kept = False


def keep_early_stop_signals() -> None:
    """Keep the stop signals a gunicorn worker gets before it can handle
    them. From the master's ``on_starting`` (the shipped gunicorn.conf.py).

    Between its fork and gunicorn's setting of its own handlers, a worker
    runs the master's handler, which queues the signal in a copy of the
    master nobody reads. A worker still booting when the service was told
    to stop so lost both SIGTERMs (its own and the master's), served on,
    and was killed ``graceful_timeout`` later. Around each fork the master
    blocks the stop signals; the child notes them until
    ``deliver_early_stop_signals`` sends them again to gunicorn's handlers.
    """
    global _kept
    if not _kept:
        _kept = True
        os.register_at_fork(before=_block_stop_signals,
                            after_in_parent=_restore_mask,
                            after_in_child=_note_stop_signals)


def _block_stop_signals() -> None:
    _mask_before_fork[:] = [signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)]


def _restore_mask() -> None:
    if _mask_before_fork:
        signal.pthread_sigmask(signal.SIG_SETMASK, _mask_before_fork.pop())


def _note_early_signal(number: int, frame: Any) -> None:
    _early.append(number)


def _note_stop_signals() -> None:
    del _early[:]
    try:
        for number in _STOP_SIGNALS:
            signal.signal(number, _note_early_signal)
    except ValueError:  # pragma: no cover - forked off the main thread
        pass
    finally:
        # Whatever happened above, never a child deaf to SIGTERM; what
        # came since the fork is noted now.
        _restore_mask()


def deliver_early_stop_signals() -> None:
    """Send this worker the stop signals noted before gunicorn's handlers
    were set (``post_worker_init``: they are by then)."""
    early, _early[:] = list(_early), []
    for number in early:
        os.kill(os.getpid(), number)
