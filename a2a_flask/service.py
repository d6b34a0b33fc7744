"""The version-neutral service: send, get, list, cancel, extended card.

It takes and returns neutral values (``TaskRecord``, messages in their stored
form) and raises neutral errors (``storage.base.StorageError`` subclasses,
``errors.A2AError`` for what every version words alike). It knows no
JSON-RPC and no method names: a binding (``protocol/``) parses a protocol's
params into these calls and renders what they return.

Ownership: every call is keyed by (caller, agent, tenant); another caller's
task, or another tenant's, is ``NoSuchTaskError``. The stale-turn policy is
the storage's (``get_task``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, List, Optional, Tuple

from . import answer_budget, errors
from .answer_budget import ENVELOPE_BYTES, SMALL_ANSWER_BYTES
from .agent import Turn, TurnReadFailed, run_turn
from .agent.engine import store_outcome
from .auth.callers import KEY_REFUSED
from .storage import records
from .storage.base import (
    QUEUED_TEXT, RememberedKeyRevokedError, StorageUnavailableError, StoredTaskPage,
    TaskRecord, TurnStart,
)
from .messages import agent_message, text_part
from .waits import settled

if TYPE_CHECKING:  # pragma: no cover
    from .agent.registry import Agent
    from .answer_budget import AnswerBudget, Reservation
    from .app_state import AppState
    from .auth.callers import Caller
    from .storage.base import Storage
    from .storage.records import Message


class CallContext:
    """One call as the service sees it: who calls (``caller``) which agent,
    in which tenant, through which app's A2A state
    (``app.extensions["a2a"]``)."""

    __slots__ = ("app_state", "agent", "caller", "at_root", "tenant", "answer_held")

    def __init__(self, app_state: AppState, agent: Agent, caller: Caller,
                 at_root: bool = False, tenant: str = "") -> None:
        self.app_state = app_state
        self.agent = agent
        self.caller = caller
        #: Reached as the default agent at /a2a rather than under the prefix.
        self.at_root = at_root
        #: The tenant the call names ('' for none), already checked against
        #: the caller's (``auth.permissions.authorize_tenant``).
        self.tenant = tenant
        #: The bytes of the process's answer budget this call's answer
        #: holds (A2A_MAX_ANSWER_BYTES_IN_FLIGHT), None for a small answer;
        #: given back once the answer is sent (``release_answer``).
        self.answer_held: Optional[Reservation] = None

    def release_answer(self) -> None:
        """Give back what the answer held of the budget (again: nothing)."""
        held, self.answer_held = self.answer_held, None
        if held is not None:
            held.release()

    @property
    def storage(self) -> Storage:
        return self.app_state.storage

    def history_length(self, asked: Optional[int]) -> Optional[int]:
        """``asked``, else A2A_HISTORY_LENGTH_DEFAULT (None: all)."""
        return self.app_state.settings.history_length_default if asked is None else asked


def _budget(context: CallContext) -> int:
    return context.app_state.settings.max_answer_bytes - ENVELOPE_BYTES


def _answer(context: CallContext, record: TaskRecord) -> TaskRecord:
    return answer_budget.fit(record, _budget(context))


def _stored(context: CallContext, task_id: str, history_length: Optional[int] = None,
            remembered_key: Optional[str] = None) -> TaskRecord:
    """The caller's task as stored, no more of its history read than fits
    the answer budget (``fit`` then measures it exactly)."""
    return context.storage.get_task(
        task_id, context.caller.id, context.agent.name, history_length,
        remembered_key=remembered_key, max_bytes=_budget(context),
        tenant=context.tenant)


def _read(context: CallContext, task_id: str, history_length: Optional[int] = None,
          remembered_key: Optional[str] = None) -> TaskRecord:
    """The caller's task as an answer shows it."""
    return _answer(context, _stored(context, task_id, history_length, remembered_key))


def _wait_for_room(context: CallContext, budget: AnswerBudget,
                   weight: int) -> Reservation:
    """``weight`` bytes of the answer budget, once the answers before this
    one leave room (``ServerBusyError`` after A2A_ANSWER_WAIT_SECONDS). The
    thread's storage connection goes back to the pool meanwhile: a call
    waiting here must not keep a small read waiting for a connection."""
    context.storage.release_connection()
    return budget.reserve(weight)


