"""An access line never waits for its stream: when another thread is
writing to it (its handler's lock held), the call answers at once and the
line is written by the process's late-lines thread, in order, or at exit."""

import io
import logging
import subprocess
import sys
import threading

from a2a_flask.http.access import LateLines

SEND = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
    "message": {"role": "user", "messageId": "m-1",
                "parts": [{"kind": "text", "text": "hi"}]}}}

# A host app logging to stderr (no handler of its own: a2a_flask's plain
# lines). The stream's lock is held while a call runs on another thread.
HOST = r"""
import logging, sys, threading
from flask import Flask
from a2a_flask import A2A
from a2a_flask.demo import register_demo_agents

app = Flask("host")
app.config.update(A2A_DATABASE=sys.argv[1], A2A_AUTH="off")
register_demo_agents(A2A(app), slow_agent=False)
client = app.test_client()
assert client.post("/api/v1/agents/echo/a2a", json=SEND_JSON).status_code == 200
stream_handler, = logging.getLogger("a2a_flask").handlers
answers = []
stream_handler.acquire()  # another thread writing a long line, say
try:
    call = threading.Thread(target=lambda: answers.append(
        client.post("/api/v1/agents/echo/a2a", json=dict(SEND_JSON, id=2)).status_code))
    call.start()
    call.join(10)
    print("answered while the stream was busy: %s" % answers)
finally:
    stream_handler.release()
""".replace("SEND_JSON", repr(SEND))


def test_a_call_answers_while_its_log_stream_is_busy_and_its_line_follows(tmp_path):
    out = subprocess.run([sys.executable, "-c", HOST, str(tmp_path / "a2a.sqlite3")],
                         capture_output=True, text=True, timeout=60, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "answered while the stream was busy: [200]" in out.stdout, (out.stdout, out.stderr)
    calls = [line for line in out.stderr.splitlines()
             if "a2a_flask.access: call agent=echo method=message/send" in line]
    assert len(calls) == 2, out.stderr


def test_late_lines_are_written_in_order_once_the_stream_is_free():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    late = LateLines()
    handler.acquire()
    try:
        for n in range(5):
            late.put(handler, handler, "line %d\n" % n)
        threading.Event().wait(0.2)
        assert stream.getvalue() == ""  # the stream is busy: nothing interleaved
    finally:
        handler.release()
    assert late.flush(timeout=10)
    assert stream.getvalue() == "".join("line %d\n" % n for n in range(5))


def test_a_full_queue_takes_no_more_lines():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    late = LateLines()
    late.MAX_QUEUED = 3
    handler.acquire()  # the stream takes nothing: the lines stay queued
    try:
        queued = [late.put(handler, handler, "line %d\n" % n) for n in range(6)]
    finally:
        handler.release()
    # The thread may hold the first line already: 3 or 4 queued, never all 6.
    assert queued[:3] == [True] * 3 and queued[-1] is False
    assert late.flush(timeout=10)
    assert stream.getvalue() == "".join("line %d\n" % n for n, ok in enumerate(queued) if ok)
