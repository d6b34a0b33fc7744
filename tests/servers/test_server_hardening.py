"""Real gunicorn workers on a bad day: short bodies, storage that is not there
or turns read-only, a database deleted under them."""

import json
import os
import runpy
import shutil
import socket
import sqlite3
import subprocess
import time

import pytest

from helpers import message
from serving import REPO_DIR, free_port  # noqa: F401  (serving.py must import first)

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


def _read_answer(sock):
    """One HTTP answer from ``sock``: (status, headers lower-cased, body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "connection closed before an answer: %r" % data
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers["content-length"])
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk, "connection closed inside an answer"
        rest += chunk
    assert len(rest) == length, "bytes after the answer: %r" % rest[length:]
    return int(lines[0].split()[1]), headers, rest


def _post_head(path, length):
    return (b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % (path.encode(), length))


LIMIT = 64 * 1024  # A2A_MAX_CONTENT_LENGTH of these servers


def test_a_413_keeps_the_connection_for_the_next_request(start_server):
    # The shipped gunicorn.conf.py (wsgi:app runs beside it). A body 200 KiB
    # over the limit: more than gunicorn drains by itself (64 KiB).
    server = start_server(app="wsgi:app", auth="off",
                          env={"A2A_MAX_CONTENT_LENGTH": str(LIMIT)})
    refused = b"x" * (LIMIT + 200 * 1024)
    sent = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "message/send",
                       "params": {"message": message("after")}}).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(_post_head(ECHO, len(refused)) + refused)
        status, headers, payload = _read_answer(sock)
        assert status == 413, payload
        assert json.loads(payload)["error"]["code"] == -32600
        assert headers["connection"] == "keep-alive"
        # The same connection answers the next request.
        sock.sendall(_post_head(ECHO, len(sent)) + sent)
        status, headers, payload = _read_answer(sock)
    assert status == 200, payload
    assert json.loads(payload)["result"]["status"]["state"] == "completed"


def test_a_413_far_over_the_limit_closes_the_connection(start_server):
    server = start_server(app="wsgi:app", auth="off",
                          env={"A2A_MAX_CONTENT_LENGTH": str(LIMIT)})
    declared = LIMIT + 1024 * 1024 + 1  # past what the app drains
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        # Only the head: the refusal must come without the body being read.
        sock.sendall(_post_head(ECHO, declared))
        status, headers, payload = _read_answer(sock)
        assert status == 413, payload
        assert headers["connection"] == "close"
        assert sock.recv(65536) == b""  # and closed: EOF, not a reset
    # A body over by exactly the drain bound is still read: the connection stays.
    body = b"x" * (LIMIT + 1024 * 1024)
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(_post_head(ECHO, len(body)) + body)
        status, headers, _ = _read_answer(sock)
        assert (status, headers["connection"]) == (413, "keep-alive")
        sock.sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\n"
                     b"Host: 127.0.0.1\r\n\r\n")
        status, _, _ = _read_answer(sock)
    assert status == 200
    # A chunked body over the limit (no length to judge it by) is drained
    # too when it ends within the bound.
    chunk = b"x" * (100 * 1024)
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(3))
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n" % ECHO.encode()
                     + chunked + b"0\r\n\r\n")
        status, headers, _ = _read_answer(sock)
        assert (status, headers["connection"]) == (413, "keep-alive")
        sock.sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\n"
                     b"Host: 127.0.0.1\r\n\r\n")
        status, _, _ = _read_answer(sock)
    assert status == 200


def test_a_kept_alive_connection_is_closed_at_its_last_call(start_server):
    # The shipped gunicorn.conf.py: a connection does not stay for ever on
    # the worker that took it; its client connects again, and the least busy
    # worker takes it.
    last = runpy.run_path(os.path.join(REPO_DIR, "gunicorn.conf.py"))["KEEPALIVE_REQUESTS"]
    server = start_server(app="wsgi:app", auth="off")
    card = b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        for number in range(1, last + 1):
            sock.sendall(card)
            status, headers, _ = _read_answer(sock)
            assert (number, status, headers["connection"]) == (
                number, 200, "close" if number == last else "keep-alive")
        assert sock.recv(65536) == b""  # closed: EOF, not a reset


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


@pytest.mark.parametrize("claimers", ["0", "4"])
def test_storage_made_read_only_then_writable_again(start_server, claimers):
    if shutil.which("chattr") is None or os.geteuid() != 0:
        pytest.skip("needs chattr and root to make the files immutable")
    # With the demo's in-process claimers ("4") and without: their heartbeat
    # and claim loop run in every worker, a rebooted one's too.
    server = start_server(app="wsgi:app", workers=2, auth="off",
                          env={"A2A_IN_PROCESS_WORKER": claimers})
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
    # A worker's first write after the file is writable again may still
    # meet its read-only shared memory: refused "storage unavailable"
    # (retryable), its connections retired, its next write succeeds. So each
    # worker may refuse once (twice if a thread held a retired connection
    # at that moment); then every send completes. Each send on a new
    # connection, so that both workers answer some.
    deadline = time.monotonic() + 10
    refusals, in_a_row = [], 0
    while in_a_row < 8:
        answer = _send(server.rpc())[1]
        if answer.get("result", {}).get("status", {}).get("state") == "completed":
            in_a_row += 1
            continue
        assert "storage is unavailable" in answer.get("error", {}).get("message", ""), \
            answer
        refusals.append(answer)
        in_a_row = 0
        assert len(refusals) <= 2 * 2 and time.monotonic() < deadline, \
            (refusals, server.log()[-6000:])
        time.sleep(0.2)
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
