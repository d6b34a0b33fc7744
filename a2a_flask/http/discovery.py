"""The GET routes that tell what is here: the Agent Cards, the agent list
and the health check. Their errors are bare JSON error objects; a storage
failure is HTTP 503 with the storage's own sentence."""

import logging
import time
from typing import TYPE_CHECKING, Optional

from flask import request
from werkzeug.exceptions import NotFound, SecurityError

from .. import errors, urls
from ..auth.callers import authenticate
from ..auth.permissions import authorize
from ..protocol.card_http import asked_form, card_response
from ..protocol.cards import agent_card, base_url
from ..protocol.json_body import json_response
from ..protocol.jsonrpc import error_response
from ..app_state import current_app_state
from .pipeline import storage_error
from .try_page import page_response, wants_page

if TYPE_CHECKING:  # pragma: no cover
    from flask import Response

log = logging.getLogger("a2a_flask")


def _unavailable(app_state, exc):
    """The bare answer of a GET route whose storage failed (HTTP 503, the
    storage's own sentence); anything else is raised again."""
    failure = storage_error(app_state, exc)
    failure.http_status = 503
    return error_response(failure, bare=True)


def card(name, at_root=False):
    """The Agent Card of agent ``name`` (authenticated unless
    A2A_PUBLIC_CARDS)."""
    app_state = current_app_state()
    try:
        caller = (None if app_state.settings.public_cards
                  else authenticate(app_state, request))
        agent = app_state.reachable_agent(name)
        if caller is not None:
            authorize(caller, agent, app_state.settings.oidc_required_scopes)
        card = agent_card(app_state, agent, at_root, form=asked_form(request))
        return card_response(app_state, card, public=caller is None)
    except errors.A2AError as exc:
        return error_response(exc, bare=True)
    except Exception as exc:  # the key lookup met a storage failure
        return _unavailable(app_state, exc)


def agentless_card():
    """``PREFIX/agents/.well-known/agent-card.json``: where a JS client given
    ``PREFIX/agents/<name>`` (no trailing slash) looks; the agent's name was
    dropped, and no agent is guessed."""
    settings = current_app_state().settings
    return error_response(errors.AgentNotFoundError(
        "No agent is named in this URL. Give clients the agent's URL with a "
        "trailing slash, %s/<name>/ (its card is at %s)." % (
            urls.agents_tree(settings), urls.card_path(settings, "<name>"))),
        bare=True)


def _absolute(settings, path):
    """``path`` as the URL callers reach; the path alone where the request's
    Host is not trusted (a hint is no reason to refuse)."""
    try:
        return base_url(settings) + path
    except SecurityError:
        return path


def rpc_method_hint(name: Optional[str] = None) -> str:
    """The 405 of a JSON-RPC endpoint asked with another method than POST
    (most often a browser or curl given the endpoint): what to do instead."""
    settings = current_app_state().settings
    card = (urls.card_path(settings, name) if name is not None
            else urls.CARD_PATHS[0])
    return ("This is an A2A JSON-RPC endpoint: POST a JSON-RPC request to it "
            "(Content-Type: application/json). The agent's card is at %s."
            % _absolute(settings, card))


def agent_base(name: str) -> "Response":
    """``GET PREFIX/agents/<name>/``, the URL to give a client: the try page
    for a browser (A2A_TRY_PAGE), else a 404 telling where the card and the
    endpoint are. Where cards are public, only a reachable agent is
    answered so; where they are not, every name is (the answer says nothing
    of the agent)."""
    app_state = current_app_state()
    settings = app_state.settings
    if settings.public_cards:
        try:
            app_state.reachable_agent(name)
        except errors.AgentNotFoundError:
            raise NotFound() from None
    if settings.try_page and wants_page():
        return page_response()
    raise NotFound(
        "This is the URL of agent %s to give an A2A client, which reads the "
        "agent's card at %s (and calls it at %s). GET the card, or call the "
        "agent with a client." % (
            name, _absolute(settings, urls.card_path(settings, name)),
            _absolute(settings, urls.agent_path(settings, name))))


