"""Messages and finished turns for the storage contract tests."""


def msg(text="hi", message_id=None, role="user", **fields):
    message = {"role": role, "parts": [{"kind": "text", "text": text}],
               "messageId": message_id or "m-" + text}
    message.update(fields)
    return message


def agent_reply(start, text="done"):
    return {"kind": "message", "role": "agent", "messageId": "a-" + text,
            "parts": [{"kind": "text", "text": text}], "taskId": start.task_id,
            "contextId": start.context_id}


def finished(storage, state="completed", owner="alice", agent="echo", text="hi",
             **fields):
    start = storage.start_turn(owner, agent, msg(text), **fields)
    storage.finish_turn(start.task_id, owner, agent, state, agent_reply(start, text))
    return start
