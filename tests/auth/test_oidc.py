"""OIDC / OAuth2 access tokens, in process (docs/securing.md), against a real
OpenID provider on 127.0.0.1 (tests/oidc_issuer.py): every refusal, scopes,
key rotation, the issuer down, the cards' schemes, the extended card.

Through real gunicorn processes and the official SDK 1.x client:
tests/servers/test_server_oidc.py.
"""

import base64
import hashlib
import hmac
import json
import logging
import re
import threading
import time

import pytest
from cryptography.hazmat.primitives import serialization

from a2a_flask.auth import oidc
from a2a_flask import Reply
from helpers import check_answer, message
from oidc_issuer import AUDIENCE, Issuer, SigningKey, free_port
from v1 import proto

WHOAMI = "/api/v1/agents/whoami/a2a"
PAYROLL = "/api/v1/agents/payroll/a2a"
V10 = {"A2A-Version": "1.0"}


@pytest.fixture(scope="module")
def issuer():
    with Issuer() as running:
        yield running


def register(a2a):
    @a2a.agent("whoami", extended_skills=[{"id": "x", "name": "x",
                                            "description": "extended", "tags": []}])
    def whoami(turn):
        a2a.ran = getattr(a2a, "ran", 0) + 1
        return Reply(json.dumps([turn.caller.id, turn.caller.kind, turn.caller.name]))

    @a2a.agent("payroll", required_scopes=["payroll.read", "payroll.write"])
    def payroll(turn):
        return "paid"


class Service:
    def __init__(self, make_app, issuer, **config):
        config.setdefault("A2A_OIDC_ISSUER", issuer.url)
        config.setdefault("A2A_OIDC_AUDIENCE", AUDIENCE)
        self.app, self.a2a = make_app(register, A2A_AUTH="required", **config)
        self.app_state = self.app.extensions["a2a"]
        self.client = self.app.test_client()
        self.issuer = issuer

    def post(self, path, body, token=None, headers=None, client=None):
        headers = dict(headers or {})
        if token is not None:
            headers["Authorization"] = "Bearer " + token
        response = (client or self.client).post(path, json=body, headers=headers)
        if response.headers.get("A2A-Version") is None and "A2A-Version" not in headers:
            check_answer(response.status_code, response.get_json())
        return response

    def send(self, token, path=WHOAMI, text="hello", headers=None, client=None):
        return self.post(path, {"jsonrpc": "2.0", "id": 1, "method": "message/send",
                                "params": {"message": message(text)}}, token, headers,
                         client)

    def stored_tasks(self):
        return self.app_state.storage.count_tasks()


@pytest.fixture
def service(make_app, issuer):
    return Service(make_app, issuer)


def challenge(response):
    """The RFC 6750 challenge's parameters, checked to be a Bearer one."""
    value = response.headers["WWW-Authenticate"]
    assert value.startswith("Bearer "), value
    return dict(re.findall(r'(\w+)="([^"]*)"', value))


def assert_refused(service, response, words, status=401, error="invalid_token",
                   ran=0, stored=0):
    """Refused with the RFC 6750 challenge; nothing ran, nothing stored (the
    agent ran ``ran`` times before, ``stored`` tasks were stored)."""
    assert response.status_code == status, response.data
    params = challenge(response)
    assert params["error"] == error, params
    body = response.get_json()
    error_object = body if status == 401 else body["error"]
    assert error_object["code"] == -32600
    assert words in error_object["message"], error_object
    assert words in params["error_description"]
    assert getattr(service.a2a, "ran", 0) == ran
    assert service.stored_tasks() == stored
    return params


# -- taken ------------------------------------------------------------------------


def test_a_token_of_the_issuer_is_the_caller_oidc_sub(service, issuer):
    token = issuer.token(sub="svc-billing", name="Billing service")
    response = service.send(token)
    assert response.status_code == 200, response.data
    task = response.get_json()["result"]
    assert json.loads(task["artifacts"][0]["parts"][0]["text"]) == [
        "oidc:svc-billing", "oidc", "Billing service"]
    # Its task is its own: another subject does not see it, the same one does.
    get = {"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": task["id"]}}
    other = service.post(WHOAMI, get, issuer.token(sub="svc-other"))
    assert other.get_json()["error"]["code"] == -32001
    again = service.post(WHOAMI, get, issuer.token(sub="svc-billing"))
    assert again.get_json()["result"]["status"]["state"] == "completed"


