"""Protocol bindings: each parses one protocol version's params, names its
methods and errors, and renders the service's neutral values.

``for_request`` is the seam where the JSON-RPC endpoint picks a binding per
request: the ``A2A-Version`` header, or the request parameter of the same
name (specification section 3.6); none or empty means 0.3; a version this
service does not speak answers VersionNotSupported (-32009).
"""

from typing import Callable, NamedTuple, Optional

from .. import errors
from .jsonrpc import error_response as _error_response_v03
from .v03 import jsonrpc as jsonrpc_v03
from .v10 import jsonrpc as jsonrpc_v10

HEADER = "A2A-Version"
#: Major.Minor of what we serve (a patch number is ignored).
SERVED = ("0.3", "1.0")


class Binding(NamedTuple):
    version: str
    find_method: Callable
    call: Callable
    error_response: Callable


def _other_version(find_method, other_methods, hint):
    """``find_method``, where a method of the other version is found after
    all: one that, once the caller is authenticated, says which header it
    needs. An anonymous caller gets 401 for it, as for any known method (the
    names of either version tell nothing about this service)."""

    def find(name):
        try:
            return find_method(name)
        except errors.MethodNotFound as exc:
            if name not in other_methods:
                raise
            exc.message += " " + hint % name
            return _refusal(name, exc)
    return find


def _refusal(name, error):
    def run(req, params):
        raise error
    return jsonrpc_v03.Method(name, None, run)


V03 = Binding("0.3", _other_version(
    jsonrpc_v03.find_method, jsonrpc_v10.METHODS,
    "%s is an A2A 1.0 method: send the header A2A-Version: 1.0 (none means 0.3)."),
    jsonrpc_v03.call, _error_response_v03)
V10 = Binding("1.0", _other_version(
    jsonrpc_v10.find_method, jsonrpc_v03.METHODS,
    "%s is an A2A 0.3 method: send no A2A-Version header to call it."),
    jsonrpc_v10.call, jsonrpc_v10.error_response)


def asked_version(request) -> str:
    """The ``Major.Minor`` the request asks for ("" when it names none)."""
    # The WSGI environ directly: this runs on every call, 0.3's too.
    asked = request.environ.get("HTTP_A2A_VERSION")
    if asked is None:
        if not request.environ.get("QUERY_STRING"):
            return ""
        asked = request.args.get(HEADER)
    asked = (asked or "").strip()
    if asked.count(".") > 1:
        return ".".join(asked.split(".")[:2])
    return asked


def version_error(asked: str) -> Optional[errors.VersionNotSupported]:
    if asked in ("", "0.3", "1.0"):
        return None
    return errors.VersionNotSupported(
        "A2A-Version %r is not served here: this agent speaks 1.0 (send "
        "A2A-Version: 1.0) and 0.3 (no header)." % asked,
        data={"requestedVersion": asked, "supportedVersions": "1.0, 0.3"})


def _refuse(error):
    def find_method(name):
        raise error
    return Binding("?", find_method, jsonrpc_v10.call, jsonrpc_v10.error_response)


def for_request(request) -> Binding:
    """The JSON-RPC binding that answers ``request`` (never raises: a version
    we do not serve gets a binding whose every method is that error)."""
    asked = asked_version(request)
    if asked in ("", "0.3"):
        return V03
    if asked == "1.0":
        return V10
    return _refuse(version_error(asked))
