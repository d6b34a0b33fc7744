"""The operator's page (A2A_DASHBOARD) over HTTP: its JSON's numbers
against a database this test made (states, the queue, a dead worker, a
failure), on SQLite and PostgreSQL; who may see it; its two actions."""

import logging
import os
import re
from datetime import datetime, timedelta

import pytest
from flask import session

from a2a_flask.auth.key_uses import KeyUses
from a2a_flask.storage.base import OperatorView
from helpers import basic, bearer, message

RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\Z")
URL = "/api/v1/dashboard/"
JSON = {"Accept": "application/json"}


def _reply(text, n, start):
    return {"kind": "message", "role": "agent", "messageId": "reply-%d-%s" % (n, start.task_id),
            "parts": [{"kind": "text", "text": text}], "taskId": start.task_id,
            "contextId": start.context_id}


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request):
    if request.param == "postgres":
        return {"A2A_DATABASE": request.getfixturevalue("postgres_url")}
    return {}


@pytest.fixture
def dash(make_app, backend):
    """(app, a2a, operator key, plain key): auth required, the page on."""
    app, a2a = make_app(A2A_AUTH="required", A2A_DASHBOARD=True, **backend)
    credentials = app.extensions["a2a"].credentials
    _, operator_key = credentials.create_key(set(), "ops", operator=True)
    _, plain_key = credentials.create_key(None, "plain")
    return app, a2a, operator_key, plain_key


def _sql(storage, statement, *args):
    """``statement`` (with ``?`` marks) run on either backend."""
    if not storage.__class__.__name__.startswith("Sqlite"):
        statement = statement.replace("?", "%s")
    with storage.transaction() as conn:
        conn.execute(statement, args)


def _ago(text, seconds):
    """The ISO timestamp ``seconds`` before ``text``."""
    moment = datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ") - timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (moment.microsecond // 1000)


def _created_before_end(storage, task_id, seconds):
    """Make ``task_id``'s creation ``seconds`` before its last change."""
    ended = storage.show_task(task_id).updated_at
    _sql(storage, "UPDATE a2a_tasks SET created_at = ? WHERE id = ?",
         _ago(ended, seconds), task_id)
    return ended


def _made(storage):
    """The database's contents, with what each should count as."""
    made = {}
    for n in range(3):
        start = storage.start_turn("key:a", "echo", message("hi"))
        storage.finish_turn(start.task_id, "key:a", "echo", "completed",
                            _reply("ok", n, start))
    failed = storage.start_turn("key:a", "echo", message("hi"))
    storage.finish_turn(failed.task_id, "key:a", "echo", "failed",
                        _reply("boom: the agent raised", 10, failed))
    made["failed"] = failed.task_id
    old = storage.start_turn("user:bob", "echo", message("hi"))
    storage.finish_turn(old.task_id, "user:bob", "echo", "failed",
                        _reply("an old failure", 11, old))
    # A day and more ago: counted by state, not a recent failure nor a turn.
    mark = "?" if storage.__class__.__name__.startswith("Sqlite") else "%s"
    with storage.transaction() as conn:
        conn.execute("UPDATE a2a_tasks SET updated_at = '2020-01-01T00:00:00.000Z'"
                     " WHERE id = " + mark, (old.task_id,))
    asking = storage.start_turn("user:bob", "chat", message("hi"))
    storage.finish_turn(asking.task_id, "user:bob", "chat", "input-required",
                        _reply("which?", 12, asking))
    owners = {storage.enqueue_turn(owner, "slow", message("wait")).task_id: owner
              for owner in ("key:a", "user:bob", "key:a")}
    [dead] = storage.claim_turns("host:1:dead", 1, -100)  # renewed 130 s ago
    [alive] = storage.claim_turns("host:2:alive", 1, 30)
    [left] = set(owners) - {dead.task_id, alive.task_id}
    made["queued_caller"] = owners[left]
    return made


