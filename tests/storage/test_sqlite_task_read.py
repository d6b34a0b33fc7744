"""On SQLite a task is read as one row, whatever its history holds: its
artifacts and its messages each packed into one JSON text
(``TaskReads._PACKED``), each row of a statement being a step that lets the
interpreter's lock go. What was stored comes back as it was, paired and in
order, whatever characters its ids and texts hold."""

import pytest

from a2a_flask.storage.sqlite import SqliteStorage
from storage_helpers import agent_reply, long_task, msg

#: Ids and texts holding what the packing itself is made of.
ODD = ['a"],[1,2],"b', "line\nbreak", "é,ü ☃", "[", "]]", "x\\", "{}", "\u2028"]


@pytest.fixture
def storage(tmp_path):
    storage = SqliteStorage(str(tmp_path / "reads.sqlite3"))
    storage.migrate()
    yield storage
    storage.close()


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
