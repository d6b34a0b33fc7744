"""Client scenarios with the official Python SDK 1.x client, in native A2A 1.0.

Runs under the SDK-1.x venv of ``clients.py`` (a2a-sdk 1.x cannot live beside
the 0.3 of the test venv); ``clients.run_py`` is the usual way in:

    PY py_client.py --card-url URL [--key KEY] [--header X-API-Key]
                    [--oidc-client CLIENT_ID:SECRET]
                    [--transport jsonrpc|rest] [--step all|send|multiturn|...]

``--base-url URL`` instead of ``--card-url``: the card is found the SDK's
default way from a base URL (``A2ACardResolver(http, URL)``); when that
fails, one ``card`` line with ``"ok": false`` is all that is printed.

Prints one JSON object per line and step: ``{"step", "ok", ...what came back}``
(tasks as the SDK decoded them, in ProtoJSON: ``TASK_STATE_*``, camelCase),
errors as ``{"error": {"class", "code", "message", "data"}}`` (``code`` the
1.0 JSON-RPC code of the SDK's error class), and ``wire``: every HTTP answer
of the step (method, url, status, JSON body) for the proto check.
An unexpected exception in a step is ``"ok": false`` with its ``error``;
the next steps still run.
"""

import argparse
import asyncio
import json
import sys
import uuid
from urllib.parse import urlsplit

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.auth.credentials import CredentialService
from a2a.client.auth.interceptor import AuthInterceptor
from a2a.types import (CancelTaskRequest, GetTaskRequest, ListTasksRequest, Message, Part, Role,
                       SendMessageRequest)
from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP
from google.protobuf.json_format import MessageToDict

BINDINGS = {"jsonrpc": "JSONRPC", "rest": "HTTP+JSON"}
STEPS = ["card", "send", "multiturn", "get", "list", "cancel", "get_unknown", "cancel_terminal"]


def as_json(msg):
    return MessageToDict(msg)


def error_of(exc):
    return {"class": type(exc).__name__,
            "code": JSON_RPC_ERROR_CODE_MAP.get(type(exc)),
            "message": str(getattr(exc, "message", exc)),
            "data": getattr(exc, "data", None)}


class Scenario:
    def __init__(self, client, card, wire):
        self.client, self.card, self.wire = client, card, wire

    async def send(self, text, task_id=None, context_id=None):
        msg = Message(role=Role.ROLE_USER, parts=[Part(text=text)], message_id=str(uuid.uuid4()))
        if task_id:
            msg.task_id = task_id
        if context_id:
            msg.context_id = context_id
        results = [r async for r in self.client.send_message(SendMessageRequest(message=msg))]
        return [as_json(r) for r in results]  # StreamResponse: {"task": ...} or {"message": ...}

    @staticmethod
    def task_of(responses):
        for r in responses:
            if "task" in r:
                return r["task"]
        raise AssertionError(f"no task in {responses}")

    async def step_card(self):
        return {"card": as_json(self.card)}

    async def step_send(self):
        responses = await self.send("hello")
        task = self.task_of(responses)
        return {"responses": responses, "state": task["status"]["state"],
                "artifacts_text": [p.get("text") for a in task.get("artifacts", [])
                                   for p in a.get("parts", [])]}

    async def step_multiturn(self):
        first = self.task_of(await self.send("chat"))
        second = self.task_of(await self.send("more please", task_id=first["id"],
                                              context_id=first["contextId"]))
        return {"first_state": first["status"]["state"], "second_state": second["status"]["state"],
                "same_task": first["id"] == second["id"], "first": first, "second": second}

    async def step_get(self):
        task = self.task_of(await self.send("hello"))
        full = as_json(await self.client.get_task(GetTaskRequest(id=task["id"])))
        one = as_json(await self.client.get_task(GetTaskRequest(id=task["id"], history_length=1)))
        zero = as_json(await self.client.get_task(GetTaskRequest(id=task["id"], history_length=0)))
        return {"state": full["status"]["state"], "history_len": len(full.get("history", [])),
                "history_len_1": len(one.get("history", [])),
                "history_len_0": len(zero.get("history", [])), "task": one}

    async def step_list(self):
        for i in range(3):
            await self.send(f"hello {i}")
        pages, token = [], ""
        while True:
            page = as_json(await self.client.list_tasks(ListTasksRequest(page_size=2, page_token=token)))
            pages.append({"ids": [t["id"] for t in page.get("tasks", [])],
                          "nextPageToken": page.get("nextPageToken", ""),
                          "pageSize": page.get("pageSize"), "totalSize": page.get("totalSize")})
            token = page.get("nextPageToken", "")
            if not token or len(pages) >= 50:
                break
        ids = [i for p in pages for i in p["ids"]]
        return {"pages": pages, "count": len(ids), "distinct": len(set(ids))}

    async def step_cancel(self):
        task = self.task_of(await self.send("chat"))  # input-required: not terminal
        canceled = as_json(await self.client.cancel_task(CancelTaskRequest(id=task["id"])))
        return {"before": task["status"]["state"], "state": canceled["status"]["state"],
                "task": canceled}

    async def step_get_unknown(self):
        return await self.expect_error(self.client.get_task(GetTaskRequest(id=str(uuid.uuid4()))))

    async def step_cancel_terminal(self):
        task = self.task_of(await self.send("hello"))
        result = await self.expect_error(self.client.cancel_task(CancelTaskRequest(id=task["id"])))
        result["task_state"] = task["status"]["state"]
        return result

    async def expect_error(self, call):
        try:
            answer = await call
        except Exception as e:  # the step reports whatever the SDK raised
            return {"error": error_of(e)}
        return {"ok": False, "unexpected_answer": as_json(answer)}


