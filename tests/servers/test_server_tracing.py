"""OpenTelemetry (A2A_OTEL=1) through real processes: gunicorn (2 workers)
and ``flask a2a worker`` export their spans over OTLP/HTTP to a small
receiver in this test (127.0.0.1, protobuf decoded with opentelemetry-proto);
the test reads the parent links across the three processes.
"""

import gzip
import json
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

from helpers import message
from serving import WorkerProcess, create_api_key

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
SECRET_TEXT = "the-words-nobody-may-trace"


class _Receiver(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest.FromString(body)
        with self.server.lock:
            for resource in request.resource_spans:
                service = {a.key: a.value.string_value
                           for a in resource.resource.attributes}.get("service.name")
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        self.server.spans.append(_span(span, service))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()


def _value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


def _span(span, service):
    return {"name": span.name, "service": service, "kind": span.kind,
            "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
            "parent": span.parent_span_id.hex() or None,
            "links": [(link.trace_id.hex(), link.span_id.hex()) for link in span.links],
            "attributes": {a.key: _value(a.value) for a in span.attributes},
            "status": span.status.code}


@pytest.fixture
def receiver():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.daemon_threads = True
    server.spans, server.lock = [], threading.Lock()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def wait_for_spans(receiver, predicate, what, timeout=30.0):
    deadline = time.monotonic() + timeout
    while True:
        with receiver.lock:
            found = [s for s in receiver.spans if predicate(s)]
        if found:
            return found
        assert time.monotonic() < deadline, "no span: " + what
        time.sleep(0.1)


def test_a_call_and_its_queued_turn_are_one_trace_across_processes(
        receiver, start_server, tmp_path):
    env = {"A2A_OTEL": "1", "OTEL_SERVICE_NAME": "a2a-test",
           "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:%d" % receiver.server_port,
           "OTEL_BSP_SCHEDULE_DELAY": "100"}
    server = start_server(workers=2, env=env, auth="required")
    key = create_api_key(server.database, env=env)
    worker = WorkerProcess(server, "--threads", "2", "--grace", "5").start()
    try:
        headers = {"Authorization": "Bearer " + key,
                   "traceparent": "00-%s-%s-01" % (TRACE_ID, CALLER_SPAN)}

        def send(agent, text):
            body = {"jsonrpc": "2.0", "id": 1, "method": "message/send",
                    "params": {"message": message(text)}}
            answer = requests.post(server.url + "/api/v1/agents/%s/a2a" % agent,
                                   json=body, headers=headers, timeout=30).json()
            return answer["result"]

        echo = send("echo", SECRET_TEXT)
        queued = send("bg", SECRET_TEXT)
        assert queued["status"]["state"] == "completed", queued
        refused = requests.post(server.url + "/api/v1/agents/echo/a2a", timeout=30,
                                json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get",
                                      "params": {"id": "task_none"}},
                                headers=headers).json()
        assert refused["error"]["code"] == -32001

        # The calls: server spans continuing the caller's trace.
        def call_span(task):
            [found] = wait_for_spans(
                receiver, lambda s: s["name"] == "a2a message/send"
                and s["attributes"]["a2a.task.id"] == task["id"], "a call's span")
            return found

        echo_call, bg_call = call_span(echo), call_span(queued)
        for call, agent in ((echo_call, "echo"), (bg_call, "bg")):
            assert call["trace_id"] == TRACE_ID and call["parent"] == CALLER_SPAN
            assert call["service"] == "a2a-test"
            attributes = call["attributes"]
            assert attributes["a2a.method"] == "message/send"
            assert attributes["a2a.agent"] == agent
            assert attributes["a2a.protocol.version"] == "0.3"
            assert attributes["a2a.caller.kind"] == "key"
            assert attributes["a2a.context.id"]
            assert attributes["a2a.outcome"] == "completed"
            assert "a2a.error.code" not in attributes
        [failed] = wait_for_spans(receiver, lambda s: s["name"] == "a2a tasks/get",
                                  "the refused call's span")
        assert failed["attributes"]["a2a.error.code"] == -32001
        assert failed["attributes"]["a2a.outcome"] == "error"

        # Children of the in-request call: the agent and the storage.
        agent = wait_for_spans(receiver, lambda s: s["name"] == "a2a.agent echo",
                               "the agent's span")
        assert [s["parent"] for s in agent] == [echo_call["span_id"]]
        stored = wait_for_spans(
            receiver, lambda s: s["parent"] == echo_call["span_id"]
            and s["name"].startswith("a2a.storage "), "the storage spans")
        assert {"a2a.storage start_turn", "a2a.storage finish_turn"} <= {
            s["name"] for s in stored}

        # The worker's span: in another process, a child of the call that
        # queued the turn (and linked to it); the agent's span under it.
        [turn] = wait_for_spans(receiver, lambda s: s["name"] == "a2a.worker bg",
                                "the worker's span")
        assert turn["trace_id"] == TRACE_ID
        assert turn["parent"] == bg_call["span_id"]
        assert turn["links"] == [(TRACE_ID, bg_call["span_id"])]
        assert turn["attributes"]["a2a.task.id"] == queued["id"]
        assert turn["attributes"]["a2a.outcome"] == "completed"
        [bg_agent] = wait_for_spans(receiver, lambda s: s["name"] == "a2a.agent bg",
                                    "the background agent's span")
        assert bg_agent["parent"] == turn["span_id"]

        # Never a secret or message text in any span.
        with receiver.lock:
            dumped = json.dumps(receiver.spans)
        assert SECRET_TEXT not in dumped
        assert key[len("a2a_"):][:12] not in dumped  # not even part of the key
    finally:
        worker.stop(signal.SIGTERM)
