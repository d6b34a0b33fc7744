"""The storage contract, the background-turn queue (``flask a2a worker``)."""

import abc
from typing import List, Optional, Sequence, Tuple

from ..records import Artifact, ClaimedTurn, Message, TurnStart


class QueueStorage(abc.ABC):
    """The background-turn queue."""

    # A queued turn is a row of its own: queued (no worker), then leased to
    # one worker until ``lease_expires`` (the storage's clock), renewed while
    # the agent runs, deleted when the turn ends. A task is ``working`` while
    # it has turns; they run one at a time, in the order received (a
    # follow-up waits behind the turn before it). ``fail_stale_turn`` leaves
    # a task with a turn row alone (leases govern it), and ``cancel_task``
    # deletes the turns no worker has claimed yet.
    #
    # Fairness: each turn has a round (``caller_round``): one after its
    # caller's last turn (a caller is an owner in one tenant: the same owner
    # in two tenants is two callers, with a quota each), and at most one
    # before the oldest queued turn, so a caller with nothing queued goes
    # next; claims are in round order. One
    # caller's backlog delays another's turn by about one turn per worker
    # thread, whatever its length.

    @abc.abstractmethod
    def enqueue_turn(self, owner: str, agent: str, message: Message,
                     context_id: Optional[str] = None,
                     task_id: Optional[str] = None,
                     metadata: Optional[dict] = None,
                     retry: bool = False,
                     status_message: Optional[Message] = None,
                     queue_limit: Optional[int] = None,
                     trace_context: Optional[str] = None,
                     live_key: Optional[str] = None,
                     max_stored_bytes: Optional[int] = None,
                     tenant: str = "") -> TurnStart:
        """``start_turn`` and, in the same transaction, a queued turn for the
        task (message seq, agent, ``retry``, 0 attempts, its caller's next
        round, ``trace_context`` kept for the worker); the task's status
        message becomes ``status_message`` (it may say it is queued; it does
        not join the history). A replay (``TurnStart.replayed``) queues
        nothing. Either both are stored or neither is.

        - ``queue_limit``: when ``owner`` already has that many turns queued
          (not claimed), ``QueueLimitReachedError`` and nothing is stored (a replay
          is still answered as one).
        - ``task_id`` of a task that is ``working`` on a queued or running
          turn: a follow-up. The message joins the history and is queued as
          the task's next turn (the status message is left as it is); a
          task's turns run one at a time, in the order received.
          ``TaskNotWaitingError`` for any other working task, as
          ``start_turn``.
        - ``live_key``: the hash of the caller's API key: the turn is queued
          only if that key is not revoked, checked by the write itself
          (``RememberedKeyRevokedError``, nothing stored), so that a
          revocation either refuses it or comes after it (and cancels it).
        - ``max_stored_bytes``: the caller's storage quota, as ``start_turn``.
        """

    @abc.abstractmethod
    def claim_turns(self, worker: str, limit: int, lease_seconds: float,
                    agents: Optional[Sequence[str]] = None) -> List[ClaimedTurn]:
        """Lease up to ``limit`` queued turns (by round, then oldest first;
        only a task's oldest turn; of ``agents`` only, when given) to
        ``worker`` until now + ``lease_seconds``, each by a conditional
        UPDATE (``WHERE worker IS NULL``) whose row count is checked,
        counting an attempt: two workers never hold the same turn (SQLite:
        one short ``BEGIN IMMEDIATE``; PostgreSQL: ``FOR UPDATE SKIP
        LOCKED``). Turns of tasks no longer ``working`` are dropped, not
        claimed. Cheap when nothing is queued (a read, no write lock)."""

    @abc.abstractmethod
    def renew_leases(self, worker: str, task_ids: Sequence[str],
                     lease_seconds: float) -> List[str]:
        """Extend ``worker``'s leases on ``task_ids`` to now + ``lease_seconds``
        (``WHERE worker = ?``); returns the task ids still held (a lease that
        expired and was taken over is not renewed)."""

    @abc.abstractmethod
    def finish_queued_turn(self, task_id: str, worker: str, owner: str,
                           agent: str, state: str,
                           status_message: Optional[Message] = None,
                           artifacts: Sequence[Artifact] = (),
                           max_artifact_bytes: Optional[int] = None) -> Optional[str]:
        """Delete ``worker``'s turn row and store the outcome exactly as
        ``finish_turn`` (conditional on ``working``; ``ArtifactsFullError``
        with nothing stored, the turn row kept), in one transaction.
        None, with nothing stored, when the worker no longer holds the turn
        (its lease expired) or the task left ``working`` (canceled).

        With follow-ups queued behind it, the task stays ``working`` (the
        status message and artifacts are stored) and the follow-ups'
        messages move after the status message in the history (each turn's
        history is what came before its message), unless ``state`` is
        ``failed`` or ``rejected``: then the task ends so and the
        follow-ups never run."""

    @abc.abstractmethod
    def expire_leases(self, max_attempts: int = 3) -> List[Tuple[str, str]]:
        """Turns whose lease expired (their worker was killed or hung): an
        agent registered ``retry=True`` is re-queued while it had fewer than
        ``max_attempts`` attempts; any other is deleted and its task failed
        (``LEASE_EXPIRED_TEXT``, or ``ATTEMPTS_EXHAUSTED_TEXT``; conditional
        on ``working``), its follow-ups with it: at most once. Returns
        ``(task_id, "requeued" | "failed")`` pairs."""

    @abc.abstractmethod
    def release_turns(self, worker: str, task_ids: Sequence[str],
                      max_attempts: int = 3,
                      failed_text: Optional[str] = None) -> List[Tuple[str, str]]:
        """What a stopping worker does with turns it cannot finish: as
        ``expire_leases`` for these turns of ``worker`` now, whatever their
        lease. ``failed_text``: the status message of a turn failed rather
        than re-queued (default ``LEASE_EXPIRED_TEXT``)."""

    @abc.abstractmethod
    def note_worker(self, worker: str, alive: bool = True) -> bool:
        """A claimer's heartbeat, written at each upkeep whether or not it
        holds turns: ``worker``'s row seen now (``alive``), or deleted (a
        claimer that stopped). Rows not seen for ``WORKER_ROWS_KEPT_SECONDS``
        (killed claimers) are deleted meanwhile. True when ``worker``'s row
        was written (or deleted)."""

    @abc.abstractmethod
    def worker_last_seen(self) -> Optional[float]:
        """Seconds since any claimer's newest heartbeat (the storage's
        clock), None when there is none: what ``/health`` reads to say that
        background turns have nobody to run them."""
