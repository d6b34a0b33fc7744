"""The chaos run's app for the PostgreSQL crash row (bench/chaos_issue32.py):
the demo's service plus ``counted``, an agent that waits CHAOS_AGENT_SECONDS
(default 1) as if on a model and notes each run's messageId, one line
appended to CHAOS_RUNS_FILE, so the row can count runs per messageId."""

import os
import time

from flask import Flask

from a2a_flask import A2A, Reply, config_from_env
from a2a_flask.demo import register_demo_agents

RUNS = os.environ.get("CHAOS_RUNS_FILE")
SECONDS = float(os.environ.get("CHAOS_AGENT_SECONDS", "1"))


def counted(turn):
    if RUNS:
        # One write with O_APPEND: lines of concurrent runs never interleave.
        fd = os.open(RUNS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (turn.message["messageId"] + "\n").encode())
        finally:
            os.close(fd)
    time.sleep(SECONDS)
    return Reply("ran " + turn.message["messageId"])


app = Flask(__name__)
app.config.update(config_from_env())
a2a = A2A(app)
register_demo_agents(a2a)
a2a.add_agent("counted", counted)
