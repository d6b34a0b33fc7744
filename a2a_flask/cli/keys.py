"""``flask a2a keys ...``: create, list and revoke API keys."""

import click
from flask.cli import AppGroup
from typing import List, Optional, Set, Tuple

from ..app_state import current_app_state
from .common import as_click_error, served_tenant, table

keys_cli = AppGroup("keys", help="Create, list and revoke API keys.")


def _scope(agents):
    """None for '*', else the set of names, each a registered agent."""
    if agents.strip() == "*":
        return None
    names = {name.strip() for name in agents.split(",") if name.strip()}
    if not names:
        raise click.ClickException("--agents needs '*' or agent names, "
                                   "comma-separated")
    known = current_app_state().extension.agents
    unknown = sorted(names - set(known))
    if unknown:
        raise click.ClickException("unknown agent %s; registered agents: %s" % (
            ", ".join(repr(n) for n in unknown), ", ".join(sorted(known)) or "none"))
    return names


@keys_cli.command("create")
@click.option("--agents", default=None,
              help="'*' for every agent, or agent names separated by commas "
                   "[default: '*'; with --operator, no agent].")
@click.option("--label", default=None, help="Who or what the key is for.")
@click.option("--operator", is_flag=True,
              help="The key opens the operator's page (every caller's tasks, "
                   "cancel them); it reaches no agent unless --agents is given.")
@click.option("--tenant", default=None,
              help="The one tenant (A2A_TENANTS) the key talks to agents in; "
                   "without it, only where no tenant is named. An --operator key "
                   "sees every tenant on the operator's page all the same.")
@click.option("--quiet", is_flag=True, help="Print only the key.")
def keys_create(agents: Optional[str], label: Optional[str], operator: bool,
                tenant: Optional[str], quiet: bool) -> None:
    """Create an API key; it is printed once and never stored in clear."""
    scope: Optional[Set[str]]
    if agents is None:
        # An operator's key is for looking after the service, not for calls.
        scope = set() if operator else None
    else:
        scope = _scope(agents)
    key, secret = current_app_state().credentials.create_key(
        scope, label, operator, served_tenant(tenant))
    if quiet:
        click.echo(secret)
        return
    click.echo("Created %sAPI key %s (scope: %s%s%s)." % (
        "operator " if key.operator else "", key.id, key.scope_text,
        ", label: %s" % label if label else "",
        ", tenant: %s" % tenant if tenant else ""))
    click.echo(secret)
    click.echo("This key is shown once: store it now. Only its hash is kept.",
               err=True)


@keys_cli.command("list")
def keys_list() -> None:
    """List API keys (never the keys themselves)."""
    keys = current_app_state().credentials.keys()
    if not keys:
        click.echo("No API keys. Create one with: flask a2a keys create")
        return
    rows: List[Tuple[str, ...]] = [("ID", "PREFIX", "LABEL", "SCOPE", "OPERATOR", "CREATED",
             "LAST USED", "REVOKED")]
    rows += [(k.id, k.prefix + "...", k.label or "-", k.scope_text,
              "yes" if k.operator else "no", k.created_at,
              k.last_used_at or "never", k.revoked_at or "-") for k in keys]
    # The column only once some key has a tenant: the usual listing stays as it was.
    if any(k.tenant for k in keys):
        rows = [row + (key.tenant or "-" if key else "TENANT",)
                for row, key in zip(rows, [None] + keys)]
    table(rows)


@keys_cli.command("revoke")
@click.argument("key_id")
def keys_revoke(key_id: str) -> None:
    """Revoke a key: every worker refuses it from the next request on, and
    its working tasks are canceled (queued background turns never start,
    running ones see turn.canceled)."""
    with as_click_error():
        canceled = current_app_state().credentials.revoke_key(key_id)
    click.echo("Revoked API key %s; canceled %d of its working tasks."
               % (key_id, len(canceled)))
