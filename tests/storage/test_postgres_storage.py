"""The PostgreSQL backend on a real server (tests/pgfixtures.py): what only it
does (its clock, its pool, its migrations' lock, a server that goes away),
and its operations end to end until the contract suite runs on it too."""

import threading

import psycopg
import pytest

from a2a_flask.storage import base
from a2a_flask.storage.postgres import PostgresStorage
from a2a_flask.storage.postgres.migrations import EXPECTED_VERSION

from helpers import TIMESTAMP, message, wait_until


@pytest.fixture
def storage(postgres_url):
    s = PostgresStorage(postgres_url)
    s.migrate()
    yield s
    s.close()


def sql(url, statement, args=()):
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement, args)
        return cur.fetchall() if cur.description else None


def agent_reply(task_id, context_id, text="hi"):
    return {"kind": "message", "role": "agent", "messageId": "m-" + text,
            "parts": [{"kind": "text", "text": text}], "taskId": task_id,
            "contextId": context_id}


def test_migrations_from_many_threads_at_once_apply_once(postgres_url):
    stores = [PostgresStorage(postgres_url) for _ in range(6)]
    failures = []

    def run(s):
        try:
            s.migrate()
        except Exception as exc:  # pragma: no cover - the failure itself
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert sql(postgres_url, "SELECT version FROM a2a_schema_version") == [(EXPECTED_VERSION,)]
    assert stores[0].schema_version() == stores[0].expected_version() == EXPECTED_VERSION
    assert stores[0].check() == []
    sql(postgres_url, "DROP TABLE a2a_users")
    assert stores[0].check() == ["table a2a_users is missing"]


def test_a_newer_schema_is_refused(storage, postgres_url):
    sql(postgres_url, "UPDATE a2a_schema_version SET version = 99")
    with pytest.raises(base.SchemaError, match="version 99, newer"):
        PostgresStorage(postgres_url).migrate()


def test_a_turn_end_to_end_with_the_databases_clock(storage, postgres_url):
    start = storage.start_turn("alice", "echo", message("hello"))
    assert start.created and not start.replayed
    assert storage.task_state(start.task_id) == "working"
    reply = agent_reply(start.task_id, start.context_id)
    artifacts = [{"artifactId": "a%d" % i, "parts": [{"kind": "text", "text": str(i)}]}
                 for i in range(3)]
    stamp = storage.finish_turn(start.task_id, "alice", "echo", "completed", reply, artifacts)
    assert TIMESTAMP.match(stamp)
    db_now = sql(postgres_url, "SELECT to_char(now() AT TIME ZONE 'UTC',"
                 " 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')")[0][0]
    assert stamp <= db_now
    task = storage.get_task(start.task_id, "alice", "echo")
    assert (task.state, task.updated_at, task.status_message) == ("completed", stamp, reply)
    assert [m["messageId"] for m in task.history] == [start.message["messageId"], "m-hi"]
    assert task.artifacts == artifacts
    assert storage.get_task(start.task_id, "alice", "echo", history_length=1).history == [reply]
    assert storage.get_task(start.task_id, "alice", "echo", history_length=0).history == []
    with pytest.raises(base.NoSuchTaskError):
        storage.get_task(start.task_id, "bob", "echo")
    # a finished task takes no second outcome
    assert storage.finish_turn(start.task_id, "alice", "echo", "failed") is None


def test_a_read_that_shows_no_history_sizes_none_of_it(storage, monkeypatch):
    """A poll's read (historyLength 0, within the answer budget) is the plain
    read: the within-budget one sizes the newest messages (running sums)
    and counts them, for a history it will not show."""
    start = storage.start_turn("alice", "echo", message("hello"))
    reply = agent_reply(start.task_id, start.context_id)
    storage.finish_turn(start.task_id, "alice", "echo", "completed", reply)
    ran = []
    execute = psycopg.Connection.execute

    def spy(self, query, params=None, **kwargs):
        ran.append(query)
        return execute(self, query, params, **kwargs)
    monkeypatch.setattr(psycopg.Connection, "execute", spy)
    task = storage.get_task(start.task_id, "alice", "echo", history_length=0,
                            max_bytes=6 * 1024)
    monkeypatch.undo()
    reads = [query for query in ran if "FROM a2a_tasks" in query]
    assert len(reads) == 1 and "OVER (" not in reads[0] and "count(*)" not in reads[0]
    assert (task.state, task.history, task.status_message, task.history_omitted) == (
        "completed", [], reply, 0)
    # With its history shown, the read sizes it (the test's own check).
    ran.clear()
    monkeypatch.setattr(psycopg.Connection, "execute", spy)
    task = storage.get_task(start.task_id, "alice", "echo", max_bytes=6 * 1024)
    monkeypatch.undo()
    assert any("OVER (" in query for query in ran) and len(task.history) == 2


