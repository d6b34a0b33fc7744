"""The storage contract (``a2a_flask.storage.base.Storage``), run against
every backend (``make_storage`` in conftest.py: ``sqlite`` and ``postgres``).

Every operation, ownership and retries; listing, operations, bulk copy,
keys, users and the races are in test_contract_more.py.
"""

from datetime import datetime, timedelta, timezone

import pytest

from a2a_flask.storage import base
from a2a_flask.storage.base import (
    STALE_TURN_TEXT, ContextMismatchError, MessageIdReusedError, TaskEndedError,
    NoSuchTaskError, TaskNotWaitingError, TaskRecord,
)
from storage_helpers import agent_reply, finished, msg, set_updated_at


# -- schema -----------------------------------------------------------------------

def test_migrate_is_idempotent_and_reports_the_version(storage):
    assert storage.schema_version() == storage.expected_version() >= 3
    storage.migrate()
    assert storage.schema_version() == storage.expected_version()
    assert isinstance(storage, base.Storage)


# -- a turn -----------------------------------------------------------------------

def test_start_turn_creates_a_working_task_with_the_stored_message(storage):
    start = storage.start_turn("alice", "echo", msg("one"), metadata={"k": 1})
    assert start.created and not start.replayed
    assert start.task_id.startswith("task_") and start.context_id.startswith("ctx_")
    assert start.message == dict(msg("one"), kind="message", taskId=start.task_id,
                                 contextId=start.context_id)
    task = storage.get_task(start.task_id, "alice", "echo")
    assert isinstance(task, TaskRecord)
    assert (task.id, task.context_id, task.agent, task.owner, task.state) == (
        start.task_id, start.context_id, "echo", "alice", "working")
    assert task.history == [start.message] and task.artifacts == []
    assert task.metadata == {"k": 1} and task.status_message is None
    assert storage.task_state(start.task_id) == "working"


def test_start_turn_joins_a_given_context(storage):
    first = finished(storage)
    second = storage.start_turn("alice", "echo", msg("two"),
                                context_id=first.context_id)
    assert second.context_id == first.context_id and second.task_id != first.task_id


def test_finish_turn_stores_state_message_and_artifacts(storage):
    start = storage.start_turn("alice", "echo", msg())
    artifact = {"artifactId": "art-1", "parts": [{"kind": "text", "text": "x"}]}
    stamp = storage.finish_turn(start.task_id, "alice", "echo", "completed",
                                agent_reply(start), [artifact])
    task = storage.get_task(start.task_id, "alice", "echo")
    assert task.state == "completed" and task.updated_at == stamp
    assert stamp.endswith("Z") and len(stamp) == len("2026-01-02T03:04:05.678Z")
    assert task.status_message == agent_reply(start)
    assert task.history == [start.message, agent_reply(start)]
    assert task.artifacts == [artifact]


def test_finish_turn_of_a_task_no_longer_working_changes_nothing(storage):
    start = storage.start_turn("alice", "echo", msg())
    storage.cancel_task(start.task_id, "alice", "echo")
    assert storage.finish_turn(start.task_id, "alice", "echo", "completed",
                               agent_reply(start), [{"artifactId": "a",
                                                     "parts": []}]) is None
    task = storage.get_task(start.task_id, "alice", "echo")
    assert task.state == "canceled" and task.artifacts == []
    assert task.history == [start.message]


def test_a_waiting_task_is_claimed_by_its_continuation(storage):
    first = finished(storage, "input-required")
    again = storage.start_turn("alice", "echo", msg("more"), task_id=first.task_id,
                               context_id=first.context_id)
    assert not again.created and again.task_id == first.task_id
    assert again.context_id == first.context_id
    assert storage.task_state(first.task_id) == "working"
    without_context = finished(storage, "auth-required", text="x")
    claimed = storage.start_turn("alice", "echo", msg("y"),
                                 task_id=without_context.task_id)
    assert claimed.context_id == without_context.context_id


