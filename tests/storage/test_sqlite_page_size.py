"""A file the storage creates has small pages; a file it finds keeps its own.

Each commit writes every page it changed to the WAL whole, and a checkpoint
copies it again: with rows of a few hundred bytes, SQLite's default 4 KB
pages write about three times the bytes of 1 KB ones for the same send. The page
size of a file that already has tables (a host app's own database) cannot
change without rebuilding it, and is left as it is.
"""

import sqlite3

from a2a_flask.storage.sqlite import SqliteStorage

OWNER, AGENT = "key:key_1", "echo"
MESSAGE = {"kind": "message", "role": "user", "messageId": "m1",
           "parts": [{"kind": "text", "text": "hello"}]}


def _page_size(path):
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA page_size").fetchone()[0]
    finally:
        conn.close()


def test_a_new_file_has_one_kilobyte_pages(tmp_path):
    path = str(tmp_path / "new.sqlite3")
    storage = SqliteStorage(path)
    storage.migrate()
    storage.start_turn(OWNER, AGENT, MESSAGE)
    storage.close()
    assert _page_size(path) == 1024 == SqliteStorage.PAGE_SIZE


def test_a_host_database_keeps_its_page_size_and_serves(tmp_path):
    path = str(tmp_path / "host.sqlite3")
    host = sqlite3.connect(path)
    host.execute("PRAGMA page_size = 2048")  # neither SQLite's default nor ours
    host.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    host.execute("INSERT INTO users (name) VALUES ('ada')")
    host.commit()
    host.close()
    assert _page_size(path) == 2048
    storage = SqliteStorage(path)
    storage.migrate()
    task_id = storage.start_turn(OWNER, AGENT, MESSAGE).task_id
    storage.close()
    assert _page_size(path) == 2048
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT name FROM users").fetchall() == [("ada",)]
        assert conn.execute("SELECT state FROM a2a_tasks WHERE id = ?",
                            (task_id,)).fetchone() == ("working",)
    finally:
        conn.close()
