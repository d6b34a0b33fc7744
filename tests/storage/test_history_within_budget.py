"""``get_task(max_bytes=...)`` and ``list_tasks(max_bytes=...)``: a task's history is read newest first and
sized in SQL before any body is fetched, so that a task with a long history
is never loaded whole to be trimmed afterwards: only the newest messages
that fit beside its status, artifacts and metadata come back, and
``history_omitted`` counts the rest (of the last ``history_length``)."""

import json

import pytest

from a2a_flask.storage import records
import a2a_flask.storage.postgres.admin as postgres_admin
import a2a_flask.storage.postgres.reading as postgres_reading
import a2a_flask.storage.sqlite.reading as sqlite_reading
from storage_helpers import long_task, msg

TURNS = 40
TEXT = 8 * 1024  # 80 messages of 8 KiB: 640 KiB of history
BUDGET = 64 * 1024


def _long_task(storage):
    return long_task(storage, TURNS, TEXT)


@pytest.fixture
def fetched(storage, monkeypatch):
    """The message bodies the storage's read decodes, as they come."""
    bodies = []
    if "sqlite" in type(storage).__module__:
        load_message = sqlite_reading.load_message

        def counted(body, *args):
            bodies.append(body)
            return load_message(body, *args)

        monkeypatch.setattr(sqlite_reading, "load_message", counted)
    else:
        class CountingJson:
            @staticmethod
            def loads(body):
                bodies.append(body)
                return json.loads(body)

        monkeypatch.setattr(postgres_reading, "json", CountingJson)
        monkeypatch.setattr(postgres_admin, "json", CountingJson)
    return bodies


def test_only_the_newest_messages_that_fit_are_read(storage, fetched):
    task_id = _long_task(storage)
    everything = storage.task_history(task_id)
    assert len(everything) == 2 * TURNS
    del fetched[:]
    task = storage.get_task(task_id, "alice", "echo", max_bytes=BUDGET)
    kept = len(task.history)
    assert 0 < kept < BUDGET // TEXT
    assert [m["messageId"] for m in task.history] == [
        m["messageId"] for m in everything[-kept:]]
    assert task.history_omitted == 2 * TURNS - kept
    assert task.status_message["messageId"] == "a%d" % (TURNS - 1)
    assert [a["artifactId"] for a in task.artifacts] == ["art"]
    assert task.metadata == {"note": "kept"}
    # What was fetched: the status, the artifact, the metadata and the kept
    # messages, nothing older (the whole history is ten times the budget).
    assert sum(len(body) for body in fetched) <= BUDGET
    room = BUDGET - records.FIXED_BYTES - records.size(task.status_message) - sum(
        records.size(a) for a in task.artifacts) - records.size(task.metadata)
    assert sum(records.size(m) for m in task.history) <= room


def test_history_length_still_bounds_the_messages_and_the_count(storage):
    task_id = _long_task(storage)
    task = storage.get_task(task_id, "alice", "echo", history_length=3,
                            max_bytes=BUDGET)
    assert [m["messageId"] for m in task.history] == ["a38", "u39", "a39"]
    assert task.history_omitted == 0
    task = storage.get_task(task_id, "alice", "echo", history_length=0,
                            max_bytes=BUDGET)
    assert task.history == [] and task.history_omitted == 0
    small = storage.get_task(task_id, "alice", "echo", history_length=20,
                             max_bytes=BUDGET)
    assert small.history_omitted == 20 - len(small.history) > 0
    # Without a budget the read is as before: everything asked for.
    assert len(storage.get_task(task_id, "alice", "echo").history) == 2 * TURNS


def test_a_list_page_reads_no_more_history_than_fits(storage, fetched):
    task_id = _long_task(storage)
    storage.start_turn("alice", "echo", msg("newer", "u-newer"))  # listed first
    del fetched[:]
    page = storage.list_tasks(owner="alice", agent="echo", history_length=None,
                              include_artifacts=True, max_bytes=BUDGET)
    # The long task does not fit beside the newer one: it starts the next page.
    assert len(page.tasks) == 1 and page.tasks[0].id != task_id
    assert page.tasks[0].history_omitted == 0 and page.next_cursor
    del fetched[:]
    page = storage.list_tasks(owner="alice", agent="echo", history_length=None,
                              include_artifacts=True, max_bytes=BUDGET,
                              cursor=page.next_cursor)
    [task] = page.tasks
    assert task.id == task_id and 0 < len(task.history) < BUDGET // TEXT
    assert task.history_omitted == 2 * TURNS - len(task.history)
    assert task.history[-1]["messageId"] == "a%d" % (TURNS - 1)
    # Its history within the budget; besides, its status message, metadata
    # and artifact (PostgreSQL decodes them through the same json module).
    assert sum(len(body) for body in fetched) <= BUDGET + TEXT + 2048