def test_the_name_comes_from_the_configured_claim_else_the_sub(make_app, issuer):
    service = Service(make_app, issuer, A2A_OIDC_NAME_CLAIM="preferred_username")
    named = service.send(issuer.token(sub="u1", preferred_username="ada", name="x"))
    assert json.loads(named.get_json()["result"]["artifacts"][0]["parts"][0]["text"])[2] == "ada"
    unnamed = service.send(issuer.token(sub="u2", name="x"))
    assert json.loads(unnamed.get_json()["result"]["artifacts"][0]["parts"][0]["text"])[2] == "u2"


def test_an_api_key_as_bearer_keeps_working_beside_tokens(service):
    key = service.app_state.credentials.create_key(label="ops")[1]
    response = service.send(key)
    assert response.status_code == 200, response.data
    caller = json.loads(response.get_json()["result"]["artifacts"][0]["parts"][0]["text"])
    assert caller[0].startswith("key:") and caller[1] == "key"


def test_expiry_within_the_leeway_is_taken(service, issuer):
    # exp 10 s ago, the default leeway 30 s: a clock a little behind is fine.
    response = service.send(issuer.token(lifetime=-10))
    assert response.status_code == 200, response.data


def test_a_token_checked_once_still_expires(service, issuer):
    token = issuer.token(lifetime=300)
    assert service.send(token).status_code == 200
    # Remembered as verified: its signature is not checked again, its
    # lifetime is, on every use.
    later = time.time() + 300 + 31
    service.app_state.tokens._wall_clock = lambda: later
    assert_refused(service, service.send(token), "has expired", ran=1, stored=1)


# -- refused: 401 invalid_token, nothing run or stored ---------------------------


def _hs256_with_the_public_key(issuer):
    """A token signed HS256 with the issuer's public key as the HMAC secret
    (the classic algorithm-confusion forgery)."""
    pem = issuer.key.private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    good = issuer.token(sub="forger")
    _, payload, _ = good.split(".")
    header = base64.urlsafe_b64encode(json.dumps(
        {"alg": "HS256", "typ": "JWT", "kid": issuer.key.kid}).encode()).rstrip(b"=")
    signing_input = header + b"." + payload.encode()
    signature = base64.urlsafe_b64encode(
        hmac.new(pem, signing_input, hashlib.sha256).digest()).rstrip(b"=")
    return (signing_input + b"." + signature).decode()


def _unsigned(issuer):
    good = issuer.token(sub="forger")
    _, payload, _ = good.split(".")
    header = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').rstrip(b"=").decode()
    return header + "." + payload + "."


REFUSALS = {
    "expired": (lambda i: i.token(lifetime=-120), "has expired"),
    "not yet valid (nbf)": (lambda i: i.token(nbf=9999999999), "not valid yet"),
    "issued in the future (iat)": (lambda i: i.token(iat=9999999999, exp=9999999999 + 60),
                                   "not valid yet"),
    "another audience": (lambda i: i.token(aud="https://other.example"), "not meant for this service"),
    "another issuer": (lambda i: i.token(iss="https://evil.example"), "not issued by"),
    "no exp": (lambda i: i.token(omit=["exp"]), "lacks the exp claim"),
    "no aud": (lambda i: i.token(omit=["aud"]), "lacks the aud claim"),
    "no sub": (lambda i: i.token(omit=["sub"]), "lacks the sub claim"),
    "alg none": (_unsigned, "signed with 'none'"),
    "HS256 with the public key": (_hs256_with_the_public_key, "signed with 'HS256'"),
    "a key the issuer does not publish, same kid": (
        lambda i: i.token(key=SigningKey(kid=i.key.kid)), "signature does not verify"),
    "an unknown kid": (lambda i: i.token(key=SigningKey()), "does not publish"),
    "ES256 claimed for an RSA key": (
        lambda i: i.token(key=SigningKey("ES256"), headers={"kid": i.key.kid}),
        "is not its key's"),
    "not a JWT at all": (lambda i: "a.b.c", "not a valid JWT"),
    "a tampered payload": (lambda i: _tampered(i.token(sub="svc-a")), "signature does not verify"),
}


