"""``flask a2a tasks ...`` and ``flask a2a db ...``: operating the storage.

Safe while the service runs: reads are plain reads, deletions run in small
transactions (``Storage.prune``), the backup is the backend's online backup.
"""

import copy
import json
import os
from datetime import datetime, timezone

import click
from flask import current_app
from flask.cli import AppGroup

from .bindings.jsonrpc_v03 import render_task
from .config import parse_age
from .storage import open_storage
from .storage.base import TERMINAL_STATES, WAITING_STATES
from .storage.common import now_iso

tasks_cli = AppGroup("tasks", help="List, show, prune and reassign tasks.")
db_cli = AppGroup("db", help="Check, back up and upgrade the database.")

STATES = sorted(TERMINAL_STATES | WAITING_STATES | {"working"})


def _storage():
    return current_app.extensions["a2a"].storage


def _unreadable(storage, exc):
    """True when ``exc`` says the database cannot be read (not a bug)."""
    return isinstance(exc, (OSError, RuntimeError)) or storage.failure(exc) is not None


def _task_row(task):
    return {"id": task.id, "agent": task.agent, "caller": task.owner,
            "contextId": task.context_id, "state": task.state,
            "createdAt": task.created_at, "updatedAt": task.updated_at}


def _echo_json(value):
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))


def _table(rows):
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(str(cell).ljust(w)
                             for cell, w in zip(row, widths)).rstrip())


def _task_table(tasks):
    _table([("ID", "AGENT", "STATE", "CALLER", "CREATED", "UPDATED")] + [
        (t["id"], t["agent"], t["state"], t["caller"], t["createdAt"],
         t["updatedAt"]) for t in tasks])


@tasks_cli.command("list")
@click.option("--agent", default=None, help="Only this agent's tasks.")
@click.option("--state", type=click.Choice(STATES), default=None,
              help="Only tasks in this state.")
@click.option("--caller", default=None,
              help="Only this caller's tasks (an API key id or a user name).")
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON array.")
def tasks_list(agent, state, caller, limit, as_json):
    """List tasks, newest first."""
    tasks = [_task_row(task) for task in _storage().list_tasks(
        owner=caller, agent=agent, state=state, limit=limit).tasks]
    if as_json:
        _echo_json(tasks)
    elif not tasks:
        click.echo("No tasks.")
    else:
        _task_table(tasks)


@tasks_cli.command("show")
@click.argument("task_id")
@click.option("--json", "as_json", is_flag=True, help="The task as JSON.")
def tasks_show(task_id, as_json):
    """Show a task with its history and artifacts."""
    record = _storage().show_task(task_id)
    if record is None:
        raise click.ClickException("no task %s" % task_id)
    task = dict(render_task(record), agent=record.agent, caller=record.owner,
                createdAt=record.created_at)
    if as_json:
        _echo_json(task)
        return
    status = task["status"]
    click.echo("Task %s (agent %s, caller %s)" % (task["id"], task["agent"],
                                                  task["caller"]))
    click.echo("  context  %s" % task["contextId"])
    click.echo("  state    %s since %s" % (status["state"], status["timestamp"]))
    click.echo("  created  %s" % task["createdAt"])
    click.echo("History (%d messages):" % len(task["history"]))
    for message in task["history"]:
        click.echo("  %-5s %s" % (message["role"], _parts_text(message["parts"])))
    click.echo("Artifacts (%d):" % len(task["artifacts"]))
    for artifact in task["artifacts"]:
        click.echo("  %s %s" % (artifact.get("name") or artifact["artifactId"],
                                _parts_text(artifact["parts"])))


def _parts_text(parts):
    shown = []
    for part in parts:
        if part.get("kind") == "text":
            shown.append(part["text"])
        else:
            shown.append("[%s]" % part.get("kind"))
    return " ".join(shown)


def _cutoff(older_than):
    settings = current_app.extensions["a2a"].settings
    older_than = older_than or settings.retention
    if not older_than:
        raise click.UsageError("give --older-than (e.g. 30d) or set A2A_RETENTION")
    try:
        age = parse_age(older_than)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--older-than") from None
    return now_iso(datetime.now(timezone.utc) - age)


