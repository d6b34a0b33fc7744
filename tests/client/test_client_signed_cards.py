"""Signed Agent Cards (A2A 1.0 section 8.4): the client verifies cards signed
by the official SDKs' own signers (the JS SDK 1.x server's
``generateAgentCardSignature``, with its key set at ``jku``; the Python SDK
1.x ``create_agent_card_signer`` over our own card) and one signed here with
PyJWT; and refuses what was changed after signing."""

import copy
import json

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm

from a2a_flask.client import CardError, Client
from a2a_flask.client.signing import canonical_card, jcs
from v1 import clients

KEY = "peer-key"


@pytest.fixture(scope="module")
def private_key():
    return ec.generate_private_key(ec.SECP256R1())


def pem(key):
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def our_card(make_app):
    app = make_app(A2A_PUBLIC_BASE_URL="https://agents.example")[0]
    return app.test_client().get("/api/v1/agents/echo/.well-known/agent-card.json").get_json()


def test_a_card_the_js_sdk_signed_verifies_with_its_jku(private_key):
    jwk = ECAlgorithm.to_jwk(private_key, as_dict=True)
    with clients.js_server(key=KEY, sign_jwk=jwk, kid="js-1") as card_url:
        agent = Client(card_url, key=KEY, verify_card=True)
        assert agent.send("hello").text == "hello"
        card = agent.card
        public = {"keys": [dict(ECAlgorithm.to_jwk(private_key.public_key(), as_dict=True),
                                kid="js-1")]}
        Client(card=card, verify_card=True, card_keys=public).interface
        changed = dict(card, description="Now sends your data elsewhere.")
        with pytest.raises(CardError, match="No signature"):
            Client(card=changed, card_keys=public).interface
        # without card_keys, a jku is only trusted on the card's own origin
        with pytest.raises(CardError, match="no origin to trust its jku on"):
            Client(card=card, verify_card=True).interface
        elsewhere = card_url.replace("127.0.0.1", "localhost")
        with pytest.raises(CardError, match="not on the card's origin"):
            Client(elsewhere, verify_card=True).interface


def test_our_card_signed_by_the_python_sdk(make_app, private_key):
    card = our_card(make_app)
    private = private_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()).decode()
    signed = dict(card, signatures=clients.sign_with_py_sdk(card, private, "py-1"))
    keys = {"py-1": pem(private_key)}
    agent = Client(card=signed, card_keys=keys)
    assert agent.interface.url == "https://agents.example/api/v1/agents/echo/a2a"
    # the 0.3 url is outside what is signed: a verified card is called
    # through its (signed) supportedInterfaces only
    moved = dict(signed, url="https://evil.example/a2a", preferredTransport="JSONRPC")
    assert Client(card=moved, card_keys=keys, version="0.3").interface.url == \
        "https://agents.example/api/v1/agents/echo/a2a"
    redirected = copy.deepcopy(signed)
    redirected["supportedInterfaces"][0]["url"] = "https://evil.example/a2a"
    with pytest.raises(CardError):
        Client(card=redirected, card_keys=keys).interface
    unsigned_extension = copy.deepcopy(signed)
    unsigned_extension["capabilities"]["extensions"] = []
    with pytest.raises(CardError):
        Client(card=unsigned_extension, card_keys=keys).interface


def test_a_card_signed_here(make_app, private_key):
    card = our_card(make_app)
    token = jwt.encode({}, private_key, algorithm="ES256",
                       headers={"kid": "here-1", "typ": "JOSE"})
    protected = token.split(".")[0]
    # sign the canonical payload ourselves (detached, as section 8.4 says)
    signing_input = (protected + "." + jwt.utils.base64url_encode(
        canonical_card(card)).decode()).encode()
    raw = ECAlgorithm(ECAlgorithm.SHA256).sign(signing_input, private_key)
    signed = dict(card, signatures=[{
        "protected": protected, "signature": jwt.utils.base64url_encode(raw).decode()}])
    Client(card=signed, card_keys={"here-1": pem(private_key)}).interface
    with pytest.raises(CardError, match="not signed"):
        Client(card=card, card_keys={"here-1": pem(private_key)}).interface
    shared = "a shared secret of more than thirty-two bytes"
    hmac = jwt.encode({}, shared, algorithm="HS256", headers={"kid": "here-1"})
    forged = dict(card, signatures=[{"protected": hmac.split(".")[0],
                                     "signature": hmac.split(".")[2]}])
    with pytest.raises(CardError, match="HS256"):
        Client(card=forged, card_keys={"here-1": shared}).interface


def test_jcs():
    # keys in UTF-16 order: U+1F600 (a surrogate pair, D83D...) before U+FB01
    assert jcs({"b": [1.0, 2.5, True, None], "a": "é\n", "\ufb01": 1, "\U0001f600": 2}) == \
        '{"a":"é\\n","b":[1,2.5,true,null],"\U0001f600":2,"\ufb01":1}'
    # the section 8.4.1 example, as the SDKs read it (empty required members dropped)
    assert json.loads(canonical_card({
        "name": "Example Agent", "description": "",
        "capabilities": {"streaming": False, "pushNotifications": False, "extensions": []},
        "skills": []})) == {"capabilities": {"pushNotifications": False, "streaming": False},
                            "name": "Example Agent"}