def _tampered(token):
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["sub"] = "admin"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return ".".join([header, forged, signature])


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_bad_token_is_refused_401_invalid_token(service, issuer, case):
    make, words = REFUSALS[case]
    assert_refused(service, service.send(make(issuer)), words)


def test_a_refusal_over_1_0_rest_and_json_rpc(service, issuer):
    expired = issuer.token(lifetime=-120)
    rest = service.client.post("/api/v1/agents/whoami/rest/message:send",
                               json={"message": {"messageId": "m1", "role": "ROLE_USER",
                                                 "parts": [{"text": "hi"}]}},
                               headers=dict(V10, Authorization="Bearer " + expired))
    assert rest.status_code == 401
    assert rest.get_json()["error"]["status"] == "UNAUTHENTICATED"
    assert challenge(rest)["error"] == "invalid_token"
    rpc = service.post(WHOAMI, {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                                "params": {"message": {"messageId": "m1", "role": "ROLE_USER",
                                                       "parts": [{"text": "hi"}]}}},
                       expired, V10)
    assert rpc.status_code == 401 and challenge(rpc)["error"] == "invalid_token"
    assert service.stored_tasks() == 0


def test_a_token_in_the_api_key_header_is_no_token(service, issuer):
    # X-API-Key carries our keys only: a JWT there is an unknown key.
    response = service.send(None, headers={"X-API-Key": issuer.token()})
    assert response.status_code == 401
    assert "API key" in response.get_json()["message"]


# -- scopes: 403 insufficient_scope -----------------------------------------------


def test_an_agent_s_required_scopes_are_checked(service, issuer):
    params = assert_refused(service, service.send(issuer.token(scope="payroll.read"),
                                                  PAYROLL),
                            "payroll.write", status=403, error="insufficient_scope")
    assert params["scope"] == "payroll.read payroll.write"
    ok = service.send(issuer.token(scope="openid payroll.read payroll.write"), PAYROLL)
    assert ok.get_json()["result"]["status"]["state"] == "completed"
    # scp, as a list (Azure AD), counts as well.
    ok = service.send(issuer.token(scp=["payroll.read", "payroll.write"]), PAYROLL)
    assert ok.get_json()["result"]["status"]["state"] == "completed"


def test_the_default_scopes_apply_to_agents_without_their_own(make_app, issuer):
    service = Service(make_app, issuer, A2A_OIDC_REQUIRED_SCOPES="a2a.call")
    assert_refused(service, service.send(issuer.token()), "a2a.call", status=403,
                   error="insufficient_scope")
    assert service.send(issuer.token(scope="a2a.call")).status_code == 200
    # payroll names its own: the default is not added to them.
    assert service.send(issuer.token(scope="payroll.read payroll.write"),
                        PAYROLL).status_code == 200
    # An API key is not concerned by scopes (its own agent list governs it).
    key = service.app_state.credentials.create_key()[1]
    assert service.send(key).status_code == 200


# -- the issuer's keys: cache, rotation, down --------------------------------------


class Clock:
    """The verifier's monotonic clock, moved by hand. Each token call needing
    a key reads it first: ``wait_reads(n)`` returns once it was read n times."""

    def __init__(self):
        self.now = 1000.0
        self.reads = 0
        self._read = threading.Condition()

    def __call__(self):
        with self._read:
            self.reads += 1
            self._read.notify_all()
        return self.now

    def wait_reads(self, count):
        with self._read:
            return self._read.wait_for(lambda: self.reads >= count, timeout=30)


def test_keys_are_cached_and_an_unknown_kid_refreshes_at_most_once_a_minute(make_app):
    with Issuer() as issuer:
        service = Service(make_app, issuer)
        clock = service.app_state.tokens._clock = Clock()
        assert service.send(issuer.token(sub="a")).status_code == 200
        assert service.send(issuer.token(sub="b")).status_code == 200
        assert (issuer.discovery_fetches, issuer.jwks_fetches) == (1, 1)
        # Rotation: a token of the new key fetches the keys again, once.
        old = issuer.key
        issuer.rotate()
        assert service.send(issuer.token(sub="c")).status_code == 200
        assert issuer.jwks_fetches == 2
        # The old key is no longer published, nor taken.
        assert_refused(service, service.send(issuer.token(key=old)), "does not publish",
                       ran=3, stored=3)
        # Forged kids within the minute: refused without asking the issuer.
        for _ in range(3):
            assert service.send(issuer.token(key=SigningKey())).status_code == 401
        assert issuer.jwks_fetches == 2
        # A minute later an unknown kid may ask again.
        clock.now += oidc.REFRESH_INTERVAL
        issuer.rotate(keep_old=True)
        assert service.send(issuer.token(sub="d")).status_code == 200
        assert issuer.jwks_fetches == 3
        assert issuer.discovery_fetches == 1


