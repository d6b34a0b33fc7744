"""The demo agents ``echo``, ``chat`` and ``slow`` (a background agent), as
registered by ``wsgi.py``, the ``conformance`` agent (A2A_CONFORMANCE_AGENT)
and the demo's index page at ``/``."""

import base64
import hashlib
import re
import time
from typing import Any, Dict

from flask import Flask, Response, request
from markupsafe import escape

from . import urls
from .agent import InputRequired, Reject, Reply


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


#: The file the ``conformance`` agent answers with, as its bytes and as a URL.
CONFORMANCE_FILE_TEXT = b"Generated file content\n"
CONFORMANCE_FILE_URL = "https://example.com/output.txt"
#: Seconds the long-running scripted task works before it completes.
CONFORMANCE_LONG_SECONDS = 4


def _file_part(**file):
    return {"kind": "file", "file": dict(file, name="output.txt", mimeType="text/plain")}


def _text_parts(*texts):
    return [{"kind": "text", "text": text} for text in texts]


def _long_running(turn):
    for second in range(CONFORMANCE_LONG_SECONDS):
        if not turn.progress("working: %d of %d s" % (second, CONFORMANCE_LONG_SECONDS)):
            break  # canceled: the outcome would be discarded anyway
        time.sleep(1)
    return Reply("Long-running task completed")


#: What ``conformance`` does for a messageId starting with each prefix (the
#: conformance kit's in-band signal, its scenarios/*.feature), longest
#: first so that ``tck-artifact-file-url`` is not taken for ``tck-artifact-file``.
#: The streaming scenarios end as their streams would: this service does
#: not stream, so their messages come by SendMessage, if at all.
CONFORMANCE_SCRIPT = [
    ("tck-complete-task", lambda turn: Reply("Hello from TCK")),
    ("tck-artifact-text", lambda turn: Reply("Generated text content")),
    ("tck-artifact-file-url", lambda turn: Reply(parts=[
        _file_part(uri=CONFORMANCE_FILE_URL)])),
    ("tck-artifact-file", lambda turn: Reply(parts=[
        _file_part(bytes=base64.b64encode(CONFORMANCE_FILE_TEXT).decode("ascii"))])),
    ("tck-artifact-data", lambda turn: Reply(parts=[
        {"kind": "data", "data": {"key": "value", "count": 42}}])),
    # A2A lets an agent answer a Message instead of a Task; every send here
    # makes a durable task (docs/conformance.md), so this one completes.
    ("tck-message-response", lambda turn: Reply("Direct message response")),
    ("tck-input-required", lambda turn: InputRequired(
        "Input required: send another message to this task.")),
    ("tck-reject-task", lambda turn: Reject("rejected")),
    ("tck-stream-artifact-chunked", lambda turn: Reply(parts=_text_parts(
        "chunk-1 ", "chunk-2"))),
    ("tck-stream-artifact-text", lambda turn: Reply("Streamed text content")),
    ("tck-stream-artifact-file", lambda turn: Reply(parts=[
        _file_part(bytes=base64.b64encode(CONFORMANCE_FILE_TEXT).decode("ascii"))])),
    ("tck-stream-ordering-001", lambda turn: Reply("Ordered output")),
    ("tck-stream-001", lambda turn: Reply("Stream hello from TCK")),
    ("tck-stream-002", lambda turn: Reply("Stream completed")),
    ("tck-stream-003", lambda turn: Reply("Stream task lifecycle")),
    ("test-resubscribe-message-id", _long_running),
]
CONFORMANCE_SCRIPT.sort(key=lambda entry: -len(entry[0]))


def conformance(turn):
    """The conformance kit's test agent: what it does is chosen by the
    prefix of the incoming messageId (``CONFORMANCE_SCRIPT``); any other
    message completes the task, naming the messageId."""
    message_id = turn.message["messageId"]
    for prefix, act in CONFORMANCE_SCRIPT:
        if message_id.startswith(prefix):
            return act(turn)
    return Reply("No scenario for messageId %s: completed." % message_id)


def register_conformance_agent(a2a):
    """``conformance``: a background agent, so that a send with
    ``returnImmediately`` answers while the turn still runs, as the kit's
    execution-mode and cancel scenarios expect (the demo's web processes run
    its turns: A2A_IN_PROCESS_WORKER)."""
    a2a.add_agent("conformance", conformance, background=True,
                  description="The A2A conformance kit's test agent: the prefix of "
                              "the messageId picks a scripted answer.",
                  output_modes=("text/plain", "application/json"), skills=[{
        "id": "conformance", "name": "Conformance scenarios",
        "description": "Answers as the A2A conformance kit's scenarios script, "
                       "chosen by the messageId's prefix (tck-complete-task, "
                       "tck-artifact-text, tck-input-required...).",
        "tags": ["demo", "conformance"], "examples": ["hello"]}])


def register_demo_agents(a2a, slow_agent=True, conformance_agent=False):
    """``echo`` and ``chat``; ``slow`` too unless ``slow_agent`` is False;
    ``conformance`` when ``conformance_agent`` (A2A_CONFORMANCE_AGENT)."""
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
    if conformance_agent:
        register_conformance_agent(a2a)


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
    from .app_state import current_app_state
    from .protocol.cards import base_url

    app_state = current_app_state()
    settings = app_state.settings
    base = base_url(settings)
    # The operator's page, when it is on (its data needs an operator).
    dashboard = base + urls.dashboard_path(settings) if settings.dashboard else None
    if not settings.public_cards:
        return {"agents": None, "list": base + urls.agents_tree(settings),
                "dashboard": dashboard}
    agents = []
    for agent in app_state.reachable_agents():
        client_url = base + urls.agent_base_path(settings, agent.name)
        agents.append({
            "name": agent.name, "description": agent.description,
            "url": client_url,
            "card": base + urls.card_path(settings, agent.name),
            "endpoint": base + urls.agent_path(settings, agent.name),
            "tryPage": client_url if settings.try_page else None})
    return {"agents": agents, "dashboard": dashboard}


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
    if body["dashboard"]:
        parts.append('<p>Operators: <a href="%s">the operator\'s page</a> (an '
                     'operator key, <code>flask a2a keys create --operator</code>).'
                     '</p>' % escape(body["dashboard"]))
    parts.append("</body></html>")
    return "".join(parts)


def index() -> Response:
    """``GET /``: the demo's agents, a page for a browser, JSON for a client
    asking for ``application/json``."""
    from .protocol.json_body import json_response

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
