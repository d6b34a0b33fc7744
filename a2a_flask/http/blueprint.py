"""The routes: JSON-RPC endpoints, Agent Cards, the agent list.

Every request to an agent goes: read the whole body and check the envelope
-> find the method -> authenticate -> find the agent -> authorize -> check
the method's params -> run the method (docs/protocol.md, section 3). An anonymous caller costs no more than
reading and parsing its JSON: the params (up to the size limit, maybe tens of
thousands of parts) are checked only for a caller with credentials. The
checks before authentication tell an anonymous caller nothing about agents
or tasks.

A storage failure (database unavailable, deleted, full or busy) is answered
as such, a JSON-RPC error saying the call may be retried; the service goes on
and serves again as soon as the storage is back.
"""

import logging

from flask import Blueprint, current_app, request
from werkzeug.exceptions import RequestEntityTooLarge

from . import access, urls
from ..protocol import versions as bindings
from .. import errors
from ..auth.callers import authenticate, authorize, confirm
from ..protocol.cards import agent_card, base_url
from .card_http import asked_form, card_response
from .json_fallbacks import add_fallbacks
from ..protocol.jsonrpc import Envelope, error_response, json_response, result_response
from ..service import Request

log = logging.getLogger("a2a_flask")

def _runtime():
    return current_app.extensions["a2a"]