def test_the_issuer_down_at_start_then_up(make_app):
    port = free_port()
    issuer = Issuer(port=port)  # not started
    service = Service(make_app, issuer)
    clock = service.app_state.tokens._clock = Clock()
    key = service.app_state.credentials.create_key()[1]
    assert service.send(key).status_code == 200  # keys work as usual
    down = service.send(issuer.token())
    assert down.status_code == 503
    error = down.get_json()["error"]
    assert error["code"] == -32603
    assert error["message"].startswith("identity provider unavailable")
    assert service.app_state.storage.count_tasks() == 1  # the key's only
    # 1.0 REST words it UNAVAILABLE, at 503.
    rest = service.client.get("/api/v1/agents/whoami/rest/tasks",
                              headers=dict(V10, Authorization="Bearer " + issuer.token()))
    assert rest.status_code == 503 and rest.get_json()["error"]["status"] == "UNAVAILABLE"
    assert [d["reason"] for d in rest.get_json()["error"]["details"]] == [
        "IDENTITY_PROVIDER_UNAVAILABLE"]
    with issuer:
        # Within RETRY_INTERVAL of the failure the issuer is not asked again.
        assert service.send(issuer.token()).status_code == 503
        assert issuer.discovery_fetches == 0
        clock.now += oidc.RETRY_INTERVAL
        assert service.send(issuer.token()).status_code == 200


def test_the_issuer_down_later_keeps_known_keys(make_app):
    with Issuer() as issuer:
        service = Service(make_app, issuer)
        clock = service.app_state.tokens._clock = Clock()
        assert service.send(issuer.token()).status_code == 200
    # Down: the cached key still verifies its tokens, even once grown old
    # (asked again, the issuer does not answer: the keys it had serve on).
    assert service.send(issuer.token(sub="later")).status_code == 200
    clock.now += oidc.MAX_AGE
    assert service.send(issuer.token(sub="old")).status_code == 200
    # A key it cannot read: unavailable, not invalid.
    issuer.rotate()
    clock.now += oidc.RETRY_INTERVAL
    assert service.send(issuer.token()).status_code == 503


# -- the issuer slow or silent: cached keys serve, one read of the keys at a time ------


@pytest.fixture
def slow(make_app, monkeypatch, caplog):
    """A service whose issuer's JWKS reads can be held, its verifier on a
    ``Clock`` (``slow.clock``); a fetch timeout long enough that a held read
    ends when the test lets it, not before."""
    monkeypatch.setattr(oidc, "FETCH_TIMEOUT", 20.0)
    caplog.set_level(logging.WARNING, logger="a2a_flask")
    with Issuer() as issuer:
        service = Service(make_app, issuer)
        service.clock = service.app_state.tokens._clock = Clock()
        try:
            yield service
        finally:
            issuer.release_jwks()


class Call(threading.Thread):
    """A token call in a thread (and test client) of its own; ``status`` is
    None until it is answered."""

    def __init__(self, service, token):
        super().__init__(daemon=True)
        self.service, self.token, self.status = service, token, None
        self.start()

    def run(self):
        client = self.service.app.test_client()
        self.status = self.service.send(self.token, client=client).status_code


def held_read(service, token):
    """A call that reads the keys, held at the JWKS until the test lets it go."""
    service.issuer.hold_jwks()
    call = Call(service, token)
    assert service.issuer.jwks_asked.wait(30)
    return call


def issuer_failures(caplog):
    """How many reads of the keys failed, by the warnings logged."""
    return sum("did not answer" in r.getMessage() for r in caplog.records)


