"""``ProtocolCall``: one call as a binding reads and answers it.

The HTTP transport (``http/pipeline.py``) drives every call the same way,
whatever its binding (JSON-RPC 0.3 or 1.0, HTTP+JSON 1.0): ``start`` reads
what is needed before the caller is known, then (the pipeline authenticates
and finds the agent) ``params`` checks the params, ``run`` calls the
service, and ``answer`` or ``refuse`` renders the outcome. A binding knows
the wire shapes; the pipeline knows the order and the HTTP request.

``inbound`` is the request as the pipeline hands it over: ``body()`` (the
whole body, read within the size limit), ``query`` (the query string's
parameters) and ``asked_version`` (``A2A-Version``, "" when none).
"""

from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Protocol

from .. import errors
from ..validation import load_params

if TYPE_CHECKING:  # pragma: no cover
    from flask import Request, Response
    from marshmallow import Schema

    from ..service import CallContext
    from .errors import Refusal

HEADER = "A2A-Version"
#: Major.Minor of what we serve (a patch number is ignored).
SERVED = ("0.3", "1.0")


def asked_version(request: "Request") -> str:
    """The ``Major.Minor`` the request asks for ("" when it names none)."""
    # The WSGI environ directly: this runs on every call, 0.3's too.
    asked = request.environ.get("HTTP_A2A_VERSION")
    if asked is None:
        if not request.environ.get("QUERY_STRING"):
            return ""
        asked = request.args.get(HEADER)
    asked = (asked or "").strip()
    if asked.count(".") > 1:
        return ".".join(asked.split(".")[:2])
    return asked


def version_error(asked: str) -> Optional[errors.VersionNotSupportedError]:
    if asked in ("", "0.3", "1.0"):
        return None
    return errors.VersionNotSupportedError(
        "A2A-Version %r is not served here: this agent speaks 1.0 (send "
        "A2A-Version: 1.0) and 0.3 (no header)." % errors.echo(asked),
        data={"requestedVersion": errors.echo(asked),
              "supportedVersions": "1.0, 0.3"})


class Method:
    """A method of one protocol version: the schema of its params and the
    function that runs it (``run(context, params)``, its result in the
    version's wire form; neutral storage outcomes it raises are worded by
    the binding that answers, in the pipeline)."""

    __slots__ = ("name", "schema", "run", "checks_remembered_key", "runs_turn")

    def __init__(self, name: str, schema: Optional["Schema"],
                 run: Callable[..., Any], checks_remembered_key: bool = False,
                 runs_turn: bool = False):
        self.name = name
        self.schema = schema
        self.run = run
        #: Its storage statement checks the caller's API key itself
        #: (``service.get``/``send``: ``remembered_key``): a key remembered live
        #: needs no lookup first.
        self.checks_remembered_key = checks_remembered_key
        #: A send: it runs among the process's running sends
        #: (A2A_RUNNING_SENDS).
        self.runs_turn = runs_turn

    def load(self, params: Any) -> Any:
        """The validated params, or ``InvalidParams`` naming the bad field."""
        if self.schema is None:
            return params
        return load_params(self.schema, params)


class Methods(Dict[str, Method]):
    """A version's methods by name: the one way a method is registered, for
    both versions and (1.0) both bindings (HTTP+JSON routes name theirs)."""

    def method(self, name: str, schema: Optional["Schema"] = None,
               checks_remembered_key: bool = False, runs_turn: bool = False
               ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """A decorator registering the function as method ``name``."""
        def register(func: Callable[..., Any]) -> Callable[..., Any]:
            self[name] = Method(name, schema, func, checks_remembered_key, runs_turn)
            return func
        return register


class Recorded(Protocol):
    """What the access record reads of a call (``http/access.py``): a
    JSON-RPC envelope (``jsonrpc.Envelope``), which an HTTP+JSON route
    makes of its path too."""

    method: Optional[str]
    params: Any


class ProtocolCall:
    """Base of the bindings' calls: what each must provide."""

    #: The protocol version answered (the access record's ``version``).
    version = "0.3"
    #: Whether the call's own storage statement checks the caller's API key,
    #: so that a key remembered live needs no lookup first
    #: (``auth.callers.authenticate``).
    checks_remembered_key = False
    #: Whether the call is a send, run among the process's running sends
    #: (A2A_RUNNING_SENDS); known once ``start`` found its method.
    runs_turn = False
    #: What the access record reads: the method's name and its params.
    record: Optional[Recorded] = None

    def start(self, inbound: Any) -> None:
        """Read what the call is (before authentication); may raise."""

    def params(self, inbound: Any) -> Any:
        """The call's validated params, or ``InvalidParams``."""
        raise NotImplementedError

    def tenant(self, params: Any) -> str:
        """The tenant the call names ('' for none): A2A 1.0's ``tenant``
        (a JSON-RPC param, the HTTP+JSON path); 0.3 has none."""
        if self.version != "1.0" or not isinstance(params, dict):
            return ""
        return params.get("tenant") or ""

    def named_task(self, params: Any) -> Optional[str]:
        """The task id the call names (GetTask, CancelTask, a message that
        continues a task), or None."""
        if not isinstance(params, dict):
            return None
        if isinstance(params.get("id"), str):
            return params["id"]
        message = params.get("message")
        task_id = message.get("taskId") if isinstance(message, dict) else None
        return task_id if isinstance(task_id, str) else None

    def run(self, context: "CallContext", params: Any) -> Any:
        """The result in its wire form (service errors become A2A errors)."""
        raise NotImplementedError

    def answer(self, result: Any, stream: bool = False) -> "Response":
        """The HTTP response of a result; ``stream``: a large one, written
        as it is sent rather than built whole first."""
        raise NotImplementedError

    def refuse(self, error: "Refusal") -> "Response":
        """The HTTP response of an ``A2AError``."""
        raise NotImplementedError
