"""The demo's ``conformance`` agent (A2A_CONFORMANCE_AGENT): what the
conformance kit's scenarios script, chosen by the messageId's prefix, over
both A2A 1.0 bindings, through HTTP; a worker thread runs its background
turns. The kit's own run against ``gunicorn wsgi:app``: docs/conformance.md."""

import base64
import os
import subprocess
import sys
import threading

import pytest

from a2a_flask import demo
from a2a_flask.worker import Worker
from helpers import Rpc, message, wait_until
from serving import REPO_DIR


@pytest.fixture
def caller(make_app):
    app, _ = make_app(demo.register_conformance_agent,
                      A2A_DEFAULT_AGENT="conformance")
    runner = Worker(app.extensions["a2a"], threads=2, grace=5)
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    caller = Rpc(app.test_client(), agent="conformance", version="1.0")
    caller.runner = runner
    yield caller
    runner.stop()
    thread.join(10)


def _send_rpc(caller, message_id, configuration=None, **fields):
    params = {"message": message("TCK test", message_id=message_id, version="1.0", **fields)}
    if configuration:
        params["configuration"] = configuration
    return caller.result("SendMessage", params)["task"]


def _send_rest(caller, message_id, configuration=None, **fields):
    body = {"message": message("TCK test", message_id=message_id, version="1.0", **fields)}
    if configuration:
        body["configuration"] = configuration
    status, answer = caller.rest("POST", "/message:send", body)
    assert status == 200, answer
    return answer["task"]


BINDINGS = pytest.mark.parametrize("send", [_send_rpc, _send_rest],
                                   ids=["jsonrpc", "http_json"])

FILE_RAW = base64.b64encode(demo.CONFORMANCE_FILE_TEXT).decode("ascii")


@BINDINGS
@pytest.mark.parametrize("prefix, state, parts", [
    ("tck-complete-task", "TASK_STATE_COMPLETED", [{"text": "Hello from TCK"}]),
    ("tck-artifact-text", "TASK_STATE_COMPLETED", [{"text": "Generated text content"}]),
    ("tck-artifact-file", "TASK_STATE_COMPLETED", [
        {"raw": FILE_RAW, "filename": "output.txt", "mediaType": "text/plain"}]),
    ("tck-artifact-file-url", "TASK_STATE_COMPLETED", [
        {"url": "https://example.com/output.txt", "filename": "output.txt",
         "mediaType": "text/plain"}]),
    ("tck-artifact-data", "TASK_STATE_COMPLETED", [
        {"data": {"key": "value", "count": 42}}]),
    # A Message is no answer of this service: the scripted text, as a task.
    ("tck-message-response", "TASK_STATE_COMPLETED", [
        {"text": "Direct message response"}]),
    ("tck-stream-artifact-chunked", "TASK_STATE_COMPLETED", [
        {"text": "chunk-1 "}, {"text": "chunk-2"}]),
    ("tck-stream-001", "TASK_STATE_COMPLETED", [{"text": "Stream hello from TCK"}]),
])
def test_each_scripted_prefix_completes_with_its_artifact(caller, send, prefix,
                                                          state, parts):
    # The kit appends a session id and the transport to its prefixes.
    task = send(caller, "%s-1a2b3c4d-%s" % (prefix, send.__name__))
    assert task["status"]["state"] == state
    assert task["status"]["message"]["parts"] == parts
    assert [a["parts"] for a in task["artifacts"]] == [parts]
    assert task["artifacts"][0]["artifactId"]


@BINDINGS
def test_input_required_then_completed_on_the_same_task(caller, send):
    first = send(caller, "tck-input-required-s1-" + send.__name__)
    assert first["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert "artifacts" not in first
    second = send(caller, "tck-complete-task-s1-" + send.__name__,
                  taskId=first["id"], contextId=first["contextId"])
    assert second["id"] == first["id"]
    assert second["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [m["role"] for m in second["history"]] == [
        "ROLE_USER", "ROLE_AGENT", "ROLE_USER", "ROLE_AGENT"]


@BINDINGS
def test_reject_task_is_rejected(caller, send):
    task = send(caller, "tck-reject-task-s1-" + send.__name__)
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert task["status"]["message"]["parts"] == [{"text": "rejected"}]


@BINDINGS
def test_any_other_message_id_completes_naming_it(caller, send):
    task = send(caller, "tck-terminal-s1-" + send.__name__)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "tck-terminal-s1-" in task["status"]["message"]["parts"][0]["text"]


def test_long_running_task_answers_working_at_once_and_can_be_canceled(
        caller, monkeypatch):
    # Long enough that only the cancel can end it within the test's bounds.
    monkeypatch.setattr(demo, "CONFORMANCE_LONG_SECONDS", 600)
    task = _send_rpc(caller, "test-resubscribe-message-id-s1",
                     {"returnImmediately": True})
    assert task["status"]["state"] == "TASK_STATE_WORKING"
    wait_until(lambda: caller.result("GetTask", {"id": task["id"]})["status"][
        "message"]["parts"][0]["text"].startswith("working: "),
        what="the long-running turn to report progress")
    status, canceled = caller.rest("POST", "/tasks/%s:cancel" % task["id"])
    assert status == 200 and canceled["status"]["state"] == "TASK_STATE_CANCELED"
    # The agent sees the cancel at its next progress report and stops.
    wait_until(lambda: not caller.runner.running(), what="the turn to stop")
    assert caller.result("GetTask", {"id": task["id"]})["status"]["state"] == \
        "TASK_STATE_CANCELED"


def test_long_running_task_completes_for_a_blocking_send(caller, monkeypatch):
    monkeypatch.setattr(demo, "CONFORMANCE_LONG_SECONDS", 1)
    task = _send_rest(caller, "test-resubscribe-message-id-s2")
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["status"]["message"]["parts"] == [
        {"text": "Long-running task completed"}]


def test_its_card_is_the_root_card_with_the_default_agent(caller):
    response = caller.client.get("/.well-known/agent-card.json",
                                 headers={"A2A-Version": "1.0"})
    card = response.get_json()
    assert card["name"] == "conformance"
    assert card["capabilities"]["streaming"] is False
    assert card["defaultOutputModes"] == ["text/plain", "application/json"]


def _wsgi_agents(**env):
    """The agents ``wsgi:app`` registers with ``env`` (a fresh process, as
    gunicorn would import it)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("A2A_")}
    environ.update(env, PYTHONPATH=REPO_DIR)
    out = subprocess.run(
        [sys.executable, "-c", "import wsgi; print(' '.join(sorted(wsgi.a2a.agents)))"],
        cwd=REPO_DIR, env=environ, capture_output=True, text=True, timeout=60,
        check=True)
    return out.stdout.split()


def test_the_demo_serves_it_only_when_asked(tmp_path):
    database = str(tmp_path / "a2a.sqlite3")
    assert _wsgi_agents(A2A_DATABASE=database) == ["chat", "echo", "slow"]
    assert _wsgi_agents(A2A_DATABASE=database, A2A_CONFORMANCE_AGENT="1") == [
        "chat", "conformance", "echo", "slow"]
