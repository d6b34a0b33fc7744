"""The ``flask a2a`` command group, one module per command group: API keys
(``keys``), built-in users (``users``), the background worker (``worker``),
tasks (``tasks``), the database (``db``), the Agent Cards (``cards``), and
``call``, an A2A client for the terminal."""

from flask.cli import AppGroup

from .call import call
from .cards import cards_cli
from .db import db_cli
from .keys import keys_cli
from .tasks import tasks_cli
from .users import users_cli
from .worker import worker

a2a_cli = AppGroup("a2a", help="Manage the A2A service: API keys, users, "
                                "tasks and the database.")
a2a_cli.add_command(worker)
a2a_cli.add_command(keys_cli)
a2a_cli.add_command(users_cli)
a2a_cli.add_command(tasks_cli)
a2a_cli.add_command(db_cli)
a2a_cli.add_command(cards_cli)
a2a_cli.add_command(call)

__all__ = ["a2a_cli"]
