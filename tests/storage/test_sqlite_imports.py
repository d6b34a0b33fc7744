"""A process serving an up-to-date SQLite file does not import sqlite-utils:
only migrations use it, and with click it held ~16 MB in every process (the
gunicorn workers and the worker alike)."""

import os
import subprocess
import sys

SERVE = """
import sys
from flask import Flask
from a2a_flask import A2A
app = Flask("imports")
app.config["A2A_DATABASE"] = sys.argv[1]
A2A(app)
answer = app.test_client().get("/api/v1/health")
assert answer.status_code == 200, answer.get_data(as_text=True)
print("sqlite_utils" in sys.modules)
"""


def _serve(database):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", SERVE, str(database)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_only_a_migration_imports_sqlite_utils(tmp_path):
    database = tmp_path / "a2a.sqlite3"
    assert _serve(database) == "True"  # a new file: migrated
    assert _serve(database) == "False"  # up to date: never imported
