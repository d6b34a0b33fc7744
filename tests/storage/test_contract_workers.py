"""Claimers' heartbeats in the storage contract (``note_worker``,
``worker_last_seen``), on every backend: what ``/health`` reads to say that
background turns have nobody to run them."""

from datetime import datetime, timedelta, timezone

from a2a_flask.storage.common import WORKER_ROWS_KEPT_SECONDS, now_iso


def _seen_ago(storage, worker, seconds):
    """Make ``worker``'s heartbeat look ``seconds`` old (the storage's clock
    cannot be moved: PostgreSQL's is the server's)."""
    stamp = now_iso(datetime.now(timezone.utc) - timedelta(seconds=seconds))
    with storage.transaction() as conn:  # SQL text both drivers take as is
        assert conn.execute("UPDATE a2a_workers SET seen_at = '%s' WHERE id = '%s'"
                            % (stamp, worker)).rowcount == 1


def test_no_heartbeat_is_none(storage):
    assert storage.worker_last_seen() is None


def test_the_newest_heartbeat_is_what_is_seen(storage):
    assert storage.note_worker("w1") is True
    assert 0 <= storage.worker_last_seen() < 5
    _seen_ago(storage, "w1", 100)
    assert 99 <= storage.worker_last_seen() < 110
    assert storage.note_worker("w2") is True
    assert 0 <= storage.worker_last_seen() < 5
    assert storage.note_worker("w1") is True  # seen again: one row still
    _seen_ago(storage, "w1", 100)
    assert storage.note_worker("w2", alive=False) is True
    assert 99 <= storage.worker_last_seen() < 110


def test_a_stopped_claimer_is_forgotten_once(storage):
    storage.note_worker("w1")
    assert storage.note_worker("w1", alive=False) is True
    assert storage.note_worker("w1", alive=False) is False
    assert storage.worker_last_seen() is None


def test_rows_unseen_for_long_are_pruned_by_the_next_heartbeat(storage):
    storage.note_worker("old")
    _seen_ago(storage, "old", WORKER_ROWS_KEPT_SECONDS + 60)
    storage.note_worker("new")
    assert storage.note_worker("new", alive=False) is True
    assert storage.worker_last_seen() is None  # "old" went with new's write
