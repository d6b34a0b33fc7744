"""``enqueue_turn(live_key=...)``: a turn is queued only while the caller's
key is live, checked by the enqueue's own transaction, so that a
revocation and an enqueue are ordered: a revocation in flight (its UPDATE
not yet committed) makes the enqueue wait for it and then refuse
(PostgreSQL: the key row is share-locked; a plain read would see the key
live and queue the turn after the revocation's cancel)."""

import threading

import pytest

from a2a_flask.storage.base import KeyRow, RememberedKeyRevokedError
from helpers import wait_until
from storage_helpers import msg


def _revoke_sql(storage):
    if "sqlite" in type(storage).__module__:
        return "UPDATE a2a_api_keys SET revoked_at = 'now' WHERE key_hash = ?"
    return "UPDATE a2a_api_keys SET revoked_at = 'now' WHERE key_hash = %s"


def _waiting_on_a_lock(storage):
    with storage.connection() as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND datname = current_database()").fetchone()[0]


def test_an_enqueue_waits_for_a_revocation_in_flight_and_refuses(storage):
    storage.insert_key(KeyRow("key_a", "a2a_aaaa", None, "*", None), "hash-a")
    assert not storage.enqueue_turn("key:key_a", "bg", msg("live"),
                                    live_key="hash-a").replayed
    outcome = []

    def enqueue():
        try:
            outcome.append(storage.enqueue_turn("key:key_a", "bg", msg("late"),
                                                live_key="hash-a"))
        except RememberedKeyRevokedError as exc:
            outcome.append(exc)

    with storage.transaction() as conn:  # the revocation, not committed yet
        conn.execute(_revoke_sql(storage), ("hash-a",))
        thread = threading.Thread(target=enqueue)
        thread.start()
        if "postgres" in type(storage).__module__:
            wait_until(lambda: _waiting_on_a_lock(storage), what="the enqueue waiting")
    thread.join(30)
    assert len(outcome) == 1 and isinstance(outcome[0], RememberedKeyRevokedError)
    assert storage.count_tasks() == 1  # the first one's only
    with pytest.raises(RememberedKeyRevokedError):  # a replay too
        storage.enqueue_turn("key:key_a", "bg", msg("live"), live_key="hash-a")