def jwks():
    """The public keys of signed cards (A2A_CARD_SIGNING_KEY), as a JWKS."""
    app_state = current_app_state()
    response = json_response(app_state.card_signer.jwks)
    response.cache_control.public = True
    response.cache_control.max_age = app_state.settings.card_max_age
    return response


def agent_list():
    """The agents this caller may reach, with their endpoint and card URLs."""
    app_state = current_app_state()
    try:
        caller = authenticate(app_state, request)
    except errors.A2AError as exc:
        return error_response(exc, bare=True)
    except Exception as exc:  # the key lookup met a storage failure
        return _unavailable(app_state, exc)
    settings = app_state.settings
    base = base_url(settings)
    return json_response({"agents": [
        {"name": agent.name, "description": agent.description,
         "url": base + urls.agent_path(settings, agent.name),
         "card": base + urls.card_path(settings, agent.name)}
        for agent in app_state.reachable_agents()
        if caller.may_reach(agent.name)]})


def _health(app_state):
    """(body, status) of ``GET PREFIX/health``: one trivial query, whether
    writes work (``Storage.writes_problem``), and, where background agents
    exist, whether a claimer was seen lately ("degraded" if not). A database problem is told in a
    few words and logged once per change, without a traceback (a load
    balancer asks every few seconds)."""
    storage = app_state.storage
    try:
        version = storage.schema_version()
    except Exception as exc:
        if storage.failure(exc) is None:
            raise
        _note_health("the database is unavailable: %s" % exc)
        return {"status": "unavailable", "database": "unavailable"}, 503
    body = {"status": "ok", "database": "ok", "schemaVersion": version}
    problem = app_state.schema_problem(version)
    if problem is not None:
        body.update(status="outdated", message=problem.message)
        return body, 503
    writes = storage.writes_problem()
    if writes is not None:
        _note_health("writes fail: %s" % writes)
        return {"status": "unavailable", "writes": writes}, 503
    _note_health(None)
    unseen = _worker_unseen(app_state)
    if unseen is not None:
        body.update(status="degraded", worker="none seen for %d s" % unseen)
    return body, 200


def _worker_unseen(app_state):
    """Seconds for which no claimer of background turns has been seen, when
    background agents exist and none was within twice the lease (the turns
    queue up unrun); else None. Warned once in the log when it starts."""
    if not any(agent.background for agent in app_state.reachable_agents()):
        return None
    storage = app_state.storage
    try:
        seen = storage.worker_last_seen()
    except Exception as exc:
        if storage.failure(exc) is None:
            raise
        return None  # the database's own trouble is told by the checks above
    if seen is not None and seen <= 2 * app_state.settings.worker_lease_seconds:
        _note_worker(app_state, None)
        return None
    if seen is None:  # none ever: for as long as this app knows
        seen = time.monotonic() - app_state.started
    _note_worker(app_state, int(seen))
    return int(seen)


def _note_worker(app_state, unseen):
    """Warn once when claimers go missing, and say when one is back."""
    if unseen is None:
        if app_state.worker_warned:
            app_state.worker_warned = False
            log.warning("health: a worker runs background turns again")
        return
    if not app_state.worker_warned:
        app_state.worker_warned = True
        log.warning("health: degraded: background agents exist but no worker "
                    "was seen for %d s; their turns wait. Start `flask a2a "
                    "worker` beside the web server (or set "
                    "A2A_IN_PROCESS_WORKER)", unseen)


_health_problem = [None]  # this process's last one logged


def _note_health(problem):
    """Log a health problem when it starts or changes, and when it ends."""
    last = _health_problem[0]
    if problem == last:
        return
    _health_problem[0] = problem
    if problem is not None:
        log.warning("health: %s", problem)
    elif last is not None:
        log.warning("health: ok again (was: %s)", last)


def health():
    return json_response(*_health(current_app_state()))