class IssuerCredentials(CredentialService):
    """The SDK asks this for a credential per scheme of the card: for its
    OpenID Connect scheme, an access token got from the provider the scheme
    names (discovery, then the client-credentials grant), once."""

    def __init__(self, card, client):
        self.card = card
        self.client_id, _, self.secret = client.partition(":")
        self.token = None

    async def get_credentials(self, scheme_name, context):
        scheme = self.card.security_schemes.get(scheme_name)
        if scheme is None or not scheme.HasField("open_id_connect_security_scheme"):
            return None
        if self.token is None:
            async with httpx.AsyncClient(timeout=30) as issuer:
                found = await issuer.get(scheme.open_id_connect_security_scheme.open_id_connect_url)
                answer = await issuer.post(found.json()["token_endpoint"],
                                           data={"grant_type": "client_credentials"},
                                           auth=(self.client_id, self.secret))
                answer.raise_for_status()
                self.token = answer.json()["access_token"]
        return self.token


async def main(args):
    wire = []

    async def record(response):
        await response.aread()
        try:
            body = response.json()
        except ValueError:
            body = response.text
        try:
            request = json.loads(response.request.content or b"null")
        except ValueError:
            request = None
        wire.append({"method": response.request.method, "url": str(response.request.url),
                     "request": request, "status": response.status_code, "body": body})

    headers = {args.header: args.key} if args.key else {}
    http = httpx.AsyncClient(headers=headers, timeout=30, event_hooks={"response": [record]})
    if args.base_url:
        resolver = A2ACardResolver(http, args.base_url)
    else:
        parts = urlsplit(args.card_url)
        resolver = A2ACardResolver(http, f"{parts.scheme}://{parts.netloc}",
                                   agent_card_path=parts.path)
    try:
        card = await resolver.get_agent_card()
    except Exception as e:
        if not args.base_url:
            raise
        print(json.dumps({"step": "card", "ok": False, "error": error_of(e),
                          "wire": list(wire)}), flush=True)
        await http.aclose()
        return
    card_wire = list(wire)
    factory = ClientFactory(ClientConfig(httpx_client=http, streaming=False,
                                         supported_protocol_bindings=[BINDINGS[args.transport]]))
    interceptors = ([AuthInterceptor(IssuerCredentials(card, args.oidc_client))]
                    if args.oidc_client else None)
    client = factory.create(card, interceptors=interceptors)
    scenario = Scenario(client, card, wire)
    steps = STEPS if args.step == "all" else args.step.split(",")
    for step in steps:
        wire[:] = card_wire if step == "card" else []
        try:
            out = {"ok": True, **await getattr(scenario, f"step_{step}")()}
        except Exception as e:
            out = {"ok": False, "error": error_of(e)}
        print(json.dumps({"step": step, "transport": args.transport, **out, "wire": list(wire)}),
              flush=True)
    await client.close()
    await http.aclose()


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--card-url")
    where.add_argument("--base-url")
    p.add_argument("--key", default="")
    p.add_argument("--header", default="X-API-Key")
    p.add_argument("--oidc-client", default="",
                   help="CLIENT_ID:SECRET: call with an access token of the card's "
                        "OpenID provider (client-credentials grant)")
    p.add_argument("--transport", choices=sorted(BINDINGS), default="jsonrpc")
    p.add_argument("--step", default="all", help=f"all or a comma list of {','.join(STEPS)}")
    sys.exit(asyncio.run(main(p.parse_args())))
