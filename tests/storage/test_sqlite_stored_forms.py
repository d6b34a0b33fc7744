"""SQLite's stored forms: a message is stored once (the task row points at
its status message in the history; bodies leave out the row's messageId,
taskId and contextId, artifacts their artifactId); a status message absent
from the history is kept whole in the row."""

import json
import sqlite3

from a2a_flask.storage.records import TaskRecord
from a2a_flask.storage.sqlite import SqliteStorage

OWNER, AGENT = "key:key_1", "echo"
ARTIFACT = {"artifactId": "art1", "parts": [{"kind": "text", "text": "hi"}],
            "name": "response"}


def _message(role, mid, text, task_id, context_id):
    return {"kind": "message", "role": role, "messageId": mid,
            "parts": [{"kind": "text", "text": text}],
            "taskId": task_id, "contextId": context_id}


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


def test_a_turn_stores_its_status_message_once(tmp_path):
    path = str(tmp_path / "forms.sqlite3")
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


def test_a_status_message_absent_from_the_history_is_kept_whole(tmp_path):
    """Imported so (``db copy`` of a task whose status message is not one of
    its history's): the row keeps the message itself and reads it back."""
    status = _message("agent", "a3", "not in the history", "t3", "c3")
    user = _message("user", "u3", "x", "t3", "c3")
    storage = SqliteStorage(str(tmp_path / "whole.sqlite3"))
    storage.migrate()
    storage.import_tasks([TaskRecord(
        "t3", "c3", AGENT, OWNER, "failed", "2026-01-01T00:00:00.000Z",
        status_message=status, history=[user],
        created_at="2026-01-01T00:00:00.000Z")])

    task = storage.get_task("t3", OWNER, AGENT)
    assert (task.state, task.status_message, task.history) == (
        "failed", status, [user])
    assert storage.show_task("t3").status_message == status
    tasks, bodies = _rows(str(tmp_path / "whole.sqlite3"))
    assert tasks["t3"][1] is None and json.loads(tasks["t3"][0]) == status
    assert bodies == [{"role": "user", "parts": [{"kind": "text", "text": "x"}]}]
    storage.close()
