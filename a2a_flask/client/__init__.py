"""A synchronous A2A client: call other agents from Flask views, agents,
scripts and the ``flask a2a call`` command.

    from a2a_flask.client import Client

    with Client("https://agents.example.com/api/v1/agents/echo", key=KEY) as agent:
        task = agent.send("hello", wait=True)
        print(task.state, task.text)

Needs the ``client`` extra (urllib3): ``pip install 'a2a_flask[client]'``.
The results (``shapes``) and errors (``errors``) need nothing more; the
test client of ``a2a_flask.testing`` shares them.
"""

from typing import TYPE_CHECKING, Any

from .errors import (
    A2ACallError, AmbiguousOutcome, AuthenticationError, CardError, ClientError,
    ContentTypeNotSupportedError, InvalidParamsError, TaskNotCancelableError,
    TaskNotFoundError, TransportError, UnsupportedOperationError,
    VersionNotSupportedError, WaitTimeout,
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
# the re-exports from it.
__all__ = [
    "A2ACallError", "AmbiguousOutcome", "ApiKey", "Artifact", "Auth",
    "AuthenticationError", "Basic", "Bearer", "CardError", "Client",
    "ClientCredentials", "ClientError", "ContentTypeNotSupportedError",
    "Interface", "InvalidParamsError", "MESSAGE_ID_ONCE", "Message", "Task",
    "TaskNotCancelableError", "TaskNotFoundError", "TaskPage", "TransportError",
    "UnsupportedOperationError", "VersionNotSupportedError", "WaitTimeout"]


def __getattr__(name: str) -> Any:
    # Imported on first use: the shapes and errors above need no urllib3
    # (a2a_flask.testing uses them without the client extra).
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    import importlib
    return getattr(importlib.import_module("." + module, __name__), name)
