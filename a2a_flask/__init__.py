"""a2a_flask: serve agents over A2A (JSON-RPC, SQLite) from a Flask app.

The names below are imported on first use, so that a process importing a
part of the package (the gunicorn master reading gunicorn.conf.py, a script
using the client) does not load Flask and the service with it.
"""

from typing import TYPE_CHECKING

from .lazy import lazy_names

if TYPE_CHECKING:  # pragma: no cover
    from .agent import AuthRequired, InputRequired, Reject, Reply, Turn
    from .alembic import alembic_include_object
    from .auth.callers import Caller
    from .config import config_from_env
    from .errors import A2AError
    from .extension import A2A

_LAZY = {"A2A": "extension", "A2AError": "errors", "AuthRequired": "agent",
         "Caller": "auth.callers", "InputRequired": "agent", "Reject": "agent",
         "Reply": "agent", "Turn": "agent", "alembic_include_object": "alembic",
         "config_from_env": "config"}

# A literal list: linters and type checkers read the re-exports from it.
__all__ = ["A2A", "A2AError", "AuthRequired", "Caller", "InputRequired",
           "Reject", "Reply", "Turn", "alembic_include_object",
           "config_from_env"]
__version__ = "0.1.0"
__getattr__ = lazy_names(__name__, _LAZY)
