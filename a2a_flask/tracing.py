"""OpenTelemetry traces (``A2A_OTEL=1``, the ``otel`` extra).

Each call is a server span (``a2a <method>``) continuing the caller's W3C
``traceparent``, with child spans for each storage operation
(``a2a.storage <operation>``) and for the agent's own work
(``a2a.agent <name>``). A turn queued for ``flask a2a worker`` keeps the
trace context of the call that queued it; the worker's span for the turn
(``a2a.worker <agent>``) is that call's child, and links to it.

Span attributes name the method, agent, protocol version, task and context
ids, the caller's kind, the outcome and the error code: never a credential,
a caller's id or any message text.

Without a tracer provider of the host's, one is set up per process that
exports over OTLP/HTTP, configured by OpenTelemetry's own environment
variables (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_SERVICE_NAME``...).
"""

import contextlib
import json
import os
import threading
from typing import Any, Dict, Iterator, Mapping, Optional

try:
    from opentelemetry import propagate, trace
    from opentelemetry.trace import Link, SpanKind, StatusCode
except ImportError:  # pragma: no cover - said at init_app
    raise ImportError("A2A_OTEL=1 needs OpenTelemetry: "
                      "pip install 'a2a_flask[otel]'") from None

from . import __version__

#: Storage operations a span is made for: those that reach the database.
STORAGE_OPERATIONS = frozenset({
    "start_turn", "finish_turn", "get_task", "fail_stale_turn", "cancel_task",
    "task_history", "context_history", "task_state", "list_tasks",
    "count_tasks", "enqueue_turn", "claim_turns", "finish_queued_turn",
    "progress", "find_key", "touch_keys", "password_hash", "has_users"})

_setup_lock = threading.Lock()
_set_up_in = [None]  # the pid that set up the provider


def _ensure_provider():
    """An SDK tracer provider exporting over OTLP/HTTP, unless the host set
    one (then its own is used as is). Once per process."""
    if _set_up_in[0] == os.getpid():
        return
    with _setup_lock:
        if _set_up_in[0] == os.getpid():
            return
        _set_up_in[0] = os.getpid()
        if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            return  # the host's (or one set up before a fork, fork-safe)
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter,
        )
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        provider = TracerProvider(resource=Resource.create(
            {"service.name": os.environ.get("OTEL_SERVICE_NAME", "a2a_flask")}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)


def flush() -> None:
    """Export the spans still buffered (a worker stopping)."""
    force_flush = getattr(trace.get_tracer_provider(), "force_flush", None)
    if force_flush is not None:
        force_flush()


class Tracing:
    """The spans of one app (``runtime.tracing``)."""

    def __init__(self):
        _ensure_provider()
        self.tracer = trace.get_tracer("a2a_flask", __version__)

    # -- the call ---------------------------------------------------------------

    @contextlib.contextmanager
    def server_span(self, agent: str, headers: Mapping[str, str]) -> Iterator[Any]:
        """The span of one call, the caller's trace continued; yields it."""
        parent = propagate.extract(headers)
        with self.tracer.start_as_current_span(
                "a2a call", context=parent, kind=SpanKind.SERVER,
                record_exception=False, set_status_on_exception=False,
                attributes={"a2a.agent": agent}) as span:
            yield span

    @staticmethod
    def end_call(span: Any, fields: Dict[str, Any], caller_kind: Optional[str]) -> None:
        """Name and describe the call's span from its access record."""
        method = fields.get("method")
        if method:
            span.update_name("a2a " + method)
        attributes = {"rpc.system": "a2a", "rpc.method": method,
                      "a2a.method": method, "a2a.protocol.version": fields["version"],
                      "a2a.task.id": fields.get("taskId"),
                      "a2a.context.id": fields.get("contextId"),
                      "a2a.caller.kind": caller_kind,
                      "http.response.status_code": fields.get("status")}
        code = fields.get("code")
        if code is not None:
            attributes["a2a.error.code"] = code
            attributes["a2a.outcome"] = "error"
            span.set_status(StatusCode.ERROR, "A2A error %s" % code)
        else:
            attributes["a2a.outcome"] = fields.get("state") or "ok"
        span.set_attributes({k: v for k, v in attributes.items() if v is not None})

    # -- children ---------------------------------------------------------------

    @contextlib.contextmanager
    def agent_span(self, turn: Any) -> Iterator[Any]:
        """Around the agent function's own work on a turn."""
        with self.tracer.start_as_current_span(
                "a2a.agent " + turn.agent.name, kind=SpanKind.INTERNAL,
                record_exception=False, set_status_on_exception=False,
                attributes={"a2a.agent": turn.agent.name,
                            "a2a.task.id": turn.task_id,
                            "a2a.context.id": turn.context_id}) as span:
            yield span

    def storage(self, storage: Any) -> Any:
        """``storage`` with a span around each operation that reaches it."""
        return TracedStorage(storage, self.tracer)

    # -- the queue ----------------------------------------------------------------

    @staticmethod
    def current_context() -> Optional[str]:
        """The current trace context, as stored with a queued turn (JSON of
        its W3C headers), or None outside any span."""
        carrier: Dict[str, str] = {}
        propagate.inject(carrier)
        return json.dumps(carrier, sort_keys=True) if carrier else None

    @contextlib.contextmanager
    def worker_span(self, claimed: Any) -> Iterator[Any]:
        """The worker's span for a claimed turn: a child of the call that
        queued it (and linked to it), when its trace context was stored."""
        parent, links = None, []
        if claimed.trace_context:
            try:
                parent = propagate.extract(json.loads(claimed.trace_context))
            except ValueError:
                parent = None
            queued_by = trace.get_current_span(parent).get_span_context()
            if queued_by.is_valid:
                links = [Link(queued_by, {"a2a.link": "queued by"})]
        with self.tracer.start_as_current_span(
                "a2a.worker " + claimed.agent, context=parent, links=links,
                kind=SpanKind.CONSUMER, record_exception=False,
                set_status_on_exception=False,
                attributes={"a2a.agent": claimed.agent, "a2a.task.id": claimed.task_id,
                            "a2a.context.id": claimed.context_id,
                            "a2a.attempt": claimed.attempts}) as span:
            yield span


class TracedStorage:
    """A ``Storage`` whose database operations each make a child span."""

    def __init__(self, storage, tracer):
        self._storage = storage
        self._tracer = tracer
        self._system = ("postgresql" if "Postgres" in type(storage).__name__
                        else "sqlite")

    def __getattr__(self, name):
        found = getattr(self._storage, name)
        if name not in STORAGE_OPERATIONS:
            return found

        def traced(*args: Any, **kwargs: Any) -> Any:
            # No exception text on the span: it may quote what was stored.
            with self._tracer.start_as_current_span(
                    "a2a.storage " + name, kind=SpanKind.CLIENT,
                    record_exception=False, set_status_on_exception=False,
                    attributes={"db.operation.name": name,
                                "db.system.name": self._system}) as span:
                try:
                    return found(*args, **kwargs)
                except Exception as exc:
                    span.set_status(StatusCode.ERROR, type(exc).__name__)
                    raise
        return traced
