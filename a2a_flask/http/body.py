"""Reading a request body, whole and within the size limit, before anything
else looks at it: an oversized body is refused (never parsed), a truncated
one (fewer bytes than its ``Content-Length``) never runs.

A refused body still sits on the connection. Left there, gunicorn drains at
most 64 KiB of it and then closes a connection its 413 announced as
keep-alive, so the client's next request on it is lost. A body over the
limit by at most ``REFUSED_BODY_DRAIN_BYTES`` is therefore read and dropped
here, and the connection serves the next request; a larger one is closed
with ``Connection: close`` by the shipped gunicorn.conf.py (``pre_request``,
the only place that can say so), before the app runs."""

from flask import request
from werkzeug.exceptions import RequestEntityTooLarge

from .. import errors

#: How far over the limit a refused body may go and still be read and
#: dropped, keeping the connection: a client a little over the limit loses
#: nothing; one declaring far more is not read, its connection is closed.
REFUSED_BODY_DRAIN_BYTES = 1024 * 1024

_DRAIN_CHUNK = 64 * 1024


def read_body(limit: int) -> bytes:
    """The request body, or ``PayloadTooLarge`` (413) past ``limit`` bytes
    (or the host app's own ``MAX_CONTENT_LENGTH``, if lower)."""
    host_limit = request.max_content_length  # the host app's own, if any
    if host_limit is not None:
        limit = min(limit, host_limit)
    length = request.content_length
    if length is not None and length > limit:
        if length <= limit + REFUSED_BODY_DRAIN_BYTES:
            _drain(request.environ["wsgi.input"], length)
        raise errors.PayloadTooLargeError(
            "The request body is %d bytes; this service accepts at most %d."
            % (length, limit))
    try:
        if length is not None:
            # The length is known and within the limit: read it straight from
            # the server, without werkzeug's limited-stream wrapper.
            body = _read_exactly(request.environ["wsgi.input"], length)
        else:
            body = request.stream.read(limit + 1)
    except RequestEntityTooLarge:  # werkzeug enforcing the host app's limit
        body = None
    if body is None or len(body) > limit:
        if body is not None:  # chunked: the rest, if it ends soon enough
            _drain(request.environ["wsgi.input"], REFUSED_BODY_DRAIN_BYTES)
        raise errors.PayloadTooLargeError(
            "The request body is over %d bytes, the most this service accepts."
            % limit)
    return body


def _read_exactly(stream, length):
    """``length`` bytes, or ``IncompleteBody`` when the client stops sending
    before (a half-close, a dropped connection): a truncated call never runs."""
    chunks, missing = [], length
    while missing > 0:
        chunk = stream.read(missing)
        if not chunk:
            raise errors.IncompleteBodyError(
                "The request body ended after %d of the %d bytes its "
                "Content-Length declares; nothing was run."
                % (length - missing, length))
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def _drain(stream, most):
    """Read and drop up to ``most`` bytes of a refused body (less if it ends
    first), so that the connection is left at the next request."""
    left = most
    while left > 0:
        chunk = stream.read(min(left, _DRAIN_CHUNK))
        if not chunk:
            return
        left -= len(chunk)
