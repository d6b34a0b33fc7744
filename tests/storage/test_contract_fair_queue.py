"""The queue's fairness, its per-caller limit, follow-ups to a task whose
background turn is queued or running, and ``cancel_tasks``, on every
backend (schema v7 on SQLite, step 6 on PostgreSQL)."""

import pytest

from a2a_flask.storage.base import QueueLimitReachedError, TaskEndedError
from storage_helpers import agent_reply, msg


@pytest.fixture
def queue(make_storage):
    return make_storage()


def owners_in_claim_order(queue, count):
    """Claim one turn at a time (as one free thread each time): the owners."""
    order = []
    for i in range(count):
        claimed = queue.claim_turns("w%d" % i, 1, 30)
        order += [turn.owner for turn in claimed]
    return order


def test_claims_take_callers_in_turn_whatever_one_backlog(queue):
    for i in range(6):
        queue.enqueue_turn("alice", "bg", msg("a%d" % i))
    for i in range(3):
        queue.enqueue_turn("bob", "bg", msg("b%d" % i))
    queue.enqueue_turn("carol", "bg", msg("c0"))
    # A caller with nothing queued goes next; then callers alternate.
    assert owners_in_claim_order(queue, 11) == [
        "carol", "bob", "alice", "bob", "alice", "bob", "alice", "alice",
        "alice", "alice"]


def test_a_backlog_delays_another_caller_by_one_turn_per_thread(queue):
    for i in range(50):
        queue.enqueue_turn("flooder", "bg", msg("f%d" % i))
    assert len(queue.claim_turns("w1", 4, 30)) == 4  # four threads busy
    mine = queue.enqueue_turn("alice", "bg", msg("mine"))
    # The next free thread takes alice's turn, not the flooder's 47th.
    assert [t.task_id for t in queue.claim_turns("w1", 1, 30)] == [mine.task_id]


def test_the_queued_limit_refuses_storing_nothing_and_replays_still_answer(queue):
    accepted = [queue.enqueue_turn("alice", "bg", msg("a%d" % i), queue_limit=3)
                for i in range(3)]
    counts = queue.task_counts()
    with pytest.raises(QueueLimitReachedError) as refused:
        queue.enqueue_turn("alice", "bg", msg("over"), queue_limit=3)
    assert (refused.value.owner, refused.value.limit) == ("alice", 3)
    assert queue.task_counts() == counts  # no task, no message
    # Its messageId was not recorded: once a turn starts, it is a new message.
    again = queue.enqueue_turn("alice", "bg", msg("a0"), queue_limit=3)
    assert again.replayed and again.task_id == accepted[0].task_id
    with pytest.raises(QueueLimitReachedError):  # a follow-up is a queued turn too
        queue.enqueue_turn("alice", "bg", msg("more"), queue_limit=3,
                           task_id=accepted[0].task_id)
    other = queue.enqueue_turn("bob", "bg", msg("b0"), queue_limit=3)
    assert not other.replayed  # another caller's limit is its own
    assert [t.owner for t in queue.claim_turns("w1", 2, 30)] == ["bob", "alice"]
    # running turns do not count
    late = queue.enqueue_turn("alice", "bg", msg("over"), queue_limit=3)
    assert late.created and not late.replayed


def test_a_follow_up_runs_after_the_turn_before_and_sees_its_answer(queue):
    start = queue.enqueue_turn("alice", "bg", msg("one"), status_message=None)
    first = queue.claim_turns("w1", 5, 30)
    assert [t.task_id for t in first] == [start.task_id]
    two = queue.enqueue_turn("alice", "bg", msg("two"), task_id=start.task_id,
                             status_message=agent_reply(start, "queued"))
    three = queue.enqueue_turn("alice", "bg", msg("three"),
                               context_id=start.context_id, task_id=start.task_id)
    assert (two.task_id, two.created, two.replayed) == (start.task_id, False, False)
    assert queue.enqueue_turn("alice", "bg", msg("two"),
                              task_id=start.task_id).replayed
    assert queue.claim_turns("w2", 5, 30) == []  # one turn of a task at a time
    task = queue.get_task(start.task_id, "alice", "bg")
    assert task.state == "working" and task.status_message is None  # left as is
    assert [m["messageId"] for m in task.history] == ["m-one", "m-two", "m-three"]

    reply = agent_reply(start, "first")
    assert queue.finish_queued_turn(start.task_id, "w1", "alice", "bg",
                                    "completed", reply)
    task = queue.get_task(start.task_id, "alice", "bg")
    assert task.state == "working" and task.status_message == reply
    assert [m["messageId"] for m in task.history] == [
        "m-one", "a-first", "m-two", "m-three"]
    (second,) = queue.claim_turns("w2", 5, 30)
    assert second.message == two.message
    assert [m["messageId"] for m in queue.task_history(
        start.task_id, before_seq=second.message_seq)] == ["m-one", "a-first"]
    assert queue.finish_queued_turn(start.task_id, "w2", "alice", "bg",
                                    "input-required", agent_reply(start, "second"))
    (third,) = queue.claim_turns("w3", 5, 30)
    assert third.message == three.message
    assert queue.finish_queued_turn(start.task_id, "w3", "alice", "bg",
                                    "completed", agent_reply(start, "third"))
    task = queue.get_task(start.task_id, "alice", "bg")
    assert task.state == "completed"
    assert [m["messageId"] for m in task.history] == [
        "m-one", "a-first", "m-two", "a-second", "m-three", "a-third"]


