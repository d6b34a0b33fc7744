"""Where the records of ``a2a_flask`` go: to the host's handlers when it has
some (the root logger's, set up before or after ``init_app``; pytest's
``caplog``), else to stderr; each record once. gunicorn's case is in
tests/servers/test_server_logs.py."""

import logging
import os
import re
import subprocess
import sys
import time

import pytest
import requests
from flask import Flask

from a2a_flask import A2A
from a2a_flask.logs import log_to_stderr
from serving import REPO_DIR, VENV_BIN, free_port

TYPO = "Unknown setting A2A_AUTHENTICATON in app.config is ignored"
AUTH_OFF = "A2A_AUTH=off: every caller is one anonymous caller"
ACCESS = "a2a_flask.access: call agent=echo method=message/send"

SEND = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
    "message": {"role": "user", "messageId": "m-1",
                "parts": [{"kind": "text", "text": "hi"}]}}}

# A host app; ROOT says when it configures the root logger (to stdout, in a
# format of its own): "before" init_app, "after" it, or "never".
HOST = r"""
import logging, sys
from flask import Flask
from a2a_flask import A2A
from a2a_flask.demo import register_demo_agents

def host_logging():
    logging.basicConfig(stream=sys.stdout, level=logging.INFO,
                        format="HOST %(name)s: %(message)s")

if sys.argv[1] == "before":
    host_logging()
app = Flask("host")
app.config.update(A2A_DATABASE=sys.argv[2], A2A_AUTH="off",
                  A2A_AUTHENTICATON="off")
a2a = A2A(app)
register_demo_agents(a2a, slow_agent=False)
if sys.argv[1] == "after":
    host_logging()
answer = app.test_client().post("/api/v1/agents/echo/a2a", json=SEND_JSON)
assert answer.status_code == 200, answer.data
""".replace("SEND_JSON", repr(SEND))


def run_host(tmp_path, root):
    out = subprocess.run(
        [sys.executable, "-c", HOST, root, str(tmp_path / "a2a.sqlite3")],
        capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    return out.stdout, out.stderr


def count(text, needle):
    return sum(needle in line for line in text.splitlines())


def test_a_root_handler_set_up_after_init_app_gets_each_record_once(tmp_path):
    stdout, stderr = run_host(tmp_path, "after")
    # Logged before the host had a handler: stderr, the only place then.
    assert (count(stderr, TYPO), count(stderr, AUTH_OFF)) == (1, 1), stderr
    # Logged after: the host's handler, and nowhere else.
    assert count(stdout, "HOST a2a_flask.access: call agent=echo") == 1, stdout
    assert count(stderr, "call agent=echo") == 0, stderr


def test_a_root_handler_set_up_before_init_app_gets_each_record_once(tmp_path):
    stdout, stderr = run_host(tmp_path, "before")
    for needle in (TYPO, AUTH_OFF, "call agent=echo"):
        assert count(stdout, needle) == 1, (needle, stdout)
        assert all(line.startswith("HOST a2a_flask") for line in
                   stdout.splitlines() if needle in line), stdout
        assert count(stderr, needle) == 0, (needle, stderr)


def test_without_host_logging_records_go_to_stderr_once(tmp_path):
    stdout, stderr = run_host(tmp_path, "never")
    for needle in (TYPO, AUTH_OFF, ACCESS):
        assert count(stderr, needle) == 1, (needle, stderr)
    assert "call agent" not in stdout
    # In the plain format: time, pid, level, logger (not logging's bare
    # last-resort line), the typo's warning too, though it comes first.
    [typo] = [line for line in stderr.splitlines() if TYPO in line]
    assert re.match(r"\[[-0-9: +]+\] \[\d+\] \[WARNING\] a2a_flask: ", typo), typo


def test_flask_run_shows_each_record_once(tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_")}
    env.update(A2A_DATABASE=str(tmp_path / "a2a.sqlite3"), A2A_AUTH="off",
               A2A_AUTHENTICATON="off", FLASK_APP="wsgi", PYTHONUNBUFFERED="1")
    log_path = tmp_path / "flask.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [os.path.join(VENV_BIN, "flask"), "run", "--port", str(port)],
            cwd=REPO_DIR, env=env, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
    try:
        url = "http://127.0.0.1:%d/api/v1/agents/echo/a2a" % port
        deadline = time.monotonic() + 20
        while True:
            try:
                answer = requests.post(url, json=SEND, timeout=10)
                break
            except requests.ConnectionError:
                assert process.poll() is None and time.monotonic() < deadline, (
                    log_path.read_text())
                time.sleep(0.1)
        assert answer.status_code == 200
        deadline = time.monotonic() + 5
        while ACCESS not in log_path.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        os.killpg(process.pid, 15)
        process.wait(10)
    text = log_path.read_text()
    for needle in (TYPO, AUTH_OFF, ACCESS):
        assert count(text, needle) == 1, (needle, text)


@pytest.fixture
def fresh_logger():
    """The ``a2a_flask`` logger as a process starts it, restored after."""
    logger = logging.getLogger("a2a_flask")
    saved = logger.handlers[:], logger.level, logger.propagate
    logger.handlers[:] = []
    logger.setLevel(logging.NOTSET)
    yield logger
    logger.handlers[:], level, logger.propagate = saved
    logger.setLevel(level)


def test_caplog_sees_records_after_a_stderr_handler_was_set_up(
        fresh_logger, tmp_path, caplog):
    # What a first app (or `flask a2a worker`) does where no handler exists.
    log_to_stderr("plain")
    app = Flask("later", instance_path=str(tmp_path / "instance"))
    app.config.update(A2A_DATABASE=str(tmp_path / "a2a.sqlite3"),
                      A2A_AUTH="off", A2A_AUTHENTICATON="off")
    with caplog.at_level(logging.WARNING, logger="a2a_flask"):
        A2A(app)
    assert [r.getMessage() for r in caplog.records
            if "A2A_AUTHENTICATON" in r.getMessage()] == [
        TYPO + ". Did you mean A2A_AUTH?"]
    assert fresh_logger.propagate is True
