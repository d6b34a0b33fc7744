"""The HTTP transport: the blueprint and its routes, the call
pipeline shared by JSON-RPC and HTTP+JSON (it reads the request body), the JSON fallbacks of
our paths, the access record and the metrics."""
