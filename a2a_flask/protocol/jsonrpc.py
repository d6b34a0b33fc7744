"""The JSON-RPC binding: the 2.0 envelope (reading a call, writing an
answer) and ``JsonRpcCall``, one call to an agent's JSON-RPC endpoint,
answered in the protocol version it asks for (each version names its
methods, parses their params and renders its errors).

``Envelope.parse`` never raises: it keeps the first problem (docs/protocol.md
§3, checked in order) beside the id it could read, so that the error answer
echoes that id. ``error_response`` renders an ``A2AError`` as A2A 0.3 answers
it (the 1.0 bindings render theirs; ``protocol/errors.py`` says how each error
is answered).

The version is picked per request (``JsonRpcCall``, given the versions'
bindings: ``jsonrpc_versions.BINDINGS``): the ``A2A-Version`` header, or the
request parameter of the same name (specification section 3.6); none or
empty means 0.3; a version this service does not speak answers
VersionNotSupportedError (-32009).
"""

from typing import (TYPE_CHECKING, Any, Callable, Dict, Mapping, NamedTuple, NoReturn,
                    Optional)

from flask import Response
from marshmallow import EXCLUDE, Schema, ValidationError, fields, validate

from .. import errors
from ..validation import Text, storable
from .call import Method, ProtocolCall, version_error
from .errors import Wording, as_a2a_error
from .json_body import decode_json, json_response

if TYPE_CHECKING:  # pragma: no cover
    from ..service import CallContext
    from .errors import Refusal


def _is_id(value: Any) -> bool:
    """A JSON-RPC id: a string, an integer or null (a bool is not an integer)."""
    return value is None or isinstance(value, str) or (
        isinstance(value, int) and not isinstance(value, bool))


class JsonRpcId(fields.Field):
    """A JSON-RPC id (``_is_id``)."""

    def _deserialize(self, value, attr, data, **kwargs):
        if _is_id(value):
            return value
        raise ValidationError("id must be a string, an integer or null.")


class EnvelopeSchema(Schema):
    """The JSON-RPC 2.0 envelope, as leniently as clients send it (``jsonrpc`` present)."""

    class Meta:
        unknown = EXCLUDE

    id = JsonRpcId(allow_none=True)
    method = Text(required=True)
    jsonrpc = fields.Raw(required=True, allow_none=True)
    params = fields.Raw(allow_none=True)


class StrictEnvelopeSchema(EnvelopeSchema):
    """The envelope with ``"jsonrpc": "2.0"`` required (A2A_STRICT_JSONRPC)."""

    jsonrpc = fields.Raw(
        required=True,
        validate=validate.Equal("2.0", error='must be the string "2.0".'),
    )


ENVELOPE = EnvelopeSchema()
STRICT_ENVELOPE = StrictEnvelopeSchema()

# The order of docs/protocol.md §3: the first failing member answers.
_MEMBER_ORDER = ("id", "method", "jsonrpc")


