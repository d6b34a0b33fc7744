"""The call pipeline: every call to an agent, over JSON-RPC or HTTP+JSON,
goes through ``answer_call`` in the same order (docs/protocol.md, section 3):

read what the call is (``ProtocolCall.start``: the body and the envelope, or
the version asked) -> authenticate -> find the agent -> authorize -> check the
params -> run the method -> answer; the access record and the metrics last.

An anonymous caller costs no more than reading and parsing its JSON: the
params (up to the size limit, maybe tens of thousands of parts) are checked
only for a caller with credentials, and the checks before authentication
tell an anonymous caller nothing about agents or tasks.

A storage failure (database unavailable, deleted, full or busy) is answered
as such, an error saying the call may be retried; the service goes on and
serves again as soon as the storage is back.

The JSON-RPC endpoint's view (``rpc``) and the hook that sets the headers
every answer carries (``add_headers``) are here too: the blueprint only lays
out the routes, so that a call enters the pipeline at its view.
"""

import logging
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional

from flask import Blueprint, Response, request
from werkzeug.exceptions import RequestEntityTooLarge

from .. import errors
from ..config import REFUSED_BODY_DRAIN_BYTES
from ..auth.callers import authenticate, confirm_remembered_key
from ..auth.permissions import authorize, authorize_tenant
from ..protocol.errors import as_a2a_error, failure_error
from ..protocol.call import HEADER, asked_version
from ..protocol.jsonrpc import JsonRpcCall
from ..protocol.jsonrpc_versions import BINDINGS
from ..app_state import current_app_state
from ..running import NOT_HELD
from ..service import CallContext
from ..storage.errors import StorageError
from . import access

if TYPE_CHECKING:  # pragma: no cover
    from flask import Request

log = logging.getLogger("a2a_flask")


def _request() -> "Request":
    """The request itself, not Flask's proxy of it: each attribute read
    through the proxy first fails on the proxy (an AttributeError built and
    dropped), then looks the request up again; a call reads a dozen."""
    return request._get_current_object()  # type: ignore[attr-defined]


class Inbound:
    """The request as a binding reads it (``ProtocolCall``)."""

    __slots__ = ("limit",)

    def __init__(self, limit):
        self.limit = limit

    def body(self) -> bytes:
        return read_body(self.limit)

    @property
    def query(self) -> Dict[str, str]:
        """The query string's parameters, ``A2A-Version`` left out."""
        params = request.args.to_dict()
        params.pop(HEADER, None)
        return params

    @property
    def asked_version(self) -> str:
        return asked_version(request)


def release_at_teardown(storage: Any) -> Callable[[Optional[BaseException]], None]:
    """The app's ``teardown_request`` hook: the thread's storage connection
    back to the pool after every request. Here, not in ``extension.py``:
    every request runs it, and this module is on a call's path already."""
    def release(_exc: Optional[BaseException]) -> None:
        storage.release_connection()
    return release


def storage_error(app_state, exc):
    """The A2A error for ``exc``, a storage failure; anything else is raised
    again."""
    failure = app_state.storage.failure(exc)
    if failure is None:
        raise exc
    return failure_error(failure)


def _confirmed(app_state, caller, error):
    """``error``, unless the caller's key was remembered and is revoked since:
    then 401, whatever else failed (or the storage's own failure when the
    key cannot be checked)."""
    try:
        confirm_remembered_key(app_state, caller)
    except errors.UnauthenticatedError as refused:
        return refused
    except Exception as exc:
        failure = app_state.storage.failure(exc)
        if failure is None:
            raise
        return failure
    return error


def _hold_until_sent(response, release):
    """The answer holds its share of the process's budget until its last
    byte is written, or the response is closed (the client went away)."""
    def sent(chunks):
        try:
            yield from chunks
        finally:
            release()

    response.response = sent(response.response)
    response.call_on_close(release)


def _answer(app_state, call, agent_name, at_root, notes):
    caller = None
    inbound = Inbound(app_state.settings.max_content_length)
    try:
        call.start(inbound)
        # A send runs among the process's running sends, from its caller's
        # check to its answer (running.py; its error answer is made after).
        with app_state.running_sends.held() if call.runs_turn else NOT_HELD:
            caller = authenticate(app_state, _request(), call.checks_remembered_key)
            agent = app_state.reachable_agent(agent_name)
            authorize(caller, agent, app_state.settings.oidc_required_scopes)
            params = call.params(inbound)
            tenant = call.tenant(params)
            authorize_tenant(app_state, caller, agent, tenant, call.named_task(params))
            context = CallContext(app_state, agent, caller, at_root, tenant)
            try:
                result = call.run(context, params)
                notes.result = result
                response = call.answer(result, stream=context.answer_held is not None)
                if context.answer_held is not None:
                    _hold_until_sent(response, context.release_answer)
                return response
            except BaseException:
                context.release_answer()
                raise
    except (errors.A2AError, StorageError) as exc:
        # A neutral storage outcome (no such task...) too: the call's binding
        # words it for its version (``ProtocolCall.refuse``), here only.
        return _refuse(call, _confirmed(app_state, caller, exc), notes)
    except Exception as exc:
        failure = app_state.storage.failure(exc)
        if failure is not None:
            return _refuse(call, failure, notes)
        log.exception("internal error answering agent %r", agent_name)
        return _refuse(call, errors.service_failed(), notes)
    finally:
        notes.note(call.record, caller, call.version)


