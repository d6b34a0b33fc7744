"""The headers every answer of the service carries, set in one place.

``X-Content-Type-Options: nosniff`` on everything we answer: a JSON body
(that may hold a caller's text) is never sniffed into HTML by a browser.
``Cache-Control: no-store`` on every answer that does not say its own: they
depend on who asked (a task, a key's agent list, an error about the caller),
and no shared or browser cache may keep them. An Agent Card (and the JWKS)
says its own caching (public cards are cacheable); a card route's error (no
such agent, 401, storage down) says none, so it is no-store like any other
error. A header a route set itself is left as it is.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from flask import Blueprint, Response


def add_headers(bp: "Blueprint") -> None:
    """Register on ``bp`` the after-request hook that sets the headers."""

    @bp.after_request
    def secure_headers(response: "Response") -> "Response":
        # One pass over the few names, then ``add``: werkzeug's ``in`` (and
        # ``setdefault``) builds and catches an exception for each name missing.
        headers = response.headers
        present = {name.lower() for name, _ in headers.items()}
        if "x-content-type-options" not in present:
            headers.add("X-Content-Type-Options", "nosniff")
        if "cache-control" not in present:
            headers.add("Cache-Control", "no-store")
        return response
