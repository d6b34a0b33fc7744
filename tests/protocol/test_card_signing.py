"""Signed Agent Cards (1.0 section 8.4): every card we serve, both forms,
root and per agent, extended, carries a JWS that the official Python and JS
SDK 1.x verifiers accept; a tampered card fails; the JWKS at ``jku`` holds
public keys only; signing needs A2A_PUBLIC_BASE_URL."""

import base64
import json

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from helpers import Rpc, write_key
from v1 import clients, proto

BASE = "https://a.example"
CARD = "/api/v1/agents/echo/.well-known/agent-card.json"
V10 = {"A2A-Version": "1.0"}
ALGORITHMS = {"ES256": lambda: ec.generate_private_key(ec.SECP256R1()),
              "RS256": lambda: rsa.generate_private_key(65537, 2048),
              "EdDSA": ed25519.Ed25519PrivateKey.generate}
PRIVATE_MEMBERS = {"d", "p", "q", "dp", "dq", "qi"}


def header_of(card):
    protected = card["signatures"][0]["protected"]
    return json.loads(base64.urlsafe_b64decode(protected + "=" * (-len(protected) % 4)))


@pytest.fixture
def signed_app(make_app, tmp_path):
    def build(alg="ES256", **config):
        key = write_key(tmp_path / ("%s.pem" % alg), ALGORITHMS[alg]())
        config.setdefault("A2A_PUBLIC_BASE_URL", BASE)
        app, _ = make_app(A2A_AUTH="required", A2A_CARD_SIGNING_KEY=key, **config)
        return app
    return build


def every_card(app):
    """{label: card} of every card the service serves."""
    client = app.test_client()
    key = app.extensions["a2a"].credentials.create_key(None, "a")[1]
    cards = {}
    for path in (CARD, "/api/v1/agents/echo/.well-known/agent.json",
                 "/.well-known/agent-card.json", "/a2a/.well-known/agent-card.json"):
        for form, headers in (("0.3", {}), ("1.0", V10)):
            response = client.get(path, headers=headers)
            assert response.status_code == 200
            cards["%s %s" % (form, path)] = response.get_json()
    caller = Rpc(client, agent="chat", key=key, version="1.0")
    cards["GetExtendedAgentCard"] = caller.result("GetExtendedAgentCard")
    status, cards["REST extendedAgentCard"] = caller.rest("GET", "/extendedAgentCard")
    old = Rpc(client, agent="chat", key=key)
    cards["agent/getAuthenticatedExtendedCard"] = old.call(
        "agent/getAuthenticatedExtendedCard")[1]["result"]
    return cards


def tampered(cards):
    """Cards changed after signing, each in one way a verifier must catch."""
    card = cards["1.0 " + CARD]
    other = cards["1.0 /.well-known/agent-card.json"]
    return {
        "description": dict(card, description=card["description"] + "!"),
        "url": dict(card, supportedInterfaces=[dict(
            card["supportedInterfaces"][0], url="https://evil.example/a2a")]),
        "skill added": dict(card, skills=card["skills"] + [
            {"id": "x", "name": "x", "description": "x", "tags": ["x"]}]),
        "another card's signature": dict(card, signatures=other["signatures"]),
        "0.3 form, 1.0 member changed": dict(
            cards["0.3 " + CARD], version="9.9.9"),
    }


@pytest.mark.parametrize("alg", sorted(ALGORITHMS))
def test_every_card_verifies_with_the_official_sdks(signed_app, tmp_path, alg):
    app = signed_app(alg)
    jwks = app.test_client().get("/api/v1/jwks.json").get_json()
    cards = every_card(app)
    for label, card in cards.items():
        header = header_of(card)
        assert header == {"alg": alg, "typ": "JOSE", "kid": jwks["keys"][0]["kid"],
                          "jku": BASE + "/api/v1/jwks.json"}, label
        if not label.startswith("0.3") and "getAuthenticated" not in label:
            proto.validate("AgentCard", card)
    bad = tampered(cards)
    results = clients.verify_cards(dict(cards, **{"tampered " + k: v
                                                  for k, v in bad.items()}),
                                   jwks, tmp_path)
    for sdk in ("py", "js"):
        for label in cards:
            assert results[sdk][label]["ok"] is True, (sdk, label, results[sdk][label])
            assert results[sdk][label]["kid"] == jwks["keys"][0]["kid"]
        for label in bad:
            assert results[sdk]["tampered " + label]["ok"] is False, (sdk, label)


