"""Messages, finished turns and old tasks for the storage contract tests."""

from a2a_flask.storage.common import now_iso


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


def set_updated_at(storage, task_id, moment):
    """Make a task look last changed at ``moment`` (a datetime): the storage's
    clock cannot be moved (PostgreSQL's is the server's), the row can."""
    stamp = now_iso(moment)
    with storage.transaction() as conn:  # SQL text both drivers take as is
        conn.execute("UPDATE a2a_tasks SET updated_at = '%s', created_at = '%s'"
                     " WHERE id = '%s'" % (stamp, stamp, task_id))


def long_task(storage, turns, text):
    """A task of ``turns`` questions (u0, u1...) and answers (a0, a1...) of
    ``text`` characters each, metadata {"note": "kept"}, completed at its
    last answer with one artifact "art" (1,000 characters); its id."""
    start = storage.start_turn("alice", "echo", msg("q0" + "x" * text, "u0"),
                               metadata={"note": "kept"})
    for turn in range(turns):
        reply = agent_reply(start, "a%d" % turn + "y" * text)
        reply["messageId"] = "a%d" % turn
        last = turn == turns - 1
        storage.finish_turn(start.task_id, "alice", "echo",
                            "completed" if last else "input-required", reply,
                            [{"artifactId": "art", "parts": [{"kind": "text",
                                                              "text": "z" * 1000}]}]
                            if last else ())
        if not last:
            storage.start_turn("alice", "echo", msg("q%d" % (turn + 1) + "x" * text,
                                                    "u%d" % (turn + 1)),
                               task_id=start.task_id)
    return start.task_id
