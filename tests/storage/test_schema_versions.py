"""The schema's versions on both backends: a new database gets the starting
schema; one written by a pre-release a2a_flask (a version below the start,
before the squash) or by a newer a2a_flask is refused and left as it is; a
migration added after the start upgrades a database at the start."""

import pytest

from a2a_flask.storage.base import SchemaError
from a2a_flask.storage.postgres import migrations as postgres_migrations
from a2a_flask.storage.sqlite import SqliteStorage
from a2a_flask.storage.sqlite import migrations as sqlite_migrations

from helpers import message

PRE_RELEASE = (
    "The database schema is version %d, written by a pre-release a2a_flask: "
    "this a2a_flask (schema version %d on) cannot read or upgrade it. Point "
    "A2A_DATABASE at a new, empty database.")


def _set_version(storage, version):
    with storage.transaction() as conn:
        conn.execute("UPDATE a2a_schema_version SET version = %d" % version)


def _migrations(storage):
    return sqlite_migrations if isinstance(storage, SqliteStorage) else postgres_migrations


def test_a_new_database_starts_at_the_start_version(make_storage):
    storage = make_storage()
    module = _migrations(storage)
    assert module.START_VERSION == (8 if module is sqlite_migrations else 7)
    assert storage.start_version() == module.START_VERSION
    assert storage.schema_version() == storage.expected_version() == (
        module.START_VERSION + len(module.MIGRATIONS))
    assert storage.check() == []


@pytest.mark.parametrize("below", [1, "start - 1"])
def test_a_pre_release_schema_is_refused_and_left_as_it_is(make_storage, below):
    storage = make_storage()
    start = storage.start_version()
    version = start - 1 if below == "start - 1" else below
    kept = storage.start_turn("alice", "echo", message("kept"))
    _set_version(storage, version)
    storage.close()

    with pytest.raises(SchemaError) as refused:
        storage.migrate()
    assert str(refused.value) == PRE_RELEASE % (version, start)
    assert storage.schema_version() == version
    assert storage.task_state(kept.task_id) == "working"


def test_a_newer_schema_is_refused(make_storage):
    storage = make_storage()
    newer = storage.expected_version() + 1
    _set_version(storage, newer)
    storage.close()
    with pytest.raises(SchemaError) as refused:
        storage.migrate()
    assert str(refused.value) == (
        "The database schema is version %d, newer than this a2a_flask "
        "(version %d): upgrade a2a_flask." % (newer, newer - 1))
    assert storage.schema_version() == newer


def test_a_migration_after_the_start_upgrades_the_start_schema(make_storage, monkeypatch):
    """What a later issue does: append to MIGRATIONS; a database at the
    start version gains it, and so does a new one."""
    storage = make_storage()
    # The schema as this code writes it: the start and the migrations so far.
    start = storage.expected_version()
    storage.insert_user("ann", "hash")
    module = _migrations(storage)
    step = ((lambda db: db.execute("ALTER TABLE a2a_users ADD COLUMN note TEXT"))
            if module is sqlite_migrations else
            "ALTER TABLE a2a_users ADD COLUMN note text")
    monkeypatch.setattr(module, "MIGRATIONS", module.MIGRATIONS + [step])
    monkeypatch.setattr(module, "EXPECTED_VERSION", start + 1)
    storage.close()

    assert storage.schema_version() == start
    storage.migrate()
    assert storage.schema_version() == storage.expected_version() == start + 1
    assert storage.has_users()
    with storage.transaction() as conn:
        assert conn.execute("SELECT note FROM a2a_users").fetchall() == [(None,)]
    storage.migrate()  # up to date: nothing applied twice
    assert storage.schema_version() == start + 1
