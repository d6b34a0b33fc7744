"""Every difference between the Flask and Werkzeug releases we support
(Flask 1.1 to 3.x, Werkzeug 0.16 to 3.x), in one place.

Each shim names the release that needs it; the rest of the package calls
these and checks no versions. When a release leaves the supported range,
its shim goes.
"""

from typing import Any

try:
    # Werkzeug 2.0 moved it here; Werkzeug 3.0 removed the old place.
    from werkzeug.sansio.utils import host_is_trusted
except ImportError:  # Werkzeug 0.16 and 1.0 (Flask 1.1)
    from werkzeug.wsgi import host_is_trusted

__all__ = ["host_is_trusted", "registered_name"]


def registered_name(setup_state: Any) -> str:
    """The name a blueprint was registered under (its endpoints' prefix).

    Flask 2.0.1 added ``BlueprintSetupState.name`` (a blueprint may be
    registered twice, under two names); Flask 1.1 has only the blueprint's own.
    """
    return getattr(setup_state, "name", setup_state.blueprint.name)