def _made_more(storage):
    """Heartbeats, tenants and slow turns, beside ``_made``'s."""
    made = {}
    for worker in ("host:1:dead", "host:2:alive", "host:3:idle", "host:4:ab12:web"):
        assert storage.note_worker(worker)
    # The dead one's heartbeat stopped 200 s ago.
    _sql(storage, "UPDATE a2a_workers SET seen_at = ? WHERE id = ?",
         _ago(storage.operator_view().now, 200), "host:1:dead")
    # Tenant acme: a failure and a queued turn of its caller.
    failed = storage.start_turn("key:acme", "echo", message("hi"), tenant="acme")
    storage.finish_turn(failed.task_id, "key:acme", "echo", "failed",
                        _reply("acme's failure", 20, failed))
    made["acme_failed"] = failed.task_id
    made["acme_queued"] = storage.enqueue_turn("key:acme", "slow", message("w"),
                                               tenant="acme").task_id
    # Slow turns: 90 s (tenant acme), 30 s; a task of two turns created long
    # ago, a canceled one and a still working one are no turn's time.
    slow = storage.start_turn("key:acme", "echo", message("hi"), tenant="acme")
    storage.finish_turn(slow.task_id, "key:acme", "echo", "completed",
                        _reply("late", 21, slow))
    made["slow_90"] = (slow.task_id, _created_before_end(storage, slow.task_id, 90))
    slower = storage.start_turn("user:bob", "chat", message("hi"))
    storage.finish_turn(slower.task_id, "user:bob", "chat", "input-required",
                        _reply("which?", 22, slower))
    made["slow_30"] = (slower.task_id, _created_before_end(storage, slower.task_id, 30))
    twice = storage.start_turn("user:bob", "chat", message("hi"))
    storage.finish_turn(twice.task_id, "user:bob", "chat", "input-required",
                        _reply("which?", 23, twice))
    again = storage.start_turn("user:bob", "chat", message("that one"),
                               task_id=twice.task_id)
    storage.finish_turn(again.task_id, "user:bob", "chat", "completed",
                        _reply("done", 24, again))
    _created_before_end(storage, twice.task_id, 600)
    made["not_turns"] = {twice.task_id}
    canceled = storage.start_turn("user:bob", "echo", message("hi"))
    storage.cancel_tasks(task_id=canceled.task_id)
    _created_before_end(storage, canceled.task_id, 900)
    working = storage.start_turn("user:bob", "echo", message("hi"))
    _created_before_end(storage, working.task_id, 1200)
    made["not_turns"] |= {canceled.task_id, working.task_id}
    return made


