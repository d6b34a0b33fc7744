"""The background benchmarks' app (bench/background.py, bench/waiting.py):
the demo agents (``slow`` is a background agent) plus ``echo_bg``, the echo
work as a background agent, and an agent that waits as if on a model:
``wait`` (in the request) and ``wait_bg`` (background) sleep the seconds the
text names, then answer. Settings from A2A_* environment variables."""

import time

from flask import Flask

from a2a_flask import A2A, Reply, config_from_env
from a2a_flask.demo import echo, register_demo_agents


def wait(turn):
    """Waits the seconds its text names (a model's answer), then answers."""
    time.sleep(float(turn.text))
    return Reply("waited " + turn.text)


app = Flask(__name__)
app.config.update(config_from_env())
a2a = A2A(app)
register_demo_agents(a2a)
a2a.add_agent("echo_bg", echo, background=True)
a2a.add_agent("wait", wait)
a2a.add_agent("wait_bg", wait, background=True)