def _counted(context: CallContext, record: TaskRecord,
             weight: Optional[int] = None) -> TaskRecord:
    """``record``, its answer counted in the process's budget without
    waiting: the call's work is done (a send's turn ran, a cancel was
    stored), so it is never refused for want of room. ``weight``: its rough
    size, when already measured."""
    budget = context.app_state.answer_budget
    if budget is not None:
        if weight is None:
            weight = records.rough_task_size(record)
        if weight >= SMALL_ANSWER_BYTES:
            context.answer_held = budget.reserve(weight, wait=False)
    return record


def clamp_history(history: List[Message], limit: Optional[int]) -> List[Message]:
    """The last ``limit`` messages (all of them when ``limit`` is None)."""
    if limit is None:
        return history
    return history[len(history) - limit:] if limit else []


def send(context: CallContext, message: dict,
         accepted_output_modes: Optional[List[str]] = None,
         metadata: Optional[dict] = None,
         history_length: Optional[int] = None,
         return_immediately: bool = False) -> TaskRecord:
    """Run one turn of ``message`` (a new task, a continuation when it names a
    taskId, or a replay of a messageId already sent: nothing runs twice) and
    return the task as it ends.

    An agent registered ``background=True``: the turn is queued for ``flask
    a2a worker``; with ``return_immediately`` (0.3 ``blocking: false``, 1.0
    ``returnImmediately``) the task comes back at once, ``working``; else
    once the turn ended or was interrupted (``input-required``...), or after
    A2A_BLOCKING_WAIT_SECONDS when an operator set that cap.
    A message to a task whose background turn is queued or running is queued
    as the task's next turn (docs/background.md); a caller with
    A2A_QUEUE_LIMIT_PER_CALLER turns queued is refused (``QueueFullError``).
    Any other agent runs inside the call, ``return_immediately`` or not."""
    return _counted(context, *_send(context, message, accepted_output_modes, metadata,
                                    history_length, return_immediately))


def _mime_matches(pattern: str, mime: str) -> bool:
    if pattern in ("*/*", "*") or pattern == mime:
        return True
    kind, _, sub = pattern.partition("/")
    return sub == "*" and mime.partition("/")[0] == kind


def _check_accepts(agent: Agent, message: dict,
                   accepted_output_modes: Optional[List[str]]) -> None:
    """``ContentTypeNotSupported`` for a message ``agent`` cannot take (its
    ``input_modes``), or a caller accepting none of its ``output_modes``."""
    text_only = all(m.startswith("text/") for m in agent.input_modes)
    if text_only and not any(p["kind"] == "text" for p in message["parts"]):
        raise errors.ContentTypeNotSupportedError(
            "Agent %s takes text only, and the message has no text part."
            % agent.name, data={"inputModes": agent.input_modes})
    if accepted_output_modes and not any(
            _mime_matches(accepted, mine) or _mime_matches(mine, accepted)
            for accepted in accepted_output_modes for mine in agent.output_modes):
        raise errors.ContentTypeNotSupportedError(
            "configuration.acceptedOutputModes shares nothing with the output "
            "modes of agent %s (%s)." % (agent.name, ", ".join(agent.output_modes)),
            data={"field": "configuration.acceptedOutputModes",
                  "outputModes": agent.output_modes})


def _send(context: CallContext, message: dict,
          accepted_output_modes: Optional[List[str]],
          metadata: Optional[dict], history_length: Optional[int],
          return_immediately: bool) -> Tuple[TaskRecord, Optional[int]]:
    """The answer's record, and its rough size when measured on the way."""
    _check_accepts(context.agent, message, accepted_output_modes)
    owner, agent_name = context.caller.id, context.agent.name
    storage = context.storage
    if context.agent.background:
        return _send_to_queue(context, message, metadata,
                              context.history_length(history_length),
                              return_immediately), None
    # A key taken on trust (auth.authenticate) is checked by the start itself.
    remembered_key = context.caller.remembered_key
    try:
        start = storage.start_turn(
            owner, agent_name, message, context_id=message.get("contextId"),
            task_id=message.get("taskId"), metadata=metadata, remembered_key=remembered_key,
            max_stored_bytes=context.app_state.settings.max_stored_bytes_per_caller,
            tenant=context.tenant)
    except RememberedKeyRevokedError:
        raise errors.UnauthenticatedError(KEY_REFUSED) from None
    history_length = context.history_length(history_length)
    if start.replayed:
        return _read(context, start.task_id, history_length, remembered_key), None
    context.caller.remembered_key = None  # live when the turn was stored
    # The agent may wait seconds on a model: the thread's SQLite connection
    # goes back to the process's pool meanwhile, as before a blocking send
    # waits, and the send's place to the next send (A2A_RUNNING_SENDS); the
    # agent's reads and its outcome take one again.
    storage.release_connection()
    turn = Turn(storage, context.agent, context.caller, start.task_id,
                start.context_id, message, start.message_seq, metadata,
                tenant=context.tenant)
    turn._start = start
    try:
        with context.app_state.running_sends.paused():
            outcome = run_turn(turn, **context.app_state.turn_options)
    except TurnReadFailed as interrupted:
        raise _interrupted(turn, start, interrupted.failure) from None
    if outcome is None or not start.created:
        # Canceled meanwhile, or a task with earlier turns: read it as stored.
        return _read(context, start.task_id, history_length), None
    # A new task holds exactly what this turn wrote: no need to read it back.
    state, status_message, artifacts, timestamp = outcome
    return answer_budget.measured_fit(TaskRecord(
        start.task_id, start.context_id, agent_name, owner, state, timestamp,
        status_message, artifacts,
        clamp_history([start.message, status_message], history_length), metadata),
        _budget(context))


