"""A2A 1.0: its operations (``operations``), shared by its JSON-RPC
(``jsonrpc``) and HTTP+JSON (``rest``) bindings, their params (``schemas``)
and the conversion from and to the service's neutral values (``convert``)."""
