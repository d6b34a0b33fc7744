"""The JSON-RPC binding of each protocol version this service speaks, by
the ``A2A-Version`` that asks for it (``jsonrpc.JsonRpcCall`` picks one per
request). Above both versions: each one's binding names the other's methods
(a method of the other version says which header it needs)."""

from .errors import V03 as V03_WORDING
from .jsonrpc import Binding, other_version
from .jsonrpc import error_response as _error_response_v03
from .v03 import jsonrpc as jsonrpc_v03
from .v10 import jsonrpc as jsonrpc_v10
from .v10 import operations as v10_operations

V03 = Binding("0.3", other_version(
    jsonrpc_v03.find_method, jsonrpc_v10.METHODS,
    "%s is an A2A 1.0 method: send the header A2A-Version: 1.0 (none means 0.3)."),
    _error_response_v03, V03_WORDING)
V10 = Binding("1.0", other_version(
    jsonrpc_v10.find_method, jsonrpc_v03.METHODS,
    "%s is an A2A 0.3 method: send no A2A-Version header to call it."),
    jsonrpc_v10.error_response, v10_operations.WORDING)

#: The binding of each ``A2A-Version`` served (none or empty: 0.3).
BINDINGS = {"": V03, "0.3": V03, "1.0": V10}
