"""The protocol bindings: which A2A version a request asks for
(``versions``), the JSON-RPC envelope (``jsonrpc``), A2A 0.3 (``v03``) and
1.0 (``v10``: JSON-RPC and HTTP+JSON), and the Agent Cards (``cards``).
Only this package knows wire shapes; the service below it is version-neutral."""
