"""The HTTP transport: the blueprint and its routes, reading request bodies,
the call pipeline shared by JSON-RPC and HTTP+JSON, the JSON fallbacks of
our paths, the access record and the metrics."""
