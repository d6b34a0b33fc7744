"""At most ``WRITERS`` write statements of one process are in SQLite at
once (issue 31): a later one waits its turn in the process, not in SQLite's
busy handler, and within A2A_BUSY_TIMEOUT_MS all told: past it the write
is refused as busy and nothing is stored."""

import threading
import time

import pytest

from a2a_flask.storage.errors import StorageBusyError
from a2a_flask.storage.sqlite import SqliteStorage
from storage_helpers import msg

OWNER, AGENT = "key:key_1", "echo"


def _storage(tmp_path, busy_timeout_ms=5000):
    storage = SqliteStorage(str(tmp_path / "writers.sqlite3"),
                            busy_timeout_ms=busy_timeout_ms)
    storage.migrate()
    return storage


def test_a_write_past_the_slots_is_busy_within_the_timeout_and_stores_nothing(tmp_path):
    storage = _storage(tmp_path, busy_timeout_ms=300)
    writers = storage._connection_pool().writers
    for _ in range(storage.WRITERS):  # every slot taken, as by writes in progress
        assert writers.take(1)
    try:
        began = time.monotonic()
        with pytest.raises(Exception) as refused:
            storage.start_turn(OWNER, AGENT, msg("late"))
        waited = time.monotonic() - began
        assert isinstance(storage.failure(refused.value), StorageBusyError)
        assert 0.25 <= waited < 2.0
    finally:
        for _ in range(storage.WRITERS):
            writers.give_back()
    assert storage.count_tasks() == 0
    storage.start_turn(OWNER, AGENT, msg("again"))
    assert storage.count_tasks() == 1


def test_a_write_waits_for_a_slot_then_runs(tmp_path):
    storage = _storage(tmp_path)
    writers = storage._connection_pool().writers
    for _ in range(storage.WRITERS):
        assert writers.take(1)
    done = []
    writer = threading.Thread(target=lambda: done.append(
        storage.start_turn(OWNER, AGENT, msg("queued"))))
    writer.start()
    time.sleep(0.3)
    assert done == [] and storage.count_tasks() == 0  # waiting for a slot
    writers.give_back()
    writer.join(10)
    for _ in range(storage.WRITERS - 1):
        writers.give_back()
    assert len(done) == 1 and storage.count_tasks() == 1


def test_many_threads_writing_at_once_never_exceed_the_slots(tmp_path):
    storage = _storage(tmp_path)
    pool = storage._connection_pool()
    inside, most, lock = [0], [0], threading.Lock()
    real = pool.writers

    class Counted:
        """The pool's slots, counting the writes holding one."""

        def take(self, timeout):
            got = real.take(timeout)
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            return got

        def give_back(self):
            with lock:
                inside[0] -= 1
            real.give_back()

    pool.writers = Counted()
    start, failures = threading.Barrier(32), []

    def send(n):
        try:
            start.wait()
            storage.start_turn(OWNER, AGENT, msg("m%d" % n))
        except Exception as exc:  # pragma: no cover - shown below
            failures.append(repr(exc))

    threads = [threading.Thread(target=send, args=(n,)) for n in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == []
    assert storage.count_tasks() == 32
    assert 1 <= most[0] <= storage.WRITERS == 4
