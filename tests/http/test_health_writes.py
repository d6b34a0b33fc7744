"""``GET PREFIX/health`` while writes fail: 503 ``{"status": "unavailable",
"writes": "<reason>"}`` (so a load balancer stops sending calls there) for a
full disk, a read-only filesystem and a deleted file, on real filesystems
(a small tmpfs of its own: root only, as CI runs); logged once per change,
never with a traceback; ``{"status": "ok"}`` again once writes work."""

import logging
import os
import subprocess
import time

import pytest

from helpers import Rpc, message

HEALTH = "/api/v1/health"


@pytest.fixture
def small_disk(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    where = tmp_path / "disk"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)],
                   check=True)
    yield where
    subprocess.run(["umount", "-l", str(where)], check=True)


@pytest.fixture
def probe_at_once(monkeypatch):
    # Every check tries a write instead of trusting the last one's outcome.
    from a2a_flask.storage import common
    if hasattr(common, "WriteHealth"):
        monkeypatch.setattr(common.WriteHealth, "PROBE_SECONDS", 0.0)


def _health(app):
    answer = app.test_client().get(HEALTH)
    return answer.status_code, answer.get_json()


def _fill(where):
    """Fill the disk at ``where`` (a file ``filler``), unbuffered: nothing is
    left to flush, and fail, at close."""
    with open(str(where / "filler"), "wb", buffering=0) as out:
        try:
            while True:
                out.write(b"x" * 65536)
        except OSError:
            pass


def _no_traceback(caplog):
    assert all(r.exc_info is None for r in caplog.records), [
        r.getMessage() for r in caplog.records if r.exc_info]


def test_a_full_disk_is_unavailable_until_space_is_freed(make_app, small_disk,
                                                         probe_at_once, caplog):
    app, _ = make_app(A2A_DATABASE=str(small_disk / "a2a.sqlite3"),
                      A2A_MIN_FREE_DISK_BYTES=0)  # the disk itself full
    rpc = Rpc(app.test_client())
    rpc.send("stored")
    assert _health(app) == (200, {"status": "ok", "database": "ok",
                                  "schemaVersion": app.extensions["a2a"].storage.expected_version()})
    filler = small_disk / "filler"
    with caplog.at_level(logging.WARNING, logger="a2a_flask"):
        _fill(small_disk)
        status, answer = rpc.call("message/send", {"message": message("y" * 300000)})
        assert "full" in answer["error"]["message"], answer
        for _ in range(3):
            assert _health(app) == (503, {"status": "unavailable",
                                          "writes": "the disk is full"})
    health_lines = [r.getMessage() for r in caplog.records
                    if r.getMessage().startswith("health:")]
    assert health_lines == ["health: writes fail: the disk is full"]
    _no_traceback(caplog)
    filler.unlink()
    assert _health(app)[0] == 200
    assert rpc.send("after")["status"]["state"] == "completed"


def test_a_read_only_database_is_unavailable_while_reads_work(make_app, probe_at_once,
                                                            caplog):
    app, _ = make_app()
    rpc = Rpc(app.test_client())
    task = rpc.send("stored")
    storage = app.extensions["a2a"].storage
    # SQLite's own refusal to write ("attempt to write a readonly database"),
    # as on a file or filesystem made read-only under the service.
    storage.connection().execute("PRAGMA query_only = 1")
    with caplog.at_level(logging.WARNING, logger="a2a_flask"):
        assert _health(app) == (503, {"status": "unavailable",
                                      "writes": "the database file is read-only"})
        assert rpc.result("tasks/get", {"id": task["id"]})["id"] == task["id"]
    _no_traceback(caplog)
    storage.connection().execute("PRAGMA query_only = 0")
    assert _health(app)[0] == 200


def test_a_deleted_file_is_unavailable_without_a_traceback(make_app, caplog):
    app, _ = make_app()
    Rpc(app.test_client()).send("stored")
    os.unlink(app.config["A2A_DATABASE"])
    with caplog.at_level(logging.WARNING, logger="a2a_flask"):
        for _ in range(3):
            status, body = _health(app)
            assert status == 503, body
            assert body["status"] == "unavailable", body
    _no_traceback(caplog)
    assert len([r for r in caplog.records
                if r.getMessage().startswith("health:")]) == 1


def test_a_read_only_postgres_database_is_unavailable(make_app, postgres_url,
                                                      postgres_server, probe_at_once):
    name = postgres_url.rsplit("/", 1)[1]
    app, _ = make_app(A2A_DATABASE=postgres_url)
    rpc = Rpc(app.test_client())
    task = rpc.send("stored")
    assert _health(app)[0] == 200
    postgres_server.query("ALTER DATABASE %s SET default_transaction_read_only = on" % name)
    app.extensions["a2a"].storage.close()  # new connections see the setting
    assert _health(app) == (503, {"status": "unavailable",
                                  "writes": "the database is read-only"})
    assert rpc.result("tasks/get", {"id": task["id"]})["id"] == task["id"]
    postgres_server.query("ALTER DATABASE %s SET default_transaction_read_only = off" % name)
    app.extensions["a2a"].storage.close()
    assert _health(app)[0] == 200


# -- "nothing was stored" only when nothing was --------------------------------


def _big_answer(a2a):
    a2a.add_agent("big", lambda turn: "z" * 400000)


