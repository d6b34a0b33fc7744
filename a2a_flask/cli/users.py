"""``flask a2a users ...``: the built-in users of HTTP Basic."""

import sys
from typing import Optional

import click
from flask.cli import AppGroup

from ..app_state import current_app_state
from .common import as_click_error, served_tenant

users_cli = AppGroup("users", help="Create, list and delete HTTP Basic users.")


@users_cli.command("create")
@click.argument("name")
@click.option("--password-stdin", is_flag=True,
              help="Read the password from the first line of standard input.")
@click.option("--operator", is_flag=True,
              help="The user opens the operator's page (every caller's tasks, "
                   "cancel them), as well as calling agents.")
@click.option("--tenant", default=None,
              help="The one tenant (A2A_TENANTS) the user calls agents in; "
                   "without it, only where no tenant is named. An --operator user "
                   "sees every tenant on the operator's page all the same.")
def users_create(name: str, password_stdin: bool, operator: bool,
                 tenant: Optional[str]) -> None:
    """Create a user for HTTP Basic; the password is stored hashed."""
    tenant = served_tenant(tenant)
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True,
                                confirmation_prompt=True)
    with as_click_error():
        current_app_state().credentials.create_user(name, password, operator, tenant)
    click.echo("Created %suser %s%s." % ("operator " if operator else "", name,
                                         " (tenant %s)" % tenant if tenant else ""))


@users_cli.command("list")
def users_list() -> None:
    """List the built-in users (an operator's, a tenant's marked so)."""
    credentials = current_app_state().credentials
    users = credentials.users()
    if not users:
        click.echo("No users. Create one with: flask a2a users create NAME")
    for name, created in users:
        tenant = credentials.user_tenant(name)
        click.echo("%s  created %s%s%s" % (
            name, created, "  operator" if credentials.user_is_operator(name) else "",
            "  tenant %s" % tenant if tenant else ""))


@users_cli.command("delete")
@click.argument("name")
def users_delete(name: str) -> None:
    """Delete a built-in user."""
    with as_click_error():
        current_app_state().credentials.delete_user(name)
    click.echo("Deleted user %s." % name)
