"""The ``flask a2a`` command group, one module per command group: API keys
(``keys``), built-in users (``users``), the background worker (``worker``),
tasks (``tasks``), the database (``db``), the Agent Cards (``cards``), and
``call``, an A2A client for the terminal.

Each module is imported when its command is named (or ``--help`` lists
them), not when the extension adds the group to an app: a web process never
runs a command (docs/benchmarks.md, "The master's imports")."""

from typing import Dict, List, Optional, Tuple

import click
from flask.cli import AppGroup

from ..lazy import imported

#: Command name: (module in this package, the command's name there).
_COMMANDS: Dict[str, Tuple[str, str]] = {
    "worker": ("worker", "worker"),
    "keys": ("keys", "keys_cli"),
    "users": ("users", "users_cli"),
    "tasks": ("tasks", "tasks_cli"),
    "db": ("db", "db_cli"),
    "cards": ("cards", "cards_cli"),
    "call": ("call", "call"),
}


class _Commands(AppGroup):
    """An ``AppGroup`` whose own commands are imported on first use; a
    command added with ``add_command`` is served as by any group."""

    def list_commands(self, ctx: click.Context) -> List[str]:
        return sorted(set(super().list_commands(ctx)) | set(_COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> Optional[click.Command]:
        command: Optional[click.Command] = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in _COMMANDS:
            module, name = _COMMANDS[cmd_name]
            command = imported(__name__, module, name)
        return command


a2a_cli = _Commands("a2a", help="Manage the A2A service: API keys, users, "
                                 "tasks and the database.")

__all__ = ["a2a_cli"]