def test_an_answer_that_can_be_neither_stored_nor_kept_fails_its_task_and_says_so(
        make_app, monkeypatch):
    app, _ = make_app(register=_big_answer)
    database = app.config["A2A_DATABASE"]
    rpc = Rpc(app.test_client(), agent="big")
    rpc.send("warm up")  # pages for the small rows to come
    # Nowhere to keep an outcome aside: a file where its folder would be.
    with open(database + "-outcomes", "w") as blocker:
        blocker.write("not a folder")
    storage = app.extensions["a2a"].storage
    pages = storage.connection().execute("PRAGMA page_count").fetchone()[0]
    storage.drop_connection()
    # A full database on every connection (a failed write drops its
    # connection; the retry opens another): SQLite's own SQLITE_FULL.
    opened = storage._open

    def full(create):
        conn, identity = opened(create)
        conn.execute("PRAGMA max_page_count = %d" % pages)
        return conn, identity
    monkeypatch.setattr(storage, "_open", full)
    sent = message("hello")
    status, answer = rpc.call("message/send", {"message": sent})
    assert "error" in answer, answer
    error = answer["error"]
    assert error["code"] == -32603
    task_id = error["data"]["taskId"]
    assert error["data"] == {"retry": False, "taskId": task_id, "state": "failed"}
    assert error["message"] == (
        "The storage is full (no space left on the disk): task %s was stored, "
        "but its agent's answer could not be: it is failed. Send the message "
        "again with a new messageId once the storage works again." % task_id)
    assert "nothing was stored" not in error["message"]
    monkeypatch.undo()
    storage.drop_connection()
    assert rpc.result("tasks/get", {"id": task_id})["status"]["state"] == "failed"
    # A retry of the same message finds the failed task, not one stuck working.
    status, again = rpc.call("message/send", {"message": sent})
    assert again["result"]["id"] == task_id, again
    assert again["result"]["status"]["state"] == "failed"




def test_a_disk_that_fills_while_the_agent_runs_leaves_no_half_written_file(
        make_app, small_disk):
    def filling(turn):
        _fill(small_disk)  # the task's start is stored; its answer will not be
        return "z" * 400000

    app, _ = make_app(register=lambda a2a: a2a.add_agent("filling", filling),
                      A2A_DATABASE=str(small_disk / "a2a.sqlite3"),
                      A2A_MIN_FREE_DISK_BYTES=0)
    rpc = Rpc(app.test_client(), agent="filling")
    status, answer = rpc.call("message/send", {"message": message("hello")})
    error = answer["error"]
    assert error["code"] == -32603, answer
    assert error["data"]["retry"] is False and "was stored" in error["message"], error
    assert "nothing was stored" not in error["message"]
    kept = small_disk / "a2a.sqlite3-outcomes"
    assert kept.is_dir() and not list(kept.iterdir())  # the .tmp removed
    (small_disk / "filler").unlink()
    got = rpc.result("tasks/get", {"id": error["data"]["taskId"]})
    assert got["status"]["state"] == error["data"]["state"]


def _fill_to(where, free_bytes):
    """Write a filler until the disk has about ``free_bytes`` free."""
    stat = os.statvfs(str(where))
    with open(str(where / "filler"), "wb") as out:
        out.write(b"x" * max(stat.f_bavail * stat.f_frsize - free_bytes, 0))


def test_under_the_free_disk_reserve_sends_are_refused_reads_cancels_prune_work(
        make_app, small_disk, probe_at_once, caplog):
    """A2A_MIN_FREE_DISK_BYTES: under it a new send is refused (a storage
    answer, retryable) before the disk fills, /health says the reserve is
    reached (the same number), and reads, cancels and `tasks prune` work."""
    reserve = 2 * 1024 * 1024
    app, _ = make_app(A2A_DATABASE=str(small_disk / "a2a.sqlite3"),
                      A2A_MIN_FREE_DISK_BYTES=reserve)
    rpc = Rpc(app.test_client())
    storage = app.extensions["a2a"].storage
    done = rpc.send("done")
    waiting = Rpc(app.test_client(), agent="chat").send("ask me")
    assert _health(app)[0] == 200
    _fill_to(small_disk, reserve - 256 * 1024)
    # A send reuses a measure of the free space this young (at_reserve).
    time.sleep(storage.FREE_DISK_SEEN_SECONDS + 0.05)
    with caplog.at_level(logging.WARNING, logger="a2a_flask"):
        status, answer = rpc.call("message/send", {"message": message("new")})
        error = answer["error"]
        assert error["code"] == -32603 and error["data"] == {"retry": True}
        assert "A2A_MIN_FREE_DISK_BYTES" in error["message"]
        assert "nothing was stored" in error["message"]
        assert _health(app) == (503, {"status": "unavailable",
                                      "writes": storage.RESERVE_REACHED})
        # Reads, a retry of what was stored, a cancel and a prune still work.
        assert rpc.result("tasks/get", {"id": done["id"]})["id"] == done["id"]
        assert rpc.result("message/send", {"message": done["history"][0]})["id"] == done["id"]
        canceled = Rpc(app.test_client(), agent="chat").result(
            "tasks/cancel", {"id": waiting["id"]})
        assert canceled["status"]["state"] == "canceled"
        time.sleep(1.1)  # both tasks older than the cutoff below
        result = app.test_cli_runner().invoke(args=[
            "a2a", "tasks", "prune", "--older-than", "1s"])
        assert result.exit_code == 0, result.output
        assert "Traceback" not in result.output
    assert storage.list_tasks(owner="anonymous").tasks == []
    _no_traceback(caplog)
    (small_disk / "filler").unlink()
    assert _health(app)[0] == 200
    assert rpc.send("after")["status"]["state"] == "completed"
