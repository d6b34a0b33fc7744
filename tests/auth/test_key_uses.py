"""The last use of API keys: the uses of one second are recorded in one
write (a2a_flask/auth/key_uses.py), at once for the first, within a second
for the rest, and a refused write fails no call."""

import time

import pytest

from a2a_flask.storage.errors import StorageBusyError
from helpers import bearer, message

ECHO = "/api/v1/agents/echo/a2a"


def send():
    return {"jsonrpc": "2.0", "id": 1, "method": "message/send",
            "params": {"message": message("hello")}}


@pytest.fixture
def svc(make_app):
    app, _ = make_app(None, A2A_AUTH="required")
    state = app.extensions["a2a"]
    storage = state.storage
    writes = []
    touch_keys = storage.touch_keys

    def counted(key_ids, older_than):
        writes.append(list(key_ids))
        return touch_keys(key_ids, older_than)

    storage.touch_keys = counted  # this app's storage object only
    app.writes = writes
    app.credentials = state.credentials
    return app


def call(app, secret):
    answer = app.test_client().post(ECHO, json=send(), headers=bearer(secret)).get_json()
    assert answer["result"]["status"]["state"] == "completed", answer


def last_used(app):
    """As stored (``Credentials.keys`` adds the uses not written yet)."""
    return {key.id: key.last_used_at for key in app.credentials.storage.keys()}


def wait_until(predicate, seconds=10.0):
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "not within %s s" % seconds
        time.sleep(0.02)


def test_the_uses_of_one_second_are_written_in_one_write(svc):
    keys = [svc.credentials.create_key(None, "k%d" % i) for i in range(5)]
    for key, secret in keys:
        call(svc, secret)
    # The first use is written at once, with its call.
    assert svc.writes[0] == [keys[0][0].id]
    assert last_used(svc)[keys[0][0].id] is not None
    # The other four within a second, together, by the timer.
    wait_until(lambda: all(last_used(svc).values()))
    assert svc.writes == [[keys[0][0].id], sorted(key.id for key, _ in keys[1:])]
    # Used again within the minute: nothing more to write.
    for key, secret in keys:
        call(svc, secret)
    time.sleep(1.2)
    assert len(svc.writes) == 2


def test_a_refused_write_fails_no_call_and_is_tried_with_the_next_uses(svc, monkeypatch):
    (first, first_secret), (second, second_secret) = (
        svc.credentials.create_key(None, "a"), svc.credentials.create_key(None, "b"))
    storage = svc.credentials.storage
    counted = storage.touch_keys

    def busy(key_ids, older_than):
        svc.writes.append(list(key_ids))
        raise StorageBusyError("The storage is busy (another writer holds it)")

    storage.touch_keys = busy
    call(svc, first_secret)  # the call is answered all the same
    assert last_used(svc)[first.id] is None
    storage.touch_keys = counted
    uses = svc.credentials._uses
    monkeypatch.setattr(uses, "_written_at", time.monotonic() - 2)  # a second later
    call(svc, second_secret)
    assert svc.writes == [[first.id], sorted([first.id, second.id])]
    assert all(last_used(svc).values())


EXITING = r"""
import sys
sys.path[:0] = [%(tests)r]
from flask import Flask
from a2a_flask import A2A
app = Flask("exiting")
app.config.update(A2A_DATABASE=%(db)r, A2A_AUTH="required")
a2a = A2A(app)
a2a.add_agent("echo", lambda turn: turn.text)
credentials = app.extensions["a2a"].credentials
client = app.test_client()
for label in ("a", "b", "c"):
    _, secret = credentials.create_key(None, label)
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "kind": "message", "role": "user", "messageId": "m-" + label,
        "parts": [{"kind": "text", "text": "hi"}]}}}
    answer = client.post("/api/v1/agents/echo/a2a", json=body,
                         headers={"Authorization": "Bearer " + secret}).get_json()
    assert answer["result"]["status"]["state"] == "completed", answer
"""


def test_the_uses_noted_are_written_when_the_process_exits(tmp_path):
    """A worker recycled or stopped right after its calls: the uses of its
    last second are written as it exits (its timer thread would die)."""
    import os
    import subprocess
    import sys

    from a2a_flask.storage.sqlite import SqliteStorage

    db = str(tmp_path / "exit.sqlite3")
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, "-c", EXITING % {"db": db, "tests": tests}],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    storage = SqliteStorage(db)
    try:
        assert sorted(k.label for k in storage.keys() if k.last_used_at) == ["a", "b", "c"]
    finally:
        storage.close()
