"""Living inside a host app: checks of its settings, and its extensions.

Mistakes in a host's setup should be loud at start (or at the first request,
when agents registered after ``init_app`` are known), never a silent default.
"""

import difflib
import logging
from typing import TYPE_CHECKING, Any, Mapping

from .config import DEFAULTS

if TYPE_CHECKING:  # pragma: no cover
    from flask import Blueprint, Flask

    from .app_state import AppState

log = logging.getLogger("a2a_flask")


def check_not_mounted(app: "Flask") -> None:
    if "a2a" in app.extensions:
        raise RuntimeError(
            "a2a_flask is already set up on app %r: call init_app once per app "
            "(A2A(app) calls it too), with one A2A object." % app.name)


def _suggestion(key):
    """The setting ``key`` was probably meant to be, or None."""
    name, names = key[4:], [k[4:] for k in DEFAULTS]
    # A name one starts the other (A2A_AUTHENTICATION: A2A_AUTH), else a
    # close spelling; the common A2A_ would make every key look close.
    close = [n for n in names if len(name) >= 3
             and (name.startswith(n) or n.startswith(name))]
    close = close or difflib.get_close_matches(name, names, n=1)
    return "A2A_" + close[0] if close else None


def warn_about_settings(config: Mapping[str, Any]) -> None:
    """Warn of every ``A2A_*`` key that is no setting (a typo is ignored
    otherwise), and of an empty ``A2A_DEFAULT_AGENT``."""
    for key in sorted(k for k in config
                      if isinstance(k, str) and k.startswith("A2A_")):
        if key not in DEFAULTS:
            close = _suggestion(key)
            log.warning("Unknown setting %s in app.config is ignored.%s", key,
                        " Did you mean %s?" % close if close else "")
    if config.get("A2A_DEFAULT_AGENT") == "":
        log.warning("A2A_DEFAULT_AGENT is empty: no default agent is served; "
                    "/a2a and /.well-known/agent-card.json stay the host app's.")
    if config.get("A2A_ROOT_REST") and not config.get("A2A_DEFAULT_AGENT"):
        log.warning("A2A_ROOT_REST is on but A2A_DEFAULT_AGENT is not set: the "
                    "HTTP+JSON routes at the host root serve the default agent, "
                    "so none are added.")


def exempt_from_csrf(app: "Flask", blueprint: "Blueprint") -> None:
    """Flask-WTF's CSRFProtect guards cookie-authenticated forms; the
    service's calls are JSON with credentials (a session only with a JSON
    body, which no cross-site form can send)."""
    csrf = app.extensions.get("csrf")
    if csrf is not None and hasattr(csrf, "exempt"):
        csrf.exempt(blueprint)


def check_default_agent(app_state: "AppState") -> None:
    name = app_state.settings.default_agent
    if name and name not in app_state.extension.agents:
        log.error("A2A_DEFAULT_AGENT=%r names no registered agent (registered: "
                  "%s): /a2a answers 404 until it is registered.", name,
                  ", ".join(sorted(app_state.extension.agents)) or "none")

