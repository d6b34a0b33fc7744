"""The storage contract, continued: listing with cursors, operations, bulk
copy, keys and users, and the races (the backends of conftest.py; the
racers are separate storage objects: separate connections)."""

import threading
from datetime import datetime, timezone

import pytest

from a2a_flask.storage.base import (
    KeyNotFoundError, RememberedKeyRevokedError, KeyRow, MessageIdReusedError, TaskEndedError, NoSuchTaskError,
    TaskNotWaitingError, UserExistsError, UserNotFoundError,
)
from storage_helpers import agent_reply, finished, msg, set_updated_at



# -- listing ----------------------------------------------------------------------

def test_list_filters_newest_first_with_cursor_pages(storage):
    made = [finished(storage, text="t%d" % i) for i in range(7)]
    waiting = finished(storage, "input-required", text="w")
    finished(storage, owner="bob", text="bob's")
    finished(storage, agent="chat", text="chat's")
    page = storage.list_tasks(owner="alice", agent="echo", limit=3)
    seen = [t.id for t in page.tasks]
    while page.next_cursor is not None:
        page = storage.list_tasks(owner="alice", agent="echo", limit=3,
                                  cursor=page.next_cursor)
        seen.extend(t.id for t in page.tasks)
    tasks = [storage.get_task(s.task_id, "alice", "echo") for s in made + [waiting]]
    expected = [t.id for t in sorted(tasks, key=lambda t: (t.updated_at, t.id),
                                     reverse=True)]
    assert seen == expected  # newest update first (ties: id), each once
    only = storage.list_tasks(owner="alice", agent="echo", state="input-required")
    assert [t.id for t in only.tasks] == [waiting.task_id]
    assert only.next_cursor is None and only.tasks[0].history == []
    ctx = storage.list_tasks(context_id=waiting.context_id, history_length=None,
                             include_artifacts=True)
    assert [len(t.history) for t in ctx.tasks] == [2]
    after = storage.list_tasks(owner="alice", agent="echo",
                               updated_after=ctx.tasks[0].updated_at)
    assert waiting.task_id not in [t.id for t in after.tasks]
    with pytest.raises(ValueError):
        storage.list_tasks(cursor="not a cursor")


def test_count_tasks_counts_what_list_tasks_pages_through(storage):
    made = [finished(storage, text="t%d" % i) for i in range(5)]
    waiting = finished(storage, "input-required", text="w")
    finished(storage, owner="bob", text="bob's")
    finished(storage, agent="chat", text="chat's")
    assert storage.count_tasks(owner="alice", agent="echo") == 6
    assert storage.count_tasks(owner="alice") == 7
    assert storage.count_tasks() == 8
    assert storage.count_tasks(owner="alice", agent="echo",
                               state="input-required") == 1
    assert storage.count_tasks(context_id=waiting.context_id) == 1
    newest = storage.get_task(waiting.task_id, "alice", "echo").updated_at
    assert storage.count_tasks(owner="alice", agent="echo",
                               updated_after=newest) == 0
    oldest = storage.get_task(made[0].task_id, "alice", "echo").updated_at
    assert storage.count_tasks(owner="alice", agent="echo", updated_after=oldest) == \
        len(storage.list_tasks(owner="alice", agent="echo",
                               updated_after=oldest).tasks)


def test_count_tasks_default_of_the_contract_pages_through_list_tasks(storage):
    from a2a_flask.storage.base import Storage

    for i in range(3):
        finished(storage, text="t%d" % i)
    assert Storage.count_tasks(storage, owner="alice", agent="echo") == 3


# -- operations -------------------------------------------------------------------

def test_show_prune_counts_and_check(make_storage):
    storage = make_storage()
    old = finished(storage)
    old_open = finished(storage, "input-required", text="open")
    for task in (old, old_open):
        set_updated_at(storage, task.task_id, datetime(2000, 1, 1, tzinfo=timezone.utc))
    recent = finished(storage, text="recent")
    shown = storage.show_task(old.task_id)
    assert shown.owner == "alice" and len(shown.history) == 2
    assert shown.created_at is not None
    assert storage.show_task("task_nope") is None
    cutoff = "2001-01-01T00:00:00.000Z"
    assert [t.id for t in storage.prunable_tasks(cutoff)] == [old.task_id]
    batches = list(storage.prune(cutoff))
    assert sum(b["tasks"] for b in batches) == 1
    assert sum(b["messages"] for b in batches) == 2
    assert sum(b["deliveries"] for b in batches) == 1
    assert storage.show_task(old.task_id) is None
    assert storage.task_counts() == {"completed": 1, "input-required": 1}
    assert storage.show_task(old_open.task_id) and storage.show_task(recent.task_id)
    assert storage.check() == []
    # The retry record went with its task: the same messageId is new again.
    assert storage.start_turn("alice", "echo", msg()).created


