"""The client raises the server's own error classes (a2a_flask.errors): each
error as our server renders it, over each binding and version, read back by
the client's ``error_for``/``rpc_result``, is the class raised, or the
nearest one the wire tells apart (listed)."""

import json

import pytest

from a2a_flask import errors
from a2a_flask.client.errors import error_for, rpc_result
from a2a_flask.protocol import jsonrpc as v03_jsonrpc
from a2a_flask.protocol.v10 import jsonrpc as v10_jsonrpc
from a2a_flask.protocol.v10 import rest


def wire_classes():
    return [cls for cls in vars(errors).values()
            if isinstance(cls, type) and issubclass(cls, errors.A2AError)
            and cls is not errors.A2AError]


def made(cls):
    if cls is errors.InsufficientScopeError:
        return cls("The token lacks a scope.", {"a2a"})
    return cls()


#: Classes no answer tells from their base: (class, interface) -> the class
#: the client raises ("*": every interface).
ANSWERED_AS = {
    (errors.IncompleteBodyError, "0.3"): errors.InvalidRequestError,
    (errors.IncompleteBodyError, "1.0"): errors.InvalidRequestError,
    (errors.InvalidTokenError, "*"): errors.UnauthenticatedError,
    (errors.InsufficientScopeError, "*"): errors.ForbiddenError,
    (errors.SchemaOutdatedError, "*"): errors.InternalError,
    # 0.3 has no ErrorInfo: its 503s are all -32603.
    (errors.ServiceUnavailableError, "0.3"): errors.InternalError,
    (errors.IdentityProviderUnavailableError, "0.3"): errors.InternalError,
    (errors.ServerBusyError, "0.3"): errors.InternalError,
    # An HTTP+JSON 404 without ErrorInfo is read as a missing task (the
    # other servers' form); ours never answers a missing task so.
    # (A client finds no card of an unknown agent before any such call.)
    (errors.MethodNotFoundError, "rest"): errors.TaskNotFoundError,
    (errors.AgentNotFoundError, "rest"): errors.TaskNotFoundError,
    # HTTP+JSON errors without ErrorInfo carry no JSON-RPC code.
    (errors.ParseError, "rest"): errors.InvalidParamsError,
    (errors.InvalidRequestError, "rest"): errors.InvalidParamsError,
    (errors.InvalidParamsError, "rest"): errors.InvalidParamsError,
    (errors.IncompleteBodyError, "rest"): errors.InvalidParamsError,
    # The operator's page's own refusals (answered bare, to its page only).
    (errors.NotAnOperatorError, "*"): errors.ForbiddenError,
    (errors.OperatorActionError, "0.3"): errors.InvalidRequestError,
    (errors.OperatorActionError, "1.0"): errors.InvalidRequestError,
    (errors.OperatorActionError, "rest"): errors.InvalidParamsError,
    # 0.3 has no ErrorInfo: the quota's -32000 429 is the queue's.
    (errors.QuotaExceededError, "0.3"): errors.QueueFullError,
}


def expected(cls, interface):
    return ANSWERED_AS.get((cls, interface), ANSWERED_AS.get((cls, "*"), cls))


def read_back(exc, interface):
    if interface == "rest":
        answer = rest.error_response(exc)
        return error_for(json.loads(answer.get_data())["error"], answer.status_code,
                         rest=True)
    render = v03_jsonrpc.error_response if interface == "0.3" else \
        v10_jsonrpc.error_response
    answer = render(exc, "1")
    with pytest.raises(errors.A2AError) as raised:
        rpc_result(answer.status_code, json.loads(answer.get_data()), answer.get_data())
    return raised.value


@pytest.mark.parametrize("interface", ["0.3", "1.0", "rest"])
@pytest.mark.parametrize("cls", wire_classes(), ids=lambda cls: cls.__name__)
def test_each_wire_error_comes_back_as_its_class(cls, interface):
    sent = made(cls)
    got = read_back(sent, interface)
    assert type(got) is expected(cls, interface)
    assert got.message == sent.message
    if interface != "rest" or got.reason:
        assert got.code == sent.code
    assert got.reason == (None if interface == "0.3" else vars(cls).get("reason"))


def test_every_code_the_server_defines_is_mirrored():
    codes = {cls.code for cls in wire_classes()}
    # The JSON-RPC codes, A2A's -32001..-32009 and the queue's -32000.
    assert codes == {-32700, -32600, -32601, -32602, -32603, -32000} | set(
        range(-32009, -32000))


def test_a_foreign_servers_minus_32000_is_not_the_queue():
    got = error_for({"code": -32000, "message": "busy"}, 200)
    assert type(got) is errors.A2AError and got.code == -32000
    queue = error_for({"code": -32000, "message": "full"}, 429)
    assert type(queue) is errors.QueueFullError


def test_a_bare_refusal_of_a_proxy_is_unauthenticated():
    with pytest.raises(errors.UnauthenticatedError) as raised:
        rpc_result(401, {"detail": "no entry"}, b'{"detail": "no entry"}')
    assert (raised.value.code, raised.value.http_status, raised.value.message) == (
        -32600, 401, "no entry")


def imported(module):
    """The modules ``module``'s source imports (relative ones resolved)."""
    import ast
    import importlib.util

    path = importlib.import_module(module).__file__
    with open(path) as f:
        tree = ast.parse(f.read())
    package = module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""),
                                               package) if node.level else node.module
            found.add(base)
    return found


def test_the_shared_errors_import_nothing_above_them():
    # Imports point down: the server's layers and the client both import
    # the wire errors, which import neither Flask, the service nor a binding.
    assert imported("a2a_flask.errors") == {"typing"}
    assert imported("a2a_flask.client.errors") == {"typing", "a2a_flask",
                                                   "a2a_flask.errors"}
