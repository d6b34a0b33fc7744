"""PEER server: the official a2a-sdk 1.3.x server (A2A 1.0) with an echo executor.

a2a-sdk 1.x cannot share a virtualenv with the 0.3.x that ``peer.py`` and the
tests use, so this file runs under its own interpreter: the one of the venv
``bench/sdk13.py`` creates (``bench/.cache/sdk13``).  Same launcher as
``peer.py`` (uvicorn, the TCP_NODELAY fix, ``--init-db``, ``--serve``):

    PEER_STORE=sqlite PEER_DB=/tmp/x.sqlite3 .cache/sdk13/bin/python peer13.py --serve 127.0.0.1 PORT 2

``PEER_STORE`` (memory, sqlite or postgres) and ``PEER_DB`` choose the SDK's
task store: see ``launch.make_store``.

It serves A2A 1.0 JSON-RPC at ``/``: ``SendMessage`` and ``GetTask`` with
the ``A2A-Version: 1.0`` header (the 0.3 compatibility layer stays off, so
what is measured is the SDK's own protocol).  The executor publishes the
Task, adds an artifact echoing the user's text and completes it, so
``SendMessage`` answers a Task in ``TASK_STATE_COMPLETED`` with one artifact.
"""

import asyncio
import os
import sys

from a2a.helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill

from launch import init_db, make_store, serve_uvicorn  # the script's folder is on sys.path

#: PEER_WAITS=1: the executor first sleeps the seconds the user's text names,
#: as an agent waiting on a model (bench/waiting.py).
WAITS = os.environ.get("PEER_WAITS") == "1"


class EchoExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue) -> None:
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if WAITS:  # bench/waiting.py: the text is how long a model takes
            await asyncio.sleep(float(context.get_user_input()))
        await updater.add_artifact([new_text_part(context.get_user_input())], name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue) -> None:
        raise NotImplementedError


def make_app():
    from starlette.applications import Starlette

    url = f"http://127.0.0.1:{os.environ.get('PEER_PORT', '0')}/"
    card = AgentCard(
        name="echo",
        description="Echoes the user's text as an artifact.",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        version="1.0.0",
        default_input_modes=["text"],
        default_output_modes=["text"],
        capabilities=AgentCapabilities(streaming=False),
        skills=[AgentSkill(id="echo", name="echo", description="echo", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=EchoExecutor(), task_store=make_store(), agent_card=card)
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url="/")
    return Starlette(routes=routes)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--init-db":
        asyncio.run(init_db(sys.argv[2]))
    elif len(sys.argv) in (5, 6) and sys.argv[1] == "--serve":
        serve_uvicorn("peer13:app", sys.argv[2], int(sys.argv[3]), int(sys.argv[4]),
                      stock=sys.argv[5:] == ["--stock"])
    else:
        raise SystemExit("usage: peer13.py --init-db PATH_OR_URL"
                         " | peer13.py --serve HOST PORT WORKERS [--stock]")
else:
    app = make_app()
