"""Trap 1 of issue 7: Alembic's autogenerate (what ``flask db migrate`` runs)
on a file shared with the host app must not propose dropping our tables."""

import pytest

sqlalchemy = pytest.importorskip("sqlalchemy")
from alembic.autogenerate import compare_metadata  # noqa: E402
from alembic.migration import MigrationContext  # noqa: E402

from a2a_flask import alembic_include_object  # noqa: E402

OUR_TABLES = {"a2a_schema_version", "a2a_tasks", "a2a_messages",
              "a2a_artifacts", "a2a_deliveries", "a2a_api_keys", "a2a_users",
              "a2a_turns", "a2a_workers", "a2a_stored_bytes"}


def host_metadata():
    """The host's models: one table, plus one the host has not created yet."""
    metadata = sqlalchemy.MetaData()
    sqlalchemy.Table("user", metadata,
                     sqlalchemy.Column("id", sqlalchemy.Integer, primary_key=True),
                     sqlalchemy.Column("name", sqlalchemy.String(80), index=True))
    sqlalchemy.Table("note", metadata,
                     sqlalchemy.Column("id", sqlalchemy.Integer, primary_key=True))
    return metadata


def operations(path, include_object=None):
    """Autogenerate's diffs, flattened: [(operation, table name, object name)]."""
    engine = sqlalchemy.create_engine("sqlite:///%s" % path)
    opts = {"include_object": include_object} if include_object else {}
    with engine.connect() as conn:
        diffs = compare_metadata(MigrationContext.configure(conn, opts=opts),
                                 host_metadata())
    engine.dispose()
    flat = []
    for diff in diffs:
        for op in (diff if isinstance(diff, list) else [diff]):
            name = op[0]
            if name.endswith("_table"):  # (op, Table)
                flat.append((name, op[1].name, op[1].name))
            elif name.endswith("_column") or name.startswith("modify_"):
                column = op[3]  # (op, schema, table name, column or its name, ...)
                flat.append((name, op[2], getattr(column, "name", column)))
            else:  # (op, Index or Constraint)
                flat.append((name, op[1].table.name, op[1].name))
    return flat


@pytest.fixture
def shared_file(make_app, tmp_path):
    """One SQLite file: the service's tables, and the host's ``user`` table."""
    path = tmp_path / "shared.sqlite3"
    make_app(A2A_DATABASE=str(path))
    engine = sqlalchemy.create_engine("sqlite:///%s" % path)
    host_metadata().tables["user"].create(engine)
    engine.dispose()
    return path


def test_without_the_hook_autogenerate_drops_our_tables(shared_file):
    ops = operations(shared_file)
    assert {table for op, table, _ in ops if op == "remove_table"} == OUR_TABLES


def test_with_the_hook_autogenerate_leaves_our_tables_alone(shared_file):
    ops = operations(shared_file, alembic_include_object)
    assert not [op for op in ops if op[1].startswith("a2a_")], ops
    # The host's own changes are still seen.
    assert ops == [("add_table", "note", "note")]


def test_the_hook_judges_each_kind_of_object():
    ours = sqlalchemy.Table("a2a_tasks", sqlalchemy.MetaData(),
                            sqlalchemy.Column("id", sqlalchemy.String))
    host = sqlalchemy.Table("tasks", sqlalchemy.MetaData(),
                            sqlalchemy.Column("id", sqlalchemy.String))
    assert not alembic_include_object(ours, "a2a_tasks", "table", True, None)
    assert not alembic_include_object(ours.c.id, "id", "column", True, None)
    index = sqlalchemy.Index("a2a_tasks_x", ours.c.id)
    assert not alembic_include_object(index, "a2a_tasks_x", "index", True, None)
    assert alembic_include_object(host, "tasks", "table", True, None)
    assert alembic_include_object(host.c.id, "id", "column", True, None)
