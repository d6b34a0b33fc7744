"""``flask a2a users ...``: the built-in users of HTTP Basic."""

import sys

import click
from flask.cli import AppGroup

from .common import as_click_error, app_state, served_tenant

users_cli = AppGroup("users", help="Create, list and delete HTTP Basic users.")


@users_cli.command("create")
@click.argument("name")
@click.option("--password-stdin", is_flag=True,
              help="Read the password from the first line of standard input.")
@click.option("--tenant", default=None,
              help="The one tenant (A2A_TENANTS) the user acts in; without it, "
                   "only where no tenant is named.")
def users_create(name, password_stdin, tenant):
    """Create a user for HTTP Basic; the password is stored hashed."""
    tenant = served_tenant(tenant)
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True,
                                confirmation_prompt=True)
    with as_click_error():
        app_state().credentials.create_user(name, password, tenant)
    click.echo("Created user %s%s." % (name, " (tenant %s)" % tenant if tenant else ""))


@users_cli.command("list")
def users_list():
    """List the built-in users."""
    users = app_state().credentials.users()
    if not users:
        click.echo("No users. Create one with: flask a2a users create NAME")
    for name, created in users:
        click.echo("%s  created %s" % (name, created))


@users_cli.command("delete")
@click.argument("name")
def users_delete(name):
    """Delete a built-in user."""
    with as_click_error():
        app_state().credentials.delete_user(name)
    click.echo("Deleted user %s." % name)
