"""The background benchmark's app (bench/background.py): the demo agents
(``slow`` is a background agent) plus ``echo_bg``, the echo work as a
background agent. Settings from A2A_* environment variables."""

from flask import Flask

from a2a_flask import A2A, config_from_env
from a2a_flask.demo import echo, register_demo_agents

app = Flask(__name__)
app.config.update(config_from_env())
a2a = A2A(app)
register_demo_agents(a2a)
a2a.add_agent("echo_bg", echo, background=True)
