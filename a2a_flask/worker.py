"""``flask a2a worker``: runs the turns of background agents, queued in the
store by ``service.send``, outside any web request.

One dispatcher (the main thread) claims queued turns for its free threads,
renews the leases of the turns it runs, and expires the leases of workers
that died (their turns are failed, or re-queued for ``retry=True`` agents).
Each turn runs in a thread of its own with the same ``Turn`` API and the same
conditional outcome as a turn run in a request. SIGTERM stops claiming, lets
running turns finish for ``grace`` seconds, then releases what is left.
"""

import logging
import os
import secrets
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, Iterable, List, Optional

from .agent import Turn, TurnReadFailed, run_turn
from .auth.callers import Caller
from .storage.common import FINISH_ATTEMPTS, pause_before_retry
from .storage.states import READ_FAILED_TEXT
from .waits import Pace, change_marker, wait_for_change

if TYPE_CHECKING:  # pragma: no cover
    from .app_state import AppState

log = logging.getLogger("a2a_flask")

#: The longest an idle dispatcher waits before it looks at the queue again:
#: it looks at once when the store changed (waits.wait_for_change), or after
#: waits.UNMARKED_TICK on a store that cannot tell (PostgreSQL while its
#: listening connection is down).
IDLE_SLEEP = 0.5


def background_agents(app_state: "AppState", names: Optional[Iterable[str]] = None
                      ) -> List[str]:
    """The names of the background agents this worker runs: all registered
    (and reachable) ones, or ``names``; ValueError for a name that is not."""
    runnable = {agent.name for agent in app_state.reachable_agents()
                if agent.background}
    if names is None:
        return sorted(runnable)
    unknown = sorted(set(names) - runnable)
    if unknown:
        raise ValueError("not a background agent here: %s; background agents: %s"
                         % (", ".join(unknown), ", ".join(sorted(runnable)) or "none"))
    return sorted(set(names))


class BackgroundTurn(Turn):
    """A claimed turn: ``attempt`` tells a retried turn from a first run."""

    def __init__(self, storage, agent, claimed):
        super().__init__(storage, agent, Caller(claimed.owner, "caller", claimed.owner),
                         claimed.task_id, claimed.context_id, claimed.message,
                         claimed.message_seq, claimed.metadata,
                         tenant=claimed.tenant)
        #: 1 on the first run; more when a dead worker's turn is retried.
        self.attempt = claimed.attempts


