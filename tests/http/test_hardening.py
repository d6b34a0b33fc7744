"""Left running unattended: descriptors, storage faults, Basic floods, history.

In-process tests (a threaded werkzeug server where threads matter); the
gunicorn ones are in test_server_hardening.py.
"""

import gc
import logging
import os
import shutil
import sqlite3
import threading
import time

import pytest
import requests
from werkzeug.serving import make_server

from a2a_flask import InputRequired
from helpers import Rpc, assert_401, basic, message, texts


def _open_fds():
    return len(os.listdir("/proc/self/fd"))


def _lock_fds(database):
    found = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + fd) == database + "-lock":
                found += 1
        except OSError:
            pass
    return found


# -- descriptors (issue 7, trap 5) ------------------------------------------------


@pytest.fixture
def threaded_server(make_app):
    app, _ = make_app()
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield app, "http://127.0.0.1:%d" % server.server_port
    server.shutdown()
    thread.join(5)


def test_a_thread_per_request_leaves_no_descriptors_open(threaded_server):
    app, url = threaded_server
    database = app.config["A2A_DATABASE"]

    def send(number):
        body = {"jsonrpc": "2.0", "id": number, "method": "message/send",
                "params": {"message": message("hi %d" % number)}}
        # A new connection each time: werkzeug runs each in a new thread.
        answer = requests.post(url + "/api/v1/agents/echo/a2a", json=body,
                               headers={"Connection": "close"}, timeout=30).json()
        assert answer["result"]["status"]["state"] == "completed", answer

    for number in range(5):
        send(number)
    gc.collect()
    before = _open_fds()
    for number in range(500):
        send(number)
    gc.collect()
    time.sleep(0.2)  # the last request thread ends after its answer is sent
    gc.collect()
    grown = _open_fds() - before
    assert grown < 10, "%d descriptors more after 500 requests" % grown
    assert _lock_fds(database) <= 1


def test_apps_built_and_dropped_leave_no_descriptors(make_app):
    make_app()[0].test_client().get("/api/v1/agents")
    gc.collect()
    before = _open_fds()
    for _ in range(100):
        app, _ = make_app()
        assert Rpc(app.test_client()).send("hi")["status"]["state"] == "completed"
        del app
    gc.collect()
    grown = _open_fds() - before
    assert grown < 10, "%d descriptors more after 100 apps" % grown


