"""Which URL to give a client: the four official SDK clients (Python 0.3.x
and 1.x, JS 0.3.x and 1.x), each given a base URL and left to find the card
its own default way, then sending "hello" to the demo's echo agent.

The agent's URL with a trailing slash works in all four (the form the docs
give); so do its JSON-RPC endpoint, its HTTP+JSON base and its card URL
given as the base. Without the trailing slash the JS clients drop the
agent's name (``/agents/.well-known/agent-card.json``): that answers a 404
that says what to give instead; no agent is guessed.
"""

import asyncio
import sys
from uuid import uuid4

import pytest

from v1 import clients

if sys.version_info < (3, 10):  # the a2a-sdk needs 3.10; elsewhere it must import
    pytest.skip("the a2a-sdk client needs Python 3.10 or newer",
                allow_module_level=True)

AGENT = "/api/v1/agents/echo"
#: Base URL forms (below the server URL) every client must take: the state
#: "hello" leaves (echo completes; chat, the default agent at the root,
#: asks for more).
WORKING = {AGENT + "/": "completed", AGENT + "/a2a": "completed",
           AGENT + "/rest": "completed",
           AGENT + "/.well-known/agent-card.json": "completed",
           "": "input-required"}
NO_SLASH = AGENT
HINT = "trailing slash"


def py03(bases):
    """{base: (ok, state or error)} with a2a-sdk 0.3 (this venv)."""
    import httpx
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.types import Message, Part, Role, TextPart, TransportProtocol

    async def one(http, base):
        try:
            card = await A2ACardResolver(http, base).get_agent_card()
        except Exception as exc:
            return False, str(exc)
        client = ClientFactory(ClientConfig(
            streaming=False, httpx_client=http,
            supported_transports=[TransportProtocol.jsonrpc])).create(card)
        message = Message(role=Role.user, parts=[Part(root=TextPart(text="hello"))],
                          message_id=str(uuid4()))
        events = [event async for event in client.send_message(message)]
        return True, events[0][0].status.state.value

    async def main():
        async with httpx.AsyncClient(timeout=30) as http:
            return {base: await one(http, base) for base in bases}

    return asyncio.run(main())


def test_every_sdk_client_takes_the_documented_url_forms(demo_server):
    bases = [demo_server.url + path for path in WORKING]
    results = {"python 0.3": py03(bases),
               "js 0.3": {base: (r["ok"], r.get("state") or r["error"])
                          for base, r in clients.run_js_03(bases).items()}}
    for name, run in (("python 1.x", clients.run_py), ("js 1.x", clients.run_js)):
        results[name] = {}
        for base in bases:
            steps = run(None, base_url=base, steps="send")
            step = steps.get("send") or steps["card"]
            results[name][base] = (step["ok"], step.get("state") or step["error"])
    for name, by_base in results.items():
        for path, expected in WORKING.items():
            ok, state = by_base[demo_server.url + path]
            assert ok and state in (expected, "TASK_STATE_" + expected.upper()
                                    .replace("-", "_")), (name, path, state)


def test_no_trailing_slash_works_in_python_and_js_is_told_why(demo_server):
    base = demo_server.url + NO_SLASH
    assert py03([base])[base] == (True, "completed")
    py1 = clients.run_py(None, base_url=base, steps="send")
    assert py1["send"]["state"] == "TASK_STATE_COMPLETED"
    js03 = clients.run_js_03([base])[base]
    assert not js03["ok"]
    assert js03["fetched"][0]["url"].endswith("/api/v1/agents/.well-known/agent-card.json")
    assert js03["fetched"][0]["status"] == 404
    js1 = clients.run_js(None, base_url=base, steps="send")
    assert not js1["card"]["ok"]
    wire = js1["card"]["wire"][0]
    assert wire["status"] == 404 and HINT in wire["body"]["message"]
