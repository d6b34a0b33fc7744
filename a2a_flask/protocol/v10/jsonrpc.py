"""A2A 1.0 over JSON-RPC: the method table (section 9.4: the operations'
own, ``operations.METHODS``) and its errors (section 9.5: ``data`` a list of
typed details)."""

from typing import TYPE_CHECKING, Any

from ... import errors
from ..call import Method
from ..json_body import json_response
from . import operations as v10

if TYPE_CHECKING:  # pragma: no cover
    from flask import Response

VERSION = v10.VERSION
METHODS = v10.METHODS


def find_method(name: str) -> Method:
    found = METHODS.get(name)
    if found is None:
        raise errors.MethodNotFoundError(
            "Method not found: %r. Over A2A 1.0 this agent answers %s."
            % (errors.echo(name), v10.ANSWERED))
    return found


def error_response(exc: errors.A2AError, request_id: Any = None,
                   bare: bool = False) -> "Response":
    """The JSON-RPC answer for ``exc``, its details in 1.0's form (a 401 the
    bare error object with its challenge, as in 0.3)."""
    error = v10.error_body(exc)
    if bare or exc.http_status == 401:
        return json_response(error, exc.http_status, exc.headers)
    return json_response({"jsonrpc": "2.0", "id": request_id, "error": error},
                          exc.http_status, exc.headers)
