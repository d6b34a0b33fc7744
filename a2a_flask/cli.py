"""The ``flask a2a`` command group: API keys and built-in users, the
background worker (here), tasks and the database (``cli_ops``)."""

import sys
from contextlib import contextmanager

import click
from flask import current_app
from flask.cli import AppGroup

from .cli_cards import cards_cli
from .cli_ops import db_cli, tasks_cli
from .credentials import CredentialError

a2a_cli = AppGroup("a2a", help="Manage the A2A service: API keys, users, "
                                "tasks and the database.")
keys_cli = AppGroup("keys", help="Create, list and revoke API keys.")
users_cli = AppGroup("users", help="Create, list and delete HTTP Basic users.")
a2a_cli.add_command(keys_cli)
a2a_cli.add_command(users_cli)
a2a_cli.add_command(tasks_cli)
a2a_cli.add_command(db_cli)
a2a_cli.add_command(cards_cli)


def _runtime():
    return current_app.extensions["a2a"]


@contextmanager
def _as_click_error():
    """A refused credential command: one line on stderr, exit status 1."""
    try:
        yield
    except CredentialError as exc:
        raise click.ClickException(str(exc)) from None


def _scope(agents):
    """None for '*', else the set of names, each a registered agent."""
    if agents.strip() == "*":
        return None
    names = {name.strip() for name in agents.split(",") if name.strip()}
    if not names:
        raise click.ClickException("--agents needs '*' or agent names, "
                                   "comma-separated")
    known = _runtime().extension.agents
    unknown = sorted(names - set(known))
    if unknown:
        raise click.ClickException("unknown agent %s; registered agents: %s" % (
            ", ".join(repr(n) for n in unknown), ", ".join(sorted(known)) or "none"))
    return names


@a2a_cli.command("worker")
@click.option("--threads", type=click.IntRange(1, 1000), default=1,
              show_default=True, help="Turns run at once by this process.")
@click.option("--agents", default=None,
              help="Only these background agents (names separated by commas); "
                   "default: every background agent.")
@click.option("--grace", type=click.FloatRange(0), default=30.0,
              show_default=True,
              help="Seconds a SIGTERM waits for running turns before releasing "
                   "them (failed, or queued again for retry=True agents).")
def worker(threads, agents, grace):
    """Run the turns of background agents (background=True) until SIGTERM."""
    import signal

    from .worker import Worker

    names = None
    if agents is not None:
        names = [name.strip() for name in agents.split(",") if name.strip()]
    try:
        runner = Worker(_runtime(), threads, names, grace)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    if not runner.agents:
        raise click.ClickException(
            "no background agent is registered: register one with "
            "@a2a.agent(..., background=True)")
    _log_to_stderr(_runtime().settings.log_format)
    signal.signal(signal.SIGTERM, runner.stop)
    signal.signal(signal.SIGINT, runner.stop)
    runner.run()


def _log_to_stderr(log_format):
    """The worker's lines (claimed, finished, expired) on stderr, in the
    A2A_LOG_FORMAT, unless the host app already routes ``a2a_flask``."""
    import logging

    from .logs import LEVEL, formatter

    logger = logging.getLogger("a2a_flask")
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(formatter(log_format))
        logger.addHandler(handler)
        logger.propagate = False
    logger.setLevel(LEVEL)


@keys_cli.command("create")
@click.option("--agents", default="*", show_default=True,
              help="'*' for every agent, or agent names separated by commas.")
@click.option("--label", default=None, help="Who or what the key is for.")
@click.option("--quiet", is_flag=True, help="Print only the key.")
def keys_create(agents, label, quiet):
    """Create an API key; it is printed once and never stored in clear."""
    key, secret = _runtime().credentials.create_key(_scope(agents), label)
    if quiet:
        click.echo(secret)
        return
    click.echo("Created API key %s (scope: %s%s)." % (
        key.id, key.scope_text, ", label: %s" % label if label else ""))
    click.echo(secret)
    click.echo("This key is shown once: store it now. Only its hash is kept.",
               err=True)


@keys_cli.command("list")
def keys_list():
    """List API keys (never the keys themselves)."""
    keys = _runtime().credentials.keys()
    if not keys:
        click.echo("No API keys. Create one with: flask a2a keys create")
        return
    rows = [("ID", "PREFIX", "LABEL", "SCOPE", "CREATED", "LAST USED", "REVOKED")]
    rows += [(k.id, k.prefix + "...", k.label or "-", k.scope_text, k.created_at,
              k.last_used_at or "never", k.revoked_at or "-") for k in keys]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())


@keys_cli.command("revoke")
@click.argument("key_id")
def keys_revoke(key_id):
    """Revoke a key: every worker refuses it from the next request on."""
    with _as_click_error():
        _runtime().credentials.revoke_key(key_id)
    click.echo("Revoked API key %s." % key_id)


@users_cli.command("create")
@click.argument("name")
@click.option("--password-stdin", is_flag=True,
              help="Read the password from the first line of standard input.")
def users_create(name, password_stdin):
    """Create a user for HTTP Basic; the password is stored hashed."""
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True,
                                confirmation_prompt=True)
    with _as_click_error():
        _runtime().credentials.create_user(name, password)
    click.echo("Created user %s." % name)


@users_cli.command("list")
def users_list():
    """List the built-in users."""
    users = _runtime().credentials.users()
    if not users:
        click.echo("No users. Create one with: flask a2a users create NAME")
    for name, created in users:
        click.echo("%s  created %s" % (name, created))


@users_cli.command("delete")
@click.argument("name")
def users_delete(name):
    """Delete a built-in user."""
    with _as_click_error():
        _runtime().credentials.delete_user(name)
    click.echo("Deleted user %s." % name)
