"""Credentials and proxies (issue 18): any credential presented that is
invalid refuses the call, whatever else is valid; the Basic throttle counts
per (address, name), per address whatever the names (issue 32), with a much
higher per-name limit across addresses, and reads the client address
through A2A_TRUSTED_PROXIES only."""

import base64
import os
import re

import pytest

from helpers import assert_401, message
from serving import REPO_DIR

ECHO = "/api/v1/agents/echo/a2a"
REST_LIST = "/api/v1/agents/echo/rest/tasks"


def basic(name, password):
    pair = ("%s:%s" % (name, password)).encode()
    return {"Authorization": "Basic " + base64.b64encode(pair).decode()}


def bearer(key):
    return {"Authorization": "Bearer " + key}


def send(client, headers, environ=None):
    return client.post(ECHO, headers=headers, environ_base=environ or {},
                       json={"jsonrpc": "2.0", "id": 1, "method": "message/send",
                             "params": {"message": message()}})


@pytest.fixture
def service(keyed):
    def build(**config):
        one, two = keyed("one", "two", **config)
        credentials = one.app.extensions["a2a"].credentials
        credentials.create_user("alice", "right")
        credentials.create_user("bob", "pw")
        return one.client, one.key, two.key
    return build


def test_an_invalid_credential_beside_a_valid_one_is_refused(service):
    client, key, other_key = service()
    bad = "a2a_" + "x" * 43
    refused = [
        dict(bearer(bad), **{"X-API-Key": key}),
        dict(bearer(key), **{"X-API-Key": bad}),
        dict(basic("alice", "wrong"), **{"X-API-Key": key}),
        dict(basic("alice", "right"), **{"X-API-Key": bad}),
        # Both valid, two callers: which one would own the task?
        dict(basic("alice", "right"), **{"X-API-Key": key}),
        dict(bearer(other_key), **{"X-API-Key": key}),
    ]
    for headers in refused:
        assert_401(send(client, headers))
        response = client.get(REST_LIST, headers=dict(headers, **{"A2A-Version": "1.0"}))
        assert response.status_code == 401, headers
    # Each alone, or the same key twice, is fine.
    for headers in (bearer(key), {"X-API-Key": key}, basic("alice", "right"),
                    dict(bearer(key), **{"X-API-Key": key})):
        assert send(client, headers).status_code == 200, headers


BEHIND_NGINX = {"REMOTE_ADDR": "127.0.0.1"}


def _from(address):
    return {"X-Forwarded-For": address}


def test_one_attacker_behind_the_proxy_does_not_lock_out_other_users(service):
    client, _, _ = service(A2A_TRUSTED_PROXIES="127.0.0.1")
    for _ in range(40):
        response = send(client, dict(basic("alice", "guess"), **_from("1.2.3.4")),
                        BEHIND_NGINX)
    assert response.status_code == 429 and response.headers["Retry-After"]
    # Another user, from the same address and from another: let in.
    assert send(client, dict(basic("bob", "pw"), **_from("1.2.3.4")),
                BEHIND_NGINX).status_code == 200
    assert send(client, dict(basic("bob", "pw"), **_from("5.6.7.8")),
                BEHIND_NGINX).status_code == 200
    # The owner of the name, from their own address (password not yet
    # verified by this worker): let in too.
    assert send(client, dict(basic("alice", "right"), **_from("5.6.7.8")),
                BEHIND_NGINX).status_code == 200


def test_a_client_cannot_choose_its_address_by_forwarding_headers(service):
    client, _, _ = service(A2A_TRUSTED_PROXIES="127.0.0.1")
    direct = {"REMOTE_ADDR": "10.9.8.7"}  # not the trusted proxy
    statuses = [send(client, dict(basic("alice", "guess"),
                                  **_from("192.0.2.%d" % n)), direct).status_code
                for n in range(8)]
    assert statuses == [401] * 5 + [429] * 3
    # Through the proxy, the client's own entry is the one nginx appended
    # (the last): an address the client put first is not believed.
    statuses = [send(client, dict(basic("alice", "guess"),
                                  **_from("192.0.2.%d, 1.2.3.4" % n)),
                     BEHIND_NGINX).status_code for n in range(8)]
    assert statuses == [401] * 5 + [429] * 3


