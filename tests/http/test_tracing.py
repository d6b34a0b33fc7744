"""OpenTelemetry spans in process (A2A_OTEL=1) under a tracer provider the
host set up itself (kept as is): the 1.0 bindings' span names and
attributes, refusals, an app without A2A_OTEL making none. Across gunicorn
and the worker: tests/servers/test_server_tracing.py."""

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from helpers import message

EXPORTER = InMemorySpanExporter()


@pytest.fixture(scope="module", autouse=True)
def host_provider():
    """The host's provider, set once for the process (OpenTelemetry allows
    no other): a2a_flask must use it rather than set up its own."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(EXPORTER))
    yield


@pytest.fixture
def spans():
    EXPORTER.clear()
    return lambda: {s.name: s for s in EXPORTER.get_finished_spans()}


def test_a_1_0_rest_call_and_a_refusal(make_app, spans):
    app, _ = make_app(A2A_OTEL=True, A2A_AUTH="required")
    key = app.extensions["a2a"].credentials.create_key()[1]
    client = app.test_client()
    headers = {"A2A-Version": "1.0", "Authorization": "Bearer " + key}
    sent = client.post("/api/v1/agents/echo/rest/message:send", headers=headers,
                       json={"message": {"messageId": "m1", "role": "ROLE_USER",
                                         "parts": [{"text": "private words"}]}})
    task = sent.get_json()["task"]
    found = spans()
    call = found["a2a SendMessage"]
    assert call.kind == trace.SpanKind.SERVER
    assert dict(call.attributes) == {
        "a2a.agent": "echo", "rpc.system": "a2a", "rpc.method": "SendMessage",
        "a2a.method": "SendMessage", "a2a.protocol.version": "1.0",
        "a2a.task.id": task["id"], "a2a.context.id": task["contextId"],
        "a2a.caller.kind": "key", "a2a.outcome": "TASK_STATE_COMPLETED",
        "http.response.status_code": 200}
    assert found["a2a.agent echo"].parent.span_id == call.context.span_id
    assert found["a2a.storage start_turn"].parent.span_id == call.context.span_id
    assert found["a2a.storage find_key"].attributes["db.system.name"] == "sqlite"

    EXPORTER.clear()
    refused = client.get("/api/v1/agents/echo/rest/tasks/task_none",
                         headers={"A2A-Version": "1.0"})
    assert refused.status_code == 401
    call = spans()["a2a GetTask"]
    # The A2A error's JSON-RPC code (the HTTP+JSON body's code is the status).
    assert call.attributes["a2a.error.code"] == -32600
    assert call.attributes["a2a.outcome"] == "error"
    assert "a2a.caller.kind" not in call.attributes
    assert call.status.status_code == trace.StatusCode.ERROR


def test_without_a2a_otel_no_span(make_app, spans):
    app, _ = make_app()
    rpc_body = {"jsonrpc": "2.0", "id": 1, "method": "message/send",
                "params": {"message": message("hi")}}
    assert app.test_client().post("/api/v1/agents/echo/a2a", json=rpc_body).status_code == 200
    assert spans() == {}