@pytest.mark.parametrize("state", sorted(base.TERMINAL_STATES))
def test_a_terminal_task_takes_no_continuation(storage, state):
    first = finished(storage, state)
    with pytest.raises(TaskNotWaitingError) as caught:
        storage.start_turn("alice", "echo", msg("more"), task_id=first.task_id)
    assert caught.value.state == state and caught.value.terminal
    assert caught.value.context_id == first.context_id
    assert storage.task_state(first.task_id) == state
    # Nothing was recorded: the same messageId may be sent elsewhere.
    assert storage.start_turn("alice", "echo", msg("more")).created


def test_a_running_task_takes_no_continuation(storage):
    start = storage.start_turn("alice", "echo", msg())
    with pytest.raises(TaskNotWaitingError) as caught:
        storage.start_turn("alice", "echo", msg("more"), task_id=start.task_id)
    assert caught.value.state == "working" and not caught.value.terminal


def test_a_continuation_with_another_context_is_refused(storage):
    first = finished(storage, "input-required")
    with pytest.raises(ContextMismatchError) as caught:
        storage.start_turn("alice", "echo", msg("more"), task_id=first.task_id,
                           context_id="ctx_other")
    assert caught.value.task_context_id == first.context_id
    assert storage.task_state(first.task_id) == "input-required"


# -- ownership --------------------------------------------------------------------

def test_another_callers_or_agents_task_is_not_found(storage):
    first = finished(storage, "input-required")
    for owner, agent in (("bob", "echo"), ("alice", "chat")):
        with pytest.raises(NoSuchTaskError):
            storage.get_task(first.task_id, owner, agent)
        with pytest.raises(NoSuchTaskError):
            storage.cancel_task(first.task_id, owner, agent)
        with pytest.raises(NoSuchTaskError):
            storage.start_turn(owner, agent, msg("x"), task_id=first.task_id)
    assert storage.task_state(first.task_id) == "input-required"
    with pytest.raises(NoSuchTaskError):
        storage.get_task("task_nope", "alice", "echo")


def test_a_context_history_is_the_callers_own_with_this_agent(storage):
    mine = finished(storage, context_id="shared")
    finished(storage, owner="bob", context_id="shared", text="theirs")
    finished(storage, agent="chat", context_id="shared", text="other agent")
    assert [m["messageId"] for m in storage.context_history(
        "alice", "echo", "shared")] == ["m-hi", "a-hi"]
    assert mine.context_id == "shared"


# -- retries ----------------------------------------------------------------------

def test_a_retry_is_replayed_and_writes_nothing(storage):
    first = finished(storage)
    again = storage.start_turn("alice", "echo", msg())
    assert again.replayed and not again.created
    assert (again.task_id, again.context_id) == (first.task_id, first.context_id)
    assert len(storage.get_task(first.task_id, "alice", "echo").history) == 2


def test_a_message_id_reused_for_another_message_is_refused(storage):
    finished(storage)
    with pytest.raises(MessageIdReusedError) as caught:
        storage.start_turn("alice", "echo", msg("different", message_id="m-hi"))
    assert caught.value.message_id == "m-hi"
    # Per caller and agent: the same messageId elsewhere is a new message.
    assert storage.start_turn("bob", "echo", msg()).created
    assert storage.start_turn("alice", "chat", msg()).created


def test_a_retry_with_or_without_the_ids_of_its_task_is_replayed(storage):
    """As a client sends it ("kind"), then with the ids of the task it went
    to, or without them; the ids of another context make another message."""
    sent = msg("ask", kind="message")
    first = storage.start_turn("alice", "echo", sent)
    storage.finish_turn(first.task_id, "alice", "echo", "input-required",
                        agent_reply(first, "more?"))
    ids = {"taskId": first.task_id, "contextId": first.context_id}
    then = msg("then", kind="message", **ids)
    assert not storage.start_turn("alice", "echo", then, context_id=first.context_id,
                                  task_id=first.task_id).replayed
    for retry in (sent, dict(sent, contextId=first.context_id), dict(sent, **ids),
                  then, dict(then, contextId=None), msg("then", kind="message")):
        again = storage.start_turn("alice", "echo", retry,
                                   context_id=retry.get("contextId"),
                                   task_id=retry.get("taskId"))
        assert again.replayed, retry
        assert (again.task_id, again.context_id) == (first.task_id, first.context_id)
    with pytest.raises(MessageIdReusedError):
        storage.start_turn("alice", "echo", dict(sent, contextId="ctx_other"),
                           context_id="ctx_other")
    assert len(storage.get_task(first.task_id, "alice", "echo").history) == 3