@tasks_cli.command("prune")
@click.option("--older-than", default=None,
              help="Age, e.g. 30d, 12h, 2w (default: A2A_RETENTION).")
@click.option("--dry-run", is_flag=True, help="List what would go; delete nothing.")
def tasks_prune(older_than, dry_run):
    """Delete finished tasks last updated before then, with their messages,
    artifacts and retry records. Open tasks are never deleted."""
    cutoff = _cutoff(older_than)
    storage = _storage()
    if dry_run:
        tasks = [_task_row(task) for task in storage.prunable_tasks(cutoff)]
        if tasks:
            _task_table(tasks)
        click.echo("Would remove %d finished tasks last updated before %s."
                   % (len(tasks), cutoff))
        return
    total = {"tasks": 0, "messages": 0, "artifacts": 0, "deliveries": 0}
    for batch in storage.prune(cutoff):
        for key, count in batch.items():
            total[key] += count
    click.echo("Removed %(tasks)d finished tasks, %(messages)d messages, "
               "%(artifacts)d artifacts and %(deliveries)d retry records" % total
               + " last updated before %s." % cutoff)


#: The callers' ids: kind:name (auth.py makes them).
CALLER_KINDS = ("key", "user", "host", "oidc", "mtls")


def _caller_id(ctx, param, value):
    kind, sep, name = value.partition(":")
    if not (sep and name and kind in CALLER_KINDS):
        raise click.BadParameter(
            "%r is not a caller id: expected one of %s followed by ':' and the "
            "name (e.g. key:key_1a2b3c4d5e6f, oidc:SUBJECT)"
            % (value, ", ".join(CALLER_KINDS)))
    return value


@tasks_cli.command("reassign")
@click.option("--from", "from_owner", required=True, callback=_caller_id,
              help="The caller whose tasks move (e.g. key:ID).")
@click.option("--to", "to_owner", required=True, callback=_caller_id,
              help="The caller they move to (e.g. oidc:SUB).")
def tasks_reassign(from_owner, to_owner):
    """Give every task of one caller to another, with their history: for a
    caller that changed how it authenticates (an API key to an OIDC token)."""
    if from_owner == to_owner:
        raise click.BadParameter("--from and --to name the same caller")
    moved = _storage().reassign_tasks(from_owner, to_owner)
    click.echo("Moved %d task%s from %s to %s." % (moved, "" if moved == 1 else "s",
                                                  from_owner, to_owner))


@db_cli.command("check")
def db_check():
    """Integrity check and schema version; exit status 1 on a problem."""
    storage = _storage()
    try:
        problems, version = storage.check(), storage.schema_version()
    except Exception as exc:
        if not _unreadable(storage, exc):
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
    if version < expected:
        click.echo("Run `flask a2a db upgrade`.")
    if problems or version != expected:
        raise SystemExit(1)


@db_cli.command("backup")
@click.argument("path", type=click.Path(dir_okay=False))
def db_backup(path):
    """Copy the database to PATH, consistently, while the service runs."""
    storage = _storage()
    try:
        storage.backup(path)
    except Exception as exc:
        if not _unreadable(storage, exc):
            raise
        raise click.ClickException("backup failed: %s" % exc) from None
    click.echo("Backed up %s to %s (%d bytes)." % (storage.location, path,
                                                  os.path.getsize(path)))


@db_cli.command("upgrade")
def db_upgrade():
    """Apply the schema migrations this database lacks."""
    storage = _storage()
    try:
        before = storage.schema_version()
        storage.migrate()
        after = storage.schema_version()
    except Exception as exc:
        if not _unreadable(storage, exc):
            raise
        raise click.ClickException(str(exc)) from None
    current_app.extensions["a2a"].schema_current = True
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
    source = _storage()
    settings = copy.copy(current_app.extensions["a2a"].settings)
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
        if not (_unreadable(source, exc) or _unreadable(destination, exc)):
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
