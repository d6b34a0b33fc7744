"""The service as an operator runs it: ``gunicorn wsgi:app`` reading the
shipped ``gunicorn.conf.py`` (only ``--bind``, ``--workers`` and
``--error-logfile`` on the command line), and an online backup under load."""

import json
import os
import shutil
import signal
import subprocess
import threading
import time

import pytest
import requests

from helpers import message
from serving import REPO_DIR, VENV_BIN, _RUNNING, flask_a2a, free_port

CRASH_APP = '''
from wsgi import app, a2a  # the demo, as shipped


def crash(turn):
    raise RuntimeError("agent-broke-here on %r" % turn.text)


a2a.add_agent("crash", crash)
'''


class ShippedGunicorn:
    """``gunicorn APP`` in ``folder``, where the shipped conf is picked up."""

    def __init__(self, folder, app, database, env=None):
        self.folder = str(folder)
        self.error_log = os.path.join(str(database) + ".error.log")
        self.port = free_port()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_")}
        self.env.update(env or {}, A2A_DATABASE=str(database), A2A_AUTH="off")
        self.command = [os.path.join(VENV_BIN, "gunicorn"), app,
                        "--bind", "127.0.0.1:%d" % self.port, "--workers", "2",
                        "--error-logfile", self.error_log]
        self.process = None

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self):
        self.process = subprocess.Popen(
            self.command, cwd=self.folder, env=self.env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        _RUNNING.add(self.process.pid)

    def __enter__(self):
        self.start()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log()
            try:
                requests.get(self.url + "/api/v1/health", timeout=2)
                return self
            except requests.RequestException:
                time.sleep(0.05)
        raise AssertionError("gunicorn did not answer:\n" + self.log())

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        """SIGTERM to gunicorn and its workers, as systemd stops it; a
        failure if they still run 10 s later (graceful_timeout is 30 s)."""
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            raise AssertionError("gunicorn still runs 10 s after SIGTERM:\n"
                                 + self.log()) from None
        finally:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _RUNNING.discard(self.process.pid)

    def send(self, agent, text):
        return requests.post(self.url + "/api/v1/agents/%s/a2a" % agent, json={
            "jsonrpc": "2.0", "id": 1, "method": "message/send",
            "params": {"message": message(text)}}, timeout=30).json()["result"]

    def log(self):
        if not os.path.exists(self.error_log):
            return ""
        with open(self.error_log, encoding="utf-8") as f:
            return f.read()

    def wait_log(self, *needles):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            text = self.log()
            if all(needle in text for needle in needles):
                return text
            time.sleep(0.05)
        raise AssertionError("%r not in the error log:\n%s" % (needles, self.log()))


def test_repo_folder_logs_calls_to_the_error_log_and_opens_no_control_socket(
        tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with ShippedGunicorn(REPO_DIR, "wsgi:app", tmp_path / "a2a.sqlite3",
                         env={"XDG_RUNTIME_DIR": str(run_dir)}) as server:
        task = server.send("echo", "hello")
        text = server.wait_log("a2a_flask.access: call agent=echo")
        assert os.listdir(str(run_dir)) == []  # no gunicorn.ctl
    [line] = [line for line in text.splitlines() if "a2a_flask.access" in line]
    assert "] [INFO] a2a_flask.access: call agent=echo method=message/send task=%s" \
        " context=%s caller=anonymous outcome=completed ms=" % (
            task["id"], task["contextId"]) in line


@pytest.mark.parametrize("log_format", ["plain", "json"])
def test_agent_traceback_and_access_record_reach_the_error_log(tmp_path,
                                                               log_format):
    project = tmp_path / "project"  # a project with the shipped conf beside it
    project.mkdir()
    shutil.copy(os.path.join(REPO_DIR, "gunicorn.conf.py"), str(project))
    (project / "crashapp.py").write_text(CRASH_APP)
    env = {"A2A_LOG_FORMAT": log_format, "PYTHONPATH": REPO_DIR}
    with ShippedGunicorn(project, "crashapp:app", tmp_path / "a2a.sqlite3",
                         env=env) as server:
        task = server.send("crash", "please")
        assert task["status"]["state"] == "failed"
        text = server.wait_log("agent-broke-here", "a2a_flask.access")
    if log_format == "plain":
        assert "[ERROR] a2a_flask: agent 'crash' failed on task %s" % task["id"] in text
        assert "Traceback (most recent call last)" in text
        assert "RuntimeError: agent-broke-here on 'please'" in text
        assert "caller=anonymous outcome=failed ms=" in text
        return
    # json: every line of the file is one JSON object, gunicorn's own included
    # (but the very first, written before the conf's hook runs).
    entries = [json.loads(line) for line in text.splitlines()[1:]]
    [failure] = [e for e in entries if e["logger"] == "a2a_flask"
                 and e["level"] == "ERROR"]
    assert failure["message"] == "agent 'crash' failed on task %s" % task["id"]
    assert "RuntimeError: agent-broke-here on 'please'" in failure["traceback"]
    [access] = [e for e in entries if e["logger"] == "a2a_flask.access"]
    assert (access["agent"], access["method"], access["taskId"], access["state"],
            access["caller"]) == ("crash", "message/send", task["id"], "failed",
                                  "anonymous")
    assert any(e["logger"] == "gunicorn.error" for e in entries)


GC_APP = '''
import gc

#: Frozen before the worker built anything: what it inherited from the master.
AT_IMPORT = gc.get_freeze_count()

from wsgi import app  # noqa: E402  the demo, as shipped


@app.get("/gc")
def collections():
    with open("/proc/self/smaps_rollup") as f:
        kb = {line.split(":")[0]: int(line.split()[1]) for line in f
              if line.split(":")[0] in ("Shared_Dirty", "Private_Dirty")}
    return {"frozen": gc.get_freeze_count(), "tracked": len(gc.get_objects()),
            "at_import": AT_IMPORT, "kb": kb}
'''


@pytest.fixture(scope="module")
def gc_counts(tmp_path_factory):
    """What GC_APP's /gc tells of a worker of the shipped conf, after a send
    (one server for the two tests that read it)."""
    tmp_path = tmp_path_factory.mktemp("gc")
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(os.path.join(REPO_DIR, "gunicorn.conf.py"), str(project))
    (project / "gcapp.py").write_text(GC_APP)
    with ShippedGunicorn(project, "gcapp:app", tmp_path / "a2a.sqlite3",
                         env={"PYTHONPATH": REPO_DIR}) as server:
        assert server.send("echo", "hello")["status"]["state"] == "completed"
        return requests.get(server.url + "/gc", timeout=10).json()


def test_a_worker_leaves_what_it_built_at_boot_out_of_collections(gc_counts):
    # A full collection walked every object of the app while every call of
    # the worker waited (20-43 ms a time under load, docs/benchmarks.md).
    counts = gc_counts
    # Flask, the package and the app: tens of thousands of objects, frozen;
    # what calls made since is a small part of it.
    assert counts["frozen"] > 20000, counts
    assert counts["tracked"] < counts["frozen"] / 2, counts


def test_a_worker_shares_what_the_master_imported(gc_counts):
    # The master imports Flask and the package before it forks. A worker's
    # first collection (post_worker_init) wrote to every object it walked,
    # copying the pages it shared with the master: about 7 MB more private
    # memory a worker (docs/benchmarks.md, "The master's imports"). Frozen
    # in the master, they stay out of it.
    counts = gc_counts
    assert counts["at_import"] > 20000, counts
    # Written pages still shared with the master, against those the worker
    # has alone: about 1 to 1 with the freeze, 1 to 3-5 without.
    kb = counts["kb"]
    assert kb["Shared_Dirty"] > 0.6 * kb["Private_Dirty"], counts


# The shipped conf, and a worker slow to reach gunicorn's own signal handlers.
SLOW_FORK_CONF = """
import time

exec(compile(open(%(shipped)r).read(), %(shipped)r, "exec"))


def post_fork(server, worker):
    open(%(forked)r, "a").close()
    time.sleep(2)
"""


def test_a_worker_told_to_stop_while_it_boots_stops_once_booted(tmp_path):
    # A SIGTERM that reaches a worker between its fork and gunicorn's own
    # handlers ran the master's and was lost: the worker served on until the
    # master killed it, graceful_timeout (30 s) later. It happened when the
    # master started its last worker late under load; post_fork widens that
    # moment here.
    project = tmp_path / "project"
    project.mkdir()
    forked = tmp_path / "forked"
    (project / "gunicorn.conf.py").write_text(SLOW_FORK_CONF % {
        "shipped": os.path.join(REPO_DIR, "gunicorn.conf.py"),
        "forked": str(forked)})
    server = ShippedGunicorn(project, "wsgi:app", tmp_path / "a2a.sqlite3",
                             env={"PYTHONPATH": REPO_DIR})
    server.start()
    deadline = time.monotonic() + 20
    while not forked.exists():
        assert server.process.poll() is None and time.monotonic() < deadline, \
            server.log()
        time.sleep(0.01)
    server.stop()
    text = server.log()
    assert "SIGKILL" not in text
    assert text.count("Worker exiting") == 2, text
    assert "Shutting down: Master" in text


def test_backup_under_write_load_opens_and_checks(tmp_path):
    database = tmp_path / "a2a.sqlite3"
    with ShippedGunicorn(REPO_DIR, "wsgi:app", database) as server:
        stop = threading.Event()
        sent = []

        def write():
            deadline = time.monotonic() + 20  # bounded whatever happens
            while not stop.is_set() and time.monotonic() < deadline:
                sent.append(server.send("echo", "load %d" % len(sent))["id"])

        writers = [threading.Thread(target=write) for _ in range(2)]
        for thread in writers:
            thread.start()
        try:
            while len(sent) < 20:
                time.sleep(0.01)
            backups = []
            for number in range(3):
                path = tmp_path / ("backup%d.sqlite3" % number)
                result = flask_a2a(database, "db", "backup", str(path))
                assert result.returncode == 0, result.stderr
                backups.append(path)
        finally:
            stop.set()
            for thread in writers:
                thread.join(30)
        assert len(sent) > 20
    counts = []
    for path in backups:
        assert not os.path.exists(str(path) + "-wal")
        checked = flask_a2a(path, "db", "check")
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "Integrity: ok" in checked.stdout
        listed = flask_a2a(path, "tasks", "list", "--limit", "100000", "--json")
        tasks = json.loads(listed.stdout)
        # A turn under way when the copy was taken is in it as working.
        assert tasks and {t["state"] for t in tasks} <= {"completed", "working"}
        counts.append(len(tasks))
    assert counts == sorted(counts) and counts[-1] <= len(sent)


def test_metrics_add_up_across_workers(tmp_path):
    pytest.importorskip("prometheus_client")
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    (metrics_dir / "counter_99999.db").write_bytes(b"left from a previous run")
    env = {"A2A_METRICS": "1", "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir)}
    with ShippedGunicorn(REPO_DIR, "wsgi:app", tmp_path / "a2a.sqlite3",
                         env=env) as server:
        for number in range(6):
            server.send("echo", "count %d" % number)
        for _ in range(4):  # whichever worker answers, the same sums
            response = requests.get(server.url + "/api/v1/metrics", timeout=10)
            assert response.status_code == 200
            text = response.text
            assert 'a2a_calls_total{code="ok",method="message/send"} 6.0' in text
            assert 'a2a_turn_seconds_count{agent="echo"} 6.0' in text
            assert 'a2a_tasks{state="completed"} 6.0' in text
        files = os.listdir(str(metrics_dir))
    assert files and "counter_99999.db" not in files  # emptied at start