# -- reads ------------------------------------------------------------------------

def test_history_length_clamps_newest_last(storage):
    first = finished(storage, "input-required")
    storage.start_turn("alice", "echo", msg("more"), task_id=first.task_id)
    ids = ["m-hi", "a-hi", "m-more"]
    for length, expected in ((None, ids), (0, []), (2, ids[1:]), (10, ids)):
        task = storage.get_task(first.task_id, "alice", "echo", length)
        assert [m["messageId"] for m in task.history] == expected


def test_task_and_context_history_bounded_and_before(storage):
    first = finished(storage, "input-required")
    more = storage.start_turn("alice", "echo", msg("more"), task_id=first.task_id)
    assert [m["messageId"] for m in storage.task_history(first.task_id)] == [
        "m-hi", "a-hi", "m-more"]
    assert [m["messageId"] for m in storage.task_history(
        first.task_id, before_seq=more.message_seq)] == ["m-hi", "a-hi"]
    assert [m["messageId"] for m in storage.task_history(
        first.task_id, limit=1)] == ["m-more"]
    assert [m["messageId"] for m in storage.context_history(
        "alice", "echo", first.context_id, before_seq=more.message_seq,
        limit=1)] == ["a-hi"]
    assert storage.task_state("task_nope") is None


def test_a_message_seq_is_found_by_its_task_id_and_role(storage):
    """What a turn whose start did not read its message's seq asks
    (``TurnStart.message_seq`` None): the latest message of the task with
    that id and role."""
    first = finished(storage, "input-required")
    more = storage.start_turn("alice", "echo", msg("more"), task_id=first.task_id)
    assert storage.message_seq(first.task_id, "m-more", "user") == more.message_seq
    assert storage.message_seq(first.task_id, "a-hi", "agent") < more.message_seq
    assert storage.message_seq(first.task_id, "m-more", "agent") is None
    assert storage.message_seq("task_nope", "m-more", "user") is None


# -- stale turns ------------------------------------------------------------------

def test_a_stale_turn_is_failed_on_read_and_only_then(make_storage):
    storage = make_storage(A2A_STALE_TURN_SECONDS=60)
    start = storage.start_turn("alice", "echo", msg())
    assert not storage.fail_stale_turn(start.task_id)  # fresh: still running
    assert storage.get_task(start.task_id, "alice", "echo").state == "working"
    set_updated_at(storage, start.task_id,
                   datetime.now(timezone.utc) - timedelta(seconds=120))
    task = storage.get_task(start.task_id, "alice", "echo")
    assert task.state == "failed"
    assert task.status_message["parts"][0]["text"] == STALE_TURN_TEXT
    assert task.history[-1] == task.status_message
    # The turn that finally ends finds the task failed and changes nothing.
    assert storage.finish_turn(start.task_id, "alice", "echo", "completed",
                               agent_reply(start)) is None
    assert not storage.fail_stale_turn(start.task_id)


# -- cancel -----------------------------------------------------------------------

def test_cancel_a_task_then_not_again(storage):
    first = finished(storage, "input-required")
    storage.cancel_task(first.task_id, "alice", "echo")
    assert storage.task_state(first.task_id) == "canceled"
    with pytest.raises(TaskEndedError) as caught:
        storage.cancel_task(first.task_id, "alice", "echo")
    assert caught.value.state == "canceled"
