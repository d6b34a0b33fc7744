"""The demo agents ``echo`` and ``chat``, as registered by ``wsgi.py``."""

from .agents import InputRequired, Reply


def echo(turn):
    """Replies with what it was told; one turn, then the task is completed."""
    return Reply(turn.text)


def chat(turn):
    """A conversation: each reply waits for more input, "bye" ends it."""
    said = [m for m in turn.context_history if m["role"] == "user"]
    earlier = [
        "\n".join(p["text"] for p in m["parts"] if p["kind"] == "text") for m in said]
    number = len(said) + 1
    if turn.text.strip().lower().rstrip("!.") in ("bye", "goodbye"):
        return Reply("Goodbye! We talked for %d turns." % number)
    reply = "turn %d; you said: %s" % (number, turn.text)
    if earlier:
        reply += "; you said earlier: " + " | ".join(earlier)
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
                           "recalls every earlier turn of the conversation.",
            "tags": ["demo", "memory"]}])