def test_the_numbers_are_the_database_s(dash):
    app, _, operator_key, _ = dash
    storage = app.extensions["a2a"].storage
    made = _made(storage)
    # Claimers with no heartbeat row: seen by their leases only.
    _sql(storage, "DELETE FROM a2a_workers")
    response = app.test_client().get(URL, headers=dict(JSON, **bearer(operator_key)))
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.headers["Cache-Control"] == "no-store"
    body = response.get_json()

    agents = body["agents"]
    assert {name: agent["tasks"] for name, agent in agents.items()} == {
        "chat": {"input-required": 1},
        "echo": {"completed": 3, "failed": 2},
        "slow": {"working": 3}}
    assert agents["chat"]["background"] is False
    for name, turns in (("echo", 4), ("chat", 1), ("slow", 0)):
        per_minute = agents[name]["turns_per_minute"]
        assert len(per_minute) == 60 and all(isinstance(n, int) for n in per_minute)
        # Just now: the last minute, or the one before when one just began.
        assert sum(per_minute) == sum(per_minute[-2:]) == turns, (name, per_minute)

    assert body["queue"]["depth"] == 1
    assert body["queue"]["callers"] == {made["queued_caller"]: 1}
    assert 0 <= body["queue"]["oldest_seconds"] < 60

    workers = {w["id"]: w for w in body["workers"]}
    assert set(workers) == {"host:1:dead", "host:2:alive"}
    assert workers["host:2:alive"]["running"] == 1
    assert workers["host:2:alive"]["last_seen_seconds"] < 10
    assert 129 <= workers["host:1:dead"]["last_seen_seconds"] < 160
    assert workers["host:1:dead"]["lease_renewed_seconds"] == (
        workers["host:1:dead"]["last_seen_seconds"])
    assert workers["host:1:dead"]["heartbeat_seconds"] is None
    assert body["workers_from"] == "heartbeats and leases"
    # No background agent registered here: nobody is missed.
    assert body["workers_unseen_seconds"] is None

    [failure] = body["failures"]
    assert failure == {"task_id": made["failed"], "agent": "echo", "caller": "key:a",
                       "tenant": "", "at": failure["at"],
                       "text": "boom: the agent raised"}
    assert RFC3339.match(failure["at"]) and RFC3339.match(body["now"])

    stored = body["storage"]
    assert stored["schema_version"] == storage.expected_version()
    if stored["backend"] == "sqlite":
        assert stored["file_bytes"] > 0 and stored["wal_bytes"] >= 0
    else:
        assert stored["backend"] == "postgresql" and stored["database_bytes"] > 0
    keys = {k["label"]: k for k in body["keys"]}
    assert keys["ops"]["operator"] is True and keys["ops"]["scope"] == "(no agent)"
    assert keys["plain"]["operator"] is False and keys["plain"]["scope"] == "*"
    assert keys["ops"]["last_used_at"] is not None  # this request
    assert keys["ops"]["tenant"] is None
    assert body["tenants"] == []
    # Every ended turn is just as old as its task here: a few ms each.
    assert body["slowest_of"] == 5  # the 2020 failure is not of the hour
    assert [(t["state"], t["seconds"] < 5) for t in body["slowest"]].count(
        ("input-required", True)) == 1
    assert body["settings"]["worker_lease_seconds"] == 30
    assert body["settings"]["auth"] == "required"
    # Unset: the storage's (docs/serving.md, "Sends that answer at once").
    assert body["settings"]["running_sends"] == (
        2 if stored["backend"] == "sqlite" else 0)
    assert body["settings"]["running_sends_stuck"] == 0


def test_a_key_used_just_now_is_not_never(dash, monkeypatch):
    # A process writes a key's use at once only when its last write is a
    # second old, else a second later (key_uses.py): here, an hour later.
    monkeypatch.setattr(KeyUses, "WRITE_EVERY", 3600.0)
    app, _, operator_key, plain_key = dash
    uses = app.extensions["a2a"].credentials._uses
    client = app.test_client()
    try:
        sent = client.post("/api/v1/agents/echo/a2a", headers=bearer(plain_key), json={
            "jsonrpc": "2.0", "id": 1, "method": "message/send",
            "params": {"message": message("hi")}})
        assert "result" in sent.get_json(), sent.get_json()
        response = client.get(URL, headers=dict(JSON, **bearer(operator_key)))
        assert response.status_code == 200
        keys = {k["label"]: k for k in response.get_json()["keys"]}
        # Both uses wait for their write, the operator's of this very
        # request too: both are shown used all the same.
        assert RFC3339.match(keys["plain"]["last_used_at"] or ""), keys["plain"]
        assert RFC3339.match(keys["ops"]["last_used_at"] or ""), keys["ops"]
        assert keys["plain"]["last_used_at"] <= keys["ops"]["last_used_at"]
    finally:
        if uses._timer is not None:
            uses._timer.cancel()


