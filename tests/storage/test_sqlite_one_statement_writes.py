"""On SQLite, each write transaction of a send run in the request is ONE
statement in autocommit mode (its start, its outcome): the write lock is
taken and released inside one ``sqlite3_step``, never held while the
thread waits for the interpreter (issue 31). Its guarantees hold as before:
a messageId runs once under concurrent duplicates, a waiting task is
claimed by one continuation, every refusal writes nothing."""

import threading

import pytest

from a2a_flask.storage.base import (
    ArtifactsFullError, ContextMismatchError, NoSuchTaskError, QuotaReachedError,
    RememberedKeyRevokedError, StorageReserveError, TaskNotWaitingError,
)
from storage_helpers import agent_reply, finished, msg

#: SQLite's write path only: the backend fixture taken with its SQLite
#: parameter alone, so that no PostgreSQL run is collected only to skip.
pytestmark = pytest.mark.parametrize("make_storage", ["sqlite"], indirect=True)


@pytest.fixture
def sqlite_storage(make_storage):
    return make_storage()


class _Recording:
    """A connection that notes the statements Python sends through it."""

    def __init__(self, conn, sent):
        self._conn, self._sent = conn, sent

    def execute(self, sql, *args):
        self._sent.append(sql)
        return self._conn.execute(sql, *args)

    def executemany(self, sql, *args):
        self._sent.append(sql)
        return self._conn.executemany(sql, *args)

    def __getattr__(self, name):
        return getattr(self._conn, name)


def _writes(storage, action):
    """What ``action()`` returns, and the statements the storage sends
    while it runs, reads and PRAGMAs left out (their first words)."""
    real, sent = storage.connection, []
    storage.connection = lambda *args: _Recording(real(*args), sent)
    try:
        result = action()
    finally:
        del storage.connection
    return result, [" ".join(s.split()[:3]) for s in sent
                    if not s.lstrip().startswith(("SELECT", "PRAGMA"))]


def _row_counts(storage):
    conn = storage.connection()
    return {table: conn.execute("SELECT count(*) FROM %s" % table).fetchone()[0]
            for table in ("a2a_tasks", "a2a_messages", "a2a_artifacts",
                          "a2a_deliveries")}


def test_a_new_tasks_start_and_outcome_are_one_statement_each(sqlite_storage):
    storage = sqlite_storage
    start, writes = _writes(storage, lambda: storage.start_turn(
        "alice", "echo", msg("hi"), max_stored_bytes=10 ** 9,
        metadata={"a": 1}))
    assert writes == ["INSERT INTO a2a_turn_starts"]
    artifact = {"artifactId": "art-1", "parts": [{"kind": "text", "text": "x"}]}
    at, writes = _writes(storage, lambda: storage.finish_turn(
        start.task_id, "alice", "echo", "input-required", agent_reply(start),
        [artifact, dict(artifact, artifactId="art-2")], max_artifact_bytes=10 ** 6))
    assert writes == ["INSERT INTO a2a_outcome_rows"]
    task = storage.get_task(start.task_id, "alice", "echo")
    assert (task.state, task.updated_at, task.metadata) == ("input-required", at, {"a": 1})
    assert task.status_message == agent_reply(start)
    assert [a["artifactId"] for a in task.artifacts] == ["art-1", "art-2"]
    assert [m["messageId"] for m in task.history] == ["m-hi", "a-done"]
    assert storage.message_seq(start.task_id, "m-hi", "user") == storage.connection(
    ).execute("SELECT seq FROM a2a_messages WHERE message_id = 'm-hi'").fetchone()[0]

    more, writes = _writes(storage, lambda: storage.start_turn(
        "alice", "echo", msg("more"), task_id=start.task_id))
    assert writes == ["INSERT INTO a2a_turn_starts"]
    assert (more.context_id, more.created) == (start.context_id, False)
    assert more.message["contextId"] == start.context_id
    assert storage.task_history(start.task_id, before_seq=more.message_seq)[-1][
        "messageId"] == "a-done"
    _, writes = _writes(storage, lambda: storage.finish_turn(
        start.task_id, "alice", "echo", "completed", None))
    assert writes == ["INSERT INTO a2a_outcome_rows"]
    task = storage.get_task(start.task_id, "alice", "echo")
    assert (task.state, task.status_message) == ("completed", None)


def test_a_new_tasks_start_reads_nothing_back(sqlite_storage):
    """Its context is known, and its message's seq is read only should its
    turn read the history before it (``Storage.message_seq``): the start
    sends its INSERT and nothing else. A continuation reads its context and
    seq back."""
    storage = sqlite_storage
    real, sent = storage.connection, []
    storage.connection = lambda *args: _Recording(real(*args), sent)

    def statements():  # the busy wait's PRAGMAs left out
        return [" ".join(s.split()[:3]) for s in sent if not s.startswith("PRAGMA")]
    try:
        start = storage.start_turn("alice", "echo", msg("hi"))
        assert statements() == ["INSERT INTO a2a_turn_starts"]
        assert (start.created, start.message_seq) == (True, None)
        storage.finish_turn(start.task_id, "alice", "echo", "input-required",
                            agent_reply(start))
        del sent[:]
        more = storage.start_turn("alice", "echo", msg("more"), task_id=start.task_id)
        assert statements() == ["INSERT INTO a2a_turn_starts", "SELECT seq, context_id"]
    finally:
        del storage.connection
    assert more.message_seq == storage.message_seq(start.task_id, "m-more", "user")
    assert more.context_id == start.context_id