def test_the_per_name_limit_across_addresses_is_higher_and_spares_a_verified_password(
        service):
    client, _, _ = service(A2A_TRUSTED_PROXIES="127.0.0.1",
                           A2A_LOGIN_FAILURES_PER_NAME_PER_MINUTE=12)
    assert send(client, basic("alice", "right"), BEHIND_NGINX).status_code == 200
    statuses = [send(client, dict(basic("alice", "guess"),
                                  **_from("198.51.100.%d" % n)),
                     BEHIND_NGINX).status_code for n in range(13)]
    # Past the name's limit an address gets one try a minute at it.
    assert statuses == [401] * 13
    statuses = [send(client, dict(basic("alice", "guess"),
                                  **_from("198.51.100.%d" % n)),
                     BEHIND_NGINX).status_code for n in range(13)]
    assert statuses == [429] * 13
    # The password this worker verified keeps working, from anywhere.
    assert send(client, dict(basic("alice", "right"), **_from("198.51.100.1")),
                BEHIND_NGINX).status_code == 200


def test_the_owner_of_a_name_under_attack_logs_in_from_a_new_address(service):
    # alice never logged in on this worker: nothing of hers is remembered.
    client, _, _ = service(A2A_TRUSTED_PROXIES="127.0.0.1",
                           A2A_LOGIN_FAILURES_PER_NAME_PER_MINUTE=12)
    for n in range(12):
        assert send(client, dict(basic("alice", "guess"), **_from("198.51.100.%d" % n)),
                    BEHIND_NGINX).status_code == 401
    # An address that failed for alice lately waits...
    refused = send(client, dict(basic("alice", "right"), **_from("198.51.100.3")),
                   BEHIND_NGINX)
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
    # ...but from a new one, her password is checked, and it is right.
    assert send(client, dict(basic("alice", "right"), **_from("203.0.113.7")),
                BEHIND_NGINX).status_code == 200
    # Now verified here, it works from the address that waited too.
    assert send(client, dict(basic("alice", "right"), **_from("198.51.100.3")),
                BEHIND_NGINX).status_code == 200


@pytest.fixture
def hash_calls(monkeypatch):
    import a2a_flask.auth.passwords as passwords

    calls = []
    real = passwords.check_password

    def counting(stored, password):
        calls.append(1)
        return real(stored, password)

    monkeypatch.setattr(passwords, "check_password", counting)
    return calls


def test_new_names_from_one_address_are_throttled_per_address(service, hash_calls):
    client, _, _ = service(A2A_TRUSTED_PROXIES="127.0.0.1")
    attacker = _from("192.0.2.10")
    statuses = [send(client, dict(basic("nobody%d" % n, "guess"), **attacker),
                     BEHIND_NGINX).status_code for n in range(30)]
    assert statuses == [401] * 30  # A2A_LOGIN_FAILURES_PER_ADDRESS: 30 by default
    hashes = len(hash_calls)
    assert hashes == 30  # an unknown name costs the dummy hash
    for n in range(30, 40):
        response = send(client, dict(basic("nobody%d" % n, "guess"), **attacker),
                        BEHIND_NGINX)
        assert response.status_code == 429, response.data
        assert 0 < int(response.headers["Retry-After"]) <= 61
        error = response.get_json()["error"]
        assert error["code"] == -32600 and "from this address" in error["message"]
    # A real user at that address (not yet verified here) waits too...
    assert send(client, dict(basic("bob", "pw"), **attacker),
                BEHIND_NGINX).status_code == 429
    assert len(hash_calls) == hashes  # refused attempts hash nothing
    # ...another address does not.
    assert send(client, dict(basic("bob", "pw"), **_from("192.0.2.11")),
                BEHIND_NGINX).status_code == 200
    assert send(client, dict(basic("nobody99", "guess"), **_from("192.0.2.12")),
                BEHIND_NGINX).status_code == 401


def test_the_per_address_limit_is_a_setting(service):
    client, _, _ = service(A2A_LOGIN_FAILURES_PER_ADDRESS=3)
    statuses = [send(client, basic("nobody%d" % n, "guess")).status_code
                for n in range(5)]
    assert statuses == [401] * 3 + [429] * 2


