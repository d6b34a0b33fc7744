"""A synchronous A2A client: call other agents from Flask views, agents,
scripts and the ``flask a2a call`` command.

    from a2a_flask.client import Client

    with Client("https://agents.example.com/api/v1/agents/echo", key=KEY) as agent:
        task = agent.send("hello", wait=True)
        print(task.state, task.text)

Its HTTP is urllib3's with the ``client`` extra, else the standard
library's (``stdlib_transport``). From a terminal: ``python -m
a2a_flask.client URL TEXT`` (``terminal``). The results (``shapes``) and
errors (``errors``) are shared by the test client of ``a2a_flask.testing``.
An agent's error answers are raised as the package's wire errors
(``a2a_flask.errors``, the server's own classes); the client's own failures
are the ``ClientError`` classes below.
"""

from typing import TYPE_CHECKING

from ..lazy import lazy_names
from .errors import (
    AmbiguousOutcome, AnswerTooLarge, CardError, ClientError, TokenError,
    TransportError, WaitTimeout,
)
from .shapes import Artifact, Message, Task, TaskPage

if TYPE_CHECKING:  # pragma: no cover
    from .auth import ApiKey, Auth, Basic, Bearer, ClientCredentials
    from .cards import MESSAGE_ID_ONCE, Interface
    from .client import Client

_LAZY = {"Client": "client", "Auth": "auth", "ApiKey": "auth", "Bearer": "auth",
         "Basic": "auth", "ClientCredentials": "auth", "Interface": "cards",
         "MESSAGE_ID_ONCE": "cards"}

# A literal list: linters and type checkers (a user's mypy --strict) read
# the re-exports from it. Wire errors are not among them: they are
# a2a_flask.errors' classes.
__all__ = [
    "AmbiguousOutcome", "AnswerTooLarge", "ApiKey", "Artifact", "Auth",
    "Basic", "Bearer", "CardError", "Client", "ClientCredentials",
    "ClientError", "Interface", "MESSAGE_ID_ONCE", "Message", "Task",
    "TaskPage", "TokenError", "TransportError", "WaitTimeout"]


# Imported on first use: a2a_flask.testing uses the shapes and errors above
# without loading any transport.
__getattr__ = lazy_names(__name__, _LAZY)