def test_a_task_pruned_while_shown_is_not_found(make_storage, monkeypatch):
    # `flask a2a tasks show` beside a prune: the stale turn is failed (as
    # show_task does), then pruned before the task is read back.
    storage = make_storage(A2A_STALE_TURN_SECONDS=60)
    start = storage.start_turn("alice", "echo", msg())
    set_updated_at(storage, start.task_id, datetime(2000, 1, 1, tzinfo=timezone.utc))
    fail = storage.fail_stale_turn

    def fail_then_prune(task_id):
        failed = fail(task_id)
        set_updated_at(storage, task_id, datetime(2000, 1, 1, tzinfo=timezone.utc))
        assert sum(b["tasks"] for b in storage.prune("2001-01-01T00:00:00.000Z")) == 1
        return failed

    monkeypatch.setattr(storage, "fail_stale_turn", fail_then_prune)
    assert storage.show_task(start.task_id) is None
    assert storage.task_state(start.task_id) is None


def test_reassign_tasks_moves_a_caller_s_tasks_history_and_retries(storage):
    done = finished(storage, owner="key:k1", text="a")
    waiting = finished(storage, "input-required", owner="key:k1", text="b")
    queued = storage.enqueue_turn("key:k1", "slow", msg("q"))
    others = finished(storage, owner="bob", text="c")
    # The new identity already sent a message with the id "m-a": that retry
    # record stays the old owner's, the others move.
    storage.start_turn("oidc:s", "echo", msg("a"))
    assert storage.reassign_tasks("key:k1", "oidc:s") == 3
    assert storage.reassign_tasks("key:k1", "oidc:s") == 0
    with pytest.raises(NoSuchTaskError):
        storage.get_task(done.task_id, "key:k1", "echo")
    moved = storage.get_task(waiting.task_id, "oidc:s", "echo")
    assert moved.owner == "oidc:s" and len(moved.history) == 2
    assert storage.context_history("oidc:s", "echo", waiting.context_id)
    assert storage.count_tasks(owner="oidc:s") == 4
    assert storage.get_task(others.task_id, "bob", "echo").owner == "bob"
    # A retry by the new owner of the continued message replays.
    replay = storage.start_turn("oidc:s", "echo", msg("b"))
    assert replay.replayed and replay.task_id == waiting.task_id
    # The queued turn is claimed as the new owner's.
    [claimed] = storage.claim_turns("w1", 1, 30)
    assert (claimed.task_id, claimed.owner) == (queued.task_id, "oidc:s")


# -- bulk copy --------------------------------------------------------------------

def test_export_then_import_copies_whole_tasks(make_storage, tmp_path):
    source = make_storage()
    starts = [finished(source, text="t%d" % i) for i in range(5)]
    artifact = {"artifactId": "art", "parts": [{"kind": "text", "text": "a"}]}
    extra = source.start_turn("alice", "echo", msg("art"), metadata={"m": 1})
    source.finish_turn(extra.task_id, "alice", "echo", "completed",
                       agent_reply(extra, "art"), [artifact])
    batches = list(source.export_tasks(batch_size=2))
    assert [len(b) for b in batches] == [2, 2, 2]
    from a2a_flask.storage.sqlite import SqliteStorage
    target = SqliteStorage(str(tmp_path / "copy.sqlite3"))
    target.migrate()
    assert sum(target.import_tasks(batch) for batch in batches) == 6
    for start in starts + [extra]:
        assert target.show_task(start.task_id) == source.show_task(start.task_id)
    # Retries still replay on the copy.
    assert target.start_turn("alice", "echo", msg("t0")).replayed