def test_a_full_throttle_forgets_no_live_count(service, monkeypatch):
    import a2a_flask.auth.credentials as credentials
    import a2a_flask.auth.throttle as throttle_module

    client, _, _ = service(A2A_TRUSTED_PROXIES="127.0.0.1")
    throttle = client.application.extensions["a2a"].login_throttle
    monkeypatch.setattr(throttle_module, "MAX_KEYS", 60)  # main's module limit
    monkeypatch.setattr(throttle, "max_keys", 60, raising=False)
    now = [1000.0]
    monkeypatch.setattr(throttle, "clock", lambda: now[0])
    # Unknown names cost a slow hash; not the point here.
    monkeypatch.setattr(credentials, "_check_dummy_password", lambda password: None)
    victim = _from("1.2.3.4")
    for _ in range(4):  # one short of the (address, name) limit
        assert send(client, dict(basic("alice", "guess"), **victim),
                    BEHIND_NGINX).status_code == 401
    # A flood of new addresses and names: 3 counts each, the table (alice's
    # 3 and 19 x 3) is full, then the rest share one overflow count (30).
    statuses = [send(client, dict(basic("new%d" % n, "x"), **_from("10.0.%d.%d" % (n // 200, n % 200))),
                     BEHIND_NGINX).status_code for n in range(100)]
    # alice's count at 1.2.3.4 was kept: one more try, then 429.
    assert send(client, dict(basic("alice", "guess"), **victim),
                BEHIND_NGINX).status_code == 401
    assert send(client, dict(basic("alice", "guess"), **victim),
                BEHIND_NGINX).status_code == 429
    assert statuses == [401] * (19 + 30) + [429] * 51
    assert len(throttle._failures) <= 60
    # A minute later everything is spent: new addresses are checked again.
    now[0] += 61
    assert send(client, dict(basic("new1000", "x"), **_from("10.9.9.9")),
                BEHIND_NGINX).status_code == 401
    assert len(throttle._failures) <= 3


def test_the_shipped_config_trusts_the_shipped_nginx_only():
    with open(os.path.join(REPO_DIR, "deploy", "a2a.env")) as f:
        env = f.read()
    assert re.search(r"^A2A_TRUSTED_PROXIES=127\.0\.0\.1$", env, re.M)
    site = ""
    for name in ("nginx-a2a.conf", "nginx-a2a-proxy.conf"):  # the site, its include
        with open(os.path.join(REPO_DIR, "deploy", name)) as f:
            site += f.read()
    assert "server 127.0.0.1:" in site
    assert "X-Forwarded-For $proxy_add_x_forwarded_for" in site


def test_attempts_in_flight_hold_their_tries():
    """Threads of one worker checking at once cannot all pass at the last
    free try: an attempt let through counts until it fails or passes."""
    from a2a_flask.auth.throttle import LoginThrottle
    from a2a_flask.errors import TooManyRequestsError

    throttle = LoginThrottle(address_limit=2, clock=lambda: 1000.0)
    throttle.check("10.0.0.1", "n1")
    throttle.check("10.0.0.1", "n2")  # both hashing now, nothing failed yet
    with pytest.raises(TooManyRequestsError) as refused:
        throttle.check("10.0.0.1", "n3")
    assert refused.value.headers == {"Retry-After": "60"}
    throttle.passed("10.0.0.1", "n1")  # a right password: its try is back
    throttle.check("10.0.0.1", "n4")
    throttle.failed("10.0.0.1", "n2")  # counted: 1 failure + n4 in flight
    with pytest.raises(TooManyRequestsError):
        throttle.check("10.0.0.1", "n5")
    throttle.failed("10.0.0.1", "n4")
    with pytest.raises(TooManyRequestsError):  # 2 failures within the minute
        throttle.check("10.0.0.1", "n6")
    throttle.check("10.0.0.2", "n6")  # another address has its own tries


def test_a_password_check_that_fails_with_an_error_gives_its_try_back(keyed):
    """A host's check that raises (its identity provider down) is no wrong
    password: after more such errors than the address may fail, a try is
    still let through."""
    broken = {"on": True}

    def register(a2a):
        @a2a.password_check
        def check(name, password):
            if broken["on"]:
                raise RuntimeError("identity provider down")
            return None

    one, = keyed("one", A2A_LOGIN_FAILURES_PER_ADDRESS=3, register=register)
    statuses = [send(one.client, basic("carol%d" % n, "pw")).status_code
                for n in range(5)]
    assert statuses == [200] * 5  # each answered with a JSON-RPC error
    broken["on"] = False
    statuses = [send(one.client, basic("carol%d" % n, "pw")).status_code
                for n in range(5)]
    assert statuses == [401] * 3 + [429] * 2
