"""Real gunicorn workers on a bad day: short bodies, storage that is not there
or turns read-only, a database deleted under them."""

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import time

import pytest

from helpers import message
from serving import free_port  # noqa: F401  (serving.py must import first)

ECHO = "/api/v1/agents/echo/a2a"


def _send(rpc, text="hi"):
    return rpc.call("message/send", {"message": message(text)})


def _raw_post(server, path, body, declared_length):
    """POST ``body`` declaring ``declared_length`` bytes, then half-close."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/json\r\nContent-Length: %d\r\n"
                     b"Connection: close\r\n\r\n" % (path.encode(), declared_length)
                     + body)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    head, _, payload = answer.partition(b"\r\n\r\n")
    return int(head.split()[1]), payload


def test_a_body_shorter_than_its_content_length_is_refused(start_server):
    server = start_server(auth="off")
    sent = message("cut short")
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "message/send",
                       "params": {"message": sent}}).encode()
    status, payload = _raw_post(server, ECHO, body, len(body) + 4855)
    assert status == 400, payload
    error = json.loads(payload)["error"]
    assert error["code"] == -32600
    assert "ended after %d of the %d bytes" % (len(body), len(body) + 4855) \
        in error["message"]
    # Nothing ran, nothing was stored.
    with sqlite3.connect(server.database) as conn:
        assert conn.execute("SELECT count(*) FROM a2a_tasks").fetchone()[0] == 0
    task = server.rpc().result("message/send", {"message": sent})
    assert task["status"]["state"] == "completed"


def test_workers_boot_without_storage_and_serve_once_it_is_there(start_server,
                                                                  tmp_path):
    blocker = tmp_path / "no-folder"
    blocker.write_text("a file where the database folder should be")
    database = str(blocker / "a2a.sqlite3")
    server = start_server(app="wsgi:app", workers=2, auth="off",
                          database=database)
    rpc = server.rpc()
    for _ in range(4):
        status, answer = _send(rpc)
        assert status == 200
        assert "storage is unavailable" in answer["error"]["message"], answer
    assert server.process.poll() is None  # the master is still up
    assert database in server.log()
    blocker.unlink()
    deadline = time.monotonic() + 10
    while True:
        status, answer = _send(rpc)
        if "result" in answer or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert answer["result"]["status"]["state"] == "completed", answer


def _chattr(flag, paths):
    return subprocess.run(["chattr", flag] + paths, capture_output=True).returncode


def test_storage_made_read_only_then_writable_again(start_server):
    if shutil.which("chattr") is None or os.geteuid() != 0:
        pytest.skip("needs chattr and root to make the files immutable")
    server = start_server(app="wsgi:app", workers=2, auth="off")
    rpc = server.rpc()
    assert "result" in _send(rpc)[1]
    files = [server.database + s for s in ("", "-wal", "-shm", "-lock")
             if os.path.exists(server.database + s)]
    if _chattr("+i", files) != 0:
        pytest.skip("chattr +i does not work on this file system")
    try:
        acknowledged = 0
        for _ in range(6):
            try:
                status, answer = _send(rpc)
            except Exception:  # a worker that wrote to its shared memory dies
                continue
            acknowledged += "result" in answer
            if "error" in answer:
                assert "storage is unavailable" in answer["error"]["message"]
        assert acknowledged == 0
        assert server.process.poll() is None
    finally:
        _chattr("-i", files)
    answers = [_send(rpc)[1] for _ in range(4)]
    assert all(a["result"]["status"]["state"] == "completed" for a in answers), \
        answers
    assert server.process.poll() is None


def test_a_deleted_database_is_not_acknowledged_and_the_service_stays_up(
        start_server):
    server = start_server(app="wsgi:app", workers=2, auth="off")
    rpc = server.rpc()
    assert "result" in _send(rpc)[1]
    os.unlink(server.database)
    for _ in range(10):
        status, answer = _send(rpc)
        assert "error" in answer, answer
        assert "storage is unavailable" in answer["error"]["message"]
    assert server.process.poll() is None
    assert "deleted or replaced" in _send(rpc)[1]["error"]["message"] or \
        server.database in server.log()