class Worker:
    """Runs the turns of background agents: claims queued turns for its free
    threads, renews their leases, expires dead workers' leases, and stores
    each outcome only while it holds the turn (``run`` until ``stop``)."""

    def __init__(self, app_state, threads=1, agents=None, grace=30.0):
        settings = app_state.settings
        self.app_state = app_state
        self.storage = app_state.storage
        self.threads = max(1, int(threads))
        self.agents = background_agents(app_state, agents)
        self.grace = grace
        self.lease_seconds = settings.worker_lease_seconds
        self.max_attempts = settings.worker_max_attempts
        self.id = "%s:%d:%s" % (socket.gethostname(), os.getpid(),
                                secrets.token_hex(3))
        self._running = {}  # task id -> thread
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._signaled = False  # stop_on_signal's note
        #: Busy after a claim: the next queued turn is seen within BUSY_TICK.
        self._pace = Pace()

    def stop(self, *_signal: Any) -> None:
        """Stop claiming; ``run`` returns once the running turns are done
        (or the grace period is over). From another thread; a signal
        handler is ``stop_on_signal``."""
        self._stopping.set()
        self._wake.set()

    def stop_on_signal(self, *_signal: Any) -> None:
        """``stop`` for SIGTERM and SIGINT. The handler runs on the
        dispatcher's own thread between two of its steps, maybe inside
        ``_wake``'s lock (``Event.wait`` and ``clear`` take it): setting
        ``_wake`` there would wait for itself for ever. A plain assignment
        instead, seen at the dispatcher's next look (IDLE_SLEEP at most)."""
        self._signaled = True

    def _agents(self) -> List[str]:
        """The background agents whose turns this worker claims."""
        return self.agents

    def _named_agents(self) -> str:
        return ", ".join(self._agents()) or "(none)"

    def running(self) -> List[str]:
        with self._lock:
            return list(self._running)

    def _store_outcome(self, turn, state, message, artifacts=()):
        """The engine's ``store`` for a claimed turn: stored only while this
        worker holds it; a refusal of the storage (busy, full) is tried
        again as a request's outcome is (``FINISH_ATTEMPTS``), then the
        lease decides (the turn is failed or retried)."""
        for attempt in range(1, FINISH_ATTEMPTS + 1):
            try:
                return self.storage.finish_queued_turn(
                    turn.task_id, self.id, turn.caller.id, turn.agent.name,
                    state, message, artifacts,
                    max_artifact_bytes=turn.max_artifact_bytes)
            except Exception as exc:
                if self.storage.failure(exc) is None or attempt == FINISH_ATTEMPTS:
                    raise
                pause_before_retry(attempt)

    def run(self) -> None:
        log.info("worker %s: running agents %s in %d thread(s), lease %d s",
                 self.id, self._named_agents(), self.threads,
                 self.lease_seconds)
        upkeep_every = max(self.lease_seconds / 3.0, 0.2)
        next_upkeep = 0.0
        while not (self._signaled or self._stopping.is_set()):
            if time.monotonic() >= next_upkeep:
                self._upkeep()
                next_upkeep = time.monotonic() + upkeep_every
            # Read before the claim looks: a turn queued after the look
            # changes the marker, and the wait below ends at once.
            marker = change_marker(self.storage)
            if self._claim():
                self._pace.saw_change()
            else:
                wait_for_change(self.storage, marker, min(
                    IDLE_SLEEP, max(next_upkeep - time.monotonic(), 0)), self._wake,
                    self._pace)
                self._wake.clear()
        self._drain(upkeep_every)

    def _guarded(self, what, func, *args):
        """``func(*args)``; a storage failure is logged and tried next round."""
        try:
            return func(*args)
        except Exception as exc:
            if self.storage.failure(exc) is None:
                raise
            log.warning("worker %s: could not %s now (storage unavailable); "
                        "trying again", self.id, what)
            return None

    def _upkeep(self):
        # Seen even when idle: /health tells "no worker" from "no work".
        self._guarded("note itself", self.storage.note_worker, self.id)
        held = self.running()
        if held:
            self._guarded("renew leases", self.storage.renew_leases, self.id,
                          held, self.lease_seconds)
        for task_id, outcome in self._guarded(
                "expire leases", self.storage.expire_leases,
                self.max_attempts) or ():
            log.warning("worker %s: the lease on task %s expired (its worker "
                        "stopped): %s", self.id, task_id, outcome)

    def _claim(self):
        free = self.threads - len(self.running())
        agents = self._agents()
        if free <= 0 or not agents:
            return []
        claimed = self._guarded("claim turns", self.storage.claim_turns, self.id,
                                free, self.lease_seconds, agents) or []
        for turn in claimed:
            thread = threading.Thread(target=self._run, args=(turn,), daemon=True,
                                      name="a2a-turn-" + turn.task_id)
            with self._lock:
                self._running[turn.task_id] = thread
            log.info("worker %s: claimed task %s (agent %r, attempt %d)",
                     self.id, turn.task_id, turn.agent, turn.attempts)
            thread.start()
        return claimed

    def _run(self, claimed):
        started = time.monotonic()
        try:
            agent = self.app_state.extension.agents[claimed.agent]
            turn = BackgroundTurn(self.storage, agent, claimed)
            options = self.app_state.turn_options
            if options["tracing"] is None:
                outcome = run_turn(turn, store=self._store_outcome, **options)
            else:
                with options["tracing"].worker_span(claimed) as span:
                    outcome = run_turn(turn, store=self._store_outcome, **options)
                    span.set_attribute("a2a.outcome", outcome[0] if outcome
                                       else "discarded")
            log.info("worker %s: finished task %s: %s in %.1f s", self.id,
                     claimed.task_id, outcome[0] if outcome else
                     "discarded (canceled, or the lease was lost)",
                     time.monotonic() - started)
        except TurnReadFailed:
            # An outage, not the agent's failure: the turn goes back to the
            # queue (retry agents) or is failed as if its worker had stopped,
            # now, or by its lease if the storage refuses that too.
            outcome = self._guarded("release task " + claimed.task_id,
                                    self.storage.release_turns, self.id,
                                    [claimed.task_id], self.max_attempts,
                                    READ_FAILED_TEXT)
            log.warning("worker %s: the storage failed under the agent's read "
                        "of task %s: %s", self.id, claimed.task_id,
                        outcome[0][1] if outcome else "left to its lease")
        except Exception:
            log.exception("worker %s: could not store the outcome of task %s; "
                          "its lease will expire", self.id, claimed.task_id)
        finally:
            # The next turn's thread takes this connection instead of opening
            # one (a burst of 1,000 turns ending together opened 1,000).
            self.storage.release_connection()
            with self._lock:
                self._running.pop(claimed.task_id, None)
            self._wake.set()

    def _drain(self, upkeep_every):
        """Let running turns finish (renewing their leases) for ``grace``
        seconds; then release the rest: failed, or re-queued (retry=True)."""
        deadline = time.monotonic() + self.grace
        if self.running():
            log.info("worker %s: stopping; waiting up to %.0f s for %d running "
                     "turn(s)", self.id, self.grace, len(self.running()))
        while self.running() and time.monotonic() < deadline:
            self._wake.wait(min(upkeep_every, max(deadline - time.monotonic(), 0)))
            self._wake.clear()
            held = self.running()
            if held:
                self._guarded("renew leases", self.storage.renew_leases, self.id,
                              held, self.lease_seconds)
        left = self.running()
        if left:
            for task_id, outcome in self._guarded(
                    "release turns", self.storage.release_turns, self.id, left,
                    self.max_attempts) or ():
                log.warning("worker %s: stopped before task %s finished: %s",
                            self.id, task_id, outcome)
        # Gone at once from /health's view (the last claimer's stop says so).
        self._guarded("forget itself", self.storage.note_worker, self.id, False)
        if self.app_state.tracing is not None:
            from .tracing import flush
            flush()
        log.info("worker %s: stopped", self.id)


