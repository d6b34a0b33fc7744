"""``flask a2a users ...``: the built-in users of HTTP Basic."""

import sys

import click
from flask.cli import AppGroup

from .common import as_click_error, app_state

users_cli = AppGroup("users", help="Create, list and delete HTTP Basic users.")


@users_cli.command("create")
@click.argument("name")
@click.option("--password-stdin", is_flag=True,
              help="Read the password from the first line of standard input.")
@click.option("--operator", is_flag=True,
              help="The user opens the operator's page (every caller's tasks, "
                   "cancel them), as well as calling agents.")
def users_create(name: str, password_stdin: bool, operator: bool) -> None:
    """Create a user for HTTP Basic; the password is stored hashed."""
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True,
                                confirmation_prompt=True)
    with as_click_error():
        app_state().credentials.create_user(name, password, operator)
    click.echo("Created %suser %s." % ("operator " if operator else "", name))


@users_cli.command("list")
def users_list() -> None:
    """List the built-in users."""
    credentials = app_state().credentials
    users = credentials.users()
    if not users:
        click.echo("No users. Create one with: flask a2a users create NAME")
    for name, created in users:
        click.echo("%s  created %s%s" % (name, created, "  operator"
                                         if credentials.user_is_operator(name) else ""))


@users_cli.command("delete")
@click.argument("name")
def users_delete(name: str) -> None:
    """Delete a built-in user."""
    with as_click_error():
        app_state().credentials.delete_user(name)
    click.echo("Deleted user %s." % name)