def test_workers_tenants_and_the_slowest_turns(make_app, backend):
    """Each claimer with its heartbeat and its leases (an idle one, an
    in-process one, a dead one); with tenants, each row's tenant; the
    slowest turns of one turn, slowest first."""
    app, _ = make_app(A2A_AUTH="required", A2A_DASHBOARD=True, A2A_TENANTS="acme",
                      **backend)
    credentials = app.extensions["a2a"].credentials
    _, operator_key = credentials.create_key(set(), "ops", operator=True)
    credentials.create_key(None, "acme's", tenant="acme")
    storage = app.extensions["a2a"].storage
    made = dict(_made(storage), **_made_more(storage))
    response = app.test_client().get(URL, headers=dict(JSON, **bearer(operator_key)))
    assert response.status_code == 200, response.get_data(as_text=True)
    body = response.get_json()

    workers = {w.pop("id"): w for w in body["workers"]}
    assert sorted(workers) == ["host:1:dead", "host:2:alive", "host:3:idle",
                               "host:4:ab12:web"]
    dead, alive = workers["host:1:dead"], workers["host:2:alive"]
    assert (dead["running"], dead["in_process"]) == (1, False)
    assert 199 <= dead["heartbeat_seconds"] < 230
    assert 129 <= dead["lease_renewed_seconds"] < 160
    assert dead["last_seen_seconds"] == dead["lease_renewed_seconds"]
    assert (alive["running"], alive["in_process"]) == (1, False)
    assert alive["heartbeat_seconds"] < 10 and alive["lease_renewed_seconds"] < 10
    for name, in_process in (("host:3:idle", False), ("host:4:ab12:web", True)):
        idle = workers[name]
        assert idle == {"in_process": in_process, "running": 0,
                        "last_seen_seconds": idle["heartbeat_seconds"],
                        "heartbeat_seconds": idle["heartbeat_seconds"],
                        "lease_renewed_seconds": None}
        assert idle["heartbeat_seconds"] < 10
    assert body["workers_unseen_seconds"] is None

    assert body["tenants"] == ["acme"]
    assert body["queue"]["depth"] == 2
    assert body["queue"]["callers"] == {made["queued_caller"]: 1, "key:acme": 1}
    assert body["queue"]["tenants"] == {"": {made["queued_caller"]: 1},
                                        "acme": {"key:acme": 1}}
    failures = [(f["task_id"], f["tenant"], f["caller"], f["text"])
                for f in body["failures"]]
    assert failures == [(made["acme_failed"], "acme", "key:acme", "acme's failure"),
                        (made["failed"], "", "key:a", "boom: the agent raised")]
    keys = {k["label"]: k["tenant"] for k in body["keys"]}
    assert keys == {"ops": None, "acme's": "acme"}

    (slow_id, slow_at), (slower_id, slower_at) = made["slow_90"], made["slow_30"]
    assert body["slowest"][:2] == [
        {"task_id": slow_id, "agent": "echo", "caller": "key:acme", "tenant": "acme",
         "state": "completed", "seconds": 90.0, "at": slow_at},
        {"task_id": slower_id, "agent": "chat", "caller": "user:bob", "tenant": "",
         "state": "input-required", "seconds": 30.0, "at": slower_at}]
    # The rest are the turns of a few ms (none of the two-turn, canceled or
    # working tasks); the newest ended tasks of the hour were looked at:
    # _made's 5, the acme failure, the two slow ones and the two-turn one.
    assert all(t["seconds"] < 5 for t in body["slowest"][2:])
    assert not made["not_turns"] & {t["task_id"] for t in body["slowest"]}
    assert len(body["slowest"]) == 8 and body["slowest_of"] == 9
    assert all(RFC3339.match(t["at"]) for t in body["slowest"])


def test_the_newest_across_callers_when_there_are_more(dash, monkeypatch):
    """More failures and ended turns than are kept, of several callers (each
    a group of the storage's index): the newest of all, newest first."""
    monkeypatch.setattr("a2a_flask.dashboard.FAILURES", 3)
    for backend in ("sqlite", "postgres"):
        monkeypatch.setattr("a2a_flask.storage.%s.dashboard.SLOWEST_SAMPLE" % backend, 4)
    app, _, operator_key, _ = dash
    storage = app.extensions["a2a"].storage
    now = storage.operator_view().now
    made = []
    for n, owner in enumerate(["key:a", "key:b", "key:c"] * 2):
        start = storage.start_turn(owner, "echo", message("hi"))
        storage.finish_turn(start.task_id, owner, "echo", "failed",
                            _reply("failure %d" % n, n, start))
        # Their ends a minute apart, the callers' interleaved.
        at = _ago(now, 60 * (6 - n))
        _sql(storage, "UPDATE a2a_tasks SET updated_at = ?, created_at = ? WHERE id = ?",
             at, at, start.task_id)
        made.append(start.task_id)
    response = app.test_client().get(URL, headers=dict(JSON, **bearer(operator_key)))
    assert response.status_code == 200, response.get_data(as_text=True)
    body = response.get_json()
    assert [f["task_id"] for f in body["failures"]] == made[:2:-1]
    assert [f["text"] for f in body["failures"]] == ["failure 5", "failure 4", "failure 3"]
    assert body["slowest_of"] == 4
    # All as quick (0 s): the newest first among them.
    assert [t["task_id"] for t in body["slowest"]] == made[:1:-1]