#: Seconds before gunicorn's graceful_timeout by which an in-process
#: worker has released the turns it could not finish.
STOP_MARGIN = 1.5


class InProcessWorker(Worker):
    """A ``Worker`` in a thread of a gunicorn worker process
    (``A2A_IN_PROCESS_WORKER``): it claims for every background agent the
    app has when it looks (agents registered after ``A2A(app)`` included),
    and stops with the process (``stopping.PROCESS``), draining for a
    little less than gunicorn's ``graceful_timeout``."""

    def __init__(self, app_state: "AppState", threads: int,
                 graceful_timeout: float) -> None:
        # Released turns must be written before gunicorn's master kills the
        # process at graceful_timeout: leave a margin for the release.
        super().__init__(app_state, threads, agents=[],
                         grace=max(graceful_timeout - STOP_MARGIN, 0.0))
        self.id = "%s:web" % self.id

    def _agents(self) -> List[str]:
        return background_agents(self.app_state)

    def stop(self, *_signal: Any) -> None:
        from .stopping import PROCESS

        if PROCESS.quick:  # gunicorn kills the process in 2 s: release now
            self.grace = 0.0
        super().stop()

    def _named_agents(self) -> str:
        return "(every background agent of the app)"

    def start(self) -> threading.Thread:
        # Seen before the process serves: its first /health is not degraded.
        self._guarded("note itself", self.storage.note_worker, self.id)
        self.storage.release_connection()  # written on the thread loading the app
        # Not a daemon: a stopping process waits for the drain and release.
        thread = threading.Thread(target=self._run_guarded, daemon=False,
                                  name="a2a-in-process-worker")
        thread.start()
        return thread

    def _run_guarded(self) -> None:
        try:
            self.run()
        except Exception:
            log.exception("worker %s: stopped on an unexpected error; background "
                          "turns wait for another claimer", self.id)


def start_in_process(app_state: "AppState") -> Optional[InProcessWorker]:
    """Start what a gunicorn worker process needs at its stop (always
    there), and its in-process claimer when ``A2A_IN_PROCESS_WORKER`` asks
    for one. Elsewhere (CLI commands, other servers) nothing is started."""
    from .stopping import PROCESS, graceful_seconds, gunicorn_worker

    server = gunicorn_worker()
    if server is None:
        return None
    PROCESS.watch(server)
    threads = app_state.settings.in_process_worker
    if not threads:
        return None
    runner = InProcessWorker(app_state, threads, graceful_seconds(server))
    PROCESS.on_stop(runner.stop)
    runner.start()
    return runner