def test_a_cached_key_serves_while_the_hourly_refresh_hangs(slow, caplog):
    service, issuer = slow, slow.issuer
    assert service.send(issuer.token(sub="a")).status_code == 200
    service.clock.now += oidc.MAX_AGE
    refreshing = held_read(service, issuer.token(sub="b"))  # it found the refresh due
    # Another call with the same key is verified with the cached key meanwhile.
    assert service.send(issuer.token(sub="c")).status_code == 200
    assert issuer_failures(caplog) == 0 and refreshing.status is None  # still hanging
    issuer.release_jwks()
    refreshing.join()
    assert refreshing.status == 200
    assert (issuer.jwks_fetches, issuer_failures(caplog)) == (2, 0)


def test_while_the_issuer_hangs_cached_keys_serve_without_waiting_for_its_retries(
        slow, caplog):
    service, issuer, clock = slow, slow.issuer, slow.clock
    assert service.send(issuer.token(sub="a")).status_code == 200
    # Blackholed from now on: the hourly refresh, then every retry hangs
    # until it times out.
    clock.now += oidc.MAX_AGE
    for attempt in range(2):
        asking = held_read(service, issuer.token(sub="asking-%d" % attempt))
        for n in range(3):
            assert service.send(issuer.token(sub="meanwhile-%d" % n)).status_code == 200
        assert issuer_failures(caplog) == attempt and asking.status is None
        issuer.release_jwks(timed_out=True)
        asking.join()
        assert asking.status == 200  # its key was cached: the failure leaves it be
        assert issuer_failures(caplog) == attempt + 1
        # Within RETRY_INTERVAL of the failure nobody asks again.
        assert service.send(issuer.token(sub="soon-%d" % attempt)).status_code == 200
        assert issuer.jwks_fetches == 2 + attempt
        clock.now += oidc.RETRY_INTERVAL


def test_one_read_of_the_keys_at_a_time_and_a_new_kid_waits_for_it(slow, caplog):
    service, issuer, clock = slow, slow.issuer, slow.clock
    # No keys yet: two calls, one read of the keys; the second waits for it.
    first = held_read(service, issuer.token(sub="first"))
    second = Call(service, issuer.token(sub="second"))
    assert clock.wait_reads(2)  # both reached the verifier
    assert (first.status, second.status) == (None, None)
    issuer.release_jwks()
    first.join()
    second.join()
    assert (first.status, second.status, issuer.jwks_fetches) == (200, 200, 1)
    # An hour later the issuer rotates: two calls find the refresh due, one
    # reads, the other's key is cached and serves.
    old = issuer.key
    issuer.rotate(keep_old=True)
    clock.now += oidc.MAX_AGE
    refreshing = held_read(service, issuer.token(key=old, sub="refreshing"))
    assert service.send(issuer.token(key=old, sub="cached")).status_code == 200
    assert issuer_failures(caplog) == 0 and refreshing.status is None
    assert issuer.jwks_fetches == 2
    # A token of the new key waits for the keys being read, which hold it.
    reads = clock.reads
    rotated = Call(service, issuer.token(sub="rotated"))
    assert clock.wait_reads(reads + 1)
    assert rotated.status is None
    issuer.release_jwks()
    refreshing.join()
    rotated.join()
    assert (refreshing.status, rotated.status) == (200, 200)
    assert (issuer.discovery_fetches, issuer.jwks_fetches) == (1, 2)


def test_a_discovery_document_naming_another_issuer_is_unavailable(make_app, issuer,
                                                                     monkeypatch):
    service = Service(make_app, issuer)
    monkeypatch.setattr(issuer, "discovery", lambda: {"issuer": "https://evil.example",
                                                      "jwks_uri": issuer.url + "/jwks"})
    assert service.send(issuer.token()).status_code == 503


def padded_jwks(issuer, size):
    """The issuer's JWK set as JSON, padded with spaces to ``size`` bytes."""
    body = json.dumps({"keys": [k.jwk() for k in issuer.published]}).encode()
    return body + b" " * (size - len(body))


def test_a_jwks_trickling_in_longer_than_the_timeout_is_given_up(
        make_app, monkeypatch, caplog):
    # Each byte within the socket's timeout, the whole far past FETCH_TIMEOUT:
    # read to its end, it would hold the reading call (and every call waiting
    # for the keys) for 20 s.
    monkeypatch.setattr(oidc, "FETCH_TIMEOUT", 1.0)
    with Issuer() as issuer:
        service = Service(make_app, issuer)
        issuer.jwks_body, issuer.trickle_pause = padded_jwks(issuer, 400), 0.05
        started = time.monotonic()
        assert service.send(issuer.token()).status_code == 503
        assert time.monotonic() - started < 4.0
    assert any("took longer than 1 s" in r.getMessage() for r in caplog.records)


