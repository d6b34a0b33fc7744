"""The background-turn queue of the storage contract (``enqueue_turn``,
``claim_turns``, ``renew_leases``, ``finish_queued_turn``, ``expire_leases``,
``release_turns``, ``progress``), on every backend (both implement it: a backend without it fails here).
"""

import threading
from datetime import datetime, timedelta, timezone

import pytest

from a2a_flask.storage.base import (
    ATTEMPTS_EXHAUSTED_TEXT, LEASE_EXPIRED_TEXT, STALE_TURN_TEXT, TaskNotWaitingError,
)
from storage_helpers import agent_reply, finished, msg, set_updated_at

QUEUED = {"kind": "message", "role": "agent", "messageId": "q-1",
          "parts": [{"kind": "text", "text": "queued"}]}


@pytest.fixture
def queue(make_storage):
    return make_storage()


def expire_lease(storage, task_id):
    """Make a turn's lease look expired: the storage's clock cannot be moved
    (PostgreSQL's is the server's), the row can."""
    with storage.transaction() as conn:  # SQL text both drivers take as is
        conn.execute("UPDATE a2a_turns SET lease_expires ="
                     " '2000-01-01T00:00:00.000Z' WHERE task_id = '%s'" % task_id)


def test_enqueue_stores_a_working_task_with_its_queued_status(queue):
    start = queue.enqueue_turn("alice", "bg", msg("one"), metadata={"k": 1},
                               status_message=QUEUED)
    assert start.created and not start.replayed
    task = queue.get_task(start.task_id, "alice", "bg")
    assert task.state == "working" and task.history == [start.message]
    assert task.status_message == dict(QUEUED, taskId=start.task_id,
                                       contextId=start.context_id)
    # A replay of the same message queues nothing more.
    again = queue.enqueue_turn("alice", "bg", msg("one"), metadata={"k": 1})
    assert again.replayed and again.task_id == start.task_id
    claimed = queue.claim_turns("w1", 10, 30)
    assert [c.task_id for c in claimed] == [start.task_id]
    turn = claimed[0]
    assert (turn.owner, turn.agent, turn.context_id, turn.message, turn.attempts,
            turn.retry, turn.metadata) == (
        "alice", "bg", start.context_id, start.message, 1, False, {"k": 1})
    assert turn.message_seq == start.message_seq


def test_a_queued_retry_as_a_client_sends_it_is_replayed_live_and_imported(
        queue, tmp_path):
    """With "kind", with or without the ids of its task: replayed, whether
    the retry record was written by enqueue_turn or by import_tasks."""
    from a2a_flask.storage.sqlite import SqliteStorage
    source = SqliteStorage(str(tmp_path / "source.sqlite3"))
    source.migrate()
    copied = msg("copied", kind="message")
    finished_there = source.start_turn("alice", "bg", copied)
    source.finish_turn(finished_there.task_id, "alice", "bg", "completed",
                       agent_reply(finished_there))
    queue.import_tasks(next(source.export_tasks()))
    source.close()
    live = msg("live", kind="message", contextId="ctx_given")
    start = queue.enqueue_turn("alice", "bg", live, context_id="ctx_given")
    for sent, first in ((live, start), (copied, finished_there)):
        ids = {"taskId": first.task_id, "contextId": first.context_id}
        for retry in (sent, dict(sent, **ids), dict(sent, contextId=None)):
            again = queue.enqueue_turn("alice", "bg", retry,
                                       context_id=retry.get("contextId"),
                                       task_id=retry.get("taskId"))
            assert again.replayed and again.task_id == first.task_id, retry
    assert [c.task_id for c in queue.claim_turns("w1", 10, 30)] == [start.task_id]


def test_claims_are_oldest_first_bounded_and_by_agent(queue):
    starts = [queue.enqueue_turn("alice", "bg" if i % 2 else "other",
                                 msg("m%d" % i)) for i in range(5)]
    assert queue.claim_turns("w1", 0, 30) == []
    assert [c.task_id for c in queue.claim_turns("w1", 1, 30, agents=["bg"])] == [
        starts[1].task_id]
    assert [c.task_id for c in queue.claim_turns("w2", 5, 30, agents=["bg"])] == [
        starts[3].task_id]
    assert [c.task_id for c in queue.claim_turns("w2", 5, 30)] == [
        starts[0].task_id, starts[2].task_id, starts[4].task_id]
    assert queue.claim_turns("w3", 5, 30) == []