class Envelope:
    """One JSON-RPC call, as far as it could be read."""

    __slots__ = ("id", "method", "params", "error")

    def __init__(self, id=None, method=None, params=None, error=None):
        self.id = id
        self.method = method
        self.params = params
        #: The first problem found, raised by ``check``; None when valid.
        self.error = error

    @classmethod
    def parse(cls, body: bytes, strict: bool = False) -> "Envelope":
        try:
            data = decode_json(body)
        except errors.A2AError as exc:
            return cls(error=exc)
        if isinstance(data, list):
            return cls(error=errors.InvalidRequestError(
                "Batch requests are not supported: send one JSON-RPC call per "
                "request."))
        if not isinstance(data, dict):
            return cls(error=errors.InvalidRequestError(
                "The request must be a JSON object (a JSON-RPC 2.0 call)."))
        envelope = cls._common(data, strict)
        if envelope is not None:
            return envelope
        schema = STRICT_ENVELOPE if strict else ENVELOPE
        try:
            call = schema.load(data)
        except ValidationError as exc:
            problems: Any = exc.messages  # by field: the envelope is an object
            # An invalid id cannot be echoed; a valid one is, whatever else failed.
            request_id = None if "id" in problems else data.get("id")
            member = next(m for m in _MEMBER_ORDER if m in problems)
            return cls(id=request_id, error=errors.InvalidRequestError(
                "Invalid JSON-RPC request: %s: %s" % (member, problems[member][0]),
                data={"field": member}))
        return cls(call.get("id"), call["method"], call.get("params"))

    @classmethod
    def _common(cls, data: Dict[str, Any], strict: bool) -> Optional["Envelope"]:
        """The envelope ``EnvelopeSchema`` would load from ``data``, read
        without the load when ``data`` is the common call that the schema
        takes as it is: a method that is text with no NUL, ``jsonrpc``
        present (``"2.0"`` when strict), an id that is a string, an integer
        or null. Anything else, None: the schema decides, and words the
        error. The load cost more than the rest of a tasks/get's parse
        (docs/benchmarks.md, "The envelope and the access record");
        tests/protocol/test_envelope.py checks the two agree."""
        method, request_id = data.get("method"), data.get("id")
        if (type(method) is str and storable(method) and "jsonrpc" in data
                and _is_id(request_id)
                and (not strict or data["jsonrpc"] == "2.0")):
            return cls(request_id, method, data.get("params"))
        return None

    def check(self) -> None:
        if self.error is not None:
            raise self.error


def result_response(request_id: Any, result: Any, stream: bool = False) -> Response:
    """The JSON-RPC answer of ``result``; ``stream``: written as it is sent
    (``json_chunks``), for a large one."""
    return json_response({"jsonrpc": "2.0", "id": request_id, "result": result},
                          stream=stream)


def error_response(exc: errors.A2AError, request_id: Any = None,
                   bare: bool = False) -> Response:
    """The answer for an ``A2AError``.

    A 401 answers the bare error object with ``WWW-Authenticate``
    (docs/protocol.md §6),
    as do the card endpoints (``bare=True``); everything else is a JSON-RPC
    error response.
    """
    if bare or exc.http_status == 401:
        return json_response(exc.to_dict(), exc.http_status, exc.headers)
    payload = {"jsonrpc": "2.0", "id": request_id, "error": exc.to_dict()}
    return json_response(payload, exc.http_status, exc.headers)


# -- the call ------------------------------------------------------------------


class Binding(NamedTuple):
    """One protocol version over JSON-RPC: its method table
    (``find_method``), how an error is rendered (``error_response``) and how
    storage outcomes are worded."""

    version: str
    find_method: Callable
    error_response: Callable
    wording: Wording


def other_version(find_method: Callable[[str], Method], other_methods: Any,
                  hint: str) -> Callable[[str], Method]:
    """``find_method``, where a method of the other version is found after
    all: one that, once the caller is authenticated, says which header it
    needs. An anonymous caller gets 401 for it, as for any known method (the
    names of either version tell nothing about this service)."""

    def find(name: str) -> Method:
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


def _refusing(error, like):
    """A binding whose every method is ``error``, rendered as ``like``'s."""
    def find_method(name: str) -> NoReturn:
        raise error
    return Binding("?", find_method, like.error_response, like.wording)


class JsonRpcCall(ProtocolCall):
    """A JSON-RPC call, answered by the binding of the version it asks for:
    ``bindings[asked]`` (``asked``: ``call.asked_version``), else one whose
    every method is VersionNotSupported, rendered as 1.0's."""

    def __init__(self, bindings: Mapping[str, Binding], asked: str, strict: bool):
        binding = bindings.get(asked)
        if binding is None:
            binding = _refusing(version_error(asked), bindings["1.0"])
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
        self.runs_turn = self.method.runs_turn

    def params(self, inbound):
        return self.method.load(self.envelope.params)

    def run(self, context: "CallContext", params: Any) -> Any:
        return self.method.run(context, params)

    def answer(self, result, stream=False):
        return result_response(self.envelope.id, result, stream)

    def refuse(self, error: "Refusal") -> Response:
        return self.binding.error_response(
            as_a2a_error(error, self.binding.wording),
            self.envelope.id if self.envelope is not None else None)
