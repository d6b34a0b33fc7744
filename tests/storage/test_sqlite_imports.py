"""No process of a SQLite deployment imports sqlite-utils, not even the one
that creates or migrates the file: the migrations run on the ``sqlite3``
connection itself. sqlite-utils imported numpy where it was installed (and
pluggy, dateutil): about 14 MB more in the process that migrated, for its
life (the first gunicorn worker to start after each upgrade)."""

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
print(sorted(name for name in ("sqlite_utils", "numpy", "pluggy") if name in sys.modules))
"""


def _serve(database):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", SERVE, str(database)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_neither_a_migration_nor_a_served_file_imports_sqlite_utils(tmp_path):
    database = tmp_path / "a2a.sqlite3"
    assert _serve(database) == "[]"  # a new file: created, migrated
    assert _serve(database) == "[]"  # up to date
