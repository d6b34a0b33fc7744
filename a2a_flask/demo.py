"""The demo agents ``echo`` and ``chat``, as registered by ``wsgi.py``."""

from .agents import InputRequired, Reply


def echo(turn):
    """Replies with what it was told; one turn, then the task is completed."""
    return Reply(turn.text)


#: How many earlier things the chat agent recalls.
CHAT_MEMORY = 5


def _text(message):
    return "\n".join(p["text"] for p in message["parts"] if p["kind"] == "text")


def chat(turn):
    """A conversation: each reply waits for more input, "bye" ends it.

    Reads only its last few messages, so turn 1,000 costs what turn 2 does:
    the turn number rides in the metadata of its previous reply.
    """
    recent = turn.recent(2 * CHAT_MEMORY)
    replies = [m for m in recent if m["role"] == "agent"]
    last_number = (replies[-1].get("metadata") or {}).get("turn") if replies else None
    said = [m for m in recent if m["role"] == "user"][-CHAT_MEMORY:]
    number = (last_number if isinstance(last_number, int) else len(said)) + 1
    if turn.text.strip().lower().rstrip("!.") in ("bye", "goodbye"):
        return Reply("Goodbye! We talked for %d turns." % number,
                     metadata={"turn": number})
    reply = "turn %d; you said: %s" % (number, turn.text)
    if said:
        reply += "; you said earlier: " + " | ".join(_text(m) for m in said)
    return InputRequired(reply, metadata={"turn": number})


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
