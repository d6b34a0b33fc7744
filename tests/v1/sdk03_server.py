"""The official a2a-sdk 0.3 server (A2A 0.3 JSON-RPC), the agent semantics of
``sdk_server.py``: a peer for a2a_flask.client's tests.

Runs under the SDK-0.3 venv of ``clients.py`` (``a2a-sdk[http-server]``
0.3.26 and uvicorn: the test venv has the SDK without its server extra):

    PY sdk03_server.py PORT [--key KEY] [--header X-API-Key]

Serves the card at ``/.well-known/agent-card.json`` and JSON-RPC at ``/``.
With a key, every route but the card answers 401 without ``HEADER: KEY``
(and the card declares the ``apiKey`` scheme). ``chat`` stops in
``input-required`` (the next message on the task completes it), ``wait``
leaves the task ``working``, anything else is echoed and completes.
"""

import os

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities, AgentCard, AgentSkill, APIKeySecurityScheme, In, Part,
    SecurityScheme, TaskState, TextPart,
)
from a2a.utils import new_task


class EchoChatExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue) -> None:
        task = context.current_task
        continuing = task is not None and task.status.state == TaskState.input_required
        if task is None:
            task = new_task(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        text = context.get_user_input()
        if text == "chat" and not continuing:
            await updater.requires_input(updater.new_agent_message(
                [Part(root=TextPart(text="say more"))]), final=True)
            return
        if text == "wait":
            await updater.start_work()
            return
        await updater.add_artifact([Part(root=TextPart(text=text))], name="echo")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def make_app(port, key=None, header="X-API-Key"):
    from starlette.middleware.base import BaseHTTPMiddleware
    from starlette.responses import JSONResponse

    card = AgentCard(
        name="echo", description="Echoes; 'chat' asks for more; 'wait' keeps working.",
        url=f"http://127.0.0.1:{port}/", version="1.0.0",
        default_input_modes=["text"], default_output_modes=["text"],
        capabilities=AgentCapabilities(streaming=False),
        skills=[AgentSkill(id="echo", name="echo", description="echo", tags=["echo"])])
    if key:
        card.security_schemes = {"apiKey": SecurityScheme(root=APIKeySecurityScheme(
            in_=In.header, name=header))}
        card.security = [{"apiKey": []}]
    handler = DefaultRequestHandler(agent_executor=EchoChatExecutor(),
                                    task_store=InMemoryTaskStore())
    app = A2AStarletteApplication(agent_card=card, http_handler=handler).build()

    class KeyCheck(BaseHTTPMiddleware):
        async def dispatch(self, request, call_next):
            if key and not request.url.path.startswith("/.well-known/") \
                    and request.headers.get(header) != key:
                return JSONResponse({"error": "missing or wrong API key"}, status_code=401)
            return await call_next(request)

    app.add_middleware(KeyCheck)
    return app


if __name__ == "__main__":
    import argparse

    import uvicorn

    p = argparse.ArgumentParser(description="the official a2a-sdk 0.3 server, echo agent")
    p.add_argument("port", type=int)
    p.add_argument("--key")
    p.add_argument("--header", default="X-API-Key")
    a = p.parse_args()
    uvicorn.run(make_app(a.port, a.key, a.header), host="127.0.0.1", port=a.port,
                log_level=os.environ.get("LOG_LEVEL", "warning"))
