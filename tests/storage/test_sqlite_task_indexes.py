"""The task indexes of a SQLite file are ascending on (updated_at, id), a
new file's and a migrated one's alike: a send's entries go in at the right
end of their range (migrations.ASCENDING_TASK_INDEXES). Newest first is the
index read backwards: pages, cursors, filters and counts answer as before,
and no listing sorts (test_listing_indexes.py explains each plan)."""

import sqlite3

from a2a_flask.storage.sqlite import SqliteStorage
from a2a_flask.storage.sqlite import migrations
from storage_helpers import agent_reply, msg

INDEXES = {
    "a2a_tasks_listing": "(owner, agent, updated_at, id)",
    "a2a_tasks_context": "(owner, agent, context_id, updated_at, id)",
    "a2a_tasks_state": "(owner, agent, state, updated_at, id)",
}


def _indexes(path):
    conn = sqlite3.connect(path)
    try:
        return {name: sql[sql.index("("):] for name, sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index'"
            " AND name IN (%s)" % ", ".join("?" * len(INDEXES)), list(INDEXES))}
    finally:
        conn.close()


def _fill(storage, count):
    ids = []
    for i in range(count):
        start = storage.start_turn("alice", "echo", msg("t%d" % i),
                                   context_id="ctx-%s" % "ab"[i % 2])
        storage.finish_turn(start.task_id, "alice", "echo",
                            "completed" if i % 3 else "input-required",
                            agent_reply(start))
        ids.append(start.task_id)
    return ids


def _pages(storage, **filters):
    seen, cursor = [], None
    while True:
        page = storage.list_tasks(owner="alice", agent="echo", limit=4,
                                  cursor=cursor, **filters)
        seen.extend(task.id for task in page.tasks)
        cursor = page.next_cursor
        if cursor is None:
            return seen


def test_a_new_file_has_ascending_task_indexes(tmp_path):
    storage = SqliteStorage(str(tmp_path / "new.sqlite3"))
    storage.migrate()
    assert _indexes(storage.path) == INDEXES


def test_a_file_at_the_version_before_gets_them_and_lists_as_before(tmp_path, monkeypatch):
    path = str(tmp_path / "old.sqlite3")
    with monkeypatch.context() as patched:  # the schema before this migration
        before_it = migrations.MIGRATIONS.index(migrations._ascending_task_indexes)
        patched.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:before_it])
        patched.setattr(migrations, "EXPECTED_VERSION",
                        migrations.START_VERSION + before_it)
        old = SqliteStorage(path)
        old.migrate()
        ids = _fill(old, 13)
        before = {"all": _pages(old), "ctx": _pages(old, context_id="ctx-a"),
                  "state": _pages(old, state="completed")}
        counts = (old.count_tasks(owner="alice", agent="echo"),
                  old.count_tasks(owner="alice", agent="echo", state="input-required"))
        assert _indexes(path)["a2a_tasks_state"] == (
            "(owner, agent, state, updated_at DESC, id DESC)")
        old.close()

    storage = SqliteStorage(path)
    storage.migrate()
    assert storage.schema_version() == migrations.EXPECTED_VERSION
    assert _indexes(path) == INDEXES
    assert sorted(before["all"]) == sorted(ids)  # the cursor's pages whole
    assert {"all": _pages(storage), "ctx": _pages(storage, context_id="ctx-a"),
            "state": _pages(storage, state="completed")} == before
    assert (storage.count_tasks(owner="alice", agent="echo"),
            storage.count_tasks(owner="alice", agent="echo",
                                state="input-required")) == counts == (13, 5)
    assert storage.check() == []
    # And a task updated since comes first, in every index's order.
    storage.cancel_task(ids[0], "alice", "echo")
    assert _pages(storage)[0] == ids[0]
    assert _pages(storage, context_id="ctx-a")[0] == ids[0]
