"""The demo agents ``echo``, ``chat`` and ``slow`` (a background agent), as
registered by ``wsgi.py``, and the demo's index page at ``/``."""

import base64
import hashlib
import re
import time
from typing import Any, Dict

from flask import Flask, Response, request
from markupsafe import escape

from . import urls
from .agent import InputRequired, Reply


def echo(turn):
    """Replies with what it was told; one turn, then the task is completed."""
    return Reply(turn.text)


#: How many earlier things the chat agent recalls.
CHAT_MEMORY = 5
_NUMBERED = re.compile(r"^turn (\d+);|We talked for (\d+) turns")


def _text(message):
    return "\n".join(p["text"] for p in message["parts"] if p["kind"] == "text")


def chat(turn):
    """A conversation: each reply waits for more input, "bye" ends it.

    Reads only its last few messages, so turn 1,000 costs what turn 2 does:
    the turn number is read from its own previous reply.
    """
    recent = turn.recent(2 * CHAT_MEMORY)
    said = [m for m in recent if m["role"] == "user"]
    number = len(said) + 1
    replies = [m for m in recent if m["role"] == "agent"]
    numbered = _NUMBERED.search(_text(replies[-1])) if replies else None
    if numbered:
        number = int(numbered.group(1) or numbered.group(2)) + 1
    said = said[-CHAT_MEMORY:]
    if turn.text.strip().lower().rstrip("!.") in ("bye", "goodbye"):
        return Reply("Goodbye! We talked for %d turns." % number)
    reply = "turn %d; you said: %s" % (number, turn.text)
    if said:
        reply += "; you said earlier: " + " | ".join(_text(m) for m in said)
    return InputRequired(reply)


#: The seconds ``slow`` waits: the first number in its text, else the
#: default, at most the most.
SLOW_DEFAULT, SLOW_MOST = 2, 60
_NUMBER = re.compile(r"\d+")


def slow(turn):
    """Waits the number of seconds its text names, reporting progress each second.

    A long-running agent: ``flask a2a worker`` runs its turns, or, in the
    demo (``A2A_IN_PROCESS_WORKER`` in wsgi.py), the web processes."""
    found = _NUMBER.search(turn.text)
    seconds = min(int(found.group()) if found else SLOW_DEFAULT, SLOW_MOST)
    for second in range(seconds):
        if not turn.progress("working: %d of %d s" % (second, seconds)):
            break  # canceled: the outcome would be discarded anyway
        time.sleep(1)
    return Reply("done after %d s" % seconds)


def register_demo_agents(a2a, slow_agent=True):
    """``echo`` and ``chat``; ``slow`` too unless ``slow_agent`` is False."""
    a2a.add_agent("echo", echo, skills=[{
        "id": "echo", "name": "Echo", "description": "Replies with the text it is sent.",
        "tags": ["demo", "echo"], "examples": ["hello"]}])
    a2a.add_agent("chat", chat, skills=[{
        "id": "chat", "name": "Chat",
        "description": "Keeps a conversation open until you say bye; remembers "
                       "what you said earlier.",
        "tags": ["demo", "conversation"], "examples": ["hello", "bye"]}],
        extended_skills=[{
            "id": "chat-history", "name": "Chat with memory",
            "description": "Shown to callers with credentials: the chat agent "
                           "recalls the last few turns of the conversation.",
            "tags": ["demo", "memory"]}])
    if slow_agent:
        a2a.add_agent("slow", slow, background=True, skills=[{
            "id": "slow", "name": "Slow",
            "description": "Works for the number of seconds you send (default "
                           "2, at most 60), reporting progress each second; "
                           "send with blocking false and poll tasks/get.",
            "tags": ["demo", "background"], "examples": ["5"]}])


_INDEX_STYLE = ("body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;"
                "padding:0 1rem;line-height:1.5}code{overflow-wrap:anywhere}"
                "li{margin-bottom:1rem}")
#: Nothing but the page's own style: no script, nothing loaded, no frames.
INDEX_POLICY = "; ".join([
    "default-src 'none'",
    "style-src 'sha256-%s'" % base64.b64encode(
        hashlib.sha256(_INDEX_STYLE.encode("utf-8")).digest()).decode("ascii"),
    "img-src data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
])


def index_body() -> Dict[str, Any]:
    """What ``/`` tells, as its JSON: each agent's URLs; where cards are not
    public, only where the list is (it needs credentials)."""
    from .http.pipeline import current_app_state
    from .protocol.cards import base_url

    app_state = current_app_state()
    settings = app_state.settings
    base = base_url(settings)
    if not settings.public_cards:
        return {"agents": None, "list": base + urls.agents_tree(settings)}
    agents = []
    for agent in app_state.reachable_agents():
        client_url = base + urls.agent_base_path(settings, agent.name)
        agents.append({
            "name": agent.name, "description": agent.description,
            "url": client_url,
            "card": base + urls.card_path(settings, agent.name),
            "endpoint": base + urls.agent_path(settings, agent.name),
            "tryPage": client_url if settings.try_page else None})
    return {"agents": agents}


def _index_html(body):
    parts = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             '<link rel="icon" href="data:,"><title>a2a_flask demo</title>',
             "<style>%s</style></head><body><h1>a2a_flask demo</h1>" % _INDEX_STYLE]
    if body["agents"] is None:
        parts.append("<p>The agents are listed, for a caller with a key, at "
                     "<code>%s</code>.</p>" % escape(body["list"]))
    else:
        parts.append("<p>Give a client an agent's URL (and an API key): it reads "
                     "the agent's card from there.</p><ul>")
        for agent in body["agents"]:
            item = ["<li><strong>%s</strong>" % escape(agent["name"])]
            if agent["description"]:
                item.append(" &mdash; %s" % escape(agent["description"]))
            item.append("<br>URL to give a client: <code>%s</code>" % escape(agent["url"]))
            item.append('<br>Card: <a href="%s">%s</a>' % (escape(agent["card"]),
                                                            escape(agent["card"])))
            if agent["tryPage"]:
                item.append('<br><a href="%s">Try %s in this browser</a>' % (
                    escape(agent["tryPage"]), escape(agent["name"])))
            parts.append("".join(item) + "</li>")
        parts.append("</ul>")
    parts.append("</body></html>")
    return "".join(parts)


def index() -> Response:
    """``GET /``: the demo's agents, a page for a browser, JSON for a client
    asking for ``application/json``."""
    from .protocol.jsonrpc import json_response

    body = index_body()
    accept = request.accept_mimetypes
    if accept.best_match(["text/html", "application/json"]) == "application/json":
        response = json_response(body)
    else:
        response = Response(_index_html(body), mimetype="text/html")
        response.headers["Content-Security-Policy"] = INDEX_POLICY
        response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["X-Content-Type-Options"] = "nosniff"
    # Built from the request's Host header (without A2A_PUBLIC_BASE_URL).
    response.headers["Cache-Control"] = "no-store"
    response.headers["Vary"] = "Accept"
    return response


def add_index(app: Flask) -> None:
    """Serve the demo's index at ``/`` of ``app`` (on which ``A2A`` is)."""
    app.add_url_rule("/", "a2a_demo_index", index, methods=["GET"])
