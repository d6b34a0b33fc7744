"""SQLite schema v5: a message is stored once (the task row points at its
status message in the history; bodies leave out the row's messageId, taskId
and contextId, artifacts their artifactId), and a version-3 file (before v4,
the turn queue) is migrated
to it with nothing lost."""

import json
import sqlite3

from a2a_flask.storage.base import MessageIdReusedError
from a2a_flask.storage.common import fingerprint
from a2a_flask.storage.sqlite import SqliteStorage
from a2a_flask.storage.sqlite.migrations import MIGRATIONS
from helpers import sqlite_file_at_version

OWNER, AGENT = "key:key_1", "echo"
ARTIFACT = {"artifactId": "art1", "parts": [{"kind": "text", "text": "hi"}],
            "name": "response"}


def _message(role, mid, text, task_id, context_id):
    return {"kind": "message", "role": role, "messageId": mid,
            "parts": [{"kind": "text", "text": text}],
            "taskId": task_id, "contextId": context_id}


def _dumps(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _version_3_file(path):
    """A file as a2a_flask with schema version 3 wrote it: the status message
    copied into the task row, whole bodies in the history."""
    conn = sqlite_file_at_version(path, 3).conn
    user = _message("user", "u1", "hello", "t1", "c1")
    agent = _message("agent", "a1", "hello back", "t1", "c1")
    alone = _message("agent", "a3", "not in the history", "t3", "c3")
    rows = [  # id, state, status message, history
        ("t1", "completed", agent, [user, agent]),
        ("t2", "canceled", None, [_message("user", "u2", "stop", "t2", "c2")]),
        ("t3", "failed", alone, [_message("user", "u3", "x", "t3", "c3")]),
    ]
    for task_id, state, status, history in rows:
        context_id = history[0]["contextId"]
        conn.execute(
            "INSERT INTO a2a_tasks (id, agent, owner, context_id, state,"
            " status_message, updated_at, created_at) VALUES (?, ?, ?, ?, ?, ?,"
            " '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
            (task_id, AGENT, OWNER, context_id, state,
             _dumps(status) if status else None))
        for message in history:
            conn.execute(
                "INSERT INTO a2a_messages (task_id, context_id, owner, agent,"
                " role, message_id, body) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (task_id, context_id, OWNER, AGENT, message["role"],
                 message["messageId"], _dumps(message)))
    conn.execute("INSERT INTO a2a_artifacts (task_id, artifact_id, body)"
                 " VALUES ('t1', 'art1', ?)", (_dumps(ARTIFACT),))
    received = {k: v for k, v in rows[0][3][0].items()
                if k not in ("kind", "taskId", "contextId")}
    conn.execute("INSERT INTO a2a_deliveries VALUES (?, ?, 'u1', ?, 't1')",
                 (OWNER, AGENT, fingerprint(received)))
    conn.close()
    return {task_id: (state, status, history)
            for task_id, state, status, history in rows}


def _rows(path):
    conn = sqlite3.connect(path)
    try:
        tasks = {row[0]: row[1:] for row in conn.execute(
            "SELECT id, status_message, status_seq FROM a2a_tasks")}
        bodies = [json.loads(body) for (body,) in conn.execute(
            "SELECT body FROM a2a_messages UNION ALL"
            " SELECT body FROM a2a_artifacts")]
    finally:
        conn.close()
    return tasks, bodies


def test_a_version_3_file_is_migrated_with_nothing_lost(tmp_path):
    path = str(tmp_path / "v3.sqlite3")
    expected = _version_3_file(path)
    storage = SqliteStorage(path)
    storage.migrate()
    assert storage.schema_version() == len(MIGRATIONS) == 7

    for task_id, (state, status, history) in expected.items():
        task = storage.get_task(task_id, OWNER, AGENT)
        assert (task.state, task.status_message, task.history) == (
            state, status, history), task_id
        assert task.artifacts == ([ARTIFACT] if task_id == "t1" else [])
        shown = storage.show_task(task_id)
        assert (shown.status_message, shown.history) == (status, history)
    assert storage.task_history("t1") == expected["t1"][2]
    assert storage.context_history(OWNER, AGENT, "c1") == expected["t1"][2]
    exported = {t.id: t for batch in storage.export_tasks() for t in batch}
    assert exported["t1"].status_message == expected["t1"][1]
    assert exported["t1"].artifacts == [ARTIFACT]

    tasks, bodies = _rows(path)
    assert tasks["t1"][0] is None and tasks["t1"][1] is not None
    assert tasks["t2"] == (None, None)
    # Not in its history: the copy in the row stays.
    assert json.loads(tasks["t3"][0]) == expected["t3"][1]
    assert not any(set(body) & {"kind", "messageId", "taskId", "contextId",
                                "artifactId"} for body in bodies)
    conn = sqlite3.connect(path)
    (stored,), = conn.execute("SELECT fingerprint FROM a2a_deliveries")
    conn.close()
    assert isinstance(stored, bytes) and len(stored) == 16
    # A retry of the migrated delivery is still a retry; another message is not.
    retry = {"role": "user", "messageId": "u1",
             "parts": [{"kind": "text", "text": "hello"}]}
    start = storage.start_turn(OWNER, AGENT, retry)
    assert (start.replayed, start.task_id) == (True, "t1")
    try:
        storage.start_turn(OWNER, AGENT, dict(retry, parts=[
            {"kind": "text", "text": "something else"}]))
    except MessageIdReusedError:
        pass
    else:
        raise AssertionError("a different message with the same messageId")
    storage.close()


def test_a_turn_stores_its_status_message_once(tmp_path):
    path = str(tmp_path / "v5.sqlite3")
    storage = SqliteStorage(path)
    storage.migrate()
    start = storage.start_turn(OWNER, AGENT, {
        "kind": "message", "role": "user", "messageId": "m1",
        "parts": [{"kind": "text", "text": "hi"}]})
    status = _message("agent", "a1", "done", start.task_id, start.context_id)
    storage.finish_turn(start.task_id, OWNER, AGENT, "completed", status,
                        [ARTIFACT])

    task = storage.get_task(start.task_id, OWNER, AGENT)
    assert task.status_message == status
    assert task.history == [start.message, status]
    assert task.artifacts == [ARTIFACT]
    assert storage.get_task(start.task_id, OWNER, AGENT,
                            history_length=0).status_message == status
    tasks, bodies = _rows(path)
    assert tasks[start.task_id][0] is None
    assert len(bodies) == 3 and not any(
        set(body) & {"kind", "messageId", "taskId", "contextId", "artifactId"}
        for body in bodies)

    # Imported, the status message keeps pointing into the history.
    target = SqliteStorage(str(tmp_path / "copy.sqlite3"))
    target.migrate()
    target.import_tasks([task])
    copied = target.get_task(start.task_id, OWNER, AGENT)
    assert (copied.status_message, copied.history, copied.artifacts) == (
        status, task.history, [ARTIFACT])
    assert _rows(str(tmp_path / "copy.sqlite3"))[0][start.task_id][0] is None
    storage.close()
    target.close()