def test_refusals_of_the_one_statement_start_write_nothing(sqlite_storage):
    storage = sqlite_storage
    waiting = finished(storage, "input-required")
    before = _row_counts(storage)
    refused = [
        (NoSuchTaskError, dict(task_id="task_nope")),
        (NoSuchTaskError, dict(task_id=waiting.task_id, tenant="other")),
        (ContextMismatchError, dict(task_id=waiting.task_id, context_id="ctx_x")),
        (QuotaReachedError, dict(max_stored_bytes=1)),
        (RememberedKeyRevokedError, dict(remembered_key="no such key")),
    ]
    for error, fields in refused:
        with pytest.raises(error):
            storage.start_turn("alice", "echo", msg("again"), **fields)
    storage.min_free_disk_bytes = 1 << 62
    with pytest.raises(StorageReserveError):
        storage.start_turn("alice", "echo", msg("again"))
    storage.min_free_disk_bytes = 0
    assert _row_counts(storage) == before
    # The refused messageId was never delivered: it runs now.
    assert storage.start_turn("alice", "echo", msg("again"),
                              task_id=waiting.task_id).created is False


def test_the_reserve_check_measures_the_disk_again_only_when_it_may_matter(
        sqlite_storage, monkeypatch):
    """A send's reserve check reuses a measure of the free space younger than
    FREE_DISK_SEEN_SECONDS while it found over twice the reserve (statvfs
    lets the interpreter's lock go); near the reserve, each send measures."""
    storage = sqlite_storage
    measured = []
    free = [10 << 30]
    monkeypatch.setattr(type(storage), "free_disk_bytes",
                        lambda self: measured.append(1) or free[0])
    storage.min_free_disk_bytes = 1 << 30
    storage.start_turn("alice", "echo", msg("one"))
    storage.start_turn("alice", "echo", msg("two"))
    assert len(measured) == 1
    # Older than FREE_DISK_SEEN_SECONDS: measured again, and refused.
    monkeypatch.setattr(storage, "FREE_DISK_SEEN_SECONDS", -1.0)
    free[0] = (1 << 30) - 1
    with pytest.raises(StorageReserveError):
        storage.start_turn("alice", "echo", msg("three"))
    assert len(measured) == 2
    # Under twice the reserve: each send measures, however young the last.
    monkeypatch.setattr(storage, "FREE_DISK_SEEN_SECONDS", 3600.0)
    free[0] = (1 << 30) + 1
    storage.start_turn("alice", "echo", msg("four"))
    storage.start_turn("alice", "echo", msg("five"))
    assert len(measured) == 4


def test_a_refused_outcome_writes_nothing(sqlite_storage):
    storage = sqlite_storage
    start = storage.start_turn("alice", "echo", msg("hi"))
    artifact = {"artifactId": "art-1", "parts": [{"kind": "text", "text": "x" * 100}]}
    before = _row_counts(storage)
    with pytest.raises(ArtifactsFullError) as caught:
        storage.finish_turn(start.task_id, "alice", "echo", "completed",
                            agent_reply(start), [artifact], max_artifact_bytes=10)
    assert caught.value.limit == 10 and caught.value.total > 10
    assert _row_counts(storage) == before
    storage.cancel_task(start.task_id, "alice", "echo")
    assert storage.finish_turn(start.task_id, "alice", "echo", "completed",
                               agent_reply(start), [artifact]) is None
    assert _row_counts(storage) == before
    assert storage.task_state(start.task_id) == "canceled"


def test_concurrent_duplicates_of_a_message_id_run_once(make_storage):
    stores = [make_storage() for _ in range(8)]
    go, starts = threading.Barrier(len(stores)), []

    def send(storage):
        go.wait()
        starts.append(storage.start_turn("alice", "echo", msg("once")))

    threads = [threading.Thread(target=send, args=(s,)) for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(s.replayed for s in starts) == [False] + [True] * 7
    assert len({s.task_id for s in starts}) == 1
    assert _row_counts(stores[0])["a2a_messages"] == 1


def test_concurrent_continuations_of_a_waiting_task_claim_it_once(make_storage):
    stores = [make_storage() for _ in range(8)]
    waiting = finished(stores[0], "input-required")
    go, claimed, refused = threading.Barrier(len(stores)), [], []

    def send(i, storage):
        go.wait()
        try:
            claimed.append(storage.start_turn("alice", "echo", msg("more-%d" % i),
                                              task_id=waiting.task_id))
        except TaskNotWaitingError as exc:
            refused.append(exc.state)

    threads = [threading.Thread(target=send, args=(i, s)) for i, s in enumerate(stores)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(claimed) == 1 and refused == ["working"] * 7
    assert _row_counts(stores[0])["a2a_messages"] == 3
