"""Reading a request body, whole and within the size limit, before anything
else looks at it: an oversized body is refused unread, a truncated one
(fewer bytes than its ``Content-Length``) never runs."""

from flask import request
from werkzeug.exceptions import RequestEntityTooLarge

from .. import errors


def read_body(limit: int) -> bytes:
    """The request body, or ``PayloadTooLarge`` (413) past ``limit`` bytes
    (or the host app's own ``MAX_CONTENT_LENGTH``, if lower)."""
    host_limit = request.max_content_length  # the host app's own, if any
    if host_limit is not None:
        limit = min(limit, host_limit)
    length = request.content_length
    if length is not None and length > limit:
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