def test_a_retry_writes_nothing_and_a_reused_id_is_refused(storage):
    msg = message("once")
    first = storage.start_turn("alice", "echo", msg)
    again = storage.start_turn("alice", "echo", dict(msg))
    assert again.replayed and (again.task_id, again.context_id) == (first.task_id, first.context_id)
    with pytest.raises(base.MessageIdReusedError):
        storage.start_turn("alice", "echo", dict(msg, parts=[{"kind": "text", "text": "x"}]))
    assert len(storage.task_history(first.task_id)) == 1


def _waiting_task(storage):
    start = storage.start_turn("alice", "echo", message("ask"))
    storage.finish_turn(start.task_id, "alice", "echo", "input-required",
                        agent_reply(start.task_id, start.context_id, "more?"))
    return start


def test_two_continuations_at_once_exactly_one_runs(storage):
    start = _waiting_task(storage)
    results, barrier = [], threading.Barrier(8)

    def go():
        barrier.wait()
        try:
            results.append(storage.start_turn("alice", "echo", message("go"),
                                              task_id=start.task_id))
        except base.TaskNotWaitingError as exc:
            results.append(exc)

    threads = [threading.Thread(target=go) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [r for r in results if isinstance(r, base.TurnStart)]
    lost = [r for r in results if isinstance(r, base.TaskNotWaitingError)]
    assert len(won) == 1 and len(lost) == 7
    assert {e.state for e in lost} == {"working"}
    assert len(storage.task_history(start.task_id)) == 3  # the losers' messages rolled back


def test_continuation_errors(storage):
    start = _waiting_task(storage)
    with pytest.raises(base.ContextMismatchError):
        storage.start_turn("alice", "echo", message("x"), task_id=start.task_id,
                           context_id="ctx_other")
    with pytest.raises(base.NoSuchTaskError):
        storage.start_turn("bob", "echo", message("x"), task_id=start.task_id)
    storage.cancel_task(start.task_id, "alice", "echo")
    with pytest.raises(base.TaskNotWaitingError) as info:
        storage.start_turn("alice", "echo", message("x"), task_id=start.task_id)
    assert info.value.terminal and info.value.state == "canceled"
    with pytest.raises(base.TaskEndedError) as info:
        storage.cancel_task(start.task_id, "alice", "echo")
    assert info.value.state == "canceled"


def test_cancel_racing_a_finishing_turn_never_changes_the_terminal_state(storage):
    for _ in range(20):
        start = storage.start_turn("alice", "echo", message("race"))
        barrier, outcome = threading.Barrier(2), {}

        # B023: both threads are joined within the iteration that made them.
        def finish():
            barrier.wait()  # noqa: B023
            outcome["finish"] = storage.finish_turn(start.task_id, "alice", "echo", "completed")  # noqa: B023

        def cancel():
            barrier.wait()  # noqa: B023
            try:
                storage.cancel_task(start.task_id, "alice", "echo")  # noqa: B023
                outcome["cancel"] = True  # noqa: B023
            except base.TaskEndedError as exc:
                outcome["cancel"] = exc.state  # noqa: B023

        threads = [threading.Thread(target=finish), threading.Thread(target=cancel)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        state = storage.task_state(start.task_id)
        if outcome["cancel"] is True:
            assert outcome["finish"] is None and state == "canceled"
        else:
            assert outcome["cancel"] == "completed" and state == "completed"


def test_a_stale_turn_is_failed_by_the_databases_clock(postgres_url):
    storage = PostgresStorage(postgres_url, stale_turn_seconds=60)
    storage.migrate()
    start = storage.start_turn("alice", "echo", message("slow"))
    assert storage.get_task(start.task_id, "alice", "echo").state == "working"
    # as if the turn began 2 minutes ago by the database's clock
    sql(postgres_url, "UPDATE a2a_tasks SET updated_at = to_char((now() - interval"
        " '120 seconds') AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')")
    task = storage.get_task(start.task_id, "alice", "echo")
    assert task.state == "failed"
    assert task.status_message["parts"][0]["text"] == base.STALE_TURN_TEXT
    assert task.status_message["contextId"] == start.context_id
    assert task.history[-1] == task.status_message
    assert storage.fail_stale_turn(start.task_id) is False
    assert storage.finish_turn(start.task_id, "alice", "echo", "completed") is None


def test_list_pages_with_the_cursor_newest_first(storage):
    ids = []
    for i in range(7):
        start = storage.start_turn("alice", "echo", message("t%d" % i))
        storage.finish_turn(start.task_id, "alice", "echo", "completed",
                            agent_reply(start.task_id, start.context_id, "r%d" % i))
        ids.append(start.task_id)
    storage.start_turn("bob", "echo", message("other"))
    seen, cursor = [], None
    while True:
        page = storage.list_tasks(owner="alice", agent="echo", limit=3, cursor=cursor,
                                  history_length=1, include_artifacts=True)
        seen.extend(page.tasks)
        cursor = page.next_cursor
        if cursor is None:
            break
    order = sorted(((t.updated_at, t.id) for t in seen), reverse=True)
    assert [t.id for t in seen] == [i for _, i in order]
    assert sorted(t.id for t in seen) == sorted(ids)
    assert all(len(t.history) == 1 and t.history[0]["role"] == "agent" for t in seen)
    assert storage.list_tasks(owner="alice").tasks[0].history == []
    assert len(storage.list_tasks(history_length=None, limit=100).tasks) == 8
    with pytest.raises(ValueError):
        storage.list_tasks(cursor="not a cursor!")


def test_the_listing_uses_an_index(storage, postgres_url):
    plan = sql(postgres_url, "EXPLAIN SELECT id FROM a2a_tasks WHERE owner = 'a' AND"
               " agent = 'b' AND (updated_at, id) < ('x', 'y') ORDER BY updated_at"
               " DESC, id DESC LIMIT 51")
    assert "a2a_tasks_listing" in "\n".join(r[0] for r in plan)


def test_prune_show_counts(storage):
    old = storage.start_turn("alice", "echo", message("old"))
    storage.finish_turn(old.task_id, "alice", "echo", "completed",
                        agent_reply(old.task_id, old.context_id))
    live = storage.start_turn("alice", "echo", message("live"))
    assert storage.task_counts() == {"completed": 1, "working": 1}
    shown = storage.show_task(old.task_id)
    assert shown.owner == "alice" and len(shown.history) == 2 and TIMESTAMP.match(shown.created_at)
    cutoff = "9999-01-01T00:00:00.000Z"
    assert [t.id for t in storage.prunable_tasks(cutoff)] == [old.task_id]
    batches = list(storage.prune(cutoff))
    assert batches == [{"tasks": 1, "messages": 2, "artifacts": 0, "deliveries": 1}]
    assert storage.show_task(old.task_id) is None
    assert storage.task_state(live.task_id) == "working"


def test_export_then_import_keeps_everything(storage, postgres_server):
    sent = message("hello")
    del sent["kind"]  # as received; the stored form adds kind, taskId, contextId
    start = storage.start_turn("alice", "echo", dict(sent), metadata={"k": 1})
    storage.finish_turn(start.task_id, "alice", "echo", "completed",
                        agent_reply(start.task_id, start.context_id),
                        [{"artifactId": "a", "parts": []}])
    exported = [t for batch in storage.export_tasks(batch_size=1) for t in batch]
    other_url = postgres_server.create_db("a2a_test_import_copy")
    try:
        target = PostgresStorage(other_url)
        target.migrate()
        assert target.import_tasks(exported) == 1
        assert [t for b in target.export_tasks() for t in b] == exported
        # the retry record came along: the same message is a replay there too
        assert target.start_turn("alice", "echo", dict(sent)).replayed
        target.close()
    finally:
        postgres_server.drop_db("a2a_test_import_copy")


def test_keys_and_users(storage):
    key = base.KeyRow("key_1", "a2a_abc", "ci", "*", "2026-01-01T00:00:00.000Z")
    assert TIMESTAMP.match(storage.insert_key(key, "hash1").created_at)
    assert storage.find_key("hash1").astuple() == key.astuple()
    assert storage.touch_keys(["key_1", "key_nope"], "2026-01-01T00:00:00.000Z") == 1
    assert TIMESTAMP.match(storage.keys()[0].last_used_at)
    assert storage.touch_keys(["key_1"], "2000-01-01T00:00:00.000Z") == 0
    storage.revoke_key("key_1")
    storage.revoke_key("key_1")  # twice: no change, no error
    assert storage.find_key("hash1") is None
    assert storage.keys()[0].revoked_at is not None
    with pytest.raises(base.KeyNotFoundError):
        storage.revoke_key("key_nope")
    assert not storage.has_users()
    storage.insert_user("ann", "h")
    with pytest.raises(base.UserExistsError):
        storage.insert_user("ann", "h2")
    assert storage.password_hash("ann") == "h" and storage.has_users()
    assert [u[0] for u in storage.users()] == ["ann"]
    storage.delete_user("ann")
    with pytest.raises(base.UserNotFoundError):
        storage.delete_user("ann")


def test_a_server_that_is_down_is_storage_unavailable_then_comes_back(postgres_server):
    """Down at boot: a clear retryable error, no crash; up again: served,
    without a new Storage (no restart)."""
    from pgcluster import Cluster, FAST

    if not isinstance(postgres_server, Cluster):
        pytest.skip("needs a throwaway cluster to stop and start")
    cluster = Cluster(settings=FAST).start()
    try:
        url = cluster.create_db("a2a_down")
        storage = PostgresStorage(url, busy_timeout_ms=1000)
        cluster.pause()
        with pytest.raises(base.StorageUnavailableError) as info:
            storage.start_turn("alice", "echo", message("while down"))
        assert info.value.kept_task_id is None
        cluster.resume()
        import time

        deadline = time.monotonic() + 20
        while True:
            try:
                start = storage.start_turn("alice", "echo", message("after"))
                break
            except base.StorageUnavailableError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        assert storage.task_state(start.task_id) == "working"
        # and again, with the pool's connections now broken by a restart
        cluster.pause()
        cluster.resume()
        deadline = time.monotonic() + 20
        while True:
            try:
                assert storage.get_task(start.task_id, "alice", "echo").state == "working"
                break
            except base.StorageUnavailableError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        storage.close()
    finally:
        cluster.stop()


def test_after_a_long_outage_the_first_call_back_is_served(postgres_server, monkeypatch,
                                                           caplog):
    """psycopg_pool doubles its pause between connection attempts for as long
    as one round lasts: unbounded, a pool down for an hour would sleep on
    for up to an hour after the server's return. Rounds end after
    ``RECONNECT_SECONDS`` and a call that finds no connection starts the next,
    so the first call after the return is served. Time is scaled down here:
    the pool's first pause 0.05 s, a round 0.5 s, an outage of 7.5 s."""
    import time

    import psycopg_pool.base
    from pgcluster import Cluster, FAST
    from a2a_flask.storage.postgres import connection

    if not isinstance(postgres_server, Cluster):
        pytest.skip("needs a throwaway cluster to stop and start")
    attempt = getattr(psycopg_pool.base, "AttemptWithBackoff", None)
    if attempt is None:  # psycopg_pool < 3.2
        attempt = psycopg_pool.base.ConnectionAttempt
    monkeypatch.setattr(attempt, "INITIAL_DELAY", 0.05)
    monkeypatch.setattr(connection, "RECONNECT_SECONDS", 0.5)
    cluster = Cluster(settings=FAST).start()
    try:
        storage = PostgresStorage(cluster.create_db("a2a_back"), busy_timeout_ms=1000)
        storage.migrate()
        start = storage.start_turn("alice", "echo", message("before"))
        cluster.pause()
        down_until = time.monotonic() + 7.5
        failed = 0
        while time.monotonic() < down_until:
            with pytest.raises(base.StorageUnavailableError):
                storage.task_state(start.task_id)
            failed += 1
            time.sleep(0.2)
        cluster.resume()
        assert storage.task_state(start.task_id) == "working"
        assert failed >= 4  # the calls during the outage kept the pool trying
        # psycopg_pool warned of dozens of failed attempts: one line a minute
        attempts = [r for r in caplog.records if r.name == "psycopg.pool"
                    and r.getMessage().startswith("error connecting in 'a2a_flask'")]
        assert len(attempts) <= 1
        storage.close()
    finally:
        cluster.stop()


def test_a_restart_of_the_server_fails_no_call(postgres_server):
    """The server restarted closes every connection idle in the pool; each is
    found closed when taken (its socket readable) and replaced, so no call
    after the restart fails (6 of 12 did, one per connection)."""
    from pgcluster import Cluster, FAST

    if not isinstance(postgres_server, Cluster):
        pytest.skip("needs a throwaway cluster to stop and start")
    cluster = Cluster(settings=FAST).start()
    try:
        storage = PostgresStorage(cluster.create_db("a2a_restart"), busy_timeout_ms=1000)
        storage.migrate()
        start = storage.start_turn("alice", "echo", message("before"))
        ready = threading.Barrier(6)

        def read_together():  # six at once: six connections in the pool
            ready.wait()
            for _ in range(20):
                storage.task_state(start.task_id)

        readers = [threading.Thread(target=read_together) for _ in range(6)]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join()
        assert storage._get_pool().get_stats()["pool_size"] >= 4
        cluster.pause()
        cluster.resume()
        states = [storage.task_state(start.task_id) for _ in range(12)]
        assert states == ["working"] * 12
        again = storage.start_turn("alice", "echo", message("after"))
        assert storage.task_state(again.task_id) == "working"
        storage.close()
    finally:
        cluster.stop()


def test_psycopg_pool_warnings_about_our_pool_come_once_a_minute(monkeypatch):
    """(A minute scaled to 0.3 s here.)"""
    import logging
    import time

    from a2a_flask.storage.postgres import connection

    monkeypatch.setattr(connection, "POOL_WARNING_SECONDS", 0.3)
    only = connection.PoolWarnings()

    def admitted(msg, *args):
        return only.filter(logging.LogRecord("psycopg.pool", logging.WARNING, __file__,
                                             0, msg, args, None))

    refused = "error connecting in %r: %s"
    assert admitted(refused, "a2a_flask", "refused")
    assert not admitted(refused, "a2a_flask", "refused again")
    assert admitted("reconnection attempt in pool %r failed after %s sec", "a2a_flask", 5)
    assert admitted(refused, "the_host_s_pool", "refused")  # not ours: untouched
    assert admitted("discarding closed connection: %s", "<conn>")
    time.sleep(0.35)
    assert admitted(refused, "a2a_flask", "refused")


def test_waiters_read_on_a_timer_while_the_listening_connection_is_down(
        storage, postgres_url):
    """The process's listening connection (LISTEN a2a_changes) killed: the
    change marker is None (waiters read on the timer) until it listens
    again; then it moves with the next NOTIFY again."""
    wait_until(lambda: storage.change_marker() is not None, timeout=10)
    before = storage.change_marker()
    assert sql(postgres_url, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
               " WHERE datname = current_database() AND query = 'LISTEN a2a_changes'"
               ) == [(True,)]
    wait_until(lambda: storage.change_marker() is None, timeout=10,
               what="the listener noticed")
    wait_until(lambda: storage.change_marker() is not None, timeout=10,
               what="listening again")
    again = storage.change_marker()
    assert again != before
    storage.enqueue_turn("alice", "bg", message("x"))
    wait_until(lambda: storage.change_marker() != again, timeout=10)