def test_a_jwks_larger_than_the_bound_is_refused(make_app, monkeypatch, caplog):
    monkeypatch.setattr(oidc, "FETCH_MAX_BYTES", 4096)
    with Issuer() as issuer:
        service = Service(make_app, issuer)
        clock = service.app_state.tokens._clock = Clock()
        issuer.jwks_body = padded_jwks(issuer, 64 * 1024)
        assert service.send(issuer.token()).status_code == 503
        assert any("larger than 4096 bytes" in r.getMessage() for r in caplog.records)
        # Within the bound, the same keys serve (asked again after RETRY_INTERVAL).
        issuer.jwks_body = padded_jwks(issuer, 4096)
        clock.now += oidc.RETRY_INTERVAL
        assert service.send(issuer.token()).status_code == 200


# -- settings ------------------------------------------------------------------------


@pytest.mark.parametrize("algorithms", ["none", "HS256", "RS256,HS512", ""])
def test_symmetric_or_no_algorithms_are_refused_at_start(make_app, issuer, algorithms):
    with pytest.raises(ValueError, match="A2A_OIDC_ALGORITHMS"):
        Service(make_app, issuer, A2A_OIDC_ALGORITHMS=algorithms)


def test_an_issuer_needs_an_audience(make_app, issuer):
    with pytest.raises(ValueError, match="A2A_OIDC_AUDIENCE"):
        Service(make_app, issuer, A2A_OIDC_AUDIENCE=None)


def test_es256_when_allowed(make_app):
    with Issuer() as issuer:
        issuer.rotate("ES256")
        service = Service(make_app, issuer)
        assert service.send(issuer.token()).status_code == 200
        narrow = Service(make_app, issuer, A2A_OIDC_ALGORITHMS="RS256",
                         A2A_DATABASE=str(service.app_state.settings.database) + "2")
        assert_refused(narrow, narrow.send(issuer.token()), "signed with 'ES256'")


# -- a host's own tokens beside ------------------------------------------------------


def test_another_issuer_s_jwt_goes_to_the_host_token_hook(make_app, issuer):
    other = Issuer(port=free_port())

    def register_hook(a2a):
        register(a2a)
        a2a.token_caller(lambda token: "host-user" if token == mine else None)

    mine = other.token(sub="x")
    app, a2a = make_app(register_hook, A2A_AUTH="required",
                        A2A_OIDC_ISSUER=issuer.url, A2A_OIDC_AUDIENCE=AUDIENCE)
    client = app.test_client()
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send",
            "params": {"message": message("hi")}}
    host = client.post(WHOAMI, json=body, headers={"Authorization": "Bearer " + mine})
    assert json.loads(host.get_json()["result"]["artifacts"][0]["parts"][0]["text"])[0] \
        == "host:host-user"
    ours = client.post(WHOAMI, json=body,
                       headers={"Authorization": "Bearer " + issuer.token(sub="s")})
    assert json.loads(ours.get_json()["result"]["artifacts"][0]["parts"][0]["text"])[0] \
        == "oidc:s"
    # A token of our issuer that fails is refused, never handed to the host.
    bad = client.post(WHOAMI, json=body,
                      headers={"Authorization": "Bearer " + issuer.token(lifetime=-120)})
    assert bad.status_code == 401 and challenge(bad)["error"] == "invalid_token"


# -- cards -------------------------------------------------------------------------------


def test_cards_declare_openid_connect_and_oauth2_client_credentials(make_app, issuer):
    service = Service(make_app, issuer, A2A_OIDC_TOKEN_URL=issuer.url + "/token",
                      A2A_OIDC_REQUIRED_SCOPES="a2a.call")
    card = service.client.get("/api/v1/agents/payroll/.well-known/agent-card.json").get_json()
    check_answer(200, card)
    proto.validate_card(card)
    oidc_scheme = card["securitySchemes"]["oidc"]
    url = issuer.url + "/.well-known/openid-configuration"
    assert oidc_scheme["type"] == "openIdConnect" and oidc_scheme["openIdConnectUrl"] == url
    assert oidc_scheme["openIdConnectSecurityScheme"]["openIdConnectUrl"] == url
    flows = {"clientCredentials": {"tokenUrl": issuer.url + "/token",
                                   "scopes": {"payroll.read": "payroll.read",
                                              "payroll.write": "payroll.write"}}}
    assert card["securitySchemes"]["oauth2"]["flows"] == flows
    assert card["securitySchemes"]["oauth2"]["oauth2SecurityScheme"]["flows"] == flows
    assert {"oidc": ["payroll.read", "payroll.write"]} in card["security"]
    assert {"schemes": {"oauth2": {"list": ["payroll.read", "payroll.write"]}}} \
        in card["securityRequirements"]
    # whoami has no scopes of its own: the default.
    whoami = service.client.get("/api/v1/agents/whoami/.well-known/agent-card.json").get_json()
    assert {"oidc": ["a2a.call"]} in whoami["security"]