def test_threads_of_one_process_still_exclude_each_other(make_app):
    # One descriptor for the whole process: the thread lock must keep two
    # writers of one worker apart, as flock keeps processes apart.
    app, _ = make_app()
    store = app.extensions["a2a"].storage
    inside, overlaps = [], []

    def write():
        for _ in range(20):
            with store.transaction():
                inside.append(1)
                if len(inside) > 1:
                    overlaps.append(1)
                time.sleep(0.001)
                inside.pop()

    threads = [threading.Thread(target=write) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not overlaps


# -- a busy database when a turn ends (issue 7, trap 6) ---------------------------


def test_a_turn_whose_outcome_meets_a_busy_database_is_stored_on_retry(make_app):
    holder = {}

    def register(a2a):
        @a2a.agent("hold")
        def hold(turn):
            # The host takes the write lock while the agent runs, and keeps it.
            conn = sqlite3.connect(turn._store.path, isolation_level=None)
            conn.execute("BEGIN IMMEDIATE")
            holder["conn"] = conn
            return "the real outcome"

    app, _ = make_app(register, A2A_BUSY_TIMEOUT_MS=50)
    rpc = Rpc(app.test_client(), agent="hold")
    sent = message("hi")
    status, answer = rpc.call("message/send", {"message": sent})
    error = answer["error"]
    assert error["code"] == -32603
    assert "busy" in error["message"] and "retr" in error["message"], error
    assert error["data"]["retry"] is True
    task_id = error["data"]["taskId"]
    # While the host still writes, a retry says the same, and changes nothing.
    status, again = rpc.call("tasks/get", {"id": task_id})
    assert "busy" in again["error"]["message"], again
    holder["conn"].execute("COMMIT")
    holder["conn"].close()
    # The retry of the same message answers the real outcome, at once.
    task = rpc.result("message/send", {"message": sent})
    assert task["id"] == task_id
    assert task["status"]["state"] == "completed"
    assert texts(task["status"]["message"]) == "the real outcome"
    assert rpc.result("tasks/get", {"id": task_id})["status"]["state"] == "completed"


# -- storage unavailable, deleted, full -------------------------------------------


def test_storage_unavailable_at_start_then_back_serves_without_restart(
        make_app, tmp_path, caplog):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the database folder should be")
    database = str(blocker / "a2a.sqlite3")
    with caplog.at_level(logging.ERROR, logger="a2a_flask"):
        app, _ = make_app(A2A_DATABASE=database)  # boots anyway
    assert any(database in r.getMessage() for r in caplog.records)
    rpc = Rpc(app.test_client())
    status, answer = rpc.call("message/send", {"message": message("hi")})
    assert status == 200
    assert answer["error"]["code"] == -32603
    assert "storage is unavailable" in answer["error"]["message"]
    assert "retried" in answer["error"]["message"]
    assert answer["error"]["data"] == {"retry": True}
    blocker.unlink()
    time.sleep(1.1)  # a failed open is tried again at most once a second
    assert rpc.send("back")["status"]["state"] == "completed"


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_deleted_or_replaced_database_is_never_acknowledged(make_app, tmp_path,
                                                              how, caplog):
    app, _ = make_app()
    database = app.config["A2A_DATABASE"]
    rpc = Rpc(app.test_client())
    first = rpc.send("stored")
    if how == "deleted":
        os.unlink(database)
    else:
        shutil.copy(database, str(tmp_path / "copy"))
        os.replace(str(tmp_path / "copy"), database)
    for _ in range(3):
        status, answer = rpc.call("message/send", {"message": message("lost?")})
        assert "error" in answer, answer
        assert answer["error"]["code"] == -32603
        assert "storage is unavailable" in answer["error"]["message"]
        if how == "replaced":
            break
    if how == "replaced":
        # The replacement is a database: once reopened, it is served.
        assert rpc.result("tasks/get", {"id": first["id"]})["id"] == first["id"]


def test_a_worker_started_after_the_database_was_deleted_does_not_recreate_it(
        make_app):
    app, _ = make_app()
    database = app.config["A2A_DATABASE"]
    Rpc(app.test_client()).send("stored")
    os.unlink(database)
    restarted, _ = make_app()  # a new worker (gunicorn restarts them)
    status, answer = Rpc(restarted.test_client()).call(
        "message/send", {"message": message("lost?")})
    assert "storage is unavailable" in answer["error"]["message"], answer
    assert not os.path.exists(database)


def test_disk_full_says_so_and_that_a_retry_may_succeed(make_app):
    app, _ = make_app()
    rpc = Rpc(app.test_client())
    rpc.send("warm up")
    conn = app.extensions["a2a"].storage.connection()
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute("PRAGMA max_page_count = %d" % pages)
    status, answer = rpc.call("message/send", {"message": message("x" * 200000)})
    error = answer["error"]
    assert error["code"] == -32603
    assert "full" in error["message"] and "retried" in error["message"], error
    assert error["data"]["retry"] is True


# -- HTTP Basic: free when unused, throttled when used --------------------------


@pytest.fixture
def hash_calls(monkeypatch):
    import a2a_flask.auth.passwords as passwords

    calls = []
    real = passwords.check_password

    def counting(stored, password):
        calls.append(1)
        return real(stored, password)

    monkeypatch.setattr(passwords, "check_password", counting)
    return calls


SEND = {"jsonrpc": "2.0", "id": 1, "method": "message/send",
        "params": {"message": {"kind": "message", "role": "user",
                               "messageId": "m1",
                               "parts": [{"kind": "text", "text": "hi"}]}}}
ECHO = "/api/v1/agents/echo/a2a"


def test_basic_costs_no_hash_when_no_users_exist(make_app, hash_calls):
    app, _ = make_app(A2A_AUTH="required")
    client = app.test_client()
    for number in range(20):
        assert_401(client.post(ECHO, json=SEND,
                               headers=basic("user%d" % number, "guess")))
    assert hash_calls == []


def test_failed_basic_logins_are_throttled_but_not_the_right_user(make_app,
                                                                  hash_calls):
    app, _ = make_app(A2A_AUTH="required")
    app.extensions["a2a"].credentials.create_user("alice", "right")
    client = app.test_client()
    assert client.post(ECHO, json=SEND, headers=basic("alice", "right")).status_code == 200
    for _ in range(5):
        assert_401(client.post(ECHO, json=SEND, headers=basic("alice", "wrong")))
    hashes = len(hash_calls)
    for _ in range(20):
        response = client.post(ECHO, json=SEND, headers=basic("alice", "wrong"))
        assert response.status_code == 429, response.data
        assert int(response.headers["Retry-After"]) > 0
        assert response.get_json()["error"]["code"] == -32600
    assert len(hash_calls) == hashes  # a throttled attempt hashes nothing
    # The right password, already verified here, is not slowed.
    assert client.post(ECHO, json=SEND, headers=basic("alice", "right")).status_code == 200
    # Failures count per (address, name): another user at the same address,
    # and the same name from another address, are still checked.
    other = {"REMOTE_ADDR": "10.0.0.9"}
    app.extensions["a2a"].credentials.create_user("bob", "pw")
    assert client.post(ECHO, json=SEND, headers=basic("bob", "pw")).status_code == 200
    assert_401(client.post(ECHO, json=SEND, headers=basic("alice", "guess"),
                           environ_base=other))


# -- the Host header ----------------------------------------------------------------


CARD = "/api/v1/agents/echo/.well-known/agent-card.json"


def test_a_forged_host_is_refused_when_trusted_hosts_is_set(make_app):
    app, _ = make_app(TRUSTED_HOSTS=["agents.example.com"])
    client = app.test_client()
    good = client.get(CARD, headers={"Host": "agents.example.com"})
    assert good.get_json()["url"] == "http://agents.example.com/api/v1/agents/echo/a2a"
    # Flask refuses it before any route is found: the host app's 400 page.
    forged = client.get(CARD, headers={"Host": "evil.example"})
    assert forged.status_code == 400
    assert "http://evil.example" not in forged.get_data(as_text=True)


def test_cards_built_from_the_host_header_warn_once(make_app, caplog):
    app, _ = make_app()
    client = app.test_client()
    with caplog.at_level(logging.WARNING, logger="a2a_flask"):
        for _ in range(3):
            client.get(CARD, headers={"Host": "evil.example"})
    warnings = [r for r in caplog.records if "A2A_PUBLIC_BASE_URL" in r.getMessage()]
    assert len(warnings) == 1 and "Host header" in warnings[0].getMessage()
    app, _ = make_app(A2A_PUBLIC_BASE_URL="https://agents.example.com")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="a2a_flask"):
        card = app.test_client().get(CARD, headers={"Host": "evil.example"})
    assert card.get_json()["url"].startswith("https://agents.example.com/")
    assert not [r for r in caplog.records if "A2A_PUBLIC_BASE_URL" in r.getMessage()]


