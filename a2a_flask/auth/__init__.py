"""Who is calling: the ``Caller`` and how a request is authenticated
(``callers``), what it may reach (``permissions``), API keys and built-in
users (``credentials``), the HTTP Basic login throttle (``throttle``)."""

from .callers import Caller, authenticate
from .permissions import authorize

__all__ = ["Caller", "authenticate", "authorize"]