def _read_body(limit):
    host_limit = request.max_content_length  # the host app's own, if any
    if host_limit is not None:
        limit = min(limit, host_limit)
    length = request.content_length
    if length is not None and length > limit:
        raise errors.PayloadTooLarge(
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
        raise errors.PayloadTooLarge(
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
            raise errors.IncompleteBody(
                "The request body ended after %d of the %d bytes its "
                "Content-Length declares; nothing was run."
                % (length - missing, length))
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def _rpc(name, at_root=False):
    runtime = _runtime()
    envelope = caller = None
    binding = bindings.for_request(request)  # A2A-Version: 0.3 or 1.0
    try:
        envelope = Envelope.parse(_read_body(runtime.settings.max_content_length),
                                  runtime.settings.strict_jsonrpc)
        envelope.check()
        method = binding.find_method(envelope.method)
        # A method whose storage statement checks the key itself (send, get)
        # may take a key remembered live; any other looks it up first. Either
        # way a revoked key is refused before anything is answered (below).
        caller = authenticate(runtime, request, method.checks_key_itself)
        agent = runtime.reachable_agent(name)
        authorize(caller, agent)
        params = method.load(envelope.params)
        result = binding.call(method, Request(runtime, agent, caller, at_root),
                              params)
        access.note_result(result)
        return result_response(envelope.id, result)
    except errors.A2AError as exc:
        return binding.error_response(_confirmed(runtime, caller, exc),
                                      envelope.id if envelope else None)
    except Exception as exc:
        failure = runtime.storage.failure(exc)
        if failure is not None:
            return binding.error_response(failure, envelope.id if envelope else None)
        log.exception("internal error answering agent %r", name)
        return binding.error_response(errors.InternalError(
            "Internal error: the service could not answer this request."),
            envelope.id if envelope else None)
    finally:
        access.note(envelope, caller, binding.version)


def _storage_error(runtime, exc):
    """The A2A error for ``exc``, a storage failure; anything else is raised
    again."""
    failure = runtime.storage.failure(exc)
    if failure is None:
        raise exc
    return failure


def _confirmed(runtime, caller, error):
    """``error``, unless the caller's key was taken on trust and is revoked
    since: then 401, whatever else failed (or the storage's own failure
    when the key cannot be checked)."""
    try:
        confirm(runtime, caller)
    except errors.Unauthenticated as refused:
        return refused
    except Exception as exc:
        return _storage_error(runtime, exc)
    return error


def _logged_rpc(name, at_root=False):
    """``_rpc`` with its access record, and refused while the schema is old."""
    runtime = _runtime()

    def answer():
        problem = runtime.schema_problem()
        if problem is not None:
            return error_response(problem)
        return _rpc(name, at_root)

    return access.logged_call(
        name, answer, runtime.metrics.observe_call if runtime.metrics else None)


def _health(runtime):
    """(body, status) of ``GET PREFIX/health``: one trivial query; a database
    problem is told as "unavailable" and no more (the log has the rest)."""
    try:
        version = runtime.storage.schema_version()
    except Exception as exc:
        if runtime.storage.failure(exc) is None:
            raise
        log.warning("health: the database is unavailable", exc_info=True)
        return {"status": "unavailable", "database": "unavailable"}, 503
    body = {"status": "ok", "database": "ok", "schemaVersion": version}
    problem = runtime.schema_problem(version)
    if problem is not None:
        body.update(status="outdated", message=problem.message)
        return body, 503
    return body, 200


def _unavailable(runtime, exc):
    """The bare answer of a GET route whose storage failed (HTTP 503, the
    storage's own sentence); anything else is raised again."""
    failure = _storage_error(runtime, exc)
    failure.http_status = 503
    return error_response(failure, bare=True)


def _card(name, at_root=False):
    runtime = _runtime()
    try:
        caller = (None if runtime.settings.public_cards
                  else authenticate(runtime, request))
        agent = runtime.reachable_agent(name)
        if caller is not None:
            authorize(caller, agent)
        card = agent_card(runtime, agent, at_root, form=asked_form(request))
        return card_response(runtime, card, public=caller is None)
    except errors.A2AError as exc:
        return error_response(exc, bare=True)
    except Exception as exc:  # the key lookup met a storage failure
        return _unavailable(runtime, exc)


def make_blueprint(settings):
    bp = Blueprint("a2a", __name__)

    @bp.post(urls.rpc_rule(settings))
    @bp.post(urls.rpc_rule(settings) + "/")
    def rpc(name):
        # Also with a trailing slash: a client that joins "/" to the card's
        # URL (httpx with the endpoint as base_url, the 1.0-dev kit) posts there.
        return _logged_rpc(name)

    def card(name):
        return _card(name)

    for path, endpoint in zip(urls.CARD_PATHS, ("card", "legacy_card")):
        bp.add_url_rule(urls.agent_rule(settings) + path, endpoint, card,
                        methods=["GET"])
    for index, path in enumerate(urls.CARD_ALIASES):
        bp.add_url_rule(urls.agent_rule(settings) + path, "card_alias_%d" % index,
                        card, methods=["GET"])

    @bp.get(urls.agents_tree(settings) + urls.CARD_PATHS[0])
    def agentless_card():
        # A JS client given PREFIX/agents/<name> (no trailing slash) looks
        # here: the agent's name was dropped, and no agent is guessed.
        return error_response(errors.AgentNotFound(
            "No agent is named in this URL. Give clients the agent's URL with a "
            "trailing slash, %s/<name>/ (its card is at %s)." % (
                urls.agents_tree(settings), urls.card_path(settings, "<name>"))),
            bare=True)

    @bp.get(urls.agents_tree(settings))
    def agent_list():
        runtime = _runtime()
        try:
            caller = authenticate(runtime, request)
        except errors.A2AError as exc:
            return error_response(exc, bare=True)
        except Exception as exc:  # the key lookup met a storage failure
            return _unavailable(runtime, exc)
        base = base_url(runtime.settings)
        return json_response({"agents": [
            {"name": agent.name, "description": agent.description,
             "url": base + urls.agent_path(settings, agent.name),
             "card": base + urls.card_path(settings, agent.name)}
            for agent in runtime.reachable_agents()
            if caller.may_reach(agent.name)]})

    @bp.get(urls.health_path(settings))
    def health():
        return json_response(*_health(_runtime()))

    if settings.card_signing_key:
        @bp.get(urls.jwks_path(settings))
        def jwks():
            response = json_response(_runtime().card_signer.jwks)
            response.cache_control.public = True
            response.cache_control.max_age = settings.card_max_age
            return response

    if settings.metrics:
        @bp.get(urls.metrics_path(settings))
        def metrics():
            return _runtime().metrics.response()

    if settings.default_agent:
        # The single-endpoint shape: the default agent at the host root.
        @bp.post(urls.ROOT_RPC)
        @bp.post(urls.ROOT_RPC + "/")
        def default_rpc():
            return _logged_rpc(_runtime().settings.default_agent, at_root=True)

        def default_card():
            return _card(_runtime().settings.default_agent, at_root=True)

        for path, endpoint in zip(urls.CARD_PATHS, ("card", "legacy_card")):
            bp.add_url_rule(path, "default_" + endpoint, default_card,
                            methods=["GET"])
            # Also below the endpoint: clients (and the 1.0 conformance kit)
            # given http://host/a2a look for the card there.
            bp.add_url_rule(urls.ROOT_RPC + path, "endpoint_" + endpoint,
                            default_card, methods=["GET"])
    from ..protocol.v10 import rest as rest_v10  # it reads request bodies with _read_body
    rest_v10.add_routes(bp, settings, _runtime)
    add_fallbacks(bp, urls.owned_paths(settings),
                  rest=lambda path: rest_v10.is_rest_path(settings, path),
                  rest_error=rest_v10.rest_error)
    return bp

