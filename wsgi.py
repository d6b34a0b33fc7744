"""The demo service: ``gunicorn wsgi:app``. Every A2A_* environment variable
becomes a setting (docs/reference/settings.md); the demo's default agent is ``chat``."""

from flask import Flask

from a2a_flask import A2A, config_from_env
from a2a_flask.demo import add_index, register_demo_agents

app = Flask(__name__)
app.config["A2A_DEFAULT_AGENT"] = "chat"
app.config["A2A_TRY_PAGE"] = True  # open /api/v1/agents/echo/ in a browser
app.config["A2A_DASHBOARD"] = True  # the operator's page: /api/v1/dashboard/
# The web processes run `slow`'s background turns themselves, so that
# `gunicorn wsgi:app` alone serves all three agents. Production sets
# A2A_IN_PROCESS_WORKER=0 and runs `flask a2a worker` (deploy/a2a.env); what
# the claimers cost a short call is the US demo row of docs/benchmarks.md.
app.config["A2A_IN_PROCESS_WORKER"] = 4
app.config.update(config_from_env())
a2a = A2A(app)
# A2A_CONFORMANCE_AGENT=1: also `conformance`, the conformance kit's test
# agent (docs/conformance.md).
register_demo_agents(a2a, conformance_agent=app.config.get("A2A_CONFORMANCE_AGENT", False))
add_index(app)  # / lists the agents and their URLs
