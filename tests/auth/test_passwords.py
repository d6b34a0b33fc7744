"""Password hashes verify the same on every supported Werkzeug: written in the
format all of them read, and the formats each of them wrote by default still
log their users in (a2a_flask/auth/passwords.py)."""

import base64

import pytest
from werkzeug.security import check_password_hash, generate_password_hash

from a2a_flask.auth.passwords import check_password, hash_password
from helpers import assert_401

pytestmark = pytest.mark.compat

# Made by each Werkzeug's generate_password_hash for "correct horse".
WERKZEUG_3_SCRYPT = (  # the default of Werkzeug 3.0 and later
    "scrypt:32768:8:1$9Nrb9phAjPlcvPcS$d9fa9543dea528fd45b132726a21dbc3856c798195"
    "d5a42d218dbdcc261bb8ea4ca6aca1498f28dd96de9cf9bd52584f94b51735805878b6f806cc"
    "8db132b72d")
WERKZEUG_3_1_PBKDF2 = (  # Werkzeug 3.1, method="pbkdf2"
    "pbkdf2:sha256:1000000$gd6ljsmfBA7x2QwA$18688da0d888a9f9dfbccfa2cd6e964224e0a"
    "bba2d9d585e75bb01eae51e65ea")
WERKZEUG_1_0_PBKDF2 = (  # the default of Werkzeug 1.0 (Flask 1.1)
    "pbkdf2:sha256:150000$VNFXbGGS$2d9c61e8c2bbefaadff06ba2121239608d8e30c2c1ea30"
    "e2b3766755d202d63d")


@pytest.mark.parametrize("stored", [WERKZEUG_3_SCRYPT, WERKZEUG_3_1_PBKDF2,
                                    WERKZEUG_1_0_PBKDF2])
def test_hashes_werkzeug_wrote_by_default_verify(stored):
    assert check_password(stored, "correct horse")
    assert not check_password(stored, "correct horsE")


def test_our_hash_is_pbkdf2_which_the_installed_werkzeug_reads_too():
    stored = hash_password("correct horse")
    assert stored.startswith("pbkdf2:sha256:600000$")
    assert stored != hash_password("correct horse")  # salted
    assert check_password(stored, "correct horse")
    assert not check_password(stored, "correct hors")
    assert check_password_hash(stored, "correct horse")
    assert not check_password_hash(stored, "correct hors")


def test_the_installed_werkzeugs_default_hash_verifies():
    assert check_password(generate_password_hash("pässword"), "pässword")


@pytest.mark.parametrize("stored", [
    "", "no dollar", "plain$$correct horse",
    # Werkzeug < 2.3 could write salted HMACs on request; never our default.
    "sha256$salt$" + "0" * 64,
    "pbkdf2:sha256$salt$00", "scrypt:1:2$salt$00", "argon2$salt$00",
])
def test_an_unknown_or_damaged_hash_checks_false(stored):
    assert check_password(stored, "correct horse") is False


def test_a_user_stored_with_werkzeug_3s_scrypt_hash_logs_in(make_app):
    app, _ = make_app(A2A_AUTH="required")
    app.extensions["a2a"].storage.insert_user("ann", WERKZEUG_3_SCRYPT)
    client = app.test_client()
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send",
            "params": {"message": {"kind": "message", "role": "user",
                                   "messageId": "m1",
                                   "parts": [{"kind": "text", "text": "hi"}]}}}

    def post(password):
        token = base64.b64encode(("ann:" + password).encode()).decode()
        return client.post("/api/v1/agents/echo/a2a", json=body,
                           headers={"Authorization": "Basic " + token})

    answer = post("correct horse")
    assert answer.status_code == 200
    assert answer.get_json()["result"]["status"]["state"] == "completed"
    assert_401(post("wrong horse"))
