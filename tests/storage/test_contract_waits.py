"""What waiting on the store needs of the storage contract: ``task_states``
(every awaited task in one read) and ``change_marker`` (has anyone
committed?), on every backend."""

import threading

from a2a_flask import waits
from helpers import wait_until
from storage_helpers import finished, msg


def test_task_states_reads_each_task_and_none_for_unknown_ones(storage):
    working = storage.start_turn("alice", "echo", msg("a"))
    done = finished(storage, "completed")
    asked = finished(storage, "input-required", text="b")
    assert storage.task_states([working.task_id, done.task_id, asked.task_id,
                                "no-such-task"]) == {
        working.task_id: "working", done.task_id: "completed",
        asked.task_id: "input-required", "no-such-task": None}
    assert storage.task_states([]) == {}


def _marker(storage):
    """[the storage's change marker] once it has one (PostgreSQL: once its
    listening connection listens)."""
    found = storage.change_marker()
    return None if found is None else [found]


def test_the_change_marker_moves_only_when_another_connection_commits(make_storage):
    watcher, writer = make_storage(), make_storage()
    [first] = wait_until(lambda: _marker(watcher), timeout=10)
    assert watcher.change_marker() == first
    watcher.task_states(["no-such-task"])  # reading changes nothing
    assert watcher.change_marker() == first
    writer.enqueue_turn("alice", "bg", msg("c"))
    wait_until(lambda: watcher.change_marker() != first, timeout=10)


def test_a_waiter_wakes_on_the_change_not_on_a_timer(make_storage, monkeypatch):
    """The timers far longer than the test's bound: a blocking send's wait
    still ends once another connection (process) settles its task, woken by
    the change itself (SQLite: data_version; PostgreSQL: LISTEN/NOTIFY)."""
    monkeypatch.setattr(waits, "UNMARKED_TICK", 120.0)
    monkeypatch.setattr(waits, "MARKED_READ_EVERY", 120.0, raising=False)
    watcher, writer = make_storage(), make_storage()
    start = writer.enqueue_turn("alice", "bg", msg("a"))
    reads, real_states = [], watcher.task_states
    monkeypatch.setattr(watcher, "task_states",
                        lambda task_ids: reads.append(task_ids) or real_states(task_ids))
    woke = []
    thread = threading.Thread(target=lambda: woke.append(
        waits.TaskWaits(watcher).wait(start.task_id, 60)), daemon=True)
    thread.start()
    wait_until(lambda: reads, what="the waiter's first read")  # working
    assert len(writer.claim_turns("w", 1, 30)) == 1
    writer.finish_queued_turn(start.task_id, "w", "alice", "bg", "completed")
    thread.join(30)  # a bound far below the timers, not a measurement
    assert woke == [True]
