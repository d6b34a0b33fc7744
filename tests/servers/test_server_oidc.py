"""OIDC access tokens through real gunicorn processes (2 workers, each with
its own key cache) and a real OpenID provider on 127.0.0.1
(tests/oidc_issuer.py): the official Python SDK 1.x client calling with a
token it got from that provider, key rotation seen by every worker, the
provider down at start then up, ``flask a2a tasks reassign``.
"""

import sqlite3
import time

import requests

from helpers import message
from oidc_issuer import AUDIENCE, Issuer, free_port
from serving import create_api_key, flask_cli
from v1 import clients

def oidc_env(issuer, **more):
    env = {"A2A_OIDC_ISSUER": issuer.url, "A2A_OIDC_AUDIENCE": AUDIENCE}
    env.update(more)
    return env


def owners(database):
    with sqlite3.connect(database) as db:
        return sorted(row[0] for row in db.execute("SELECT owner FROM a2a_tasks"))


def send(server, token):
    """message/send of a new message (a new task) to echo."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send",
            "params": {"message": message("hello")}}
    return requests.post(server.url + "/api/v1/agents/echo/a2a", json=body, timeout=30,
                         headers={"Authorization": "Bearer " + token})


def _until_six_taken(server, issuer, sub, what):
    """Send tokens for ``sub`` until six in a row are taken (200), within
    30 s; a worker still in its retry interval answers 503, nothing else."""
    deadline, taken = time.monotonic() + 30, 0
    while taken < 6:
        status = send(server, issuer.token(sub=sub)).status_code
        assert status in (200, 503), status
        taken = taken + 1 if status == 200 else 0
        assert time.monotonic() < deadline, what


def test_python_sdk_1_sends_a_token_of_the_provider_the_card_names(start_server):
    with Issuer() as issuer:
        secret = issuer.add_client("svc-sdk", scopes=["a2a.call"], name="SDK service")
        server = start_server("wsgi:app", workers=2, auth="required",
                              env=oidc_env(issuer, A2A_OIDC_REQUIRED_SCOPES="a2a.call",
                                           A2A_OIDC_TOKEN_URL=issuer.url + "/token"))
        card_url = server.url + "/api/v1/agents/echo/.well-known/agent-card.json"
        for transport in clients.TRANSPORTS:
            r = clients.run_py(card_url, transport=transport, steps="card,send,get",
                               oidc_client="svc-sdk:" + secret)
            assert r["send"]["ok"] and r["send"]["state"] == "TASK_STATE_COMPLETED", r["send"]
            assert r["get"]["ok"], r["get"]
            clients.check_wire(r)
        assert issuer.grants == 2  # one token per client run
        assert set(owners(server.database)) == {"oidc:svc-sdk"}
        # The same client without its credentials is refused.
        r = clients.run_py(card_url, steps="send")
        assert not r["send"]["ok"]


def test_rotation_reaches_every_worker_and_the_provider_down_at_start(start_server):
    port = free_port()
    issuer = Issuer(port=port)  # not answering yet
    server = start_server("wsgi:app", workers=2, auth="required", env=oidc_env(issuer))
    key = create_api_key(server.database)
    assert send(server, key).status_code == 200  # keys work as usual
    down = send(server, issuer.token())
    assert down.status_code == 503
    assert down.json()["error"]["code"] == -32603
    assert down.json()["error"]["message"].startswith("identity provider unavailable")
    with issuer:
        # Each worker asks again RETRY_INTERVAL after its failure: wait until
        # six calls in a row (both workers, whichever takes each) are taken.
        _until_six_taken(server, issuer, "before", "tokens still refused with the provider up")
        issuer.rotate()
        # A worker that has not asked since the provider was down asks again
        # RETRY_INTERVAL after its failure (503 until then); none may refuse
        # a token of the new key (401: its kid unknown).
        _until_six_taken(server, issuer, "after", "the new key's tokens still refused")
        # Each worker read the keys at most twice: first use, then the rotation.
        assert issuer.jwks_fetches <= 4
    assert owners(server.database).count("oidc:after") >= 6


def test_tasks_reassign_moves_a_caller_s_tasks(start_server):
    with Issuer() as issuer:
        server = start_server("wsgi:app", workers=1, auth="required", env=oidc_env(issuer))
        key = create_api_key(server.database, "--label", "old")
        task = send(server, key).json()["result"]
        key_id = owners(server.database)[0]
        out = flask_cli(server.database, "a2a", "tasks", "reassign",
                        "--from", key_id, "--to", "oidc:svc-new")
        assert "1 task" in out, out
        assert owners(server.database) == ["oidc:svc-new"]
        get = {"jsonrpc": "2.0", "id": 2, "method": "tasks/get",
               "params": {"id": task["id"]}}
        answer = requests.post(server.url + "/api/v1/agents/echo/a2a", json=get, timeout=30,
                               headers={"Authorization": "Bearer "
                                        + issuer.token(sub="svc-new")}).json()
        assert answer["result"]["id"] == task["id"]
        lost = requests.post(server.url + "/api/v1/agents/echo/a2a", json=get, timeout=30,
                             headers={"Authorization": "Bearer " + key}).json()
        assert lost["error"]["code"] == -32001
