"""Who is calling: the ``Caller`` and how a request is authenticated and
authorized (``callers``), API keys and built-in users (``credentials``), the
HTTP Basic login throttle (``throttle``)."""

from .callers import Caller, authenticate, authorize

__all__ = ["Caller", "authenticate", "authorize"]
