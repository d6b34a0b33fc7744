"""On SQLite a task read within a budget is first read plainly, its history
limited to none unless the last messages it may show all fit
(``TaskReads._READ_TASK_FITTING``: no temporary table); only a task over the
budget, or one whose history is empty, is read again with the running sums
(``_READ_TASK_WITHIN``). Both give the same answer. A read that shows none
of the history (historyLength 0, a poll's) sizes none of it."""

import pytest

from a2a_flask.storage.sqlite import SqliteStorage
from storage_helpers import long_task

TEXT = 1000


def _task(storage, turns):
    return long_task(storage, turns, TEXT)


def _answer(task):
    return ([m["messageId"] for m in task.history], task.history_omitted,
            task.status_message and task.status_message["messageId"],
            [a["artifactId"] for a in task.artifacts], task.metadata, task.state)


@pytest.fixture
def storage(tmp_path):
    storage = SqliteStorage(str(tmp_path / "reads.sqlite3"))
    storage.migrate()
    yield storage
    storage.close()


def _statements(storage, read):
    """What ``read()`` returns, and the statements it ran."""
    ran = []
    conn = storage.connection()
    conn.set_trace_callback(ran.append)
    try:
        return read(), ran
    finally:
        conn.set_trace_callback(None)


def test_a_task_that_fits_is_read_with_one_statement(storage):
    task_id = _task(storage, 3)
    task, ran = _statements(storage, lambda: storage.get_task(
        task_id, "alice", "echo", max_bytes=64 * 1024))
    assert len(ran) == 1 and "LIMIT CASE WHEN" in ran[0] and "OVER (ORDER BY" not in ran[0]
    assert _answer(task) == (["u0", "a0", "u1", "a1", "u2", "a2"], 0, "a2", ["art"],
                             {"note": "kept"}, "completed")


def test_a_task_read_without_its_history_sizes_none_of_it(storage):
    task_id = _task(storage, 10)
    task, ran = _statements(storage, lambda: storage.get_task(
        task_id, "alice", "echo", 0, max_bytes=6 * 1024))
    assert len(ran) == 1 and "LIMIT CASE WHEN" not in ran[0] and "OVER (" not in ran[0]
    assert _answer(task) == ([], 0, "a9", ["art"], {"note": "kept"}, "completed")


def test_a_task_over_the_budget_is_read_again_within_it(storage):
    task_id = _task(storage, 10)
    task, ran = _statements(storage, lambda: storage.get_task(
        task_id, "alice", "echo", max_bytes=6 * 1024))
    assert len(ran) == 2 and "OVER (ORDER BY" in ran[1]
    kept = len(task.history)
    assert 0 < kept < 20 and task.history_omitted == 20 - kept
    assert task.history[-1]["messageId"] == "a9"


@pytest.mark.parametrize("turns", [1, 4, 12])
def test_both_reads_answer_alike_at_every_budget_and_history_length(storage, turns):
    task_id = _task(storage, turns)
    for max_bytes in (300, 2000, 3500, 5000, 9000, 30000, 10 ** 6):
        for history_length in (None, 0, 1, 2, 5, 30):
            read = storage.get_task(task_id, "alice", "echo", history_length,
                                    max_bytes=max_bytes)
            # The reference: the running sums alone, as before.
            storage._READ_TASK_FITTING = storage._READ_TASK_SQL % {"limit": "0"}
            try:
                within = storage.get_task(task_id, "alice", "echo", history_length,
                                          max_bytes=max_bytes)
            finally:
                del storage._READ_TASK_FITTING
            assert _answer(read) == _answer(within), (max_bytes, history_length)
