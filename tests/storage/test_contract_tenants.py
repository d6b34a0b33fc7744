"""The storage contract with tenants (docs/tenants.md), on both backends:
the migration that adds them keeps what a database at the start schema
holds, and a copy (export, import) keeps each task's tenant."""

import pytest

from a2a_flask.storage.base import MessageIdReusedError, NoSuchTaskError
from a2a_flask.storage.postgres import migrations as postgres_migrations
from a2a_flask.storage.sqlite import SqliteStorage
from a2a_flask.storage.sqlite import migrations as sqlite_migrations
from helpers import message

_TASK = ("INSERT INTO a2a_tasks (id, agent, owner, context_id, state, updated_at,"
         " created_at) VALUES ('task_old', 'echo', 'key:k', 'ctx_old', 'completed',"
         " '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')")
_RETRY = ("INSERT INTO a2a_deliveries (owner, agent, message_id, fingerprint, task_id)"
          " VALUES ('key:k', 'echo', 'm-old', 'x', 'task_old')")


def test_a_start_schema_database_migrates_keeping_its_tasks_and_retries(
        make_storage, monkeypatch):
    with monkeypatch.context() as patched:
        for module in (sqlite_migrations, postgres_migrations):
            patched.setattr(module, "MIGRATIONS", [])
            patched.setattr(module, "EXPECTED_VERSION", module.START_VERSION)
        old = make_storage()
        assert old.schema_version() == old.start_version()
        with old.transaction() as conn:
            conn.execute(_TASK)
            conn.execute(_RETRY)
        old.close()

    storage = make_storage()  # migrated to this code's schema
    assert storage.schema_version() == storage.expected_version() > storage.start_version()
    assert storage.get_task("task_old", "key:k", "echo").state == "completed"
    assert [t.id for t in storage.list_tasks(tenant="").tasks] == ["task_old"]
    assert storage.list_tasks(tenant="acme").tasks == []
    with pytest.raises(NoSuchTaskError):
        storage.get_task("task_old", "key:k", "echo", tenant="acme")
    # The retry record is still there: its messageId is taken where no tenant
    # is named, and free in a tenant.
    with pytest.raises(MessageIdReusedError):
        storage.start_turn("key:k", "echo", message("hi", message_id="m-old"))
    assert storage.start_turn("key:k", "echo", message("hi", message_id="m-old"),
                              tenant="acme").created
    assert storage.check() == []


def test_a_copy_keeps_each_tasks_tenant(make_storage, tmp_path):
    source = make_storage()
    for tenant in ("", "acme"):
        start = source.start_turn("key:k", "echo", message("hi", message_id="m-1"),
                                  context_id="ctx-1", tenant=tenant)
        source.finish_turn(start.task_id, "key:k", "echo", "completed")
    target = SqliteStorage(str(tmp_path / "copy.sqlite3"))
    target.migrate()
    for batch in source.export_tasks():
        target.import_tasks(batch)
    for tenant in ("", "acme"):
        [task] = target.list_tasks(tenant=tenant).tasks
        assert target.get_task(task.id, "key:k", "echo", tenant=tenant).state == "completed"
        assert [m["messageId"] for m in target.context_history(
            "key:k", "echo", "ctx-1", tenant=tenant)] == ["m-1"]
        # The retry records came along, each in its tenant.
        assert target.start_turn("key:k", "echo", message("hi", message_id="m-1"),
                                 context_id="ctx-1", tenant=tenant).replayed
    target.close()