def test_the_jwks_has_public_keys_only(signed_app, tmp_path):
    old = ec.generate_private_key(ec.SECP256R1())
    older = ed25519.Ed25519PrivateKey.generate()
    verify_keys = "%s,2024-key=%s" % (write_key(tmp_path / "old.pem", old, public=True),
                                      write_key(tmp_path / "older.pem", older))
    app = signed_app("RS256", A2A_CARD_SIGNING_KID="card-key-2",
                     A2A_CARD_VERIFY_KEYS=verify_keys)
    response = app.test_client().get("/api/v1/jwks.json")
    assert response.status_code == 200
    assert response.headers["Cache-Control"] == "public, max-age=300"
    keys = response.get_json()["keys"]
    assert [(k["kty"], k["alg"], k["use"]) for k in keys] == [
        ("RSA", "RS256", "sig"), ("EC", "ES256", "sig"), ("OKP", "EdDSA", "sig")]
    assert keys[0]["kid"] == "card-key-2" and keys[2]["kid"] == "2024-key"
    assert all(not PRIVATE_MEMBERS & set(key) for key in keys)
    card = app.test_client().get(CARD).get_json()
    assert header_of(card)["kid"] == "card-key-2"


# The RSA key of RFC 7638, section 3.1, and its thumbprint.
RFC7638_N = (
    "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1"
    "L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4"
    "QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbO"
    "pbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csF"
    "Cur-kEgU8awapJzKnqDKgw")
RFC7638_THUMBPRINT = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"


def test_default_kid_is_the_rfc_7638_thumbprint(signed_app, tmp_path):
    n = int.from_bytes(base64.urlsafe_b64decode(RFC7638_N + "=="), "big")
    public = rsa.RSAPublicNumbers(65537, n).public_key()
    path = tmp_path / "rfc7638.pem"
    path.write_bytes(public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    app = signed_app(A2A_CARD_VERIFY_KEYS=str(path))
    keys = app.test_client().get("/api/v1/jwks.json").get_json()["keys"]
    assert keys[1]["kid"] == RFC7638_THUMBPRINT


def test_signing_needs_the_public_base_url(signed_app):
    with pytest.raises(ValueError, match="A2A_PUBLIC_BASE_URL"):
        signed_app(A2A_PUBLIC_BASE_URL=None)


@pytest.mark.parametrize("make_key, problem", [
    (lambda: ec.generate_private_key(ec.SECP384R1()), "P-256"),
    (lambda: rsa.generate_private_key(65537, 1024), "2048"),
    (None, "No such file")])
def test_unusable_keys_refuse_to_start(make_app, tmp_path, make_key, problem):
    path = tmp_path / "key.pem"
    if make_key is not None:
        write_key(path, make_key())
    with pytest.raises(ValueError, match=problem):
        make_app(A2A_CARD_SIGNING_KEY=str(path), A2A_PUBLIC_BASE_URL=BASE)


def test_signed_once_per_card_content(signed_app, monkeypatch):
    import jwt
    signed = []
    encode = jwt.api_jws.encode
    monkeypatch.setattr(jwt.api_jws, "encode",
                        lambda *a, **kw: signed.append(1) or encode(*a, **kw))
    client = signed_app().test_client()
    first = client.get(CARD).get_json()["signatures"]
    for headers in ({}, V10, {}, V10):
        assert client.get(CARD, headers=headers).get_json()["signatures"] == first
    assert len(signed) == 1  # both forms carry the 1.0 card's signature
    client.get("/api/v1/agents/chat/.well-known/agent-card.json")
    assert len(signed) == 2


def test_etag_follows_the_signing_key(signed_app, make_app):
    unsigned, _ = make_app(A2A_AUTH="required", A2A_PUBLIC_BASE_URL=BASE)
    tags = {unsigned.test_client().get(CARD).headers["ETag"],
            signed_app("ES256").test_client().get(CARD).headers["ETag"],
            signed_app("EdDSA").test_client().get(CARD).headers["ETag"]}
    assert len(tags) == 3


def test_sign_check_prints_what_a_client_verifies(signed_app):
    app = signed_app("EdDSA")
    result = app.test_cli_runner().invoke(args=["a2a", "cards", "sign-check"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("key: EdDSA ") and BASE + "/api/v1/jwks.json" in lines[0]
    checked = [line for line in lines[1:] if line.endswith(")")]
    assert len(checked) == len(lines) - 1 >= 8
    assert all("verified (EdDSA, kid " in line for line in checked)
    assert any(line.startswith("echo  " + CARD + "  form 0.3") for line in lines)


def test_sign_check_fails_on_a_card_that_does_not_verify(signed_app, monkeypatch):
    app = signed_app()
    signer = app.extensions["a2a"].card_signer
    real = signer.signatures
    monkeypatch.setattr(signer, "signatures", lambda card: real(
        dict(card, description="something else")))
    result = app.test_cli_runner().invoke(args=["a2a", "cards", "sign-check"])
    assert result.exit_code == 1 and "FAILED" in result.output


def test_sign_check_without_a_key(make_app):
    app, _ = make_app()
    result = app.test_cli_runner().invoke(args=["a2a", "cards", "sign-check"])
    assert result.exit_code == 1 and "A2A_CARD_SIGNING_KEY" in result.output