def test_a_turn_s_trace_context_comes_back_with_its_claim(queue):
    context = '{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}'
    traced = queue.enqueue_turn("alice", "bg", msg("t"), trace_context=context)
    untraced = queue.enqueue_turn("alice", "bg", msg("u"))
    claimed = {c.task_id: c.trace_context for c in queue.claim_turns("w1", 5, 30)}
    assert claimed == {traced.task_id: context, untraced.task_id: None}


def test_two_workers_racing_never_hold_the_same_turn(make_storage):
    first = make_storage()
    second = make_storage()  # its own connections, as another process
    for i in range(40):
        first.enqueue_turn("alice", "bg", msg("m%d" % i))
    got = {"a": [], "b": []}

    def claim(storage, name):
        while True:
            claimed = storage.claim_turns(name, 3, 30)
            if not claimed:
                return
            got[name] += [c.task_id for c in claimed]

    threads = [threading.Thread(target=claim, args=(first, "a")),
               threading.Thread(target=claim, args=(second, "b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    both = got["a"] + got["b"]
    assert len(both) == len(set(both)) == 40


def test_finish_stores_the_outcome_once_and_only_for_the_holder(queue):
    start = queue.enqueue_turn("alice", "bg", msg())
    queue.claim_turns("w1", 1, 30)
    artifact = {"artifactId": "art-1", "parts": [{"kind": "text", "text": "x"}]}
    assert queue.finish_queued_turn(start.task_id, "w2", "alice", "bg",
                                    "completed", agent_reply(start)) is None
    stamp = queue.finish_queued_turn(start.task_id, "w1", "alice", "bg",
                                     "completed", agent_reply(start), [artifact])
    task = queue.get_task(start.task_id, "alice", "bg")
    assert (task.state, task.updated_at, task.artifacts) == (
        "completed", stamp, [artifact])
    assert task.history == [start.message, agent_reply(start)]
    assert queue.finish_queued_turn(start.task_id, "w1", "alice", "bg",
                                    "failed") is None
    assert queue.claim_turns("w1", 1, 30) == []


def test_cancel_of_a_queued_turn_means_it_never_starts(queue):
    start = queue.enqueue_turn("alice", "bg", msg())
    queue.cancel_task(start.task_id, "alice", "bg")
    assert queue.claim_turns("w1", 5, 30) == []
    assert queue.task_state(start.task_id) == "canceled"


def test_cancel_of_a_running_turn_discards_its_outcome(queue):
    start = queue.enqueue_turn("alice", "bg", msg())
    queue.claim_turns("w1", 1, 30)
    queue.cancel_task(start.task_id, "alice", "bg")
    assert queue.progress(start.task_id, agent_reply(start, "50%")) is False
    assert queue.finish_queued_turn(start.task_id, "w1", "alice", "bg",
                                    "completed", agent_reply(start)) is None
    task = queue.get_task(start.task_id, "alice", "bg")
    assert task.state == "canceled" and task.history == [start.message]
    assert queue.expire_leases() == []  # the turn row went with the finish


def test_progress_sets_the_status_message_while_working(queue):
    start = queue.enqueue_turn("alice", "bg", msg())
    queue.claim_turns("w1", 1, 30)
    assert queue.progress(start.task_id, agent_reply(start, "1 s"))
    task = queue.get_task(start.task_id, "alice", "bg")
    assert task.state == "working" and task.status_message == agent_reply(start, "1 s")
    assert task.history == [start.message]  # progress is not history


def test_note_metadata_while_working_is_seen_by_a_retried_turn(queue):
    start = queue.enqueue_turn("alice", "bg", msg(), retry=True, metadata={"a": 1})
    queue.claim_turns("w1", 1, 30)
    calls = {"a": 1, "a2a_flask.calls": {"1.0": {"taskId": "remote-1"}}}
    assert queue.note_metadata(start.task_id, calls)
    assert queue.get_task(start.task_id, "alice", "bg").metadata == calls
    expire_lease(queue, start.task_id)
    assert queue.expire_leases() == [(start.task_id, "requeued")]
    [again] = queue.claim_turns("w2", 1, 30)
    assert again.metadata == calls  # the retried turn finds the remote task
    queue.cancel_task(start.task_id, "alice", "bg")
    assert not queue.note_metadata(start.task_id, {"late": True})
    assert queue.get_task(start.task_id, "alice", "bg").metadata == calls


def test_renew_keeps_a_lease_and_expiry_fails_a_turn_once(queue):
    kept = queue.enqueue_turn("alice", "bg", msg("kept"))
    lost = queue.enqueue_turn("alice", "bg", msg("lost"))
    queue.claim_turns("w1", 2, 10)
    expire_lease(queue, kept.task_id)
    expire_lease(queue, lost.task_id)
    # kept's worker renews in time; lost's does not (and w2 holds nothing).
    assert queue.renew_leases("w1", [kept.task_id, "task_nope"], 10) == [
        kept.task_id]
    assert queue.renew_leases("w2", [lost.task_id], 10) == []
    assert queue.expire_leases() == [(lost.task_id, "failed")]
    assert queue.expire_leases() == []
    task = queue.get_task(lost.task_id, "alice", "bg")
    assert task.state == "failed"
    assert task.status_message["parts"] == [{"kind": "text",
                                             "text": LEASE_EXPIRED_TEXT}]
    assert task.history[-1] == task.status_message
    # The killed worker's late outcome (were it alive) is discarded.
    assert queue.finish_queued_turn(lost.task_id, "w1", "alice", "bg",
                                    "completed", agent_reply(lost)) is None
    assert queue.get_task(kept.task_id, "alice", "bg").state == "working"


def test_expiry_requeues_a_retry_turn_until_attempts_run_out(queue):
    start = queue.enqueue_turn("alice", "bg", msg(), retry=True)
    for attempt in (1, 2):
        claimed = queue.claim_turns("w%d" % attempt, 1, 10)
        assert [(c.attempts, c.retry) for c in claimed] == [(attempt, True)]
        expire_lease(queue, start.task_id)
        assert queue.expire_leases(max_attempts=3) == [(start.task_id, "requeued")]
        assert queue.task_state(start.task_id) == "working"
    assert [c.attempts for c in queue.claim_turns("w3", 1, 10)] == [3]
    expire_lease(queue, start.task_id)
    assert queue.expire_leases(max_attempts=3) == [(start.task_id, "failed")]
    task = queue.get_task(start.task_id, "alice", "bg")
    assert task.status_message["parts"][0]["text"] == ATTEMPTS_EXHAUSTED_TEXT % 3


def test_release_fails_or_requeues_a_stopping_workers_turns(queue):
    once = queue.enqueue_turn("alice", "bg", msg("once"))
    again = queue.enqueue_turn("alice", "bg", msg("again"), retry=True)
    other = queue.enqueue_turn("alice", "bg", msg("other"))
    queue.claim_turns("w1", 2, 30)
    queue.claim_turns("w2", 1, 30)
    assert sorted(queue.release_turns(
        "w1", [once.task_id, again.task_id, other.task_id])) == sorted(
        [(once.task_id, "failed"), (again.task_id, "requeued")])
    assert queue.task_state(other.task_id) == "working"
    assert [c.task_id for c in queue.claim_turns("w3", 5, 30)] == [again.task_id]


def test_a_queued_turn_is_not_stale_failed_and_its_task_runs_one_turn_at_a_time(
        make_storage):
    storage = make_storage(A2A_STALE_TURN_SECONDS=60)
    first = finished(storage, "input-required", agent="bg")
    start = storage.enqueue_turn("alice", "bg", msg("two"), task_id=first.task_id)
    follow_up = storage.enqueue_turn("alice", "bg", msg("three"),
                                     task_id=first.task_id)
    assert not follow_up.replayed and follow_up.task_id == first.task_id
    with pytest.raises(TaskNotWaitingError):  # a turn run in the request: refused
        storage.start_turn("alice", "bg", msg("four"), task_id=first.task_id)
    # queued for an hour: leases, not staleness, decide
    set_updated_at(storage, start.task_id,
                   datetime.now(timezone.utc) - timedelta(seconds=3600))
    task = storage.get_task(start.task_id, "alice", "bg")
    assert task.state == "working"
    assert not storage.fail_stale_turn(start.task_id)
    assert STALE_TURN_TEXT not in str(task.history)
    assert [c.task_id for c in storage.claim_turns("w1", 5, 30)] == [first.task_id]


def test_reading_a_long_queued_task_never_tries_to_fail_it(make_storage, monkeypatch):
    storage = make_storage(A2A_STALE_TURN_SECONDS=60)
    start = storage.enqueue_turn("alice", "bg", msg("queued"))
    set_updated_at(storage, start.task_id,
                   datetime.now(timezone.utc) - timedelta(seconds=3600))
    tries = []
    monkeypatch.setattr(storage, "fail_stale_turn", tries.append)
    for _ in range(3):  # a caller polling: no write transaction per poll
        assert storage.get_task(start.task_id, "alice", "bg").state == "working"
    assert tries == []
