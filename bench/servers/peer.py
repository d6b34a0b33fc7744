"""PEER server: the official a2a-sdk 0.3.x server with an echo executor.

Run by uvicorn (the SDK's documented way), through ``--serve`` below:

    PEER_STORE=sqlite PEER_DB=/tmp/x.sqlite3 python bench/servers/peer.py --serve 127.0.0.1 PORT 2

``PEER_STORE`` (memory, sqlite or postgres) and ``PEER_DB`` choose the SDK's
task store: see ``launch.make_store``.

The executor follows the SDK samples: it publishes the new Task, adds an
artifact echoing the user's text and completes the task, so ``message/send``
answers a Task in state ``completed`` with one artifact, and ``tasks/get``
finds it in the store.

``python peer.py --init-db PATH`` creates the SDK's table before the workers
start, so that several uvicorn workers do not race on ``CREATE TABLE``.

``python peer.py --serve HOST PORT WORKERS`` runs ``uvicorn.run("peer:app")``
through ``launch.py``: several workers as uvicorn servers in processes of
their own, each on its own SO_REUSEPORT socket, TCP_NODELAY set (uvicorn
#3149); ``--stock`` runs uvicorn's own workers.
"""

import asyncio
import os
import sys

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentSkill, Part, TextPart
from a2a.utils import new_task

from launch import init_db, make_store, serve_uvicorn  # the script's folder is on sys.path

#: PEER_WAITS=1: the executor first sleeps the seconds the user's text names,
#: as an agent waiting on a model (bench/waiting.py).
WAITS = os.environ.get("PEER_WAITS") == "1"


class EchoExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task or new_task(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if WAITS:  # bench/waiting.py: the text is how long a model takes
            await asyncio.sleep(float(context.get_user_input()))
        await updater.add_artifact([Part(root=TextPart(text=context.get_user_input()))], name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def make_app():
    port = os.environ.get("PEER_PORT", "0")
    card = AgentCard(
        name="echo",
        description="Echoes the user's text as an artifact.",
        url=f"http://127.0.0.1:{port}/",
        version="1.0.0",
        default_input_modes=["text"],
        default_output_modes=["text"],
        capabilities=AgentCapabilities(streaming=False),
        skills=[AgentSkill(id="echo", name="echo", description="echo", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=EchoExecutor(), task_store=make_store())
    return A2AStarletteApplication(agent_card=card, http_handler=handler).build()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--init-db":
        asyncio.run(init_db(sys.argv[2]))
    elif len(sys.argv) in (5, 6) and sys.argv[1] == "--serve":
        serve_uvicorn("peer:app", sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
                      stock=sys.argv[5:] == ["--stock"])
    else:
        raise SystemExit("usage: peer.py --init-db PATH | peer.py --serve HOST PORT WORKERS [--stock]")
else:
    app = make_app()
