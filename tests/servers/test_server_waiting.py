"""The shipped configuration serves agents that wait: ``gunicorn wsgi:app``
with the shipped ``gunicorn.conf.py`` and the worker as deploy/ runs it.
Blocking sends wait for their turn however long (more callers at once than
workers, longer than gunicorn's timeout), and deploy/ lets such a call wait
10 minutes end to end with room for 1,000 callers."""

import os
import re
import runpy
import subprocess
import threading

import requests

from helpers import message
from serving import REPO_DIR, VENV_BIN, WorkerProcess, _RUNNING
from test_server_ops import ShippedGunicorn

DEPLOY = os.path.join(REPO_DIR, "deploy")


def _read(name):
    with open(os.path.join(DEPLOY, name), encoding="utf-8") as f:
        return f.read()


def test_deploy_lets_a_blocking_call_wait_ten_minutes_for_a_thousand_callers():
    conf = runpy.run_path(os.path.join(REPO_DIR, "gunicorn.conf.py"))
    # gthread: a waiting call holds a thread, and timeout is the worker's
    # heartbeat, not a limit on a call (sync workers are killed after it).
    assert conf["worker_class"] == "gthread"
    assert conf["workers"] * conf["threads"] >= 1000
    assert conf["worker_connections"] > conf["threads"]
    read_timeout = re.search(r"proxy_read_timeout (\d+)(m|s);",
                             _read("nginx-a2a-proxy.conf"))
    assert int(read_timeout.group(1)) * {"m": 60, "s": 1}[read_timeout.group(2)] >= 600
    worker = _read("a2a-worker.service")
    assert int(re.search(r"a2a worker --threads (\d+)", worker).group(1)) >= 1000
    for unit in ("a2a.service", "a2a-worker.service"):
        assert int(re.search(r"^LimitNOFILE=(\d+)$", _read(unit), re.M).group(1)) >= 4096


class _Shipped(ShippedGunicorn):
    """The shipped conf, with gunicorn's timeout cut to 2 s on the command
    line: a call that outlives it must not be cut."""

    def __init__(self, tmp_path):
        super().__init__(REPO_DIR, "wsgi:app", tmp_path / "a2a.sqlite3")
        self.command[-2:-2] = ["--timeout", "2"]
        self.directory = str(tmp_path)

    def rpc_send(self, text):
        return requests.post(self.url + "/api/v1/agents/slow/a2a", json={
            "jsonrpc": "2.0", "id": 1, "method": "message/send",
            "params": {"message": message(text)}}, timeout=60).json()


class _Worker(WorkerProcess):
    def __init__(self, server, *args):
        self.server, self.args, self.env = server, list(args), {}
        self.log_path = os.path.join(server.directory, "worker.log")
        self.process = None

    def start(self):
        env = dict(self.server.env)
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [os.path.join(VENV_BIN, "flask"), "--app", "wsgi", "a2a", "worker"]
                + self.args, cwd=REPO_DIR, env=env, stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        _RUNNING.add(self.process.pid)
        return self


def _deploy_worker_args():
    line = re.search(r"a2a worker (.*)$", _read("a2a-worker.service"), re.M)
    return line.group(1).split()


def test_blocking_sends_outlive_gunicorns_timeout_and_outnumber_its_workers(tmp_path):
    with _Shipped(tmp_path) as server:
        worker = _Worker(server, *_deploy_worker_args()).start()
        try:
            answers = [None] * 8  # more callers than the 2 worker processes

            def call(i):
                answers[i] = server.rpc_send("%d" % 4)

            threads = [threading.Thread(target=call, args=(i,)) for i in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(90)
        finally:
            worker.stop()
        log = server.log()
    assert [a["result"]["status"]["state"] for a in answers] == ["completed"] * 8, answers
    assert [a["result"]["status"]["message"]["parts"][0]["text"] for a in answers] == [
        "done after 4 s"] * 8
    assert "WORKER TIMEOUT" not in log
