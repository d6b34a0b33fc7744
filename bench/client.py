"""Cost per call of a2a_flask.client next to the official async client, both
driving the same server: ``gunicorn wsgi:app`` (2 workers, the ``echo``
agent, auth on with a key), one caller at a time.

    pip install -e '.[client,bench]'      # the official a2a-sdk 0.3 client too
    python bench/client.py [--calls 300] [--rounds 3]

Callers (each sends ``message/send`` "hello" to echo and reads the task):

- ``ours 1.0``: ``Client(url, key=...)``, the card's first interface (A2A 1.0
  JSON-RPC), one client for every call;
- ``ours 0.3``: the same, ``version="0.3"``;
- ``sdk loop``: a2a-sdk 0.3 ``ClientFactory`` client (JSON-RPC, streaming off)
  on one httpx.AsyncClient, every call awaited in one long-lived event loop:
  the async client's best case;
- ``sdk per call``: the same client made inside ``asyncio.run`` for each call
  (card fetch excluded, the card resolved once): what a synchronous Flask
  view pays to use the async client;
- ``sdk1 loop``, ``sdk1 per call``: the same with a2a-sdk 1.x (A2A 1.0
  JSON-RPC), in its own venv (``bench/sdk13.py``), measured inside that
  process (``client_sdk1.py``); ``--no-sdk1`` leaves them out.

Per caller: wall time per call (ms) and the caller's own CPU per call (ms,
``time.process_time``), the median of ``--rounds`` interleaved rounds, and
each as a ratio to ``ours 1.0``. The server's own cost is the same for all.
"""

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from uuid import uuid4

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from processes import ROOT, Auth, Server, free_port, gunicorn_cmd, log, stop_all  # noqa: E402

from a2a_flask.client import Client  # noqa: E402


def ours(url, key, version=None):
    client = Client(url, key=key, version=version)
    client.card  # the card is fetched once, outside the timing

    def call():
        task = client.send("hello")
        assert task.state == "completed" and task.text == "hello", task
    return call


def sdk(url, key, per_call):
    import httpx
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.types import Message, Part, Role, Task, TaskState, TextPart, TransportProtocol

    headers = {"Authorization": "Bearer " + key}

    def message():
        return Message(role=Role.user, parts=[Part(root=TextPart(text="hello"))],
                       message_id=uuid4().hex)

    async def send(client):
        [(task, _)] = [event async for event in client.send_message(message())]
        assert isinstance(task, Task) and task.status.state == TaskState.completed

    def make(http, card):
        config = ClientConfig(streaming=False, httpx_client=http,
                              supported_transports=[TransportProtocol.jsonrpc])
        return ClientFactory(config).create(card)

    async def resolve():
        async with httpx.AsyncClient(headers=headers, timeout=30) as http:
            return await A2ACardResolver(http, url).get_agent_card()
    card = asyncio.run(resolve())

    if per_call:
        async def once():
            async with httpx.AsyncClient(headers=headers, timeout=30) as http:
                await send(make(http, card))
        return lambda: asyncio.run(once())

    loop = asyncio.new_event_loop()
    http = httpx.AsyncClient(headers=headers, timeout=30)
    client = make(http, card)
    return lambda: loop.run_until_complete(send(client))


def sdk1(url, key, per_call):
    """A caller measured in the a2a-sdk 1.x venv: ``calls -> (wall, cpu)``."""
    import json
    import subprocess

    import sdk13
    python, _ = sdk13.ensure()
    mode = "per-call" if per_call else "loop"

    def run(calls):
        out = subprocess.run(
            [python, os.path.join(HERE, "client_sdk1.py"),
             url + "/.well-known/agent-card.json", key, str(calls), mode],
            capture_output=True, text=True, timeout=900, check=True).stdout
        found = json.loads(out.strip().splitlines()[-1])
        return found["wall_ms"], found["cpu_ms"]
    return run


def measure(call, calls):
    for _ in range(max(5, calls // 20)):  # warm: connections, caches
        call()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        call()
    return ((time.perf_counter() - wall) / calls * 1000,
            (time.process_time() - cpu) / calls * 1000)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-sdk1", action="store_true",
                        help="leave out the a2a-sdk 1.x client (its own venv)")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="a2a-client-bench-")
    db = os.path.join(tmp, "a2a.sqlite3")
    auth = Auth(tmp)
    env, headers = auth.server_env(db)
    key = headers["Authorization"].split(" ", 1)[1]
    port = free_port()
    server = Server("us", gunicorn_cmd(2, port, "wsgi:app", chdir=ROOT), env, ROOT,
                    port, "/a2a", headers, tmp, db)
    try:
        server.start()
        url = "http://127.0.0.1:%d/api/v1/agents/echo" % port
        callers = {"ours 1.0": ours(url, key), "ours 0.3": ours(url, key, "0.3"),
                   "sdk loop": sdk(url, key, per_call=False),
                   "sdk per call": sdk(url, key, per_call=True)}
        measured = {name: (lambda calls, call=call: measure(call, calls))
                    for name, call in callers.items()}
        if not args.no_sdk1:
            measured["sdk1 loop"] = sdk1(url, key, per_call=False)
            measured["sdk1 per call"] = sdk1(url, key, per_call=True)
        results = {name: [] for name in measured}
        for round_ in range(args.rounds):
            for name, run in measured.items():
                results[name].append(run(args.calls))
                log("round %d %-13s %.2f ms wall, %.2f ms CPU per call"
                    % (round_ + 1, name, *results[name][-1]))
    finally:
        stop_all()
    base_wall = statistics.median(w for w, _ in results["ours 1.0"])
    base_cpu = statistics.median(c for _, c in results["ours 1.0"])
    log("\n| caller | wall ms/call | caller CPU ms/call | wall / ours 1.0 | CPU / ours 1.0 |")
    log("| --- | --- | --- | --- | --- |")
    for name, rows in results.items():
        wall = statistics.median(w for w, _ in rows)
        cpu = statistics.median(c for _, c in rows)
        log("| %s | %.2f | %.2f | %.2f | %.2f |" % (name, wall, cpu, wall / base_wall,
                                                   cpu / base_cpu))


if __name__ == "__main__":
    main()
