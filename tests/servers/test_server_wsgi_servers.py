"""Every common WSGI server, with real processes: gunicorn's gevent and
gthread workers, uWSGI (pre-fork, and --lazy-apps) and Waitress, each with
``flask a2a worker`` beside it on one SQLite file. Rounds of concurrent
sends (in the request and background) and gets: nothing lost, the open file
handles of the server's processes flat from round to round (gevent kept a
connection per finished greenlet), and the access record and an agent's
traceback reach stderr although no gunicorn.conf.py routes them."""

import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest
import requests

from a2a_flask.storage.sqlite import SqliteStorage
from serving import REPO_DIR, VENV_BIN, _RUNNING, free_port

APP = '''
from wsgi import app, a2a  # the demo, as shipped (echo, chat, slow)


def crash(turn):
    raise RuntimeError("agent-broke-here on %r" % turn.text)


a2a.add_agent("crash", crash)
'''

ROUNDS, CALLERS, SENDS = 8, 16, 4
#: Open handles on the database file a server process may hold: its pool's
#: bound on connections, and the start-up migration's own.
MOST_HANDLES = SqliteStorage.MAX_CONNECTIONS + 1


def _commands(kind, port):
    bind = "127.0.0.1:%d" % port
    gunicorn = [os.path.join(VENV_BIN, "gunicorn"), "-b", bind, "-w", "2",
                "--no-control-socket"]  # no gunicorn.conf.py in the folder
    uwsgi = [os.path.join(VENV_BIN, "uwsgi"), "--http-socket", bind, "--master",
             "--processes", "2", "--threads", "4", "--module", "crashapp:app",
             "--need-app", "--die-on-term", "--disable-logging",
             # --http-socket closes each connection after its answer: say so,
             # or a client reusing it races the close (connection reset).
             "--add-header", "Connection: close"]
    return {
        "gevent": gunicorn + ["-k", "gevent", "crashapp:app"],
        "gthread": gunicorn + ["-k", "gthread", "--threads", "8", "crashapp:app"],
        "uwsgi": uwsgi,
        "uwsgi-lazy-apps": uwsgi + ["--lazy-apps"],
        "waitress": [os.path.join(VENV_BIN, "waitress-serve"), "--listen=" + bind,
                     "--threads=8", "crashapp:app"],
    }[kind]


def _database_handles(pgid, database):
    """The most handles on ``database`` one process of the group holds."""
    most = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.getpgid(int(pid)) != pgid:
                continue
            fds = os.listdir("/proc/%s/fd" % pid)
            most = max(most, sum(1 for fd in fds if os.path.realpath(
                "/proc/%s/fd/%s" % (pid, fd)) == database))
        except OSError:
            pass
    return most


def _start(cmd, cwd, env, log_path):
    with open(log_path, "ab") as log:
        process = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    _RUNNING.add(process.pid)
    return process


def _stop(process):
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _RUNNING.discard(process.pid)


def _send(session, url, agent, text, configuration=None):
    params = {"message": {"kind": "message", "role": "user",
                          "messageId": uuid.uuid4().hex,
                          "parts": [{"kind": "text", "text": text}]}}
    if configuration:
        params["configuration"] = configuration
    return session.post(url + "/api/v1/agents/%s/a2a" % agent, json={
        "jsonrpc": "2.0", "id": 1, "method": "message/send", "params": params},
        timeout=60).json()


def _round(url):
    """CALLERS callers x SENDS echo sends, a get of each, and one blocking
    background send each; the ids that were not answered as sent."""
    lost = []

    def caller():
        try:
            calls()
        except requests.RequestException as exc:  # refused, reset: lost too
            lost.append(repr(exc))

    def calls():
        session = requests.Session()
        for _ in range(SENDS):
            answer = _send(session, url, "echo", "hi")
            task = answer.get("result")
            got = session.post(url + "/api/v1/agents/echo/a2a", json={
                "jsonrpc": "2.0", "id": 2, "method": "tasks/get",
                "params": {"id": task["id"]}}, timeout=60).json() if task else {}
            if (got.get("result") or {}).get("status", {}).get("state") != "completed":
                lost.append(answer)
        answer = _send(session, url, "slow", "0")
        if (answer.get("result") or {}).get("status", {}).get("state") != "completed":
            lost.append(answer)
        session.close()  # its server-side socket is no handle of ours

    threads = [threading.Thread(target=caller) for _ in range(CALLERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return lost


@pytest.mark.parametrize("kind", ["gevent", "gthread", "uwsgi", "uwsgi-lazy-apps",
                                  "waitress"])
def test_a_wsgi_server_with_the_worker_loses_nothing_and_keeps_its_handles(
        tmp_path, kind):
    (tmp_path / "crashapp.py").write_text(APP)
    env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_")}
    database = os.path.realpath(str(tmp_path / "a2a.sqlite3"))
    env.update(A2A_DATABASE=database, A2A_AUTH="off",
               PYTHONPATH=os.pathsep.join([str(tmp_path), REPO_DIR]),
               PYTHONUNBUFFERED="1")
    port = free_port()
    log_path = str(tmp_path / "server.log")
    server = _start(_commands(kind, port), str(tmp_path), env, log_path)
    worker = _start([sys.executable, "-m", "flask", "--app", "crashapp", "a2a",
                     "worker", "--threads", "8"], str(tmp_path), env,
                    str(tmp_path / "worker.log"))
    url = "http://127.0.0.1:%d" % port
    try:
        deadline = time.monotonic() + 30
        while True:
            assert server.poll() is None, open(log_path).read()
            try:
                requests.get(url + "/api/v1/health", timeout=2)
                break
            except requests.RequestException:
                assert time.monotonic() < deadline, open(log_path).read()
                time.sleep(0.1)
        handles = []
        for _ in range(ROUNDS):
            assert _round(url) == []
            handles.append(_database_handles(server.pid, database))
        crashed = _send(requests.Session(), url, "crash", "please")["result"]
        assert crashed["status"]["state"] == "failed"
        time.sleep(0.5)  # the log line is written after the answer
    finally:
        _stop(server)
        _stop(worker)
    with open(log_path, encoding="utf-8", errors="replace") as f:
        log = f.read()
    # Bounded, not one connection per call (or per finished greenlet).
    assert max(handles) <= MOST_HANDLES, handles
    # Our format, or the host's where it set up the root logger (waitress's
    # basicConfig: "INFO:a2a_flask.access:call ..."): the record either way.
    assert re.search(r"a2a_flask\.access: ?call agent=echo method=message/send",
                     log), log[-3000:]
    assert re.search(r"a2a_flask: ?agent 'crash' failed on task %s" % crashed["id"], log)
    assert "RuntimeError: agent-broke-here on 'please'" in log
    assert "Traceback (most recent call last)" in log
