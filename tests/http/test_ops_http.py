"""Operations over HTTP, in process: ``GET PREFIX/health``, the access record
of each call (logger ``a2a_flask.access``), the log formats, ``GET
PREFIX/metrics``."""

import json
import logging
import re

import pytest

from a2a_flask.logs import formatter
from a2a_flask.storage.sqlite.migrations import EXPECTED_VERSION
from helpers import Rpc, metric_growth, metric_sample

ACCESS = "a2a_flask.access"


# In the compat subset: .ci/matrix runs it on every supported Python and Flask.
pytestmark = pytest.mark.compat


def access_records(caplog):
    return [r for r in caplog.records if r.name == ACCESS]


def test_health_ok_without_credentials(make_app):
    app, _ = make_app(A2A_AUTH="required")
    response = app.test_client().get("/api/v1/health")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    assert response.get_json() == {"status": "ok", "database": "ok",
                                   "schemaVersion": EXPECTED_VERSION}


def test_health_503_tells_no_detail_when_the_database_is_unavailable(
        tmp_path, make_app):
    # A directory where the file should be: SQLite cannot open it.
    app, _ = make_app(A2A_DATABASE=str(tmp_path), A2A_AUTO_MIGRATE=False)
    response = app.test_client().get("/api/v1/health")
    assert response.status_code == 503
    assert response.get_json() == {"status": "unavailable",
                                   "database": "unavailable"}


def test_health_and_metrics_answer_json_405_whatever_the_host_handles(make_app):
    app, _ = make_app(A2A_METRICS=True)

    @app.errorhandler(405)
    def host_page(exc):  # the host's HTML page must not answer on our routes
        return "<h1>host</h1>", 405

    client = app.test_client()
    for path in ("/api/v1/health", "/api/v1/metrics"):
        response = client.post(path)
        assert response.status_code == 405, path
        assert response.mimetype == "application/json", path
        assert response.get_json()["code"] == -32600
        assert "GET" in response.headers["Allow"]


def test_health_follows_the_url_prefix(make_app):
    app, _ = make_app(A2A_URL_PREFIX="/a2a-svc")
    client = app.test_client()
    assert client.get("/a2a-svc/health").status_code == 200
    assert client.get("/api/v1/health").status_code == 404


def test_one_access_record_per_call(make_app, caplog):
    app, _ = make_app()
    rpc = Rpc(app.test_client())
    caplog.set_level(logging.INFO, logger="a2a_flask")
    task = rpc.send("hi", agent="chat")
    rpc.error("tasks/get", {"id": "task_nope"})
    rpc.error("no/such/method")
    records = access_records(caplog)
    assert len(records) == 3
    first, second, third = records
    assert (first.agent, first.method, first.taskId, first.contextId, first.caller,
            first.state, first.code) == (
        "chat", "message/send", task["id"], task["contextId"], "anonymous",
        "input-required", None)
    assert isinstance(first.ms, float) and first.ms >= 0
    assert first.getMessage().startswith(
        "call agent=chat method=message/send task=%s context=%s caller=anonymous "
        "outcome=input-required ms=" % (task["id"], task["contextId"]))
    assert (second.method, second.taskId, second.state, second.code) == (
        "tasks/get", "task_nope", None, -32001)
    assert (third.method, third.code, third.taskId) == ("no/such/method", -32601, None)


def test_access_record_names_the_key_id_never_the_key(tmp_path, make_app, caplog):
    app, a2a = make_app(A2A_AUTH="required")
    key, secret = app.extensions["a2a"].credentials.create_key(None, "ci")
    rpc = Rpc(app.test_client(), headers={"Authorization": "Bearer " + secret})
    caplog.set_level(logging.INFO, logger="a2a_flask")
    rpc.send("hi")
    status, _ = Rpc(app.test_client(), headers={
        "Authorization": "Bearer a2a_wrong"}).call("tasks/get", {"id": "x"})
    assert status == 401
    ok, refused = access_records(caplog)
    assert ok.caller == "key:" + key.id and ok.state == "completed"
    assert refused.caller is None and refused.code == -32600 and refused.status == 401
    for record in caplog.records:
        text = formatter("json").format(record) + formatter("plain").format(record)
        assert secret not in text and secret[10:] not in text
        assert "a2a_wrong" not in text


def test_log_formats(make_app, caplog):
    app, _ = make_app()
    caplog.set_level(logging.INFO, logger="a2a_flask")
    task = Rpc(app.test_client()).send("hi")
    [record] = access_records(caplog)

    plain = formatter("plain").format(record)
    assert re.match(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [+-]\d{4}\] \[\d+\] \[INFO\] "
                    r"a2a_flask\.access: call agent=echo ", plain), plain
    line = formatter("json").format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["level"] == "INFO" and entry["logger"] == ACCESS
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["time"])
    assert {k: entry[k] for k in ("agent", "method", "taskId", "contextId",
                                  "caller", "state", "code", "status")} == {
        "agent": "echo", "method": "message/send", "taskId": task["id"],
        "contextId": task["contextId"], "caller": "anonymous",
        "state": "completed", "code": None, "status": 200}
    with pytest.raises(ValueError):
        formatter("xml")


def test_json_format_keeps_a_traceback_on_one_line():
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        record = logging.getLogger("a2a_flask").makeRecord(
            "a2a_flask", logging.ERROR, __file__, 1, "agent %r failed", ("x",),
            __import__("sys").exc_info())
    line = formatter("json").format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["message"] == "agent 'x' failed"
    assert entry["traceback"].startswith("Traceback (most recent call last)")
    assert "RuntimeError: boom" in entry["traceback"]


def test_metrics(make_app, monkeypatch):
    pytest.importorskip("prometheus_client")
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    app, _ = make_app(A2A_METRICS=True)
    client = app.test_client()
    rpc = Rpc(client)
    before = client.get("/api/v1/metrics").get_data(as_text=True)
    rpc.send("hi")
    rpc.send("hi", agent="chat")
    rpc.error("tasks/get", {"id": "task_nope"})
    rpc.error("made/up")
    response = client.get("/api/v1/metrics")
    assert response.status_code == 200
    assert response.mimetype == "text/plain"
    text = response.get_data(as_text=True)

    def grew(name, **labels):
        return metric_growth(before, text, name, **labels)

    assert grew("a2a_calls_total", method="message/send", code="ok") == 2
    assert grew("a2a_calls_total", method="tasks/get", code="-32001") == 1
    assert grew("a2a_calls_total", method="other", code="-32601") == 1
    assert grew("a2a_turn_seconds_count", agent="echo") == 1
    assert grew("a2a_turn_seconds_count", agent="chat") == 1
    assert metric_sample(text, "a2a_tasks", state="completed") == 1
    assert metric_sample(text, "a2a_tasks", state="input-required") == 1


def test_metrics_off_by_default(app):
    assert app.test_client().get("/api/v1/metrics").status_code == 404
