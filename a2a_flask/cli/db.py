"""``flask a2a db ...``: check, back up, upgrade and copy the database.

Safe while the service runs: the backup is the backend's online backup.
"""

import copy
import os

import click
from flask.cli import AppGroup

from ..storage import open_storage
from ..storage.errors import schema_refusal
from ..app_state import current_app_state
from .common import app_storage, unreadable

db_cli = AppGroup("db", help="Check, back up and upgrade the database.")


@db_cli.command("check")
def db_check():
    """Integrity check and schema version; exit status 1 on a problem."""
    storage = app_storage()
    try:
        problems, version = storage.check(), storage.schema_version()
    except Exception as exc:
        if not unreadable(storage, exc):
            raise
        raise click.ClickException("cannot read %s: %s"
                                   % (storage.location, exc)) from None
    expected = storage.expected_version()
    click.echo("Database %s" % storage.location)
    click.echo("Integrity: %s" % ("ok" if not problems else "%d problems"
                                  % len(problems)))
    for problem in problems[:20]:
        click.echo("  " + problem)
    click.echo("Schema version: %d (this a2a_flask: %d)" % (version, expected))
    refusal = schema_refusal(version, storage.start_version(), expected)
    if refusal is not None:
        click.echo(str(refusal))
    elif version < expected:
        click.echo("Run `flask a2a db upgrade`.")
    if problems or version != expected:
        raise SystemExit(1)


@db_cli.command("backup")
@click.argument("path", type=click.Path(dir_okay=False))
def db_backup(path):
    """Copy the database to PATH, consistently, while the service runs."""
    storage = app_storage()
    try:
        storage.backup(path)
    except Exception as exc:
        if not unreadable(storage, exc):
            raise
        raise click.ClickException("backup failed: %s" % exc) from None
    click.echo("Backed up %s to %s (%d bytes)." % (storage.location, path,
                                                  os.path.getsize(path)))


@db_cli.command("upgrade")
def db_upgrade():
    """Apply the schema migrations this database lacks."""
    storage = app_storage()
    try:
        before = storage.schema_version()
        storage.migrate()
        after = storage.schema_version()
    except Exception as exc:
        if not unreadable(storage, exc):
            raise
        raise click.ClickException(str(exc)) from None
    current_app_state().schema_current = True
    if before == after:
        click.echo("Schema version %d: up to date." % after)
    else:
        click.echo("Upgraded the schema from version %d to %d." % (before, after))


@db_cli.command("copy")
@click.option("--to", "target", required=True, metavar="DATABASE",
              help="The database to copy into, as A2A_DATABASE takes it: "
                   "postgresql://user@host/db, or a SQLite path.")
@click.option("--batch-size", default=1000, show_default=True,
              help="Tasks per transaction.")
def db_copy(target, batch_size):
    """Copy every task (with its history and artifacts), API key and user
    into an empty database, e.g. from SQLite to PostgreSQL. The source is
    only read; stop the service first, or tasks changed meanwhile are not
    copied. Then point A2A_DATABASE at the copy."""
    source = app_storage()
    settings = copy.copy(current_app_state().settings)
    settings.database = target
    destination = open_storage(settings)
    tasks = 0
    try:
        destination.migrate()
        if destination.task_counts() or destination.keys() or destination.has_users():
            raise click.ClickException(
                "%s is not empty: copy into an empty database." % destination.location)
        for batch in source.export_tasks(batch_size):
            tasks += destination.import_tasks(batch)
        keys, users = source.export_credentials()
        destination.import_credentials(keys, users)
    except click.ClickException:
        raise
    except Exception as exc:
        if not (unreadable(source, exc) or unreadable(destination, exc)):
            raise
        cause = str(exc.__cause__ or exc).strip().replace("\n", " ")
        partial = (" (%d tasks were copied: empty %s before trying again)"
                   % (tasks, destination.location)) if tasks else ""
        raise click.ClickException("copy failed: %s%s" % (cause, partial)) from None
    finally:
        destination.close()
    click.echo("Copied %d tasks, %d API keys and %d users from %s to %s."
               % (tasks, len(keys), len(users), source.location, destination.location))
    click.echo("Point A2A_DATABASE at %s and restart the service." % destination.location)
