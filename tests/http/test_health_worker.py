"""``GET PREFIX/health`` when background agents exist but nobody claims
their turns: 200 ``{"status": "degraded", "worker": "none seen for N s"}``
once no claimer (``flask a2a worker``, or a web process with
A2A_IN_PROCESS_WORKER) was seen within twice A2A_WORKER_LEASE_SECONDS;
warned once in the log; ``ok`` while one is seen, or with no background
agent at all. Writes that fail still come first (tests/http/test_health_writes.py)."""

import logging
import re
from datetime import datetime, timedelta, timezone

from a2a_flask.worker import Worker

HEALTH = "/api/v1/health"


def _with_background(a2a):
    a2a.add_agent("later", lambda turn: "done", background=True)


def _health(app):
    answer = app.test_client().get(HEALTH)
    return answer.status_code, answer.get_json()


def _ok(app):
    return {"status": "ok", "database": "ok",
            "schemaVersion": app.extensions["a2a"].storage.expected_version()}


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.name == "a2a_flask" and r.levelno == logging.WARNING
            and "worker" in r.getMessage()]


def test_no_background_agent_is_ok_without_any_worker(make_app):
    app, _ = make_app()
    assert _health(app) == (200, _ok(app))


def test_a_background_agent_and_no_worker_ever_is_degraded_and_warned_once(
        make_app, caplog):
    app, _ = make_app(register=_with_background)
    with caplog.at_level(logging.WARNING, logger="a2a_flask"):
        answers = [_health(app) for _ in range(3)]
    for status, body in answers:
        assert status == 200
        assert body["status"] == "degraded"
        assert re.fullmatch(r"none seen for \d+ s", body["worker"]), body
        assert set(body) == {"status", "worker", "database", "schemaVersion"}
    warned = _warnings(caplog)
    assert len(warned) == 1, warned
    assert "flask a2a worker" in warned[0]


def test_an_idle_worker_makes_it_ok_and_the_log_says_so(make_app, caplog):
    app, _ = make_app(register=_with_background)
    assert _health(app)[1]["status"] == "degraded"
    worker = Worker(app.extensions["a2a"], threads=1)
    with caplog.at_level(logging.WARNING, logger="a2a_flask"):
        worker._upkeep()  # what its loop does every third of the lease
        assert _health(app) == (200, _ok(app))
    assert any("again" in line for line in _warnings(caplog))


def test_a_worker_unseen_for_twice_the_lease_is_degraded(make_app):
    app, _ = make_app(register=_with_background, A2A_WORKER_LEASE_SECONDS=30)
    storage = app.extensions["a2a"].storage
    real = datetime.now(timezone.utc)
    for ago, expected in ((59, None), (61, "none seen for 61 s"),
                          (3600, "none seen for 3600 s")):
        storage.clock = lambda ago=ago: real - timedelta(seconds=ago)
        storage.note_worker("w1")
        storage.clock = lambda: real
        status, body = _health(app)
        assert status == 200
        assert body.get("worker") == expected, (ago, body)
        assert body["status"] == ("ok" if expected is None else "degraded")


def test_a_worker_that_stopped_is_forgotten_at_once(make_app):
    app, _ = make_app(register=_with_background)
    worker = Worker(app.extensions["a2a"], threads=1)
    worker._upkeep()
    assert _health(app)[1]["status"] == "ok"
    worker.stop()
    worker.run()  # returns at once: stopped before it began
    assert _health(app)[1]["status"] == "degraded"
