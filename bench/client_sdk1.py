"""The official a2a-sdk 1.x async client (A2A 1.0 JSON-RPC) sending
``calls`` messages to one agent, for bench/client.py; runs under the SDK's
own venv (``bench/sdk13.py``):

    PY client_sdk1.py CARD_URL KEY CALLS loop|per-call

Prints ``{"wall_ms": ..., "cpu_ms": ...}`` per call (after a warm-up), this
process's own CPU (``time.process_time``). ``loop``: one client, every call
awaited in one event loop; ``per-call``: ``asyncio.run`` with a new
httpx.AsyncClient and client for each call (the card resolved once).
"""

import asyncio
import json
import sys
import time
import uuid
from urllib.parse import urlsplit

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, SendMessageRequest


def main(card_url, key, calls, mode):
    headers = {"Authorization": "Bearer " + key}
    parts = urlsplit(card_url)

    async def resolve():
        async with httpx.AsyncClient(headers=headers, timeout=30) as http:
            return await A2ACardResolver(http, f"{parts.scheme}://{parts.netloc}",
                                         agent_card_path=parts.path).get_agent_card()
    card = asyncio.run(resolve())

    def make(http):
        return ClientFactory(ClientConfig(httpx_client=http, streaming=False,
                                          supported_protocol_bindings=["JSONRPC"])).create(card)

    async def send(client):
        message = Message(role=Role.ROLE_USER, parts=[Part(text="hello")],
                          message_id=str(uuid.uuid4()))
        [result] = [r async for r in client.send_message(SendMessageRequest(message=message))]
        assert result.task.artifacts[0].parts[0].text == "hello", result

    if mode == "per-call":
        async def once():
            async with httpx.AsyncClient(headers=headers, timeout=30) as http:
                await send(make(http))
        call = lambda: asyncio.run(once())  # noqa: E731
    else:
        loop = asyncio.new_event_loop()
        client = make(httpx.AsyncClient(headers=headers, timeout=30))
        call = lambda: loop.run_until_complete(send(client))  # noqa: E731
    for _ in range(max(5, calls // 20)):
        call()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        call()
    print(json.dumps({"wall_ms": (time.perf_counter() - wall) / calls * 1000,
                      "cpu_ms": (time.process_time() - cpu) / calls * 1000}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
