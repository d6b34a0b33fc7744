"""The official a2a-sdk 0.3.x client against the demo service under gunicorn.

Cards are discovered from their well-known URLs; the client is built by
``ClientFactory`` with a non-streaming JSON-RPC config (so it uses
message/send). Every HTTP answer the SDK gets is also checked against the
A2A JSON schema (an httpx response hook).
"""

import asyncio
import sys
from uuid import uuid4

import pytest

if sys.version_info < (3, 10):  # the a2a-sdk needs 3.10; elsewhere it must import
    pytest.skip("the a2a-sdk client needs Python 3.10 or newer",
                allow_module_level=True)

import httpx  # noqa: E402  (installed with the a2a-sdk)
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory  # noqa: E402
from a2a.client.errors import A2AClientJSONRPCError  # noqa: E402
from a2a.types import (  # noqa: E402
    Message, Part, Role, Task, TaskIdParams, TaskQueryParams, TaskState, TextPart,
    TransportProtocol,
)
from a2a.utils.constants import PREV_AGENT_CARD_WELL_KNOWN_PATH  # noqa: E402

from helpers import check_answer  # noqa: E402


def run(coroutine_function, server):
    """Run ``await coroutine_function(http)`` with a checking httpx client."""
    answers = []

    async def check(response):
        await response.aread()
        assert response.headers["content-type"].startswith("application/json")
        check_answer(response.status_code, response.json())
        answers.append(response.status_code)

    async def main():
        async with httpx.AsyncClient(headers=server.headers, timeout=30,
                                     event_hooks={"response": [check]}) as http:
            return await coroutine_function(http)

    result = asyncio.run(main())
    assert answers, "the SDK made no request"
    return result


def text_message(text, **fields):
    return Message(role=Role.user, parts=[Part(root=TextPart(text=text))],
                   message_id=str(uuid4()), **fields)


async def card_of(http, base_url, path=None):
    resolver = A2ACardResolver(http, base_url)
    return await resolver.get_agent_card(relative_card_path=path)


async def client_of(http, base_url):
    config = ClientConfig(streaming=False, httpx_client=http,
                          supported_transports=[TransportProtocol.jsonrpc])
    return ClientFactory(config).create(await card_of(http, base_url))


async def send(client, message):
    """message/send through the SDK: exactly one (Task, None) event."""
    events = [event async for event in client.send_message(message)]
    assert len(events) == 1, events
    task, update = events[0]
    assert isinstance(task, Task) and update is None
    return task


def status_text(task):
    return task.status.message.parts[0].root.text


def test_cards_from_the_well_known_urls(demo_server):
    url = demo_server.url

    async def scenario(http):
        return (await card_of(http, url),
                await card_of(http, url, PREV_AGENT_CARD_WELL_KNOWN_PATH),
                await card_of(http, url + "/api/v1/agents/echo"))

    root, legacy, echo = run(scenario, demo_server)
    assert root.name == "chat"
    assert root.url == url + "/a2a"
    assert legacy == root
    assert echo.name == "echo"
    assert echo.url == url + "/api/v1/agents/echo/a2a"
    for card in (root, echo):
        assert card.protocol_version == "0.3.0"
        assert card.preferred_transport == "JSONRPC"
        assert card.capabilities.streaming is False
        assert card.capabilities.push_notifications is False
        assert card.skills


def test_send_to_echo(demo_server):
    async def scenario(http):
        client = await client_of(http, demo_server.url + "/api/v1/agents/echo")
        task = await send(client, text_message("hello from the sdk"))
        got = await client.get_task(TaskQueryParams(id=task.id))
        return task, got

    task, got = run(scenario, demo_server)
    assert task.status.state == TaskState.completed
    assert task.artifacts[0].name == "response"
    assert task.artifacts[0].parts[0].root.text == "hello from the sdk"
    assert status_text(task) == "hello from the sdk"
    assert [m.role for m in task.history] == [Role.user, Role.agent]
    assert task.id.startswith("task_") and task.context_id.startswith("ctx_")
    assert got == task


def test_chat_continued_by_task_id(demo_server):
    async def scenario(http):
        client = await client_of(http, demo_server.url)  # the default agent
        first = await send(client, text_message("hi, I am the sdk"))
        second = await send(client, text_message("what did I say?",
                                                 task_id=first.id))
        last = await send(client, text_message("bye", task_id=first.id,
                                               context_id=first.context_id))
        short = await client.get_task(TaskQueryParams(id=first.id, history_length=2))
        full = await client.get_task(TaskQueryParams(id=first.id))
        return first, second, last, short, full

    first, second, last, short, full = run(scenario, demo_server)
    assert first.status.state == TaskState.input_required
    assert status_text(first) == "turn 1; you said: hi, I am the sdk"
    assert (second.id, second.context_id) == (first.id, first.context_id)
    assert second.status.state == TaskState.input_required
    assert status_text(second) == ("turn 2; you said: what did I say?; you said "
                                   "earlier: hi, I am the sdk")
    assert last.id == first.id and last.status.state == TaskState.completed
    assert status_text(last) == "Goodbye! We talked for 3 turns."
    assert len(full.history) == 6
    assert len(short.history) == 2
    assert short.history == full.history[-2:]
    assert short.history[0].parts[0].root.text == "bye"
    assert short.status == full.status == last.status


def test_cancel_and_errors_seen_by_the_client(demo_server):
    async def scenario(http):
        client = await client_of(http, demo_server.url + "/api/v1/agents/chat")
        open_task = await send(client, text_message("hello"))
        canceled = await client.cancel_task(TaskIdParams(id=open_task.id))
        codes = []
        for call in (
                lambda: client.cancel_task(TaskIdParams(id=open_task.id)),
                lambda: client.get_task(TaskQueryParams(id="task_" + "0" * 32)),
                lambda: client.cancel_task(TaskIdParams(id="no-such-task")),
                lambda: send(client, text_message("x", task_id="task_unknown")),
                lambda: send(client, text_message("x", task_id=open_task.id))):
            with pytest.raises(A2AClientJSONRPCError) as caught:
                await call()
            codes.append((caught.value.error.code,
                          (caught.value.error.data or {}).get("state")))
        got = await client.get_task(TaskQueryParams(id=open_task.id))
        return open_task, canceled, codes, got

    open_task, canceled, codes, got = run(scenario, demo_server)
    assert open_task.status.state == TaskState.input_required
    assert canceled.id == open_task.id
    assert canceled.status.state == TaskState.canceled
    assert codes == [(-32002, "canceled"), (-32001, None), (-32001, None),
                     (-32001, None), (-32602, "canceled")]
    assert got.status.state == TaskState.canceled