# -- history ------------------------------------------------------------------------


def test_history_length_default_applies_when_the_caller_asks_none(make_app):
    app, _ = make_app(A2A_HISTORY_LENGTH_DEFAULT=1)
    rpc = Rpc(app.test_client(), agent="chat")
    task = rpc.send("one")
    assert len(task["history"]) == 1
    task = rpc.send("two", taskId=task["id"])
    assert [m["role"] for m in task["history"]] == ["agent"]
    assert len(rpc.result("tasks/get", {"id": task["id"]})["history"]) == 1
    everything = rpc.result("tasks/get", {"id": task["id"], "historyLength": 10})
    assert len(everything["history"]) == 4


def test_history_length_default_is_checked(make_app):
    with pytest.raises(ValueError, match="A2A_HISTORY_LENGTH_DEFAULT"):
        make_app(A2A_HISTORY_LENGTH_DEFAULT=-1)
    app, _ = make_app(A2A_HISTORY_LENGTH_DEFAULT="all")
    assert app.extensions["a2a"].settings.history_length_default is None


def test_turn_recent_reads_the_last_messages_of_the_conversation(make_app):
    seen = []

    def register(a2a):
        @a2a.agent("recall")
        def recall(turn):
            seen.append(([texts(m) for m in turn.recent(3)], len(turn.history)))
            return InputRequired("ok " + turn.text)

    app, _ = make_app(register)
    rpc = Rpc(app.test_client(), agent="recall")
    task = rpc.send("a")
    for text in ("b", "c", "d"):
        task = rpc.send(text, taskId=task["id"])
    assert seen[-1] == (["ok b", "c", "ok c"], 6)
    assert seen[0] == ([], 0)


def test_the_demo_chat_recalls_a_few_turns_and_counts_them_all(make_app):
    app, _ = make_app()
    rpc = Rpc(app.test_client(), agent="chat")
    task = rpc.send("t1")
    for number in range(2, 13):
        task = rpc.send("t%d" % number, taskId=task["id"],
                        configuration={"historyLength": 0})
    assert texts(task["status"]["message"]) == (
        "turn 12; you said: t12; you said earlier: t7 | t8 | t9 | t10 | t11")
    assert task["history"] == []
    task = rpc.send("bye", taskId=task["id"])
    assert texts(task["status"]["message"]) == "Goodbye! We talked for 13 turns."
