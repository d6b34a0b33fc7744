"""The JSON-RPC binding: ``JsonRpcCall``, one call to an agent's JSON-RPC
endpoint, answered in the protocol version it asks for (each version names
its methods, parses their params and renders its errors).

``for_request`` is the seam where the endpoint picks a version per request:
the ``A2A-Version`` header, or the request parameter of the same name
(specification section 3.6); none or empty means 0.3; a version this
service does not speak answers VersionNotSupportedError (-32009).
"""

from typing import TYPE_CHECKING, Any, Callable, NamedTuple, NoReturn, Optional

from .. import errors
from .call import Method, ProtocolCall, asked_version, version_error
from .errors import V03 as V03_WORDING
from .errors import Wording, as_a2a_error
from .jsonrpc import Envelope, result_response
from .jsonrpc import error_response as _error_response_v03
from .v03 import jsonrpc as jsonrpc_v03
from .v10 import jsonrpc as jsonrpc_v10
from .v10 import operations as v10_operations

if TYPE_CHECKING:  # pragma: no cover
    from flask import Request, Response

    from ..service import CallContext
    from .errors import Refusal


class Binding(NamedTuple):
    """One protocol version over JSON-RPC: its method table
    (``find_method``), how an error is rendered (``error_response``) and how
    storage outcomes are worded."""

    version: str
    find_method: Callable
    error_response: Callable
    wording: Wording


def _other_version(find_method, other_methods, hint):
    """``find_method``, where a method of the other version is found after
    all: one that, once the caller is authenticated, says which header it
    needs. An anonymous caller gets 401 for it, as for any known method (the
    names of either version tell nothing about this service)."""

    def find(name: str) -> Any:
        try:
            return find_method(name)
        except errors.MethodNotFoundError as exc:
            if name not in other_methods:
                raise
            exc.message += " " + hint % name
            return _refusal(name, exc)
    return find


def _refusal(name, error):
    def run(context: "CallContext", params: Any) -> NoReturn:
        raise error
    return Method(name, None, run)


V03 = Binding("0.3", _other_version(
    jsonrpc_v03.find_method, jsonrpc_v10.METHODS,
    "%s is an A2A 1.0 method: send the header A2A-Version: 1.0 (none means 0.3)."),
    _error_response_v03, V03_WORDING)
V10 = Binding("1.0", _other_version(
    jsonrpc_v10.find_method, jsonrpc_v03.METHODS,
    "%s is an A2A 0.3 method: send no A2A-Version header to call it."),
    jsonrpc_v10.error_response, v10_operations.WORDING)


def _refuse(error):
    def find_method(name: str) -> NoReturn:
        raise error
    return Binding("?", find_method, jsonrpc_v10.error_response,
                   v10_operations.WORDING)


def for_request(request: "Request") -> Binding:
    """The JSON-RPC binding that answers ``request`` (never raises: a version
    we do not serve gets a binding whose every method is that error)."""
    asked = asked_version(request)
    if asked in ("", "0.3"):
        return V03
    if asked == "1.0":
        return V10
    return _refuse(version_error(asked))


class JsonRpcCall(ProtocolCall):
    """A JSON-RPC call, answered by the binding of the version it asks for."""

    def __init__(self, binding: Binding, strict: bool):
        self.binding = binding
        self.version = binding.version
        self.strict = strict
        self.envelope: Optional[Envelope] = None  # set by start
        self.method: Any = None

    @property
    def record(self):
        return self.envelope

    def start(self, inbound: Any) -> None:
        self.envelope = Envelope.parse(inbound.body(), self.strict)
        self.envelope.check()
        self.method = self.binding.find_method(self.envelope.method)
        # A method whose storage statement checks the key itself (send, get)
        # may take a key remembered live; any other looks it up first.
        self.checks_remembered_key = self.method.checks_remembered_key

    def params(self, inbound):
        return self.method.load(self.envelope.params)

    def run(self, context: "CallContext", params: Any) -> Any:
        return self.method.run(context, params)

    def answer(self, result, stream=False):
        return result_response(self.envelope.id, result, stream)

    def refuse(self, error: "Refusal") -> "Response":
        return self.binding.error_response(
            as_a2a_error(error, self.binding.wording),
            self.envelope.id if self.envelope is not None else None)