def test_none_seen_when_background_agents_wait(make_app, backend):
    """With a background agent and no claimer seen within twice the lease,
    ``workers_unseen_seconds`` says for how long, as /health does."""
    def register(a2a):
        a2a.add_agent("later", lambda turn: "done", background=True)

    app, _ = make_app(register, A2A_AUTH="required", A2A_DASHBOARD=True, **backend)
    _, key = app.extensions["a2a"].credentials.create_key(set(), operator=True)
    storage = app.extensions["a2a"].storage
    client = app.test_client()

    def unseen():
        body = client.get(URL, headers=dict(JSON, **bearer(key))).get_json()
        return body["workers_unseen_seconds"]

    assert isinstance(unseen(), int)  # none ever: since the app started
    storage.note_worker("host:9:w")
    assert unseen() is None
    _sql(storage, "UPDATE a2a_workers SET seen_at = ? WHERE id = ?",
         _ago(storage.operator_view().now, 61), "host:9:w")  # lease 30 s
    assert 61 <= unseen() < 90
    storage.note_worker("host:9:w", alive=False)  # a claimer that stopped
    assert isinstance(unseen(), int)


def test_an_empty_database(dash):
    app, _, operator_key, _ = dash
    body = app.test_client().get(URL, headers=dict(JSON, **bearer(operator_key))).get_json()
    assert body["agents"]["echo"] == {"tasks": {}, "turns_per_minute": [0] * 60,
                                      "background": False}
    assert body["queue"] == {"depth": 0, "oldest_seconds": None, "callers": {},
                             "tenants": {}}
    assert body["workers"] == [] and body["failures"] == []
    assert body["slowest"] == [] and body["slowest_of"] == 0
    assert body["workers_unseen_seconds"] is None and body["tenants"] == []


def test_only_operators_see_the_data(dash):
    app, _, operator_key, plain_key = dash
    credentials = app.extensions["a2a"].credentials
    credentials.create_user("olga", "olga pw", operator=True)
    credentials.create_user("bob", "bob pw")
    client = app.test_client()
    cases = [({}, 401), (bearer(plain_key), 403), (basic("bob", "bob pw"), 403),
             (bearer("a2a_" + "x" * 43), 401), (basic("olga", "wrong"), 401),
             (bearer(operator_key), 200), ({"X-API-Key": operator_key}, 200),
             (basic("olga", "olga pw"), 200)]
    for headers, status in cases:
        response = client.get(URL, headers=dict(JSON, **headers))
        assert response.status_code == status, (headers, response.get_data())
        assert response.headers["Cache-Control"] == "no-store"
        if status != 200:
            body = response.get_json()
            assert set(body) == {"code", "message"}, body
            assert "agents" not in response.get_data(as_text=True)
    refused = client.get(URL, headers=dict(JSON, **bearer(plain_key))).get_json()
    assert "--operator" in refused["message"]
    # A 401 challenges, so that curl and scripts know what to send; the
    # page's own calls get none, so that no browser login dialog opens.
    assert "Basic" in client.get(URL, headers=JSON).headers["WWW-Authenticate"]
    quiet = client.get(URL, headers=dict(JSON, **{"X-Requested-With": "a2a-dashboard"}))
    assert quiet.status_code == 401 and "WWW-Authenticate" not in quiet.headers
    # curl's */* is the JSON too, not the page.
    assert client.get(URL, headers={"Accept": "*/*"}).status_code == 401


