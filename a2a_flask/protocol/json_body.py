"""JSON in and out of a call, for every binding and route: a request body
read as strictly as A2A's JSON is (``decode_json``: UTF-8, no NaN or
Infinity, no number that overflows, no member named twice, no deeper than
``MAX_DEPTH``), and an answer written (``json_response``; ``json_chunks``
writes a large one as it is sent). What the envelope of a JSON-RPC call
holds is ``jsonrpc.py``'s."""

import json
import math
import re
from itertools import accumulate
from typing import Any, Iterator, List

from flask import Response

from .. import errors


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


def json_response(payload: Any, status: int = 200, headers: Any = None,
                  stream: bool = False) -> Response:
    """``payload`` as a JSON answer (an A2A answer, a card, the agent
    list); ``stream``: written as it is sent (``json_chunks``), for a large
    one."""
    body = json_chunks(payload) if stream else _dumps(payload)
    return Response(body, status=status, headers=headers,
                    mimetype="application/json")
