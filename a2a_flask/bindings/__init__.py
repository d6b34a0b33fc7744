"""Protocol bindings: each parses one protocol version's params, names its
methods and errors, and renders the service's neutral values.

``for_request`` is the seam where the endpoint picks a binding per request
(A2A 1.0 will be chosen by the ``A2A-Version`` header; none means 0.3).
"""

from . import jsonrpc_v03


def for_request(request):
    """The JSON-RPC binding that answers ``request``."""
    return jsonrpc_v03
