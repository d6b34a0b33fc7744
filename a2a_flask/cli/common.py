"""What every ``flask a2a`` command group shares: the app's
storage, refused operations as one-line errors, tables and JSON output."""

import json
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import click

from ..app_state import current_app_state
from ..auth.credentials import CredentialError
from ..storage.errors import SchemaError

if TYPE_CHECKING:  # pragma: no cover
    from ..storage.base import Storage


def app_storage() -> "Storage":
    return current_app_state().storage


@contextmanager
def as_click_error() -> Iterator[None]:
    """A refused credential command: one line on stderr, exit status 1."""
    try:
        yield
    except CredentialError as exc:
        raise click.ClickException(str(exc)) from None


def unreadable(storage: "Storage", exc: BaseException) -> bool:
    """True when ``exc`` says the database cannot be read or used (a schema
    this code does not read), not a bug."""
    return (isinstance(exc, (OSError, RuntimeError, SchemaError))
            or storage.failure(exc) is not None)


def echo_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, ensure_ascii=False))


def table(rows: Sequence[Sequence[Any]]) -> None:
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        click.echo("  ".join(str(cell).ljust(w)
                             for cell, w in zip(row, widths)).rstrip())


def served_tenant(tenant):
    """``tenant`` (None stays None) when some agent is served to it
    (A2A_TENANTS, ``tenants=[...]``), else a ClickException: a key or a
    user of another tenant could act nowhere."""
    if tenant is None:
        return None
    known = current_app_state().known_tenants()
    if tenant not in known:
        raise click.ClickException(
            "unknown tenant %r; tenants served here (A2A_TENANTS and the "
            "agents' tenants=): %s" % (tenant, ", ".join(sorted(known)) or "none"))
    return tenant
