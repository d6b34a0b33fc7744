"""A2A 0.3 over JSON-RPC: its methods, params and errors."""
