"""What waiting on the store needs of the storage contract: ``task_states``
(every awaited task in one read) and ``change_marker`` (has anyone
committed?), on every backend."""

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


def test_the_change_marker_moves_only_when_another_connection_commits(make_storage):
    watcher, writer = make_storage(), make_storage()
    first = watcher.change_marker()
    if first is None:  # this backend cannot tell: waiters read on a timer
        return
    assert watcher.change_marker() == first
    watcher.task_states(["no-such-task"])  # reading changes nothing
    assert watcher.change_marker() == first
    writer.start_turn("alice", "echo", msg("c"))
    assert watcher.change_marker() != first