def test_the_page_holds_no_data_and_a_strict_policy(dash):
    app, _, _, _ = dash
    response = app.test_client().get(URL, headers={"Accept": "text/html"})
    assert response.status_code == 200 and response.mimetype == "text/html"
    policy = response.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    assert "unsafe-inline" not in policy and "http" not in policy
    assert response.headers["Cache-Control"] == "no-store"
    html = response.get_data(as_text=True)
    assert "<script src" not in html and "<link rel=\"stylesheet\"" not in html
    # Any other method on its routes: the service's JSON 405.
    wrong = app.test_client().get(URL + "cancel-task")
    assert wrong.status_code == 405 and wrong.get_json()["code"] == -32600
    assert app.test_client().delete(URL).status_code == 405


def test_off_by_default(make_app, backend):
    app, _ = make_app(A2A_AUTH="required", **backend)
    _, key = app.extensions["a2a"].credentials.create_key(set(), operator=True)
    client = app.test_client()
    assert client.get(URL, headers=dict(JSON, **bearer(key))).status_code == 404
    assert client.get(URL, headers={"Accept": "text/html"}).status_code == 404
    assert client.post(URL + "cancel-task", json={"task_id": "x"},
                       headers=bearer(key)).status_code == 404


def test_cancel_a_task(dash, caplog):
    app, _, operator_key, plain_key = dash
    storage = app.extensions["a2a"].storage
    queued = storage.enqueue_turn("key:a", "slow", message("wait"))
    done = storage.start_turn("key:a", "echo", message("hi"))
    storage.finish_turn(done.task_id, "key:a", "echo", "completed", _reply("ok", 1, done))
    client = app.test_client()
    url = URL + "cancel-task"

    refused = client.post(url, json={"task_id": queued.task_id}, headers=bearer(plain_key))
    assert refused.status_code == 403
    assert storage.show_task(queued.task_id).state == "working"
    assert client.post(url, json={"task_id": queued.task_id}).status_code == 401

    with caplog.at_level(logging.INFO, logger="a2a_flask.dashboard"):
        response = client.post(url, json={"task_id": queued.task_id},
                               headers=bearer(operator_key))
    assert response.status_code == 200, response.get_data()
    assert response.headers["Cache-Control"] == "no-store"
    assert response.get_json() == {"canceled": [
        {"task_id": queued.task_id, "agent": "slow", "caller": "key:a",
         "state": "canceled"}]}
    assert storage.show_task(queued.task_id).state == "canceled"
    assert storage.claim_turns("w", 10, 30) == []  # the queued turn is gone
    [record] = [r for r in caplog.records if r.name == "a2a_flask.dashboard"]
    operator_id = [k.id for k in storage.keys() if k.operator][0]
    assert record.getMessage() == ("operator key:%s canceled task %s (agent slow, "
                                   "caller key:a)" % (operator_id, queued.task_id))

    again = client.post(url, json={"task_id": queued.task_id}, headers=bearer(operator_key))
    assert again.status_code == 409 and again.get_json()["data"] == {
        "task_id": queued.task_id, "state": "canceled"}
    ended = client.post(url, json={"task_id": done.task_id}, headers=bearer(operator_key))
    assert ended.status_code == 409
    assert storage.show_task(done.task_id).state == "completed"
    missing = client.post(url, json={"task_id": "task_nope"}, headers=bearer(operator_key))
    assert missing.status_code == 404
    for body in ({}, {"task_id": ""}, {"task_id": 5}, ["x"]):
        bad = client.post(url, json=body, headers=bearer(operator_key))
        assert bad.status_code == 400, body
        assert bad.get_json()["code"] == -32600
    form = client.post(url, data={"task_id": queued.task_id}, headers=bearer(operator_key))
    assert form.status_code == 400


