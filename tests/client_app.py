"""The app the client tests call under gunicorn: ``gunicorn client_app:app``
(from tests/). The demo agents (``echo``, ``chat`` the default agent,
``slow`` in the background), plus:

- ``counted``: appends its task id to the file ``COUNT_LEDGER`` names (one
  line per run: how many times the agent really ran), sleeps the seconds
  of a text ``sleep S``, and answers ``counted <text>``;
- ``relay`` (background, ``retry=True``) and ``relay_now`` (in the
  request): call the agent at the URL of the message metadata's ``remote``
  (with its ``key``) with ``turn.call``, then append ``<task id>
  <attempt>`` to ``RELAY_LEDGER``; a ``relay`` text starting with ``die``
  kills its worker process on the first attempt, after the call;
- ``catcher``: continues, with ``turn.call``, a task the remote agent of the
  metadata (``remote``, ``key``, ``version``, ``binding``) does not have,
  and answers ``caught <class> <code>`` when ``a2a_flask.errors``'
  ``TaskNotFoundError`` catches the remote's answer;
- an OAuth 2 client-credentials token endpoint at ``POST /oauth/token``
  (client ``client``, secret ``OAUTH_SECRET``), its OIDC discovery document
  at ``/oauth/.well-known/openid-configuration``, and a ``token_caller``
  taking its tokens. A token is valid while the generation in the file
  ``OAUTH_GENERATION`` names is the one it was issued under: bumping it
  revokes every token issued (in every worker).

Settings come from A2A_* environment variables, as in wsgi.py.
"""

import base64
import hashlib
import hmac
import os
import time

from flask import Flask, jsonify, request

from a2a_flask import A2A, config_from_env
from a2a_flask.client import Client
from a2a_flask.demo import register_demo_agents
from a2a_flask.errors import TaskNotFoundError

SECRET = os.environ.get("OAUTH_SECRET", "client-secret")


def counted(turn):
    """Counts its runs in COUNT_LEDGER."""
    ledger = os.environ.get("COUNT_LEDGER")
    if ledger:
        with open(ledger, "a") as f:
            f.write(turn.task_id + "\n")
    words = turn.text.split()
    if len(words) == 2 and words[0] == "sleep":
        time.sleep(min(float(words[1]), 20.0))
    return "counted " + turn.text


def relay(turn):
    """Relays the text to the remote agent of the metadata."""
    remote = Client(turn.metadata["remote"], key=turn.metadata["key"])
    task = turn.call(remote, turn.text)
    with open(os.environ["RELAY_LEDGER"], "a") as f:
        f.write("%s %d\n" % (turn.task_id, getattr(turn, "attempt", 1)))
    if turn.text.startswith("die") and getattr(turn, "attempt", 1) == 1:
        os._exit(3)
    return "relayed: " + task.text


def catcher(turn):
    """Catches the remote's TaskNotFoundError with the server's own class."""
    remote = Client(turn.metadata["remote"], key=turn.metadata["key"],
                    version=turn.metadata["version"], binding=turn.metadata["binding"])
    try:
        turn.call(remote, turn.text, task_id="task_" + "0" * 32)
    except TaskNotFoundError as exc:
        return "caught %s %d" % (type(exc).__name__, exc.code)
    return "not caught"


def _generation():
    path = os.environ.get("OAUTH_GENERATION")
    if not path or not os.path.exists(path):
        return "0"
    with open(path) as f:
        return f.read().strip() or "0"


def _signature(generation):
    return hmac.new(SECRET.encode(), generation.encode(), hashlib.sha256).hexdigest()[:32]


app = Flask(__name__)
app.config["A2A_DEFAULT_AGENT"] = "chat"
app.config.update(config_from_env())
a2a = A2A(app)
register_demo_agents(a2a)
a2a.add_agent("counted", counted)
a2a.add_agent("relay", relay, background=True, retry=True)
a2a.add_agent("relay_now", relay)
a2a.add_agent("catcher", catcher)


@a2a.token_caller
def token_user(token):
    parts = token.split(".")
    if len(parts) == 3 and parts[0] == "oidc" and parts[1] == _generation() \
            and hmac.compare_digest(parts[2], _signature(parts[1])):
        return "oauth-client"
    return None


@app.route("/oauth/token", methods=["POST"])
def oauth_token():
    expected = "Basic " + base64.b64encode(("client:" + SECRET).encode()).decode()
    if request.headers.get("Authorization") != expected \
            or request.form.get("grant_type") != "client_credentials":
        return jsonify(error="invalid_client"), 401
    generation = _generation()
    return jsonify(access_token="oidc.%s.%s" % (generation, _signature(generation)),
                   token_type="Bearer", expires_in=3600)


@app.route("/oauth/.well-known/openid-configuration")
def oidc_discovery():
    return jsonify(issuer=request.url_root + "oauth",
                   token_endpoint=request.url_root + "oauth/token")
