"""Real gunicorn processes for the server tests (tests/test_server_*.py).

``GunicornServer`` runs ``gunicorn APP`` on 127.0.0.1, on a free port, with N
workers, an SQLite file of its own (``A2A_DATABASE``), stdout and stderr in a
log file; ``start`` waits (bounded) until the port answers HTTP, ``stop``
always ends the whole process group. ``rpc()`` gives a ``helpers.Rpc`` that
speaks HTTP to it, so every answer is checked against the A2A JSON schema.

Authentication: ``DEFAULT_AUTH`` says how the servers are started. ``"off"``
runs them with ``A2A_AUTH=off``; ``"key"`` creates an API key with
``FLASK_APP=wsgi flask a2a keys create --quiet`` on the server's database before
it starts, and sends ``Authorization: Bearer <key>`` with every request (to
switch: ``DEFAULT_AUTH = "key"``). Extra env and default request headers can
be given per server too.
"""

import atexit
import os
import re
import signal
import socket
import subprocess
import sys
import time

import requests

from helpers import Rpc

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(TESTS_DIR)
VENV_BIN = os.path.dirname(sys.executable)

#: How servers authenticate callers: "off" (A2A_AUTH=off) or "key" (API key);
#: A2A_TEST_SERVER_AUTH=key in the environment of pytest tries keys now.
DEFAULT_AUTH = os.environ.get("A2A_TEST_SERVER_AUTH", "off")

#: ``app`` spec -> the directory gunicorn runs in (so that the module imports).
APPS = {
    "wsgi:app": REPO_DIR,             # the demo: agents echo and chat
    "server_app:app": TESTS_DIR,      # demo agents + crash, slow
    "client_app:app": TESTS_DIR,      # demo agents + counted, OAuth tokens
    "hostapp:app": os.path.join(TESTS_DIR, "host"),  # a host app (tests/host)
}

START_TIMEOUT = 20.0
STOP_TIMEOUT = 8.0
REQUEST_TIMEOUT = 30.0

_RUNNING = set()  # process groups still up: killed at exit whatever happened


