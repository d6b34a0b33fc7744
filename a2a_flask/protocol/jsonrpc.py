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

import json
import math
import re
from itertools import accumulate
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Mapping, NamedTuple,
                    NoReturn, Optional)

from flask import Response
from marshmallow import EXCLUDE, Schema, ValidationError, fields, validate

from .. import errors
from ..validation import Text
from .call import Method, ProtocolCall, version_error
from .errors import Wording, as_a2a_error

if TYPE_CHECKING:  # pragma: no cover
    from ..service import CallContext
    from .errors import Refusal


class JsonRpcId(fields.Field):
    """A JSON-RPC id: a string, an integer or null (a bool is not an integer)."""

    def _deserialize(self, value, attr, data, **kwargs):
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
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


def _reject_constant(name):
    # NaN and Infinity are not JSON, whatever Python's json module accepts.
    raise ValueError("%s is not valid JSON" % name)


def _finite_float(text):
    # 1e400 would read as inf, then be written back as Infinity: not JSON.
    value = float(text)
    if math.isinf(value):
        raise ValueError("%s is out of range" % text)
    return value


#: Deeper JSON is refused: storing and answering it must not hit the
#: recursion limit (an internal error) further down.
MAX_DEPTH = 100


class _TooDeep(ValueError):
    pass


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
#: Each bracket as +1 or -1, every other character as 0: depth by accumulate.
_BRACKET_STEP = [0] * 128
_BRACKET_STEP[ord("{")] = _BRACKET_STEP[ord("[")] = 1
_BRACKET_STEP[ord("}")] = _BRACKET_STEP[ord("]")] = -1


def _check_depth(text):
    """``_TooDeep`` when the (valid) JSON ``text`` nests deeper than MAX_DEPTH.

    Read from the text, strings left out, in C loops: walking the decoded
    value cost 140 ms for a 1 MiB body of 38,000 parts, before credentials.
    """
    structure = _STRING.sub("", text).encode("ascii", "ignore")
    if max(accumulate(map(_BRACKET_STEP.__getitem__, structure)),
           default=0) > MAX_DEPTH:
        raise _TooDeep()


class _DuplicateMember(ValueError):
    def __init__(self, name):
        super().__init__(name)
        self.name = name


def _unique_members(pairs):
    # A member named twice would resolve to the last, while something in
    # front of the service (a proxy, a WAF) may read the first: refused.
    value = dict(pairs)
    if len(value) < len(pairs):
        seen = set()
        for name, _ in pairs:
            if name in seen:
                raise _DuplicateMember(name)
            seen.add(name)
    return value


#: Built once: ``json.loads`` with any option builds a decoder per call,
#: which costs more than the duplicate check the hook adds.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant,
                            parse_float=_finite_float,
                            object_pairs_hook=_unique_members)


def decode_json(body: bytes) -> Any:
    """The JSON value of a request body, or the A2A error it deserves:
    ``ParseError`` (not UTF-8 JSON, or nested too deep),
    ``InvalidRequestError`` (a member named twice in one object, named in
    ``data.field``)."""
    try:
        return _decode(body)
    except _TooDeep:
        raise errors.ParseError(
            "The request body is JSON nested more than %d levels deep, more "
            "than this service reads." % MAX_DEPTH) from None
    except _DuplicateMember as exc:
        raise errors.InvalidRequestError(
            "The request body names the member %s twice in one object: each "
            "member may appear once." % json.dumps(errors.echo(exc.name)),
            data={"field": errors.echo(exc.name)}) from None
    except ValueError:  # UnicodeDecodeError and JSONDecodeError too
        raise errors.ParseError(
            "The request body is not valid UTF-8 JSON.") from None


def _decode(body):
    text = body.decode("utf-8")  # strict: other encodings are parse errors
    try:
        data = _DECODER.decode(text)
    except RecursionError:
        raise _TooDeep() from None
    # Both checks below walk the whole value; the cheap scans of the text keep
    # them off the hot path (a body that cannot be too deep or hold a surrogate).
    if text.count("{") + text.count("[") > MAX_DEPTH:
        _check_depth(text)
    if "\\ud" in text or "\\uD" in text:
        # A lone surrogate (\ud800) is no Unicode text: no UTF-8 can carry it.
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    return data


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
        if (type(method) is str and "\x00" not in method and "jsonrpc" in data
                and (request_id is None or type(request_id) in (str, int))
                and (not strict or data["jsonrpc"] == "2.0")):
            return cls(request_id, method, data.get("params"))
        return None

    def check(self) -> None:
        if self.error is not None:
            raise self.error


def _dumps(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


#: A streamed answer is written in chunks of about this many bytes.
CHUNK_BYTES = 256 * 1024
#: How deep a streamed answer is taken apart (envelope, result, tasks, a
#: task, its history, a message, its parts, a part): below, values are
#: written whole.
_STREAM_DEPTH = 8


def _pieces(value: Any, depth: int) -> Iterator[str]:
    if depth and isinstance(value, dict) and value:
        before = "{"
        for key, item in value.items():
            yield before + _dumps(str(key)) + ":"
            yield from _pieces(item, depth - 1)
            before = ","
        yield "}"
    elif depth and isinstance(value, list) and value:
        before = "["
        for item in value:
            yield before
            yield from _pieces(item, depth - 1)
            before = ","
        yield "]"
    else:
        yield _dumps(value)


def json_chunks(value: Any) -> Iterator[bytes]:
    """``value`` as compact UTF-8 JSON (the bytes ``json.dumps`` writes), in
    chunks of about CHUNK_BYTES written as they are sent: a large answer is
    never held whole, as text and again as bytes, besides its values."""
    pending: List[str] = []
    size = 0
    for piece in _pieces(value, _STREAM_DEPTH):
        if len(piece) >= CHUNK_BYTES:  # a large string: written on its own
            if pending:
                yield "".join(pending).encode("utf-8")
                pending, size = [], 0
            yield piece.encode("utf-8")
            continue
        pending.append(piece)
        size += len(piece)
        if size >= CHUNK_BYTES:
            yield "".join(pending).encode("utf-8")
            pending, size = [], 0
    if pending:
        yield "".join(pending).encode("utf-8")


def _json_response(payload, status=200, headers=None, stream=False):
    body = json_chunks(payload) if stream else _dumps(payload)
    return Response(body, status=status, headers=headers,
                    mimetype="application/json")


def result_response(request_id: Any, result: Any, stream: bool = False) -> Response:
    """The JSON-RPC answer of ``result``; ``stream``: written as it is sent
    (``json_chunks``), for a large one."""
    return _json_response({"jsonrpc": "2.0", "id": request_id, "result": result},
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
        return _json_response(exc.to_dict(), exc.http_status, exc.headers)
    payload = {"jsonrpc": "2.0", "id": request_id, "error": exc.to_dict()}
    return _json_response(payload, exc.http_status, exc.headers)


def json_response(payload: Any, status: int = 200) -> Response:
    """A plain JSON answer (cards, the agent list)."""
    return _json_response(payload, status)


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