def _refuse(call, exc, notes):
    """The call's error answer, its A2A code noted for the access record."""
    notes.error_code = as_a2a_error(exc).code
    return call.refuse(exc)


def answer_call(call, agent_name, at_root=False):
    """The response to ``call`` (a ``ProtocolCall``) for agent
    ``agent_name``, with its access record; refused while the schema is old."""
    app_state = current_app_state()

    def answer(notes):
        # The flag first: once the schema is known current, no call asks.
        problem = None if app_state.schema_current else app_state.schema_problem()
        if problem is not None:
            return _refuse(call, problem, notes)
        return _answer(app_state, call, agent_name, at_root, notes)

    return access.logged_call(
        agent_name, answer, app_state.metrics.observe_call if app_state.metrics else None,
        app_state.tracing, app_state.refusals)


def add_headers(bp: Blueprint) -> None:
    """Register on ``bp`` the after-request hook that sets the headers every
    answer of the service carries, in one place.

    ``X-Content-Type-Options: nosniff`` on everything we answer: a JSON body
    (that may hold a caller's text) is never sniffed into HTML by a browser.
    ``Cache-Control: no-store`` on every answer that does not say its own: they
    depend on who asked (a task, a key's agent list, an error about the caller),
    and no shared or browser cache may keep them. An Agent Card (and the JWKS)
    says its own caching (public cards are cacheable); a card route's error (no
    such agent, 401, storage down) says none, so it is no-store like any other
    error. A header a route set itself is left as it is.
    """

    @bp.after_request
    def secure_headers(response: Response) -> Response:
        # One pass over the few names, then ``add``: werkzeug's ``in`` (and
        # ``setdefault``) builds and catches an exception for each name missing.
        headers = response.headers
        present = {name.lower() for name, _ in headers.items()}
        if "x-content-type-options" not in present:
            headers.add("X-Content-Type-Options", "nosniff")
        if "cache-control" not in present:
            headers.add("Cache-Control", "no-store")
        return response


def rpc(name, at_root=False):
    """The view of an agent's JSON-RPC endpoint: a call in the version its
    ``A2A-Version`` asks for. Also with a trailing slash: a client that
    joins "/" to the card's URL (httpx with the endpoint as base_url, the
    1.0-dev kit) posts there."""
    call = JsonRpcCall(BINDINGS, asked_version(_request()),
                       current_app_state().settings.strict_jsonrpc)
    return answer_call(call, name, at_root)


# -- the body ----------------------------------------------------------------
#
# Reading a request body, whole and within the size limit, before anything
# else looks at it: an oversized body is refused (never parsed), a truncated
# one (fewer bytes than its ``Content-Length``) never runs.
#
# A refused body still sits on the connection. Left there, gunicorn drains at
# most 64 KiB of it and then closes a connection its 413 announced as
# keep-alive, so the client's next request on it is lost. A body over the
# limit by at most ``REFUSED_BODY_DRAIN_BYTES`` is therefore read and dropped
# here, and the connection serves the next request; a larger one is closed
# with ``Connection: close`` by the shipped gunicorn.conf.py (``pre_request``,
# the only place that can say so), before the app runs.

_DRAIN_CHUNK = 64 * 1024


def read_body(limit: int) -> bytes:
    """The request body, or ``PayloadTooLarge`` (413) past ``limit`` bytes
    (or the host app's own ``MAX_CONTENT_LENGTH``, if lower)."""
    req = _request()
    host_limit = req.max_content_length  # the host app's own, if any
    if host_limit is not None:
        limit = min(limit, host_limit)
    length = req.content_length
    if length is not None and length > limit:
        if length <= limit + REFUSED_BODY_DRAIN_BYTES:
            _drain(req.environ["wsgi.input"], length)
        raise errors.PayloadTooLargeError(
            "The request body is %d bytes; this service accepts at most %d."
            % (length, limit))
    try:
        if length is not None:
            # The length is known and within the limit: read it straight from
            # the server, without werkzeug's limited-stream wrapper.
            body = _read_exactly(req.environ["wsgi.input"], length)
        else:
            body = req.stream.read(limit + 1)
    except RequestEntityTooLarge:  # werkzeug enforcing the host app's limit
        body = None
    if body is None or len(body) > limit:
        if body is not None:  # chunked: the rest, if it ends soon enough
            _drain(req.environ["wsgi.input"], REFUSED_BODY_DRAIN_BYTES)
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