def test_cancel_a_caller_s_working_tasks(dash, caplog):
    app, _, operator_key, plain_key = dash
    storage = app.extensions["a2a"].storage
    mine = [storage.enqueue_turn("key:a", "slow", message("w")).task_id for _ in range(3)]
    [running] = storage.claim_turns("host:1", 1, 30)  # one runs, two wait
    assert running.task_id == mine[0]
    other = storage.enqueue_turn("user:bob", "slow", message("w")).task_id
    waiting = storage.start_turn("key:a", "chat", message("hi"))
    storage.finish_turn(waiting.task_id, "key:a", "chat", "input-required",
                        _reply("which?", 1, waiting))
    client = app.test_client()
    url = URL + "cancel-caller"
    assert client.post(url, json={"caller": "key:a"},
                       headers=bearer(plain_key)).status_code == 403
    assert storage.show_task(mine[1]).state == "working"

    with caplog.at_level(logging.INFO, logger="a2a_flask.dashboard"):
        response = client.post(url, json={"caller": "key:a"}, headers=bearer(operator_key))
    assert response.status_code == 200
    assert sorted(t["task_id"] for t in response.get_json()["canceled"]) == sorted(mine)
    assert {storage.show_task(t).state for t in mine} == {"canceled"}
    assert storage.show_task(other).state == "working"
    assert storage.show_task(waiting.task_id).state == "input-required"
    assert any("canceled 3 working tasks of caller key:a" in r.getMessage()
               for r in caplog.records)
    nothing = client.post(url, json={"caller": "key:nobody"}, headers=bearer(operator_key))
    assert nothing.status_code == 200 and nothing.get_json() == {"canceled": []}


def test_a_host_session_operator_and_the_host_s_csrf(make_app, backend):
    """A host's logged-in user opens the page with its session when the
    session_operator hook says so; its actions pass the host's CSRF check
    (Flask-WTF), which a key's do not need."""
    flask_wtf = pytest.importorskip("flask_wtf.csrf")

    def register(a2a):
        a2a.session_caller(lambda: session.get("user"))
        a2a.session_operator(lambda: session.get("user") == "admin")

    app, a2a = make_app(register, A2A_AUTH="required", A2A_DASHBOARD=True,
                        SECRET_KEY="test secret", **backend)
    flask_wtf.CSRFProtect(app)

    @app.route("/login/<name>")
    def login(name):
        session["user"] = name
        return flask_wtf.generate_csrf()

    storage = app.extensions["a2a"].storage
    task = storage.enqueue_turn("key:a", "slow", message("w")).task_id
    client = app.test_client()
    assert client.get(URL, headers=JSON).status_code == 401
    client.get("/login/carol")
    assert client.get(URL, headers=JSON).status_code == 403
    token = client.get("/login/admin").get_data(as_text=True)
    assert client.get(URL, headers=JSON).status_code == 200

    url = URL + "cancel-task"
    refused = client.post(url, json={"task_id": task})
    assert refused.status_code == 400 and "CSRF" in refused.get_json()["message"]
    assert storage.show_task(task).state == "working"
    done = client.post(url, json={"task_id": task}, headers={"X-CSRFToken": token})
    assert done.status_code == 200, done.get_data()
    assert storage.show_task(task).state == "canceled"

    # A key needs no CSRF token: no browser sends it by itself.
    _, key = app.extensions["a2a"].credentials.create_key(set(), operator=True)
    other = storage.enqueue_turn("key:a", "slow", message("w")).task_id
    fresh = app.test_client()
    assert fresh.post(url, json={"task_id": other},
                      headers=bearer(key)).status_code == 200


def test_the_view_record_is_the_contract_s(dash):
    app, _, _, _ = dash
    view = app.extensions["a2a"].storage.operator_view()
    assert isinstance(view, OperatorView)
    assert RFC3339.match(view.now)


@pytest.mark.parametrize("setting, status", [(None, 401), ("0", 404)])
def test_on_in_the_demo_unless_its_environment_says_0(tmp_path, setting, status):
    """The demo's wsgi.py turns it on; A2A_DASHBOARD=0 turns it off."""
    import subprocess
    import sys

    from serving import REPO_DIR
    env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_")}
    env["A2A_DATABASE"] = str(tmp_path / "demo.sqlite3")
    if setting is not None:
        env["A2A_DASHBOARD"] = setting
    code = ("import wsgi; c = wsgi.app.test_client(); print(c.get("
            "'/api/v1/dashboard/', headers={'Accept': 'application/json'}).status_code)")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_DIR, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == str(status)
