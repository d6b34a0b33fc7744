"""The one-statement writes of a send open no temporary table on SQLite
(triggers.VALUES_INSERTS): an ``INSERT ... SELECT`` into a table with
triggers (a2a_tasks, a2a_messages: the stored bytes) runs through one, a
b-tree and a pager opened and closed at every send. A file at the version
before gets the new triggers, and its tasks go on as before: a waiting task
is continued, a new one started, each finished with and without a status
message."""

import collections
import sqlite3

from a2a_flask.storage.sqlite import SqliteStorage
from a2a_flask.storage.sqlite import migrations
from a2a_flask.storage.sqlite.outcomes import _OUTCOME_SQL
from a2a_flask.storage.sqlite.tasks import TaskOperations
from storage_helpers import agent_reply, msg


def _temporary_tables(path):
    """How many temporary tables each write statement of a send opens
    (``OpenEphemeral`` in its program, its triggers' included)."""
    conn = sqlite3.connect(path)
    try:
        opened = {}
        for name, sql in (("start", TaskOperations._START_SQL), ("outcome", _OUTCOME_SQL)):
            ops = collections.Counter(row[1] for row in conn.execute(
                "EXPLAIN " + sql, [None] * sql.count("?")))
            opened[name] = ops["OpenEphemeral"]
        return opened
    finally:
        conn.close()


def _schema(path):
    conn = sqlite3.connect(path)
    try:
        return sorted(conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"))
    finally:
        conn.close()


def _at_version_before(path, monkeypatch):
    """A storage at the schema before VALUES_INSERTS."""
    before_it = migrations.MIGRATIONS.index(migrations._values_inserts)
    with monkeypatch.context() as patched:
        patched.setattr(migrations, "MIGRATIONS", migrations.MIGRATIONS[:before_it])
        patched.setattr(migrations, "EXPECTED_VERSION", migrations.START_VERSION + before_it)
        old = SqliteStorage(path)
        old.migrate()
        return old


def test_a_sends_writes_open_no_temporary_table(tmp_path, monkeypatch):
    old = _at_version_before(str(tmp_path / "old.sqlite3"), monkeypatch)
    # What the migration removes: without it, three per send.
    assert _temporary_tables(old.path) == {"start": 2, "outcome": 1}
    old.close()
    new = SqliteStorage(str(tmp_path / "new.sqlite3"))
    new.migrate()
    assert _temporary_tables(new.path) == {"start": 0, "outcome": 0}
    new.close()


def test_a_file_at_the_version_before_migrates_and_its_tasks_go_on(tmp_path, monkeypatch):
    path = str(tmp_path / "old.sqlite3")
    old = _at_version_before(path, monkeypatch)
    waiting = old.start_turn("alice", "echo", msg("first"), max_stored_bytes=10 ** 9)
    old.finish_turn(waiting.task_id, "alice", "echo", "input-required",
                    agent_reply(waiting))
    old.close()

    storage = SqliteStorage(path)
    storage.migrate()
    assert storage.schema_version() == migrations.EXPECTED_VERSION
    fresh = SqliteStorage(str(tmp_path / "fresh.sqlite3"))
    fresh.migrate()
    assert _schema(path) == _schema(fresh.path)  # as a new file's
    fresh.close()
    assert _temporary_tables(path) == {"start": 0, "outcome": 0}

    more = storage.start_turn("alice", "echo", msg("more"), task_id=waiting.task_id,
                              max_stored_bytes=10 ** 9)
    assert (more.task_id, more.context_id, more.created) == (
        waiting.task_id, waiting.context_id, False)
    artifact = {"artifactId": "art-1", "parts": [{"kind": "text", "text": "x"}]}
    storage.finish_turn(more.task_id, "alice", "echo", "completed", None, [artifact],
                        max_artifact_bytes=10 ** 6)
    task = storage.get_task(waiting.task_id, "alice", "echo")
    assert (task.state, task.status_message) == ("completed", None)
    assert [m["messageId"] for m in task.history] == ["m-first", "a-done", "m-more"]
    assert [a["artifactId"] for a in task.artifacts] == ["art-1"]

    new = storage.start_turn("alice", "echo", msg("new"), context_id="ctx-9")
    assert (new.created, new.context_id) == (True, "ctx-9")
    storage.finish_turn(new.task_id, "alice", "echo", "completed", agent_reply(new))
    task = storage.get_task(new.task_id, "alice", "echo")
    assert (task.state, task.context_id) == ("completed", "ctx-9")
    assert task.status_message == agent_reply(new)
    assert [m["messageId"] for m in task.history] == ["m-new", "a-done"]
    # The stored bytes the triggers keep are what the rows hold.
    conn = storage.connection()
    kept = conn.execute("SELECT bytes FROM a2a_stored_bytes WHERE owner = 'alice'"
                        ).fetchone()[0]
    counted = conn.execute(
        "SELECT (SELECT sum(length(CAST(body AS BLOB)) + 256) FROM a2a_messages)"
        " + (SELECT sum(length(CAST(body AS BLOB)) + 256) FROM a2a_artifacts)"
        " + (SELECT sum(coalesce(length(CAST(metadata AS BLOB)), 0) + 320)"
        " FROM a2a_tasks)").fetchone()[0]
    assert kept == counted
    assert storage.check() == []
    storage.close()