def test_a_follow_up_of_a_turn_still_queued_waits_for_it(queue):
    start = queue.enqueue_turn("alice", "bg", msg("one"))
    queue.enqueue_turn("alice", "bg", msg("two"), task_id=start.task_id)
    claimed = queue.claim_turns("w1", 5, 30)
    assert [t.message["messageId"] for t in claimed] == ["m-one"]


@pytest.mark.parametrize("ending", ["failed", "rejected"])
def test_a_turn_that_fails_or_rejects_ends_the_task_and_its_follow_ups(queue,
                                                                       ending):
    start = queue.enqueue_turn("alice", "bg", msg("one"))
    queue.claim_turns("w1", 1, 30)
    queue.enqueue_turn("alice", "bg", msg("two"), task_id=start.task_id)
    assert queue.finish_queued_turn(start.task_id, "w1", "alice", "bg", ending,
                                    agent_reply(start, "no"))
    assert queue.task_state(start.task_id) == ending
    assert queue.claim_turns("w2", 5, 30) == []


def test_cancel_drops_the_queued_follow_ups(queue):
    start = queue.enqueue_turn("alice", "bg", msg("one"))
    queue.claim_turns("w1", 1, 30)
    queue.enqueue_turn("alice", "bg", msg("two"), task_id=start.task_id)
    queue.cancel_task(start.task_id, "alice", "bg")
    assert queue.finish_queued_turn(start.task_id, "w1", "alice", "bg",
                                    "completed", agent_reply(start)) is None
    assert queue.claim_turns("w2", 5, 30) == []
    assert queue.task_state(start.task_id) == "canceled"


def test_an_expired_lease_fails_the_task_and_drops_its_follow_ups(queue):
    start = queue.enqueue_turn("alice", "bg", msg("one"))
    queue.claim_turns("w1", 1, 30)
    queue.enqueue_turn("alice", "bg", msg("two"), task_id=start.task_id)
    assert queue.release_turns("w1", [start.task_id]) == [(start.task_id, "failed")]
    assert queue.claim_turns("w2", 5, 30) == []


def test_the_trace_context_travels_with_the_queued_turn(queue):
    trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    queue.enqueue_turn("alice", "bg", msg("one"), trace_context=trace)
    queue.enqueue_turn("alice", "bg", msg("two"))
    assert [t.trace_context for t in queue.claim_turns("w1", 5, 30)] == [trace, None]


def test_cancel_tasks_by_caller_agent_task_and_state_with_a_dry_run(queue):
    running = queue.enqueue_turn("mallory", "bg", msg("running"))
    assert [t.task_id for t in queue.claim_turns("w1", 5, 30)] == [running.task_id]
    queued = queue.enqueue_turn("mallory", "bg", msg("queued"))
    other_agent = queue.enqueue_turn("mallory", "slow", msg("other agent"))
    waiting = queue.start_turn("mallory", "bg", msg("waiting"))
    queue.finish_turn(waiting.task_id, "mallory", "bg", "input-required",
                      agent_reply(waiting))
    done = queue.start_turn("mallory", "bg", msg("done"))
    queue.finish_turn(done.task_id, "mallory", "bg", "completed", agent_reply(done))
    bystander = queue.enqueue_turn("alice", "bg", msg("alice's"))

    would = queue.cancel_tasks(owner="mallory", agent="bg", dry_run=True)
    assert sorted(t.id for t in would) == sorted(
        [queued.task_id, running.task_id, waiting.task_id])
    assert {t.id: t.state for t in would}[waiting.task_id] == "input-required"
    assert queue.task_state(queued.task_id) == "working"  # nothing changed

    only_working = queue.cancel_tasks(owner="mallory", states=["working"])
    assert sorted(t.id for t in only_working) == sorted(
        [queued.task_id, running.task_id, other_agent.task_id])
    assert queue.task_state(waiting.task_id) == "input-required"
    assert queue.task_state(done.task_id) == "completed"
    assert queue.task_state(bystander.task_id) == "working"
    # The running turn sees it; its outcome is discarded.
    assert queue.progress(running.task_id, agent_reply(running, "50%")) is False
    assert queue.finish_queued_turn(running.task_id, "w1", "mallory", "bg",
                                    "completed", agent_reply(running)) is None
    assert [t.id for t in queue.cancel_tasks(task_id=waiting.task_id)] == [
        waiting.task_id]
    assert queue.cancel_tasks(owner="mallory") == []
    with pytest.raises(TaskEndedError):
        queue.cancel_task(queued.task_id, "mallory", "bg")
    # The queued turns went with their tasks: only alice's is left.
    assert [t.task_id for t in queue.claim_turns("w2", 10, 30)] == [
        bystander.task_id]
