"""What the chaos findings share: a real gunicorn server of this checkout on a
fresh database, request bodies, checked posts and floods (bench/chaos.py,
bench/chaos_unattended.py, bench/chaos_hostile.py)."""

import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import requests

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
ECHO = "/api/v1/agents/echo/a2a"
CHAT = "/api/v1/agents/chat/a2a"


#: CHAOS_PORTS=9500-9599: take the run's ports from that range (a shared
#: machine where each user has its own); otherwise any free port.
_RANGE = os.environ.get("CHAOS_PORTS", "")
_next = [0]


def free_port():
    if not _RANGE:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return sock.getsockname()[1]
    low, high = (int(n) for n in _RANGE.split("-"))
    for _ in range(high - low + 1):
        port = low + _next[0] % (high - low + 1)
        _next[0] += 1  # not the same port twice in a row: TIME_WAIT, a slow exit
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in CHAOS_PORTS=%s" % _RANGE)


class Server:
    """``gunicorn -w N wsgi:app`` on a fresh database; ``key`` when auth is on.
    ``app``: another module of the checkout (bench/servers/chaos_app.py)."""

    def __init__(self, workers=2, auth=True, database=None, env=None, app="wsgi:app"):
        self.dir = tempfile.mkdtemp(prefix="a2a-chaos-")
        self.database = database or os.path.join(self.dir, "a2a.sqlite3")
        self.env = dict(os.environ, A2A_DATABASE=self.database, **(env or {}))
        for key in [k for k in self.env if k.startswith("A2A_")
                    and k not in (env or {}) and k != "A2A_DATABASE"]:
            del self.env[key]
        if not auth:
            self.env["A2A_AUTH"] = "off"
        self.key = None
        if auth:
            self.key = subprocess.run(
                [os.path.join(BIN, "flask"), "--app", app.split(":")[0], "a2a", "keys",
                 "create", "--quiet"], cwd=REPO, env=self.env, check=True,
                capture_output=True, text=True, timeout=60).stdout.strip()
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.log_path = os.path.join(self.dir, "server.log")
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [os.path.join(BIN, "gunicorn"), "-w", str(workers), "-b",
                 "127.0.0.1:%d" % self.port, "--timeout", "60",
                 "--graceful-timeout", "2"]
                + (["--no-control-socket"] if _has_control_socket() else [])
                + ["-c", os.path.join(REPO, "gunicorn.conf.py"), app], cwd=REPO, env=self.env, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and self.alive():
            try:
                requests.get(self.url + "/.well-known/agent-card.json", timeout=2)
                break
            except requests.RequestException:
                time.sleep(0.1)
        self.headers = {"Authorization": "Bearer " + self.key} if self.key else {}

    def alive(self):
        return self.process.poll() is None

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def workers(self):
        out = subprocess.run(["pgrep", "-P", str(self.process.pid)],
                             capture_output=True, text=True).stdout
        return [int(pid) for pid in out.split()]

    def stop(self):
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


def _has_control_socket():
    try:
        import gunicorn.config
    except ImportError:
        return False
    return hasattr(gunicorn.config, "ControlSocketDisable")


_n = [0]


def send_body(text="hi", parts=None, message_id=None, **config):
    _n[0] += 1
    msg = {"kind": "message", "role": "user",
           "messageId": message_id or "chaos-%d-%f" % (_n[0], time.time()),
           "parts": parts or [{"kind": "text", "text": text}]}
    params = {"message": msg}
    if config:
        params["configuration"] = config
    return {"jsonrpc": "2.0", "id": _n[0], "method": "message/send",
            "params": params}


def post(server, body, path=ECHO, headers=None, timeout=30, session=requests):
    """(seconds, HTTP status, JSON answer or None); status "EXC" on a failure."""
    headers = dict(server.headers if headers is None else headers)
    if not isinstance(body, bytes):  # big bodies come encoded once, up front
        body = json.dumps(body).encode()
    headers["Content-Type"] = "application/json"
    started = time.perf_counter()
    try:
        r = session.post(server.url + path, data=body, timeout=timeout,
                         headers=headers)
        answer = r.json() if r.headers.get("Content-Type", "").startswith(
            "application/json") else None
        return time.perf_counter() - started, r.status_code, answer
    except (requests.RequestException, ValueError) as exc:
        return time.perf_counter() - started, "EXC", type(exc).__name__


def state_of(answer):
    if isinstance(answer, dict) and "result" in answer:
        return answer["result"]["status"]["state"]
    if isinstance(answer, dict) and "error" in answer:
        return "error: " + answer["error"]["message"][:60]
    if isinstance(answer, dict) and "message" in answer:
        return "error: " + answer["message"][:60]
    return str(answer)


def ms(seconds):
    return "%.1f ms" % (seconds * 1000)


def key_holder_median(server, task_id, seconds=4.0, count=200):
    session = requests.Session()
    body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": task_id}}
    times, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline and len(times) < count:
        took, status, _ = post(server, body, session=session)
        times.append(took)
    return statistics.median(times)


def flood(server, make_request, threads=2, seconds=4.0, count=400):
    """Run ``make_request()`` from ``threads`` threads; (latencies, statuses)."""
    stop = time.monotonic() + seconds
    results, lock = [], threading.Lock()

    def run():
        session = requests.Session()
        while time.monotonic() < stop and len(results) < count:
            result = make_request(session)
            with lock:
                results.append(result)

    workers = [threading.Thread(target=run, daemon=True) for _ in range(threads)]
    for w in workers:
        w.start()
    return workers, results


def under_flood(server, make_request, threads=2):
    task = post(server, send_body())[2]["result"]["id"]
    alone = key_holder_median(server, task)
    workers, results = flood(server, make_request, threads)
    time.sleep(0.3)
    busy = key_holder_median(server, task, seconds=3.0)
    for w in workers:
        w.join(10)
    return alone, busy, results
