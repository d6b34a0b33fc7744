"""SQLite checkpoints run after the writers' lock is released.

SQLite's automatic checkpoint runs inside the COMMIT that crosses its
threshold, so the writer copying WAL pages into the database file (a few
milliseconds) holds our writers' lock meanwhile and every other worker's
write waits: the send p99 of the benchmark. The storage copies them itself,
with a passive checkpoint after the lock is released, and keeps SQLite's
own, at a higher threshold, as the backstop.
"""

import os
import sqlite3

from a2a_flask.storage.sqlite import SqliteStorage

OWNER, AGENT = "key:key_1", "echo"


def _message(n):
    return {"kind": "message", "role": "user", "messageId": "m%d" % n,
            "parts": [{"kind": "text", "text": "hello %d" % n}]}


def _storage(tmp_path):
    storage = SqliteStorage(str(tmp_path / "ck.sqlite3"))
    storage.migrate()
    return storage


def test_checkpoints_copy_pages_outside_the_writers_lock(tmp_path, monkeypatch):
    storage = _storage(tmp_path)
    monkeypatch.setattr(storage, "CHECKPOINT_AGE_NS", 0)  # due after every 8 commits
    held = []
    checkpoint = storage._checkpoint

    def watched(conn):
        held.append(storage._writer._threads.locked())
        checkpoint(conn)

    monkeypatch.setattr(storage, "_checkpoint", watched)
    before = os.stat(storage.path).st_mtime_ns
    for n in range(20):
        storage.start_turn(OWNER, AGENT, _message(n))
    assert held == [False, False]  # after commits 8 and 16, lock released
    # The pages reached the database file itself, not only the WAL.
    assert os.stat(storage.path).st_mtime_ns > before
    reader = sqlite3.connect("file:%s?mode=ro&immutable=1" % storage.path, uri=True)
    try:  # immutable: the WAL is ignored, only the database file is read
        copied = reader.execute("SELECT count(*) FROM a2a_tasks").fetchone()[0]
    finally:
        reader.close()
    assert copied >= 16
    storage.close()


def test_no_checkpoint_while_the_last_one_is_recent(tmp_path, monkeypatch):
    storage = _storage(tmp_path)
    monkeypatch.setattr(storage, "CHECKPOINT_AGE_NS", 3600 * 10 ** 9)
    calls = []
    monkeypatch.setattr(storage, "_checkpoint", calls.append)
    for n in range(20):
        storage.start_turn(OWNER, AGENT, _message(n))
    assert calls == []
    storage.close()


def test_sqlites_own_checkpoint_stays_as_a_backstop(tmp_path):
    storage = _storage(tmp_path)
    conn = storage.connection()
    assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == \
        SqliteStorage.AUTO_CHECKPOINT_PAGES
    storage.close()


def test_a_grown_wal_is_cut_back_when_it_starts_over(tmp_path, monkeypatch):
    """A WAL grown by a burst (checkpoints held back) keeps SQLite's file
    size until it starts over; then it is cut to ``WAL_KEPT_BYTES``."""
    storage = SqliteStorage(str(tmp_path / "ck.sqlite3"))
    monkeypatch.setattr(storage, "WAL_KEPT_BYTES", 16 * 1024)
    monkeypatch.setattr(storage, "AUTO_CHECKPOINT_PAGES", 10 ** 6)
    monkeypatch.setattr(storage, "_checkpoint_due", lambda: False)
    storage.migrate()
    conn = storage.connection()
    assert conn.execute("PRAGMA journal_size_limit").fetchone()[0] == 16 * 1024
    for n in range(200):
        storage.start_turn(OWNER, AGENT, _message(n))
    wal = storage.path + "-wal"
    grown = os.path.getsize(wal)
    assert grown > 256 * 1024
    busy, frames, copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert busy == 0 and frames == copied > 0
    storage.start_turn(OWNER, AGENT, _message(200))  # starts the WAL over
    # Cut to 16 KB, then this write's few frames (without the limit: grown).
    assert os.path.getsize(wal) < 64 * 1024
    storage.close()