def test_a_retry_as_a_client_sends_it_replays_an_imported_delivery(storage, tmp_path):
    """Sent live (to an SQLite file), copied with export/import into this
    backend, then retried with the message as a client sends it: "kind",
    and taskId/contextId or not; the stored form keeps neither as sent."""
    from a2a_flask.storage.sqlite import SqliteStorage
    source = SqliteStorage(str(tmp_path / "source.sqlite3"))
    source.migrate()
    first = msg("first", kind="message")
    new = source.start_turn("alice", "echo", first)
    source.finish_turn(new.task_id, "alice", "echo", "input-required",
                       agent_reply(new, "more?"))
    then = msg("then", kind="message", taskId=new.task_id, contextId=new.context_id)
    source.start_turn("alice", "echo", then, context_id=new.context_id,
                      task_id=new.task_id)
    source.finish_turn(new.task_id, "alice", "echo", "completed",
                       agent_reply(new, "done"))
    batches = list(source.export_tasks())
    source.close()
    assert sum(storage.import_tasks(batch) for batch in batches) == 1

    ids = {"taskId": new.task_id, "contextId": new.context_id}
    for sent in (first, dict(first, **ids), dict(first, contextId=new.context_id),
                 then, dict(then, taskId=None, contextId=None)):
        again = storage.start_turn("alice", "echo", sent,
                                   context_id=sent.get("contextId"),
                                   task_id=sent.get("taskId"))
        assert again.replayed and not again.created, sent
        assert (again.task_id, again.context_id) == (new.task_id, new.context_id)
    # Another message under the same messageId is still refused: other
    # text, or the same text to another conversation.
    for other in (msg("other", message_id="m-first", kind="message"),
                  msg("then", kind="message", contextId="ctx_other")):
        with pytest.raises(MessageIdReusedError):
            storage.start_turn("alice", "echo", other,
                               context_id=other.get("contextId"))
    task = storage.get_task(new.task_id, "alice", "echo")
    assert task.state == "completed" and len(task.history) == 4


def test_export_then_import_copies_keys_and_users(make_storage, tmp_path):
    source = make_storage()
    source.insert_key(KeyRow("key_1", "a2a_abc", "ci", "*", None), "hash1")
    source.insert_key(KeyRow("key_2", "a2a_def", None, '["echo"]', None), "hash2")
    source.revoke_key("key_2")
    source.touch_keys(["key_1"], "9999")
    source.insert_user("ann", "h-ann")
    keys, users = source.export_credentials()
    assert [(k.id, h) for k, h in keys] == [("key_1", "hash1"), ("key_2", "hash2")]
    from a2a_flask.storage.sqlite import SqliteStorage
    target = SqliteStorage(str(tmp_path / "copy.sqlite3"))
    target.migrate()
    target.import_credentials(keys, users)
    target.import_credentials(keys, users)  # again: nothing doubled
    assert [k.astuple() for k in target.keys()] == [k.astuple() for k in source.keys()]
    assert target.find_key("hash1").id == "key_1" and target.find_key("hash2") is None
    assert target.users() == source.users()
    assert target.password_hash("ann") == "h-ann"


# -- keys and users ---------------------------------------------------------------

def test_keys(storage):
    key = storage.insert_key(KeyRow("key_1", "a2a_abc", "ci", "*", None), "hash1")
    assert key.created_at is not None
    assert [k.id for k in storage.keys()] == ["key_1"]
    assert storage.find_key("hash1").id == "key_1"
    assert storage.find_key("nope") is None
    storage.insert_key(KeyRow("key_2", "a2a_def", None, "*", None), "hash2")
    assert storage.touch_keys(["key_1", "key_2", "key_nope"], "9999") == 2
    used = {k.id: k.last_used_at for k in storage.keys()}
    assert used["key_1"] is not None and used["key_1"] == used["key_2"]
    assert storage.touch_keys(["key_1"], "0000") == 0  # recent enough: no write
    assert storage.touch_keys([], "9999") == 0
    storage.revoke_key("key_1")
    storage.revoke_key("key_1")  # twice: no change
    assert storage.find_key("hash1") is None
    assert storage.keys()[0].revoked_at is not None
    with pytest.raises(KeyNotFoundError):
        storage.revoke_key("key_nope")


