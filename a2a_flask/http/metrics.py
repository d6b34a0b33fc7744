"""Prometheus metrics at ``GET PREFIX/metrics`` (``A2A_METRICS=1``).

Needs the ``metrics`` extra (``prometheus_client``). Under gunicorn, set
``PROMETHEUS_MULTIPROC_DIR`` to an empty directory (the shipped
``gunicorn.conf.py`` empties it at start and retires dead workers' files):
every worker writes its counts there and a scrape adds them up, whichever
worker answers it.

- ``a2a_calls_total{method, code}``: calls answered (JSON-RPC and HTTP+JSON);
  code ``ok`` for a result, else the A2A error code.
- ``a2a_turn_seconds{agent}``: duration of message/send and SendMessage
  calls (a turn).
- ``a2a_tasks{state}``: tasks stored, by state (counted at each scrape).
"""

import os
from typing import Any, Dict, Iterable, Iterator

from flask import Response

try:
    from prometheus_client import (
        CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram,
        generate_latest, multiprocess,
    )
    from prometheus_client.core import GaugeMetricFamily
except ImportError:  # pragma: no cover - said at init_app
    raise ImportError("A2A_METRICS=1 needs prometheus_client: "
                      "pip install 'a2a_flask[metrics]'") from None

from ..protocol.v03 import jsonrpc as jsonrpc_v03
from ..protocol.v10 import jsonrpc as jsonrpc_v10

#: The method labels: A2A 0.3's and 1.0's names (REST calls count under the
#: 1.0 method they perform).
METHODS = frozenset(jsonrpc_v03.METHODS) | frozenset(jsonrpc_v10.METHODS)
#: The methods that run a turn.
SENDS = ("message/send", "SendMessage")

# Once per process, on a registry of our own (never the global one, which a
# host app may use too); in multiprocess mode the values go to files.
_OWN = CollectorRegistry(auto_describe=True)
CALLS = Counter("a2a_calls", "JSON-RPC calls answered, by method and code.",
                ["method", "code"], registry=_OWN)
TURN_SECONDS = Histogram(
    "a2a_turn_seconds", "Duration of message/send calls, by agent.", ["agent"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
    registry=_OWN)


class _TaskStates:
    """Tasks by state, read from the database when scraped."""

    def __init__(self, storage):
        self.storage = storage

    def collect(self) -> Iterator[Any]:
        family = GaugeMetricFamily("a2a_tasks", "Tasks stored, by state.",
                                   labels=["state"])
        for state, count in sorted(self.storage.task_counts().items()):
            family.add_metric([state], count)
        yield family


class _Own:
    def __init__(self, registry):
        self.registry = registry

    def collect(self) -> Iterable[Any]:
        return self.registry.collect()


class Metrics:
    """The Prometheus metrics of one app (A2A_METRICS)."""

    def __init__(self, storage):
        self.storage = storage

    def observe_call(self, fields: Dict[str, Any]) -> None:
        """Count one call from its access-record fields."""
        # Only known method names become labels: a caller cannot grow the
        # series without bound by sending made-up names.
        method = fields["method"] if fields["method"] in METHODS else "other"
        code = "ok" if fields["code"] is None else str(fields["code"])
        CALLS.labels(method, code).inc()
        if method in SENDS and fields["state"] is not None:
            TURN_SECONDS.labels(fields["agent"]).observe(fields["ms"] / 1000.0)

    def response(self) -> Response:
        registry = CollectorRegistry(auto_describe=False)
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            multiprocess.MultiProcessCollector(registry)
        else:
            registry.register(_Own(_OWN))
        registry.register(_TaskStates(self.storage))
        return Response(generate_latest(registry), mimetype=None,
                        content_type=CONTENT_TYPE_LATEST)
