"""A send to a background agent already past its key check when ``keys
revoke`` runs (revoked, the key's queued turns canceled) must not queue a
turn after all: the enqueue itself checks that the key is still live, and
the send is answered 401 as a revoked key is, nothing stored. On SQLite and
PostgreSQL, for a key looked up by the call and for one remembered live."""

import pytest

from helpers import assert_401, message

BG = "/api/v1/agents/bg/a2a"


@pytest.fixture(params=["sqlite", "postgres"])
def app(request, make_app):
    def register(a2a):  # no worker runs here: its turns stay queued
        a2a.add_agent("bg", lambda turn: "done", background=True)

    config = dict(A2A_AUTH="required")
    if request.param == "postgres":
        config["A2A_DATABASE"] = request.getfixturevalue("postgres_url")
    return make_app(register, **config)[0]


def _send(client, secret):
    return client.post(BG, headers={"Authorization": "Bearer " + secret}, json={
        "jsonrpc": "2.0", "id": 1, "method": "message/send",
        "params": {"message": message(), "configuration": {"blocking": False}}})


@pytest.mark.parametrize("remembered", [False, True])
def test_a_key_revoked_between_its_check_and_the_enqueue_queues_nothing(
        app, monkeypatch, remembered):
    runtime = app.extensions["a2a"]
    key, secret = runtime.credentials.create_key(["bg"])
    client = app.test_client()
    if remembered:  # a first send looks the key up and remembers it live
        assert _send(client, secret).get_json()["result"]["status"]["state"] == "working"
    storage = runtime.storage
    tasks = storage.count_tasks()
    enqueue_turn = storage.enqueue_turn
    revoked = []

    def revoked_meanwhile(*args, **kwargs):
        # The call has checked its key; the CLI revokes it now, canceling
        # the key's queued turns (this one not queued yet).
        revoked.append(runtime.credentials.revoke_key(key.id))
        return enqueue_turn(*args, **kwargs)

    monkeypatch.setattr(storage, "enqueue_turn", revoked_meanwhile)
    response = _send(client, secret)
    assert [len(canceled) for canceled in revoked] == [tasks]  # the first send's
    assert_401(response)
    assert response.get_json()["message"] == "The API key is not valid: unknown or revoked."
    assert storage.count_tasks() == tasks  # nothing stored, nothing queued
    assert storage.claim_turns("w1", 10, 60) == []
