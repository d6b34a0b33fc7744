"""The protocol bindings: one call as a binding reads and answers it, the
version it asks for and the one form of a method (``call``), the JSON-RPC
envelope and call (``jsonrpc``) and each version's binding
(``jsonrpc_versions``), A2A 0.3 (``v03``) and
1.0 (``v10``: JSON-RPC and HTTP+JSON), and the Agent Cards (``cards``).
Only this package knows wire shapes; the service below it is version-neutral."""
