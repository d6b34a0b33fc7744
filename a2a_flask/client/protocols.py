"""The three ways the client calls an agent, each turning an operation into
one HTTP request and its answer into a result or an ``A2AError``:
JSON-RPC 1.0 (``A2A-Version: 1.0``), HTTP+JSON 1.0 and JSON-RPC 0.3.

Operations take the version-neutral arguments the client gives (a 0.3 user
message, ``SendOptions``) and give back the wire ``result`` object; the
``shapes`` module reads it.
"""

import json
import urllib.parse
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from . import shapes
from .cards import Interface
from ..errors import UnsupportedOperationError
from .errors import TransportError, error_for, refusal, rpc_result

if TYPE_CHECKING:
    from .transport import Answer

JSONObject = Dict[str, Any]
VERSION_HEADER = "A2A-Version"

#: Operation -> 1.0 JSON-RPC method, 0.3 JSON-RPC method (None: not in 0.3).
METHODS = {"send": ("SendMessage", "message/send"), "get": ("GetTask", "tasks/get"),
           "list": ("ListTasks", None), "cancel": ("CancelTask", "tasks/cancel"),
           "extended_card": ("GetExtendedAgentCard",
                             "agent/getAuthenticatedExtendedCard")}


@dataclass
class SendOptions:
    """``message/send`` configuration: wait for the outcome (``blocking``),
    ``history_length``, ``accepted_output_modes``, request ``metadata``."""

    blocking: bool = True
    history_length: Optional[int] = None
    accepted_output_modes: Optional[List[str]] = None
    metadata: Optional[JSONObject] = None


@dataclass
class Call:
    """One HTTP request of an operation."""

    operation: str
    method: str
    url: str
    body: Optional[bytes] = None
    headers: Dict[str, str] = field(default_factory=dict)


def _json(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def send_params(message: JSONObject, options: SendOptions, v10: bool) -> JSONObject:
    """The params of a send (1.0: the ``SendMessageRequest`` body of either
    binding), from a 0.3 user message."""
    configuration: JSONObject = {}
    if options.accepted_output_modes is not None:
        configuration["acceptedOutputModes"] = options.accepted_output_modes
    if options.history_length is not None:
        configuration["historyLength"] = options.history_length
    if not v10:
        configuration["blocking"] = options.blocking
    elif not options.blocking:
        configuration["returnImmediately"] = True
    params: JSONObject = {"message": shapes.message_v10(message) if v10 else message}
    if configuration:
        params["configuration"] = configuration
    if options.metadata:
        params["metadata"] = options.metadata
    return params


def rpc_request(method: str, params: Any) -> JSONObject:
    """A JSON-RPC 2.0 request object with a new id."""
    return {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method,
            "params": params}


class JsonRpc:
    """JSON-RPC 2.0 at the interface's URL, 1.0 or 0.3 methods and shapes."""

    def __init__(self, interface: Interface) -> None:
        self.interface = interface
        self.v10 = interface.version == "1.0"

    def _call(self, operation: str, params: JSONObject) -> Call:
        method = METHODS[operation][0 if self.v10 else 1]
        if method is None:
            raise UnsupportedOperationError.from_answer(
                UnsupportedOperationError.code,
                "%s is not an operation of A2A 0.3." % operation, None, 0)
        if self.v10 and self.interface.tenant:
            params = dict(params, tenant=self.interface.tenant)
        headers = {"Content-Type": "application/json"}
        if self.v10:
            headers[VERSION_HEADER] = "1.0"
        return Call(operation, "POST", self.interface.url,
                    _json(rpc_request(method, params)), headers)

    def send(self, message: JSONObject, options: SendOptions) -> Call:
        return self._call("send", send_params(message, options, self.v10))

    def get(self, task_id: str, history_length: Optional[int]) -> Call:
        params: JSONObject = {"id": task_id}
        if history_length is not None:
            params["historyLength"] = history_length
        return self._call("get", params)

    def list(self, query: JSONObject) -> Call:
        return self._call("list", query)

    def cancel(self, task_id: str) -> Call:
        return self._call("cancel", {"id": task_id})

    def extended_card(self) -> Call:
        return self._call("extended_card", {})

    def result(self, call: Call, answer: "Answer") -> Any:
        return rpc_result(answer.status, answer.json(), answer.data)


class Rest:
    """A2A 1.0 HTTP+JSON below the interface's URL (section 11)."""

    def __init__(self, interface: Interface) -> None:
        self.interface = interface
        base = interface.url.rstrip("/")
        if interface.tenant:
            base += "/" + urllib.parse.quote(interface.tenant, safe="")
        self.base = base

    def _call(self, operation: str, method: str, path: str, body: Any = None,
              query: Optional[List[Tuple[str, Any]]] = None) -> Call:
        url = self.base + path
        if query:
            url += "?" + urllib.parse.urlencode(
                [(k, str(v).lower() if isinstance(v, bool) else v)
                 for k, v in query if v is not None])
        headers = {VERSION_HEADER: "1.0"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        return Call(operation, method, url, None if body is None else _json(body),
                    headers)

    def send(self, message: JSONObject, options: SendOptions) -> Call:
        return self._call("send", "POST", "/message:send",
                          send_params(message, options, v10=True))

    def get(self, task_id: str, history_length: Optional[int]) -> Call:
        return self._call("get", "GET", "/tasks/" + urllib.parse.quote(task_id, safe=""),
                          query=[("historyLength", history_length)])

    def list(self, query: JSONObject) -> Call:
        return self._call("list", "GET", "/tasks", query=sorted(query.items()))

    def cancel(self, task_id: str) -> Call:
        return self._call("cancel", "POST", "/tasks/%s:cancel"
                          % urllib.parse.quote(task_id, safe=""), {})

    def extended_card(self) -> Call:
        return self._call("extended_card", "GET", "/extendedAgentCard")

    def result(self, call: Call, answer: "Answer") -> Any:
        body = answer.json()
        if 200 <= answer.status < 300 and isinstance(body, dict):
            return body
        if isinstance(body, dict) and isinstance(body.get("error"), dict):
            raise error_for(body["error"], answer.status, rest=True)
        if answer.status in (401, 403):
            raise refusal(answer.status, body, answer.data)
        raise TransportError("Not an A2A answer (HTTP %d): %r"
                             % (answer.status, answer.data[:200]), answer.status)


def for_interface(interface: Interface) -> Any:
    return Rest(interface) if interface.binding == "HTTP+JSON" else JsonRpc(interface)