@atexit.register
def _kill_leftovers():
    for pgid in list(_RUNNING):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _gunicorn_has_control_socket():
    try:
        import gunicorn.config
    except ImportError:  # pragma: no cover
        return False
    return hasattr(gunicorn.config, "ControlSocketDisable")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def flask_cli(database, *args, env=None):
    """``FLASK_APP=wsgi flask ARGS`` on ``database``; its standard output.
    FLASK_APP, not ``--app``: Flask before 2.2 has no ``--app``."""
    run_env = dict(os.environ, **(env or {}), A2A_DATABASE=database,
                   FLASK_APP="wsgi")
    run_env.pop("A2A_AUTH", None)
    out = subprocess.run(
        [os.path.join(VENV_BIN, "flask")] + list(args),
        cwd=REPO_DIR, env=run_env, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, (args, out.stdout, out.stderr)
    return out.stdout


def create_api_key(database, *options, env=None):
    """A new API key on ``database``, from the command line (prints only it)."""
    key = flask_cli(database, "a2a", "keys", "create", "--quiet", *options,
                    env=env).strip()
    assert key and "\n" not in key, key
    return key


KEY = re.compile(r"a2a_[A-Za-z0-9_-]{43}")
KEY_ID = re.compile(r"\bkey_[0-9a-f]+\b")


def flask_a2a(database, *args, input="", env=None):
    """Run ``FLASK_APP=wsgi flask a2a ARGS`` (Flask before 2.2 has no
    ``--app``); a session of its own, so a password prompt reads standard
    input, not the terminal."""
    run_env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_")}
    run_env.update(env or {})
    run_env.update(A2A_DATABASE=str(database), FLASK_APP="wsgi")
    return subprocess.run([os.path.join(VENV_BIN, "flask"), "a2a", *args], cwd=REPO_DIR,
                          env=run_env, input=input, capture_output=True, text=True,
                          timeout=30, start_new_session=True)


def created_key(result):
    """(key id, key) from the output of ``keys create`` (not --quiet)."""
    assert result.returncode == 0, result.stderr
    keys = [line for line in result.stdout.splitlines() if KEY.fullmatch(line)]
    assert len(keys) == 1, result.stdout  # the key, on a line of its own
    assert len(KEY.findall(result.stdout + result.stderr)) == 1
    assert "shown once" in (result.stdout + result.stderr).lower()
    ids = KEY_ID.findall(result.stdout)
    assert len(set(ids)) == 1, result.stdout
    return ids[0], keys[0]


def assert_fails(result, *words):
    """A non-zero exit with one clear line, naming ``words``."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stdout + result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]



class _Response:
    """A requests response seen through the Flask test-client API Rpc uses."""

    def __init__(self, response):
        self.raw = response
        self.status_code = response.status_code
        self.headers = response.headers
        self.data = response.content
        self.mimetype = response.headers.get("Content-Type", "").split(";")[0].strip()

    def get_json(self):
        return self.raw.json()


class HttpClient:
    """Enough of Flask's test client for ``helpers.Rpc``, over real HTTP."""

    def __init__(self, base_url, headers=None, timeout=REQUEST_TIMEOUT):
        self.base_url = base_url
        self.session = requests.Session()
        self.session.headers.update(headers or {})
        self.timeout = timeout

    def post(self, path, headers=None, json=None, data=None):
        return _Response(self.session.post(
            self.base_url + path, headers=headers, json=json, data=data,
            timeout=self.timeout))

    def get(self, path, headers=None):
        return _Response(self.session.get(self.base_url + path, headers=headers,
                                          timeout=self.timeout))


class GunicornServer:
    def __init__(self, directory, app="server_app:app", workers=1,
                 database=None, env=None, headers=None, auth=None,
                 gunicorn_args=()):
        if app not in APPS:
            raise ValueError("unknown app %r: one of %s" % (app, sorted(APPS)))
        self.directory = str(directory)
        os.makedirs(self.directory, exist_ok=True)
        self.app = app
        self.workers = workers
        self.database = database or os.path.join(self.directory, "a2a.sqlite3")
        self.auth = auth or DEFAULT_AUTH
        self.env = dict(env or {})
        self.headers = dict(headers or {})
        self.gunicorn_args = list(gunicorn_args)
        self.log_path = os.path.join(self.directory, "server.log")
        self.process = None
        self.port = None
        self.starts = 0

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    # -- lifecycle -------------------------------------------------------

    def _environ(self):
        env = dict(os.environ)
        for key in [k for k in env if k.startswith("A2A_")]:
            del env[key]
        env["A2A_DATABASE"] = self.database
        if self.auth == "off":
            env["A2A_AUTH"] = "off"
        env["PYTHONUNBUFFERED"] = "1"
        env.update(self.env)
        return env

    def _command(self, port):
        cmd = [os.path.join(VENV_BIN, "gunicorn"), "--bind", "127.0.0.1:%d" % port,
               "--workers", str(self.workers), "--chdir", APPS[self.app],
               "--graceful-timeout", "3", "--timeout", "60",
               "--access-logfile", "-",
               "--access-logformat", "ACCESS %(m)s %(U)s %(s)s"]
        if _gunicorn_has_control_socket():
            cmd.append("--no-control-socket")
        return cmd + self.gunicorn_args + [self.app]

    def start(self):
        """Start gunicorn; return once it answers HTTP (or raise, with its log)."""
        assert self.process is None, "already running"
        if self.auth == "key" and "Authorization" not in self.headers:
            self.headers["Authorization"] = "Bearer " + create_api_key(
                self.database, env=self.env)
        for _ in range(3):  # another process may take the free port first
            port = free_port()
            mark = self.log_mark() if os.path.exists(self.log_path) else 0
            with open(self.log_path, "ab") as log:
                log.write(b"=== start %d on port %d ===\n" % (self.starts, port))
                log.flush()
                self.process = subprocess.Popen(
                    self._command(port), cwd=APPS[self.app], env=self._environ(),
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True)
            _RUNNING.add(self.process.pid)
            self.port = port
            self.starts += 1
            if self._wait_ready():
                return self
            in_use = "Address already in use" in self.log_since(mark)
            self.stop()
            if not in_use:
                break
        raise RuntimeError("gunicorn did not start; its log:\n" + self.log())

    def _wait_ready(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                requests.get(self.url + "/.well-known/agent-card.json", timeout=2)
                return True  # any HTTP answer: a worker is serving
            except requests.RequestException:
                time.sleep(0.05)
        return False

    def stop(self, sig=signal.SIGTERM):
        """End the process group: ``sig`` first, SIGKILL if it lingers."""
        process, self.process = self.process, None
        if process is None:
            return
        pgid = process.pid  # start_new_session: the group is the master's pid
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            pass
        # Whatever is left of the group (workers, a master that lingers).
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(STOP_TIMEOUT)
        _RUNNING.discard(pgid)

    def restart(self, sig=signal.SIGTERM):
        self.stop(sig)
        return self.start()

    # -- talking to it and reading its log ------------------------------------

    def client(self, headers=None, anonymous=False):
        """An HTTP client sending the default headers (none if ``anonymous``)."""
        defaults = {} if anonymous else self.headers
        return HttpClient(self.url, {**defaults, **(headers or {})})

    def rpc(self, agent="echo", headers=None, anonymous=False):
        """A schema-checking ``Rpc`` on this server (one per thread)."""
        return Rpc(self.client(headers, anonymous), agent=agent)

    def log(self):
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def log_mark(self):
        """Where the log ends now; ``log_since(mark)`` reads what came after."""
        return os.path.getsize(self.log_path)

    def log_since(self, mark):
        with open(self.log_path, "rb") as f:
            f.seek(mark)
            return f.read().decode("utf-8", errors="replace")

    def access_statuses(self, text=None):
        """HTTP statuses of the access log lines (``ACCESS METHOD PATH STATUS``)."""
        text = self.log() if text is None else text
        return [int(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                if line.startswith("ACCESS ")]

    def wait_log(self, needle, mark=0, timeout=5.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.log_since(mark):
                return True
            time.sleep(0.05)
        return False


def assert_clean_log(text):
    """No traceback, no SQLite lock error, no 5xx in a server log."""
    for bad in ("Traceback", "database is locked", "Worker failed to boot",
                "WORKER TIMEOUT", "Error handling request"):
        assert bad not in text, "%r in the server log:\n%s" % (bad, text[-5000:])
    errors_5xx = [line for line in text.splitlines()
                  if line.startswith("ACCESS ") and line.rsplit(" ", 1)[1][0] == "5"]
    assert not errors_5xx, errors_5xx[:10]


class WorkerProcess:
    """``FLASK_APP=APP flask a2a worker ARGS`` beside a ``GunicornServer``, on its
    database and settings, in a process group of its own; its log in
    ``worker-N.log`` of the server's folder."""

    _count = 0

    def __init__(self, server, *args, env=None):
        WorkerProcess._count += 1
        self.server = server
        self.args = list(args)
        self.env = dict(env or {})
        self.log_path = os.path.join(server.directory,
                                     "worker-%d.log" % WorkerProcess._count)
        self.process = None

    def start(self):
        env = dict(self.server._environ(), **self.env)
        env["FLASK_APP"] = self.server.app.split(":")[0]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [os.path.join(VENV_BIN, "flask"), "a2a", "worker"] + self.args, cwd=APPS[self.server.app], env=env,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        _RUNNING.add(self.process.pid)
        deadline = time.monotonic() + START_TIMEOUT
        while "running agents" not in self.log():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the worker did not start:\n" + self.log())
            time.sleep(0.05)
        return self

    def stop(self, sig=signal.SIGTERM, timeout=STOP_TIMEOUT):
        """``sig`` to the worker's group; SIGKILL if it lingers. Its exit code."""
        process, self.process = self.process, None
        if process is None:
            return None
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            code = process.wait(timeout)
        _RUNNING.discard(process.pid)
        return code

    def log(self):
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()
