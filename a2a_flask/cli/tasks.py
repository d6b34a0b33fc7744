"""``flask a2a tasks ...``: list, show, cancel, prune and reassign tasks.

Safe while the service runs: reads are plain reads, deletions run in small
transactions (``Storage.prune``).
"""

from datetime import datetime, timezone
from typing import Optional, Tuple

import click
from flask.cli import AppGroup

from ..config import parse_age
from ..protocol.v03.jsonrpc import render_task
from ..storage.base import TERMINAL_STATES, WAITING_STATES
from ..storage.common import now_iso
from ..app_state import current_app_state
from .common import app_storage, echo_json, table

tasks_cli = AppGroup("tasks", help="List, show, cancel, prune and reassign tasks.")

STATES = sorted(TERMINAL_STATES | WAITING_STATES | {"working"})


def _task_row(task):
    return {"id": task.id, "agent": task.agent, "caller": task.owner,
            "contextId": task.context_id, "state": task.state,
            "createdAt": task.created_at, "updatedAt": task.updated_at}


def _task_table(tasks):
    table([("ID", "AGENT", "STATE", "CALLER", "CREATED", "UPDATED")] + [
        (t["id"], t["agent"], t["state"], t["caller"], t["createdAt"],
         t["updatedAt"]) for t in tasks])


@tasks_cli.command("list")
@click.option("--agent", default=None, help="Only this agent's tasks.")
@click.option("--state", type=click.Choice(STATES), default=None,
              help="Only tasks in this state.")
@click.option("--caller", default=None,
              help="Only this caller's tasks (an API key id or a user name).")
@click.option("--tenant", default=None,
              help="Only this tenant's tasks (A2A_TENANTS); '-' for those of "
                   "no tenant.")
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON array.")
def tasks_list(agent: Optional[str], state: Optional[str], caller: Optional[str],
               tenant: Optional[str], limit: int, as_json: bool) -> None:
    """List tasks, newest first."""
    tasks = [_task_row(task) for task in app_storage().list_tasks(
        owner=caller, agent=agent, state=state, limit=limit,
        tenant="" if tenant == "-" else tenant).tasks]
    if as_json:
        echo_json(tasks)
    elif not tasks:
        click.echo("No tasks.")
    else:
        _task_table(tasks)


@tasks_cli.command("show")
@click.argument("task_id")
@click.option("--json", "as_json", is_flag=True, help="The task as JSON.")
def tasks_show(task_id: str, as_json: bool) -> None:
    """Show a task with its history and artifacts."""
    record = app_storage().show_task(task_id)
    if record is None:
        raise click.ClickException("no task %s" % task_id)
    task = dict(render_task(record), agent=record.agent, caller=record.owner,
                createdAt=record.created_at)
    if as_json:
        echo_json(task)
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
    settings = current_app_state().settings
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
def tasks_prune(older_than: Optional[str], dry_run: bool) -> None:
    """Delete finished tasks last updated before then, with their messages,
    artifacts and retry records. Open tasks are never deleted."""
    cutoff = _cutoff(older_than)
    storage = app_storage()
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


OPEN_STATES = sorted(WAITING_STATES | {"working"})


@tasks_cli.command("cancel")
@click.option("--caller", default=None,
              help="This caller's tasks (as `tasks list` shows it, e.g. "
                   "key:key_0123abcd or user:alice).")
@click.option("--task", "task_id", default=None, help="This task.")
@click.option("--agent", default=None, help="This agent's tasks.")
@click.option("--state", "states", type=click.Choice(OPEN_STATES), multiple=True,
              help="Only tasks in this state (repeat for several; default: "
                   "every state that is not final).")
@click.option("--dry-run", is_flag=True, help="List what would be canceled; "
                                              "change nothing.")
def tasks_cancel(caller: Optional[str], task_id: Optional[str], agent: Optional[str],
                 states: Tuple[str, ...], dry_run: bool) -> None:
    """Cancel tasks: queued background turns never start, running ones see
    turn.canceled and their outcome is discarded. Give at least one of
    --caller, --task, --agent; finished tasks are left as they are."""
    if caller is None and task_id is None and agent is None:
        raise click.UsageError("give --caller, --task or --agent (or several)")
    tasks = [_task_row(task) for task in app_storage().cancel_tasks(
        owner=caller, agent=agent, task_id=task_id, states=states or None,
        dry_run=dry_run)]
    if tasks:
        _task_table(tasks)
    click.echo("%s %d tasks." % ("Would cancel" if dry_run else "Canceled",
                                 len(tasks)))


#: The callers' ids: kind:name (auth/callers.py makes them).
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
def tasks_reassign(from_owner: str, to_owner: str) -> None:
    """Give every task of one caller to another, with their history: for a
    caller that changed how it authenticates (an API key to an OIDC token)."""
    if from_owner == to_owner:
        raise click.BadParameter("--from and --to name the same caller")
    moved = app_storage().reassign_tasks(from_owner, to_owner)
    click.echo("Moved %d task%s from %s to %s." % (moved, "" if moved == 1 else "s",
                                                  from_owner, to_owner))