def test_get_task_checks_a_live_key_in_its_read(storage):
    storage.insert_key(KeyRow("key_1", "a2a_abc", None, "*", None), "hash1")
    start = finished(storage, owner="key:key_1")
    task = storage.get_task(start.task_id, "key:key_1", "echo", remembered_key="hash1")
    assert task.id == start.task_id and task.state == "completed"
    with pytest.raises(NoSuchTaskError):  # no such key: nothing is read
        storage.get_task(start.task_id, "key:key_1", "echo", remembered_key="hash2")
    storage.revoke_key("key_1")
    with pytest.raises(NoSuchTaskError):
        storage.get_task(start.task_id, "key:key_1", "echo", remembered_key="hash1")
    # Without remembered_key the read is the owner's, as before.
    assert storage.get_task(start.task_id, "key:key_1", "echo").id == start.task_id


def test_start_turn_writes_only_for_a_live_key(storage):
    storage.insert_key(KeyRow("key_1", "a2a_abc", None, "*", None), "hash1")
    owner = "key:key_1"
    start = storage.start_turn(owner, "echo", msg("one"), remembered_key="hash1")
    assert start.created
    storage.finish_turn(start.task_id, owner, "echo", "input-required",
                        agent_reply(start, "more?"))
    storage.revoke_key("key_1")
    with pytest.raises(RememberedKeyRevokedError):
        storage.start_turn(owner, "echo", msg("two"), remembered_key="hash1")
    with pytest.raises(RememberedKeyRevokedError):
        storage.start_turn(owner, "echo", msg("three"), task_id=start.task_id,
                           remembered_key="hash1")
    assert storage.count_tasks(owner=owner) == 1
    task = storage.get_task(start.task_id, owner, "echo")
    assert task.state == "input-required" and len(task.history) == 2


def test_users(storage):
    assert not storage.has_users()
    storage.insert_user("alice", "h1")
    with pytest.raises(UserExistsError):
        storage.insert_user("alice", "h2")
    assert storage.has_users() and storage.password_hash("alice") == "h1"
    assert [name for name, _ in storage.users()] == ["alice"]
    storage.delete_user("alice")
    assert storage.password_hash("alice") is None
    with pytest.raises(UserNotFoundError):
        storage.delete_user("alice")


# -- races (separate storage objects: separate connections) -----------------------

def _race(*calls):
    barrier = threading.Barrier(len(calls))
    results = [None] * len(calls)

    def run(i, call):
        barrier.wait()
        try:
            results[i] = call()
        except Exception as exc:  # noqa: BLE001 - the outcome under test
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return results


@pytest.mark.parametrize("attempt", range(5))
def test_two_continuations_of_one_waiting_task_exactly_one_wins(make_storage,
                                                                attempt):
    one, two = make_storage(), make_storage()
    first = finished(one, "input-required")
    results = _race(
        lambda: one.start_turn("alice", "echo", msg("from one"),
                               task_id=first.task_id),
        lambda: two.start_turn("alice", "echo", msg("from two"),
                               task_id=first.task_id))
    won = [r for r in results if not isinstance(r, Exception)]
    lost = [r for r in results if isinstance(r, Exception)]
    assert len(won) == 1 and len(lost) == 1, results
    assert isinstance(lost[0], TaskNotWaitingError) and lost[0].state == "working"
    history = one.get_task(first.task_id, "alice", "echo").history
    assert [m["messageId"] for m in history][-1] == won[0].message["messageId"]
    assert len(history) == 3


@pytest.mark.parametrize("attempt", range(5))
def test_cancel_racing_a_finishing_turn_never_moves_a_terminal_state(
        make_storage, attempt):
    one, two = make_storage(), make_storage()
    start = one.start_turn("alice", "echo", msg())
    results = _race(
        lambda: one.finish_turn(start.task_id, "alice", "echo", "completed",
                                agent_reply(start)),
        lambda: two.cancel_task(start.task_id, "alice", "echo"))
    state = one.task_state(start.task_id)
    finished_stamp, cancel = results
    if state == "completed":
        assert finished_stamp is not None and isinstance(cancel, TaskEndedError)
    else:
        assert state == "canceled" and finished_stamp is None and cancel is None
    # Whatever comes later, the terminal state stays.
    with pytest.raises(TaskEndedError):
        two.cancel_task(start.task_id, "alice", "echo")
    assert one.finish_turn(start.task_id, "alice", "echo", "failed") is None
    assert one.task_state(start.task_id) == state
