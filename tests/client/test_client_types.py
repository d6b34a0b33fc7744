"""The package ships py.typed: an app checked with ``mypy --strict`` can use
the public API (the package's exports, the client, the test client) with no
error of the package's making, re-exports included."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("mypy")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

USER_APP = '''
from flask import Flask

from a2a_flask import A2A, Reply, Turn
from a2a_flask.client import Client, Task, TaskNotFoundError, WaitTimeout
from a2a_flask.testing import A2AClient, make_key

app = Flask(__name__)
a2a = A2A(app)


@a2a.agent("echo")
def echo(turn: Turn) -> Reply:
    return Reply(turn.text)


def state_of(url: str, task_id: str) -> str:
    with Client(url, key="k") as agent:
        try:
            task: Task = agent.get(task_id)
        except (TaskNotFoundError, WaitTimeout):
            return "gone"
        return task.state


client = A2AClient(app, key=make_key(app), agent="echo")
print(client.send("x")["status"]["state"])
'''

CONFIG = '''[mypy]
python_version = 3.8
strict = True
[mypy-a2a_flask.*]
ignore_errors = True
[mypy-click.*,opentelemetry.*]
follow_imports = skip
'''


def test_an_app_using_the_public_api_passes_mypy_strict(tmp_path):
    (tmp_path / "user_app.py").write_text(USER_APP)
    (tmp_path / "mypy.ini").write_text(CONFIG)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini",
         "--cache-dir", str(tmp_path / "cache"), "user_app.py"],
        cwd=str(tmp_path), env=dict(os.environ, MYPYPATH=ROOT),
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("Success: no issues found in 1 source file"), done.stdout