#: The outcome of a continuation whose agent's read met a storage outage.
READ_FAILED_TEXT = ("The agent could not complete this turn: the storage was "
                    "unavailable while it read the task. Send the message "
                    "again with a new messageId once the storage works again.")


def _interrupted(turn: Turn, start: TurnStart,
                 failure: StorageUnavailableError) -> StorageUnavailableError:
    """What a send answers when the storage failed under its agent's read:
    the outage (``failure``), made true. A new task's start is withdrawn
    (nothing was stored: a retry of the same messageId runs it again); a
    continuation cannot be withdrawn without its earlier status, so its
    turn is failed naming the storage, and the answer says so
    (``stored_task``). Whichever of these the storage refuses too, the
    answer says the task stays working (until A2A_STALE_TURN_SECONDS)."""
    storage, owner, agent = turn._store, turn.caller.id, turn.agent.name
    try:
        if start.created:
            if storage.withdraw_turn(turn.task_id, owner, agent,
                                     start.message["messageId"], start.tenant):
                return failure
        else:
            store_outcome(turn, "failed", agent_message(
                [text_part(READ_FAILED_TEXT)], turn.task_id, turn.context_id))
        state = storage.task_state(turn.task_id) or "working"
    except Exception as exc:
        if storage.failure(exc) is None:
            raise
        state = "working"
    failure.stored_task = turn.task_id, state
    return failure


def _send_to_queue(context: CallContext, message: dict, metadata: Optional[dict],
                   history_length: Optional[int], return_immediately: bool) -> TaskRecord:
    owner, agent_name, storage = context.caller.id, context.agent.name, context.storage
    queued = agent_message([text_part(QUEUED_TEXT)])
    tracing = context.app_state.tracing
    try:
        # Queued only while the caller's key is live, in the enqueue's own
        # transaction: a `keys revoke` between the key check and here would
        # otherwise miss this turn when it cancels the key's queued turns.
        start = storage.enqueue_turn(
            owner, agent_name, message, context_id=message.get("contextId"),
            task_id=message.get("taskId"), metadata=metadata,
            retry=context.agent.retry, status_message=queued,
            queue_limit=context.app_state.settings.queue_limit_per_caller,
            trace_context=tracing.current_context() if tracing else None,
            live_key=context.caller.key_hash,
            max_stored_bytes=context.app_state.settings.max_stored_bytes_per_caller,
            tenant=context.tenant)
    except RememberedKeyRevokedError:
        raise errors.UnauthenticatedError(KEY_REFUSED) from None
    context.caller.remembered_key = None  # live when the turn was queued
    # A replay waits too: blocking means the outcome, whoever sent it first.
    record = None if return_immediately else _outcome(
        context, start.task_id, history_length)
    if record is None:
        record = _stored(context, start.task_id, history_length)
    return _answer(context, record)


def _outcome(context: CallContext, task_id: str,
             history_length: Optional[int]) -> Optional[TaskRecord]:
    """The task once a read after this send's enqueue shows it settled:
    the turn queued ran (the task stays ``working`` while a turn of it is
    queued or running) or never will (failed, canceled). None when the
    operator's cap (A2A_BLOCKING_WAIT_SECONDS) ran out first, or the process
    is stopping (the caller gets the task as it stands, and polls it)."""
    storage, waits = context.storage, context.app_state.task_waits
    seconds = context.app_state.settings.blocking_wait_seconds
    deadline = None if seconds is None else time.monotonic() + seconds
    while True:
        # No transaction is open while waiting: the enqueue has committed.
        storage.release_connection()  # 1,000 waiting calls need no 1,000
        with context.app_state.running_sends.paused():
            woken = waits.wait(task_id, None if deadline is None
                               else deadline - time.monotonic())
        if not woken:
            return None
        record = _stored(context, task_id, history_length)
        # Woken by an earlier read, and another message queued a turn since:
        # wait for that one too (a blocking send answers no ``working``).
        if settled(record.state):
            return record