def test_without_a_token_url_no_oauth2_scheme(service):
    card = service.client.get("/api/v1/agents/whoami/.well-known/agent-card.json").get_json()
    assert "oauth2" not in card["securitySchemes"] and "oidc" in card["securitySchemes"]


# -- the extended card needs an authenticated caller, in both versions -----------------


def test_the_extended_card_needs_an_authenticated_caller(service, issuer):
    v03 = {"jsonrpc": "2.0", "id": 1, "method": "agent/getAuthenticatedExtendedCard"}
    v10 = {"jsonrpc": "2.0", "id": 1, "method": "GetExtendedAgentCard"}
    assert service.post(WHOAMI, v03).status_code == 401
    assert service.post(WHOAMI, v10, headers=V10).status_code == 401
    rest = service.client.get("/api/v1/agents/whoami/rest/extendedAgentCard", headers=V10)
    assert rest.status_code == 401
    assert service.post(WHOAMI, v03, issuer.token(lifetime=-120)).status_code == 401
    token = issuer.token()
    skills = service.post(WHOAMI, v03, token).get_json()["result"]["skills"]
    assert [s["id"] for s in skills] == ["whoami", "x"]
    card = service.post(WHOAMI, v10, token, V10).get_json()["result"]
    proto.validate_card(card)
    assert [s["id"] for s in card["skills"]] == ["whoami", "x"]
    rest = service.client.get("/api/v1/agents/whoami/rest/extendedAgentCard",
                              headers=dict(V10, Authorization="Bearer " + token))
    assert [s["id"] for s in rest.get_json()["skills"]] == ["whoami", "x"]


# -- tenants (docs/tenants.md) ------------------------------------------------------


def _v10_send(service, token, tenant=None):
    params = {"message": {"messageId": "m-%s" % time.time(), "role": "ROLE_USER",
                          "parts": [{"text": "hi"}]}}
    if tenant:
        params["tenant"] = tenant
    response = service.post(WHOAMI, {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                                     "params": params}, token, V10)
    return response.status_code, response.get_json()


def test_a_tokens_tenant_claim_is_where_its_caller_acts(make_app, issuer):
    service = Service(make_app, issuer, A2A_TENANTS="acme,beta",
                      A2A_OIDC_TENANT_CLAIM="org")
    token = issuer.token(sub="svc-t", org="acme")
    status, body = _v10_send(service, token, "acme")
    assert status == 200 and "result" in body, body
    for tenant in ("beta", None):
        status, body = _v10_send(service, token, tenant)
        assert status == 404 and body["error"]["message"] == (
            "No agent named 'whoami' can be talked to here."), body
    # No claim: only where no tenant is named.
    plain = issuer.token(sub="svc-t")
    assert _v10_send(service, plain, None)[0] == 200
    assert _v10_send(service, plain, "acme")[0] == 404


def test_the_caller_tenant_hook_names_a_tokens_tenant(make_app, issuer):
    service = Service(make_app, issuer, A2A_TENANTS="acme,beta")
    asked = []

    @service.a2a.caller_tenant
    def tenant_of(caller):
        asked.append((caller.kind, caller.id))
        return "beta" if caller.id == "oidc:svc-beta" else None

    token = issuer.token(sub="svc-beta")
    assert _v10_send(service, token, "beta")[0] == 200
    assert _v10_send(service, token, "acme")[0] == 404
    assert _v10_send(service, issuer.token(sub="svc-other"), "beta")[0] == 404
    assert asked[0] == ("oidc", "oidc:svc-beta")
