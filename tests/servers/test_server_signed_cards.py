"""Signed cards on real gunicorn: the official Python SDK 1.x resolver
fetches each form and verifies it; a restart signs again (ES256 differs at
each signing) and keeps the same ETag, so a client's If-None-Match still
gets 304."""

import requests
from cryptography.hazmat.primitives.asymmetric import ec

from helpers import write_key
from serving import GunicornServer
from v1 import clients

CARD = "/api/v1/agents/echo/.well-known/agent-card.json"
PATHS = [CARD, "/api/v1/agents/chat/.well-known/agent-card.json",
         "/.well-known/agent-card.json"]


def test_signed_cards_across_a_restart(tmp_path):
    key = write_key(tmp_path / "card.pem", ec.generate_private_key(ec.SECP256R1()))
    server = GunicornServer(tmp_path / "server", app="wsgi:app", workers=2, env={
        "A2A_CARD_SIGNING_KEY": key, "A2A_PUBLIC_BASE_URL": "https://agents.example"})
    server.start()
    try:
        for v10 in (False, True):
            results = clients.verify_served_cards(
                server.url, PATHS, server.url + "/api/v1/jwks.json", v10)
            assert all(results[path]["ok"] for path in PATHS), results
            assert {r["jku"] for r in results.values()} == {
                "https://agents.example/api/v1/jwks.json"}
        first = requests.get(server.url + CARD, timeout=30)
        server.stop()
        server.start()
        again = requests.get(server.url + CARD, timeout=30)
        assert again.headers["ETag"] == first.headers["ETag"]
        assert again.json()["signatures"] != first.json()["signatures"]
        unchanged = requests.get(server.url + CARD, timeout=30,
                                 headers={"If-None-Match": first.headers["ETag"]})
        assert unchanged.status_code == 304
    finally:
        server.stop()