def get(context: CallContext, task_id: str,
        history_length: Optional[int] = None) -> TaskRecord:
    """The caller's task; an answer of SMALL_ANSWER_BYTES or more holds its
    size of the process's budget, waiting its turn when there is no room:
    without the task, read again once there is (a waiting read holds no
    memory), or ``ServerBusyError`` after A2A_ANSWER_WAIT_SECONDS."""
    history_length = context.history_length(history_length)
    # A key taken on trust (auth.authenticate) is checked by the read itself.
    remembered_key = context.caller.remembered_key
    record, weight = answer_budget.measured_fit(
        _stored(context, task_id, history_length, remembered_key), _budget(context))
    budget = context.app_state.answer_budget
    if budget is None:
        return record
    if weight is None:
        weight = records.rough_task_size(record)
    if weight < SMALL_ANSWER_BYTES:
        return record
    context.answer_held = budget.try_reserve(weight)
    if context.answer_held is None:
        del record
        context.answer_held = _wait_for_room(context, budget, weight)
        record = _read(context, task_id, history_length, remembered_key)
        context.answer_held.resize(records.rough_task_size(record))
    return record


def cancel(context: CallContext, task_id: str) -> TaskRecord:
    context.storage.cancel_task(task_id, context.caller.id, context.agent.name,
                                tenant=context.tenant)
    return _counted(context, _read(context, task_id))


def list_tasks(context: CallContext, context_id: Optional[str] = None,
               state: Optional[str] = None, updated_after: Optional[str] = None,
               limit: int = 50, cursor: Optional[str] = None,
               history_length: Optional[int] = 0,
               include_artifacts: bool = False) -> StoredTaskPage:
    """The caller's tasks of this agent only, newest first, one page: it
    ends early at A2A_MAX_ANSWER_BYTES (its first task there whatever its
    size, its history trimmed to fit: ``fit``).

    Any page may be that large: it holds A2A_MAX_ANSWER_BYTES of the
    process's answer budget before it is read (waiting its turn, or
    ``ServerBusyError``), then only its size (nothing, under
    SMALL_ANSWER_BYTES)."""
    budget = _budget(context)
    answers = context.app_state.answer_budget
    if answers is not None:
        most = context.app_state.settings.max_answer_bytes
        context.answer_held = answers.try_reserve(most) or _wait_for_room(
            context, answers, most)
    page = context.storage.list_tasks(
        owner=context.caller.id, agent=context.agent.name, context_id=context_id,
        state=state, updated_after=updated_after, limit=limit, cursor=cursor,
        history_length=history_length, include_artifacts=include_artifacts,
        max_bytes=budget, tenant=context.tenant)
    for index, task in enumerate(page.tasks):
        if index == 0 or task.history_omitted:
            answer_budget.fit(task, budget)  # the first may be alone over the budget
    if context.answer_held is not None:
        weight = sum(records.rough_task_size(task) for task in page.tasks)
        if weight < SMALL_ANSWER_BYTES:
            context.release_answer()
        else:
            context.answer_held.resize(weight)
    return page


def count_tasks(context: CallContext, context_id: Optional[str] = None,
                state: Optional[str] = None, updated_after: Optional[str] = None) -> int:
    """How many tasks ``list_tasks`` would page through with these filters."""
    return context.storage.count_tasks(
        owner=context.caller.id, agent=context.agent.name, context_id=context_id,
        state=state, updated_after=updated_after, tenant=context.tenant)


def check_extended_card(context: CallContext) -> None:
    """``AuthenticatedExtendedCardNotConfigured`` unless this caller may read
    the agent's extended card (the binding then renders it)."""
    if not context.agent.has_extended_card:
        raise errors.ExtendedAgentCardNotConfiguredError(
            "Agent %s has no authenticated extended card; its public card is "
            "all there is." % context.agent.name)
    if not context.caller.authenticated:
        raise errors.ExtendedAgentCardNotConfiguredError(
            "The extended card of agent %s is shown only to authenticated "
            "callers, and authentication is off here." % context.agent.name)
