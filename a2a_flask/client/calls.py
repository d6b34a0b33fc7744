"""``turn.call``: an agent calls another agent, and a retried turn continues
the remote task instead of starting another.

The i-th call of a turn is named by the turn's message and ``i`` (or by the
``key`` the agent gives). Once the remote agent answered the send, its task
id is noted in the local task's metadata (``a2a_flask.calls``, a working
task's conditional update); the turn then waits for it. A turn run again
(a background agent registered ``retry=True`` whose worker died) finds the
note and reads or waits for that remote task instead of sending again. The
send itself carries a ``messageId`` derived from the local task and the
call's name: a retry that died before the note was written sends the same
message again, which an agent that runs a ``messageId`` once (a2a_flask's
own) answers with the task it already started.
"""

import uuid
from typing import Any, Dict, List, Optional, Union

from .client import Client
from .shapes import Message, Task

#: The metadata member of the local task holding its remote tasks.
CALLS_KEY = "a2a_flask.calls"


def call_agent(turn: Any, agent: Union[Client, str], text: Optional[str] = None, *,
               parts: Optional[List[Dict[str, Any]]] = None,
               key: Optional[str] = None, wait: Union[bool, float] = True,
               client_options: Optional[Dict[str, Any]] = None,
               **send_options: Any) -> Union[Task, Message]:
    """See ``Turn.call``."""
    index = turn._calls
    turn._calls += 1
    name = "%s.%s" % (turn._message_seq(), key if key is not None else index)
    client = Client(agent, **(client_options or {})) if isinstance(agent, str) else agent
    try:
        noted = (turn.metadata.get(CALLS_KEY) or {}).get(name) or {}
        if noted.get("taskId"):
            result: Union[Task, Message] = client.get(noted["taskId"])
        else:
            message_id = str(uuid.uuid5(uuid.NAMESPACE_URL, "a2a-flask-call:%s:%s"
                                        % (turn.task_id, name)))
            result = client.send(text, parts=parts, message_id=message_id,
                                 blocking=not wait, **send_options)
            if isinstance(result, Task):
                _note(turn, name, client, result)
        if wait and isinstance(result, Task):
            result = client.wait(result, None if wait is True else float(wait))
        return result
    finally:
        if client is not agent:
            client.close()


def _note(turn: Any, name: str, client: Client, task: Task) -> None:
    metadata = dict(turn.metadata)
    calls = dict(metadata.get(CALLS_KEY) or {})
    calls[name] = {"url": client.interface.url, "taskId": task.id,
                   "contextId": task.context_id}
    metadata[CALLS_KEY] = calls
    # Then the wait for the remote agent holds no connection of the storage.
    turn._stored(turn._store.note_metadata, turn.task_id, metadata)
    turn.metadata = metadata
