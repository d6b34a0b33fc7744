"""On SQLite a task is read as one row, whatever its history holds: its
artifacts and its messages each packed into one JSON text
(``TaskReads._PACKED``), each row of a statement being a step that lets the
interpreter's lock go. What was stored comes back as it was, paired and in
order, whatever characters its ids and texts hold.

A task read within a budget is first read plainly, its history
limited to none unless the last messages it may show all fit
(``TaskReads._READ_TASK_FITTING``: no temporary table); only a task over the
budget, or one whose history is empty, is read again with the running sums
(``_READ_TASK_WITHIN``). Both give the same answer. A read that shows none
of the history (historyLength 0, a poll's) sizes none of it. The operator's
read of a whole task (``show_task``) takes its history row by row: one text
of it would stop at SQLite's longest string."""

import sqlite3

import pytest

from a2a_flask.storage.sqlite import SqliteStorage
from storage_helpers import agent_reply, long_task, msg

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


#: Ids and texts holding what the packing itself is made of.
ODD = ['a"],[1,2],"b', "line\nbreak", "é,ü ☃", "[", "]]", "x\\", "{}", "\u2028"]


class _CountingCursor:
    def __init__(self, cursor, rows):
        self.cursor, self.rows = cursor, rows

    def fetchone(self):
        row = self.cursor.fetchone()
        self.rows[-1] += row is not None
        return row

    def fetchall(self):
        found = self.cursor.fetchall()
        self.rows[-1] += len(found)
        return found


class _CountingConnection:
    """The storage's connection, counting the rows each statement gave."""

    def __init__(self, conn):
        self.conn, self.rows = conn, []

    def execute(self, *args):
        self.rows.append(0)
        return _CountingCursor(self.conn.execute(*args), self.rows)


@pytest.mark.parametrize("max_bytes", [None, 64 * 1024, 6 * 1024])
@pytest.mark.parametrize("history_length", [None, 0, 3])
def test_a_task_is_read_as_one_row_whatever_its_history(storage, max_bytes, history_length):
    task_id = long_task(storage, 10, 100)
    counting = _CountingConnection(storage.connection())
    storage.connection = lambda *args, **kwargs: counting
    task = storage.get_task(task_id, "alice", "echo", history_length, max_bytes=max_bytes)
    assert counting.rows and set(counting.rows) == {1}, counting.rows
    if max_bytes != 6 * 1024:  # within that budget: the newest 10
        assert len(task.history) == (20 if history_length is None else history_length)
    assert [m["messageId"] for m in task.history[-1:]] == ([] if history_length == 0 else ["a9"])
    assert [a["artifactId"] for a in task.artifacts] == ["art"]


def _odd_task(storage):
    start = storage.start_turn("alice", "echo", msg(ODD[0], ODD[1]))
    reply = agent_reply(start, ODD[2])
    reply["messageId"] = ODD[3]
    storage.finish_turn(start.task_id, "alice", "echo", "input-required", reply,
                        [{"artifactId": odd, "parts": [{"kind": "text", "text": odd}]}
                         for odd in ODD[4:]])
    storage.start_turn("alice", "echo", msg(ODD[5], ODD[6]), task_id=start.task_id)
    last = agent_reply(start, ODD[7])
    last["messageId"] = ODD[4]
    storage.finish_turn(start.task_id, "alice", "echo", "completed", last,
                        [{"artifactId": "last", "parts": [{"kind": "text", "text": "]"}]}])
    return start.task_id


@pytest.mark.parametrize("max_bytes", [None, 64 * 1024, 2900])
def test_odd_ids_and_texts_come_back_paired_and_in_order(storage, max_bytes):
    task = storage.get_task(_odd_task(storage), "alice", "echo", max_bytes=max_bytes)
    shown = [(m["messageId"], m["role"], m["parts"][0]["text"]) for m in task.history]
    stored = [(ODD[1], "user", ODD[0]), (ODD[3], "agent", ODD[2]),
              (ODD[6], "user", ODD[5]), (ODD[4], "agent", ODD[7])]
    if max_bytes == 2900:  # within the budget: the newest two fit
        assert len(shown) == 2 and task.history_omitted == 2
    assert shown == stored[len(stored) - len(shown):]
    assert all(m["taskId"] == task.id and m["contextId"] == task.context_id
               for m in task.history)
    assert [(a["artifactId"], a["parts"][0]["text"]) for a in task.artifacts] == \
        [(odd, odd) for odd in ODD[4:]] + [("last", "]")]
    assert task.status_message["messageId"] == ODD[4]
    assert task.status_message["parts"][0]["text"] == ODD[7]


@pytest.mark.skipif(not hasattr(sqlite3.Connection, "setlimit"),
                    reason="Connection.setlimit is Python 3.11's")
def test_a_task_shown_whole_is_not_bound_by_sqlites_longest_string(storage):
    """``show_task`` answers the whole history, however long: a history
    packed into one text stops at SQLite's longest string (1 GB by default,
    less than A2A_MAX_STORED_BYTES_PER_CALLER lets a task hold), so the
    operator's read takes it row by row. Here the bound is lowered to what
    the history holds, on the connection the read uses."""
    task_id = _task(storage, 40)  # 80 messages of about 1 KB
    storage.connection().setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 60 * TEXT)
    task = storage.show_task(task_id)
    assert len(task.history) == 80 and task.history_omitted == 0
    assert [m["messageId"] for m in task.history][-2:] == ["u39", "a39"]
    assert (task.state, task.status_message["messageId"], task.created_at[:2]) == (
        "completed", "a39", "20")
