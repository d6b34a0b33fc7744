"""The demo agents ``echo`` and ``chat``, as registered by ``wsgi.py``."""

import re

from .agents import InputRequired, Reply


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


def register_demo_agents(a2a):
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
