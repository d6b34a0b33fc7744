"""The official a2a-sdk 1.x server (A2A 1.0 only), a stand-in for ours while
we do not speak 1.0: the reference the client scenarios were proven against.

Runs under the SDK-1.x venv of ``clients.py`` (never the test venv: a2a-sdk
0.3 there), one uvicorn worker, in-memory store:

    PY sdk_server.py PORT [--key KEY] [--header X-API-Key]
                          [--jsonrpc-path /a2a/jsonrpc] [--rest-prefix /a2a/rest]

Serves the card at ``/.well-known/agent-card.json``, JSON-RPC at
``--jsonrpc-path`` and HTTP+JSON under ``--rest-prefix`` (both listed in
``supportedInterfaces``; ``--rest-prefix ""`` puts REST at the host root,
where the TCK's REST client looks). With a key, every route but the card
answers 401 without ``HEADER: KEY``.

The agent is the test-side copy of ``bench/servers/peer13.py``'s echo, with the
semantics the scenarios need:

- ``chat`` starts a task that stops in ``input-required``; the next message on
  that task echoes it and completes it (multi-turn);
- ``wait`` leaves the task ``working`` (to cancel it); with ``--leave-working``
  every new task but ``chat`` does (the TCK's main expects a task still
  ``working`` after a plain send); the next message on it completes it;
- anything else is echoed as an artifact and the task completes.
"""

import os

from a2a.helpers import new_task_from_user_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (AgentCapabilities, AgentCard, AgentInterface, AgentSkill, APIKeySecurityScheme,
                       StringList, TaskState)


class EchoChatExecutor(AgentExecutor):
    def __init__(self, leave_working=False):
        self.leave_working = leave_working

    async def execute(self, context: RequestContext, event_queue) -> None:
        task = context.current_task
        continuing = task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        if task is None:
            task = new_task_from_user_message(context.message)
            # only a new task is published: re-publishing one in input-required
            # makes the SDK answer with it at once, before the new turn runs
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        text = context.get_user_input()
        if text == "chat" and not continuing:
            await updater.requires_input(updater.new_agent_message([new_text_part("say more")]))
            return
        if text == "wait" or (self.leave_working and context.current_task is None):
            await updater.start_work()
            return
        await updater.add_artifact([new_text_part(text)], name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue) -> None:
        task = context.current_task
        await TaskUpdater(event_queue, task.id, task.context_id).cancel()


def make_app(port, key=None, header="X-API-Key", jsonrpc_path="/a2a/jsonrpc",
             rest_prefix="/a2a/rest", leave_working=False):
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.middleware.base import BaseHTTPMiddleware
    from starlette.responses import JSONResponse

    base = f"http://127.0.0.1:{port}"
    card = AgentCard(
        name="echo",
        description="Echoes the user's text; 'chat' asks for more input; 'wait' keeps working.",
        supported_interfaces=[
            AgentInterface(url=f"{base}{jsonrpc_path}", protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=f"{base}{rest_prefix}", protocol_binding="HTTP+JSON", protocol_version="1.0"),
        ],
        version="1.0.0",
        default_input_modes=["text"],
        default_output_modes=["text"],
        capabilities=AgentCapabilities(streaming=False, push_notifications=False),
        skills=[AgentSkill(id="echo", name="echo", description="echo", tags=["echo"])],
    )
    if key:  # declared, so that clients and the TCK's auth tests know of it
        card.security_schemes["apiKey"].api_key_security_scheme.CopyFrom(
            APIKeySecurityScheme(location="header", name=header))
        card.security_requirements.add().schemes["apiKey"].CopyFrom(StringList())
    handler = DefaultRequestHandler(agent_executor=EchoChatExecutor(leave_working),
                                    task_store=InMemoryTaskStore(), agent_card=card)
    routes = (create_agent_card_routes(card)
              + create_jsonrpc_routes(handler, rpc_url=jsonrpc_path)
              + create_rest_routes(handler, path_prefix=rest_prefix))

    class KeyCheck(BaseHTTPMiddleware):
        async def dispatch(self, request, call_next):
            if key and not request.url.path.startswith("/.well-known/") \
                    and request.headers.get(header) != key:
                return JSONResponse({"error": "missing or wrong API key"}, status_code=401)
            return await call_next(request)

    return Starlette(routes=routes, middleware=[Middleware(KeyCheck)])


if __name__ == "__main__":
    import argparse

    import uvicorn

    p = argparse.ArgumentParser(description="the official a2a-sdk 1.x server, echo agent")
    p.add_argument("port", type=int)
    p.add_argument("--key")
    p.add_argument("--header", default="X-API-Key")
    p.add_argument("--jsonrpc-path", default="/a2a/jsonrpc")
    p.add_argument("--rest-prefix", default="/a2a/rest")
    p.add_argument("--leave-working", action="store_true",
                   help="every new task but 'chat' stays working (what the TCK's main expects)")
    a = p.parse_args()
    app = make_app(a.port, a.key, a.header, a.jsonrpc_path, a.rest_prefix, a.leave_working)
    uvicorn.run(app, host="127.0.0.1", port=a.port, log_level=os.environ.get("LOG_LEVEL", "warning"))
