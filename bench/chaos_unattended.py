"""Findings 0-9 of the chaos run, "leave it running unattended" (run by
bench/chaos.py)."""

import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time

import requests

from chaos_harness import (BIN, CHAT, ECHO, REPO, Server, free_port, ms, post, send_body,
                           state_of, under_flood)


def f1_basic_flood():
    server = Server()
    try:
        basic = {"Authorization": "Basic " + __import__("base64").b64encode(
            b"mallory:guess").decode()}

        def attempt(session):
            took, status, _ = post(server, send_body(), headers=basic,
                                   session=session)
            return took, status
        alone, busy, results = under_flood(server, attempt)
        codes = sorted({str(s) for _, s in results})
        slow = statistics.median(t for t, _ in results)
        return ("anonymous Basic (no users): median %s per attempt, %d attempts "
                "(HTTP %s); key holder tasks/get median %s alone, %s under flood"
                % (ms(slow), len(results), "/".join(codes), ms(alone), ms(busy)))
    finally:
        server.stop()


def f1b_basic_throttle():
    server = Server()
    try:
        subprocess.run([os.path.join(BIN, "flask"), "--app", "wsgi", "a2a", "users",
                        "create", "alice", "--password-stdin"], cwd=REPO,
                       env=server.env, input="right\n", text=True, check=True,
                       capture_output=True, timeout=60)
        wrong = {"Authorization": "Basic " + __import__("base64").b64encode(
            b"alice:wrong").decode()}
        statuses, started = [], time.perf_counter()
        for _ in range(100):
            statuses.append(post(server, send_body(), headers=wrong)[1])
        took = time.perf_counter() - started
        return ("100 wrong passwords for a real user in %.1f s: %d refused 401, "
                "%d throttled 429" % (took, statuses.count(401), statuses.count(429)))
    finally:
        server.stop()


def f2_big_body_flood():
    server = Server()
    try:
        big = json.dumps(send_body(parts=[{"kind": "text", "text": "x"}] * 38000),
                         separators=(",", ":")).encode()
        assert len(big) < 1024 * 1024  # under the size limit

        def attempt(session):
            took, status, _ = post(server, big, headers={}, session=session)
            return took, status
        alone, busy, results = under_flood(server, attempt)
        answer = statistics.median(t for t, _ in results)
        return ("anonymous %d kB send of 38,000 parts: answered %s in %s median; "
                "key holder median %s alone, %s under flood"
                % (len(big) // 1024,
                   "/".join(sorted({str(s) for _, s in results})), ms(answer),
                   ms(alone), ms(busy)))
    finally:
        server.stop()


def _chattr(flag, paths):
    return subprocess.run(["chattr", flag] + paths, capture_output=True).returncode


def f3_read_only():
    if shutil.which("chattr") is None or os.geteuid() != 0:
        return "skipped: needs root and chattr"
    server = Server(auth=False)
    files = []
    try:
        post(server, send_body())
        files = [server.database + s for s in ("", "-wal", "-shm", "-lock")
                 if os.path.exists(server.database + s)]
        if _chattr("+i", files):
            return "skipped: chattr +i refused on this file system"
        outcomes = [state_of(post(server, send_body(), timeout=10)[2])
                    for _ in range(10)]
        time.sleep(4)
        master_after_4s = server.alive()
        _chattr("-i", files)
        files = []
        recovered, deadline = None, time.monotonic() + 10
        started = time.monotonic()
        while time.monotonic() < deadline and server.alive():
            if state_of(post(server, send_body(), timeout=5)[2]) == "completed":
                recovered = time.monotonic() - started
                break
            time.sleep(0.2)
        return ("read-only: %d/10 acknowledged, %d storage errors, %d dropped "
                "connections, SIGBUS %d; master up after 4 s: %s; writable again: "
                "%s" % (outcomes.count("completed"),
                        sum(o.startswith("error") for o in outcomes),
                        sum(o in ("ConnectionError", "ChunkedEncodingError")
                            for o in outcomes),
                        server.log().count("SIGBUS"),
                        "yes" if master_after_4s else "NO (exited)",
                        "serving after %.1f s" % recovered if recovered is not None
                        else "NOT serving within 10 s"))
    finally:
        if files:
            _chattr("-i", files)
        server.stop()


def f4_deleted():
    server = Server(auth=False)
    try:
        post(server, send_body())
        os.unlink(server.database)
        outcomes = [state_of(post(server, send_body(), timeout=10)[2])
                    for _ in range(20)]
        time.sleep(1)
        return ("after rm of the database: %d/20 acknowledged, %d refused with an "
                "error; master up: %s; log names it: %s"
                % (outcomes.count("completed"),
                   sum(o.startswith("error") for o in outcomes),
                   "yes" if server.alive() else "NO",
                   "yes" if server.database in server.log() else "no"))
    finally:
        server.stop()


