"""The demo agents ``echo``, ``chat`` and ``slow`` (a background agent), as
registered by ``wsgi.py``."""

import re
import time

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

    A long-running agent: ``flask a2a worker`` runs its turns."""
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
