"""Server processes of the benchmark: start, wait for, stop; and the API key for US.

Every server runs in its own process group (``start_new_session``), logs to a
file in the run's temporary folder, and is killed with its group on
``stop()``; ``stop_all()`` (the run's ``finally``) stops whatever is left.
"""

import http.client
import os
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PY = sys.executable
HOST = "127.0.0.1"


def log(*a):
    print(*a, flush=True)

_RUNNING = []


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


_GUNICORN_FLAGS = None
#: Every gunicorn row (CEILING, DURABLE CEILING, US) runs with the project's
#: gunicorn.conf.py (worker class, keep-alive, max_requests...), so that they
#: differ only by the app; ``--gunicorn-args`` (run.py) adds flags to all.
GUNICORN_CONF = os.path.join(ROOT, "gunicorn.conf.py")
GUNICORN_EXTRA = []


def gunicorn_cmd(workers, port, app, chdir=None, extra=()):
    global _GUNICORN_FLAGS
    if _GUNICORN_FLAGS is None:
        helptext = subprocess.run([PY, "-m", "gunicorn", "--help"], capture_output=True,
                                  text=True, timeout=60).stdout
        # gunicorn >= 25 opens a control socket at a fixed path by default:
        # turn it off so that servers never share one.
        _GUNICORN_FLAGS = ["--no-control-socket"] if "--no-control-socket" in helptext else []
    cmd = [PY, "-m", "gunicorn", "-c", GUNICORN_CONF, "-w", str(workers), "-b", f"{HOST}:{port}"] \
        + _GUNICORN_FLAGS + GUNICORN_EXTRA + list(extra)
    if chdir:
        cmd += ["--chdir", chdir]
    return cmd + [app]


class Server:
    """One server under test: ``db`` is its SQLite file or PostgreSQL URL (or
    None), ``proto`` the A2A JSON-RPC binding it speaks ("0.3" or "1.0")."""

    def __init__(self, name, cmd, env, cwd, port, path, headers, logdir, db=None, proto="0.3"):
        self.name, self.cmd, self.cwd, self.port, self.path = name, cmd, cwd, port, path
        self.env = dict(os.environ, **env)
        # The package of this tree, also for a server started in bench/servers
        # (FLOOR, the waiting rows' app and worker): not whichever copy the
        # venv has installed (an editable install of another checkout).
        self.env["PYTHONPATH"] = os.pathsep.join(
            [ROOT] + [p for p in self.env.get("PYTHONPATH", "").split(os.pathsep) if p])
        self.headers = headers
        self.db = db
        self.proto = proto
        self.cpu_parent = None  # a process whose children's CPU is the server's too (PostgreSQL)
        self.logfile = os.path.join(logdir, f"{name}-{port}.log")
        self.proc = None
        self.note = ""

    def start(self, timeout=60.0):
        self._log = open(self.logfile, "wb")
        self.proc = subprocess.Popen(self.cmd, cwd=self.cwd, env=self.env, stdout=self._log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        _RUNNING.append(self)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                c = http.client.HTTPConnection(HOST, self.port, timeout=2)
                c.request("GET", "/")
                c.getresponse().read()
                c.close()
                return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"{self.name} did not answer on port {self.port} within {timeout}s:\n{self.tail()}")

    def tail(self, n=25):
        try:
            with open(self.logfile, "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode(errors="replace")
        except OSError:
            return ""

    def _signal_group(self, sig, wait):
        """Send ``sig`` to the server's process group, then wait for the
        master up to ``wait`` seconds."""
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            pass

    def stop(self):
        if self.proc is None:
            return
        self._signal_group(signal.SIGTERM, wait=15)
        # The group again: workers that outlived their master.
        self._signal_group(signal.SIGKILL, wait=5)
        self._log.close()
        if self in _RUNNING:
            _RUNNING.remove(self)
        self.proc = None


def stop_all():
    for s in list(_RUNNING):
        s.stop()


def cpu_busy(seconds=1.0):
    """Share of all CPUs busy over ``seconds`` (Linux /proc/stat), or None."""
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]
    try:
        t0, i0 = sample()
        time.sleep(seconds)
        t1, i1 = sample()
        return 1 - (i1 - i0) / max(1, t1 - t0)
    except (OSError, ValueError, IndexError):
        return None


def on_signal(signum, frame):
    raise SystemExit(f"stopped by signal {signum}")


class Auth:
    """Whether a2a_flask's ``a2a keys create`` CLI exists (then auth is on)."""

    def __init__(self, tmp):
        probe = os.path.join(tmp, "auth-probe.sqlite3")
        self.on = self.create_key(probe, check=False) is not None
        self.mode = "on (Bearer key from `flask a2a keys create`)" if self.on else \
            "off (A2A_AUTH=off: `flask a2a keys create` not available)"

    @staticmethod
    def create_key(db, check=True):
        env = dict(os.environ, A2A_DATABASE=db)
        env.pop("A2A_AUTH", None)
        r = subprocess.run([PY, "-m", "flask", "--app", "wsgi", "a2a", "keys", "create",
                            "--agents", "*", "--quiet"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
        lines = [ln.strip() for ln in r.stdout.splitlines() if ln.strip()]
        if r.returncode == 0 and lines:
            return lines[-1]
        if check:
            raise RuntimeError(f"`flask a2a keys create` failed ({r.returncode}): {r.stderr[-2000:]}")
        return None

    def server_env(self, db, key=None):
        """(env, headers) for a US server on ``db``; creates a key there if needed."""
        env = {"A2A_DATABASE": db}
        if not self.on:
            env["A2A_AUTH"] = "off"
            return env, {}
        key = key or self.create_key(db)
        return env, {"Authorization": "Bearer " + key}