def f5_short_body():
    server = Server(auth=False)
    try:
        body = json.dumps(send_body("cut short")).encode()
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
            s.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                      b"\r\nContent-Length: 5000\r\nConnection: close\r\n\r\n"
                      % ECHO.encode() + body)
            s.shutdown(socket.SHUT_WR)
            answer = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                answer += chunk
        import sqlite3
        with sqlite3.connect(server.database) as conn:
            tasks = conn.execute("SELECT count(*) FROM a2a_tasks").fetchone()[0]
        status = answer.split(b" ", 2)[1].decode() if answer else "none"
        return ("%d of 5000 declared bytes then a half-close: HTTP %s, tasks run: %d"
                % (len(body), status, tasks))
    finally:
        server.stop()


def f6_disk_full():
    if os.geteuid() != 0:
        return "skipped: needs root to mount a small tmpfs"
    mount = tempfile.mkdtemp(prefix="a2a-chaos-full-")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", mount],
                      capture_output=True).returncode:
        os.rmdir(mount)
        return "skipped: cannot mount a tmpfs here"
    server = None
    try:
        # No reserve (A2A_MIN_FREE_DISK_BYTES, more than this whole disk by
        # default): the full disk itself is what this finding meets.
        server = Server(auth=False, database=os.path.join(mount, "a2a.sqlite3"),
                        env={"A2A_MIN_FREE_DISK_BYTES": "0"})
        post(server, send_body())
        filler = os.path.join(mount, "filler")
        with open(filler, "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
        outcomes = [state_of(post(server, send_body("x" * 100000), timeout=20)[2])
                    for _ in range(3)]
        os.unlink(filler)
        after = state_of(post(server, send_body(), timeout=20)[2])
        return ("disk full: %s | after freeing space: %s"
                % (outcomes[-1], after))
    finally:
        if server is not None:
            server.stop()
        for _ in range(50):  # the killed workers may hold the files a moment
            if not subprocess.run(["umount", mount], capture_output=True).returncode:
                os.rmdir(mount)
                break
            time.sleep(0.1)


def _slow_clients(port, count=10, seconds=12.0):
    """``count`` connections sending one header byte a second, for ``seconds``."""
    stop = time.monotonic() + seconds
    request = b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n" % ECHO.encode()

    def dribble():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                for byte in request:
                    if time.monotonic() > stop:
                        break
                    s.sendall(bytes([byte]))
                    time.sleep(1.0)
        except OSError:
            pass

    threads = [threading.Thread(target=dribble, daemon=True) for _ in range(count)]
    for t in threads:
        t.start()
    return threads


def _timed_send(url, limit=15.0):
    started = time.perf_counter()
    try:
        r = requests.post(url, json=send_body(), timeout=limit)
        return "%.2f s (HTTP %d, %s)" % (time.perf_counter() - started,
                                         r.status_code, state_of(r.json()))
    except (requests.RequestException, ValueError) as exc:
        return "> %.0f s or no answer (%s)" % (limit, type(exc).__name__)


def _nginx_config(upstream_port, listen_port, prefix):
    # The plain site first: the mTLS one needs certificates this run has not.
    found = sorted((f for f in os.listdir(os.path.join(REPO, "deploy"))
                    if "nginx" in f and f.endswith(".conf")),
                   key=lambda f: (f != "nginx-a2a.conf", f)) if os.path.isdir(
        os.path.join(REPO, "deploy")) else []
    if found:
        with open(os.path.join(REPO, "deploy", found[0])) as f:
            server = f.read()
        source = "deploy/" + found[0]
        server = server.replace("127.0.0.1:8000", "127.0.0.1:%d" % upstream_port)
        server = server.replace("listen [::]:80;", "")
        server = server.replace("listen 80;", "listen 127.0.0.1:%d;" % listen_port)
        snippet = os.path.join(REPO, "deploy", "nginx-a2a-proxy.conf")
        if os.path.exists(snippet):  # the site's include, beside it
            shutil.copy(snippet, os.path.join(prefix, "a2a-proxy.conf"))
            server = server.replace("/etc/nginx/snippets/a2a-proxy.conf",
                                    os.path.join(prefix, "a2a-proxy.conf"))
    else:
        source = "a minimal buffering proxy (no deploy/*nginx*.conf here)"
        server = ("server { listen 127.0.0.1:%d; client_header_timeout 15s; "
                  "client_body_timeout 15s; location / { proxy_pass "
                  "http://127.0.0.1:%d; } }" % (listen_port, upstream_port))
    temp = ("client_body_temp_path {p}/b; proxy_temp_path {p}/p; "
            "fastcgi_temp_path {p}/f; uwsgi_temp_path {p}/u; scgi_temp_path {p}/s; "
            "access_log off;").format(p=prefix)
    return source, ("error_log %s/error.log; pid %s/nginx.pid; events {} "
                    "http { %s %s }" % (prefix, prefix, temp, server))


def f7_slow_clients():
    server = Server(auth=False)
    lines = []
    try:
        threads = _slow_clients(server.port)
        time.sleep(1.5)
        lines.append("direct (-w 2): a normal send waited " +
                     _timed_send(server.url + ECHO))
        for t in threads:
            t.join(15)
        nginx = shutil.which("nginx")
        if nginx is None:
            lines.append("behind nginx: skipped, nginx is not installed")
            return "; ".join(lines)
        prefix = tempfile.mkdtemp(prefix="a2a-chaos-nginx-")
        port = free_port()
        source, config = _nginx_config(server.port, port, prefix)
        with open(os.path.join(prefix, "nginx.conf"), "w") as f:
            f.write(config)
        proxy = subprocess.Popen([nginx, "-p", prefix, "-c", prefix + "/nginx.conf",
                                  "-g", "daemon off;"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            time.sleep(1.0)
            if proxy.poll() is not None:
                lines.append("behind nginx: skipped, nginx did not start with %s"
                             % source)
                return "; ".join(lines)
            threads = _slow_clients(port)
            time.sleep(1.5)
            lines.append("behind nginx (%s): %s" % (
                source, _timed_send("http://127.0.0.1:%d%s" % (port, ECHO))))
            for t in threads:
                t.join(15)
        finally:
            try:
                os.killpg(proxy.pid, signal.SIGKILL)
            except ProcessLookupError:  # nginx stopped by itself: its group is gone
                pass
            proxy.wait(10)
            shutil.rmtree(prefix, ignore_errors=True)
        return "; ".join(lines)
    finally:
        server.stop()


def f8_host_header():
    server = Server(auth=False)
    try:
        card = requests.get(server.url + "/api/v1/agents/echo/.well-known/agent-card.json",
                            headers={"Host": "evil.example"}, timeout=10).json()
        time.sleep(0.5)
        warned = "Host header" in server.log()
        return ("Host: evil.example gives url %s; warning about it logged: %s"
                % (card.get("url"), "yes" if warned else "no"))
    finally:
        server.stop()


def f9_long_chat(turns=1000):
    server = Server(auth=False)
    try:
        session = requests.Session()
        task_id, times, sizes = None, {}, {}
        for turn in range(1, turns + 1):
            fields = {"taskId": task_id} if task_id else {}
            body = send_body("turn %d of a long talk" % turn, historyLength=0)
            body["params"]["message"].update(fields)
            started = time.perf_counter()
            r = session.post(server.url + CHAT, json=body, timeout=60)
            times[turn] = time.perf_counter() - started
            answer = r.json()["result"]
            task_id = answer["id"]
            sizes[turn] = len(answer["status"]["message"]["parts"][0]["text"])
        whole = session.post(server.url + CHAT, json={
            "jsonrpc": "2.0", "id": 1, "method": "tasks/get",
            "params": {"id": task_id}}, timeout=60).content
        early = statistics.median(times[t] for t in range(2, 12))
        late = statistics.median(times[t] for t in range(turns - 9, turns + 1))
        return ("chat, historyLength 0: turns 2-11 %s median, turns %d-%d %s "
                "(x%.1f); reply text %d B at turn 2, %d B at turn %d; tasks/get of "
                "the whole task %d kB" % (ms(early), turns - 9, turns, ms(late),
                                          late / early, sizes[2], sizes[turns],
                                          turns, len(whole) // 1024))
    finally:
        server.stop()


def f0_kill_workers(seconds=10.0):
    server = Server(workers=4, auth=False)
    try:
        acknowledged, stop = [], time.monotonic() + seconds
        lock = threading.Lock()

        def load():
            session = requests.Session()
            while time.monotonic() < stop:
                _, status, answer = post(server, send_body(), timeout=10,
                                         session=session)
                if status == 200 and answer and "result" in answer:
                    with lock:
                        acknowledged.append(answer["result"]["id"])

        threads = [threading.Thread(target=load, daemon=True) for _ in range(4)]
        for t in threads:
            t.start()
        kills = 0
        while time.monotonic() < stop:
            time.sleep(2)
            pids = server.workers()
            if pids:
                os.kill(pids[0], signal.SIGKILL)
                kills += 1
        for t in threads:
            t.join(15)
        time.sleep(1)
        lost = stuck = 0
        for task_id in acknowledged:
            _, _, answer = post(server, {"jsonrpc": "2.0", "id": 1,
                                         "method": "tasks/get",
                                         "params": {"id": task_id}})
            state = state_of(answer)
            lost += state != "completed" and state != "working"
            stuck += state == "working"
        return ("kill -9 of a worker every 2 s for %.0f s (%d kills): %d "
                "acknowledged, %d lost, %d stuck working"
                % (seconds, kills, len(acknowledged), lost, stuck))
    finally:
        server.stop()


FINDINGS = [
    ("0", "workers killed under load", f0_kill_workers),
    ("1", "Basic header flood", f1_basic_flood),
    ("1b", "failed Basic logins", f1b_basic_throttle),
    ("2", "big anonymous body flood", f2_big_body_flood),
    ("3", "storage read-only, then writable", f3_read_only),
    ("4", "database deleted", f4_deleted),
    ("5", "short body", f5_short_body),
    ("6", "disk full", f6_disk_full),
    ("7", "slow clients", f7_slow_clients),
    ("8", "forged Host header", f8_host_header),
    ("9", "1,000-turn conversation", f9_long_chat),
]
