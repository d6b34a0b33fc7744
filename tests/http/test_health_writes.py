"""``GET PREFIX/health`` while writes fail: 503 ``{"status": "unavailable",
"writes": "<reason>"}`` (so a load balancer stops sending calls there) for a
full disk, a read-only filesystem and a deleted file, on real filesystems
(a small tmpfs of its own: root only, as CI runs); logged once per change,
never with a traceback; ``{"status": "ok"}`` again once writes work."""

import logging
import os
import subprocess

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


def _no_traceback(caplog):
    assert all(r.exc_info is None for r in caplog.records), [
        r.getMessage() for r in caplog.records if r.exc_info]


def test_a_full_disk_is_unavailable_until_space_is_freed(make_app, small_disk,
                                                         probe_at_once, caplog):
    app, _ = make_app(A2A_DATABASE=str(small_disk / "a2a.sqlite3"))
    rpc = Rpc(app.test_client())
    rpc.send("stored")
    assert _health(app) == (200, {"status": "ok", "database": "ok",
                                  "schemaVersion": app.extensions["a2a"].storage.expected_version()})
    filler = small_disk / "filler"
    with caplog.at_level(logging.WARNING, logger="a2a_flask"):
        with open(str(filler), "wb") as out:
            try:
                while True:
                    out.write(b"x" * 65536)
                    out.flush()
            except OSError:
                pass
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
