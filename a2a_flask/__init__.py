"""a2a_flask: serve agents over A2A (JSON-RPC, SQLite) from a Flask app."""

from .agent import AuthRequired, InputRequired, Reject, Reply, Turn
from .alembic import alembic_include_object
from .auth.callers import Caller
from .config import config_from_env
from .errors import A2AError
from .extension import A2A

__all__ = ["A2A", "A2AError", "AuthRequired", "Caller", "InputRequired",
           "Reject", "Reply", "Turn", "alembic_include_object",
           "config_from_env"]
__version__ = "0.1.0"
