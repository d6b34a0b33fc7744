"""Chaos rows of a hostile caller (issue 18), for bench/chaos.py: an
authenticated or anonymous caller trying to hurt others with big answers,
forged log lines, log floods, bad input, mixed credentials, a shared proxy
address, missing headers and duplicate JSON members. Each row starts its own
gunicorn servers (chaos.Server) and prints one figure line.

    python bench/chaos.py --only 10,11,12,13,14,15,16
"""

import base64
import json
import os
import re
import subprocess
import threading
import time

import requests

from chaos_harness import BIN, CHAT, ECHO, REPO, Server, post, send_body


def _rss_mb(pids):
    total = 0
    for pid in pids:
        try:
            with open("/proc/%d/status" % pid) as f:
                total += int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))
        except (OSError, AttributeError):
            pass
    return total / 1024.0


def _rpc(method, params, id=1):
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


def h10_big_list():
    """20 tasks of ~1.5 MiB each, then ListTasks pageSize=100 with artifacts."""
    server = Server(workers=1)
    try:
        text = "x" * (512 * 1024)
        for _ in range(20):
            post(server, send_body(text))
        peak_before = _rss_mb(server.workers())
        headers = dict(server.headers, **{"A2A-Version": "1.0"})
        started, pages, biggest, token = time.perf_counter(), 0, 0, ""
        listed = 0
        while True:
            params = {"pageSize": 100, "includeArtifacts": True}
            if token:
                params["pageToken"] = token
            r = requests.post(server.url + ECHO, json=_rpc("ListTasks", params),
                              headers=headers, timeout=120)
            pages += 1
            biggest = max(biggest, len(r.content))
            result = r.json()["result"]
            listed += len(result["tasks"])
            token = result["nextPageToken"]
            if not token or pages > 50:
                break
        took = time.perf_counter() - started
        return ("20 tasks x 1.5 MiB, ListTasks pageSize=100+artifacts: %d tasks in "
                "%d page(s), largest answer %.1f MiB, %.1f s; worker peak RSS "
                "%.0f -> %.0f MB" % (listed, pages, biggest / 1048576.0, took,
                                     peak_before, _rss_mb(server.workers())))
    finally:
        server.stop()


FORGED = "\ncall agent=echo method=tasks/get task=forged outcome=completed"


def h11_log_injection():
    server = Server(workers=1)
    try:
        post(server, _rpc("tasks/get" + FORGED, {"id": "t"}))
        post(server, _rpc("tasks/get", {"id": "t" + FORGED}))
        post(server, _rpc("message/send", {"message": {
            "kind": "message", "role": "user", "messageId": "inj-%f" % time.time(),
            "contextId": "c" + FORGED + "\x1b[2J",
            "parts": [{"kind": "text", "text": "x"}]}}))
        time.sleep(0.5)
        lines = server.log().splitlines()
        forged = sum(1 for line in lines if line.startswith("call agent="))
        raw_escape = sum(1 for line in lines if "\x1b" in line)
        return ("newline in method, params.id, contextId (3 calls): %d forged "
                "access line(s), %d line(s) with a raw ESC" % (forged, raw_escape))
    finally:
        server.stop()


def h12_anonymous_log_flood():
    server = Server(workers=2)
    try:
        body = json.dumps(_rpc("m" * (1024 * 1024 - 200), {})).encode()
        size_before = os.path.getsize(server.log_path)
        stop = time.monotonic() + 5.0
        counts, answers, lock = [0], [0], threading.Lock()

        def run():
            session = requests.Session()
            while time.monotonic() < stop:
                r = session.post(server.url + ECHO, data=body, timeout=30,
                                 headers={"Content-Type": "application/json"})
                with lock:
                    counts[0] += 1
                    answers[0] = max(answers[0], len(r.content))

        threads = [threading.Thread(target=run) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        grown = os.path.getsize(server.log_path) - size_before
        return ("anonymous 1 MiB method names, 4 clients x 5 s: %d calls, log grew "
                "%.1f MB, largest answer %d bytes" % (counts[0], grown / 1e6,
                                                      answers[0]))
    finally:
        server.stop()


BAD_INPUTS = [
    ("0.3", "tasks/get", {"id": "x", "historyLength": 2 ** 63}),
    ("1.0", "GetTask", {"id": "x", "historyLength": 2 ** 63}),
    ("1.0", "ListTasks", {"statusTimestampAfter": "0001-01-01T00:00+14:00"}),
    ("1.0", "ListTasks", {"statusTimestampAfter": "9999-12-31T23:59:59-14:00"}),
    ("0.3", "tasks/get", {"id": "a\u0000b"}),
    ("1.0", "ListTasks", {"contextId": "a\u0000b"}),
    ("1.0", "ListTasks", {"pageToken": base64.urlsafe_b64encode(
        b"\x00|\x00").decode()}),
    ("0.3", "message/send", {"message": {
        "kind": "message", "role": "user", "messageId": "nul\u0000",
        "contextId": "c\u0000", "parts": [{"kind": "text", "text": "a\u0000"}]}}),
]


def _bad_input_row(database, label):
    server = Server(workers=1, database=database)
    try:
        internal = 0
        for version, method, params in BAD_INPUTS:
            headers = dict(server.headers)
            if version == "1.0":
                headers["A2A-Version"] = "1.0"
            _, status, answer = post(server, _rpc(method, params), headers=headers)
            code = (answer or {}).get("error", {}).get("code") if isinstance(
                answer, dict) else None
            internal += status == 500 or code == -32603
        tracebacks = server.log().count("Traceback")
        return "%s: %d of %d bad inputs answered an internal error, %d tracebacks" % (
            label, internal, len(BAD_INPUTS), tracebacks)
    finally:
        server.stop()


def h13_bad_input():
    rows = [_bad_input_row(None, "SQLite")]
    url = os.environ.get("A2A_CHAOS_POSTGRES_URL")
    if url:
        rows.append(_bad_input_row(url, "PostgreSQL"))
    else:
        rows.append("PostgreSQL skipped (set A2A_CHAOS_POSTGRES_URL)")
    return "; ".join(rows)


def _basic(name, password):
    pair = ("%s:%s" % (name, password)).encode()
    return {"Authorization": "Basic " + base64.b64encode(pair).decode()}


def h14_credentials():
    server = Server(workers=1, env={"A2A_TRUSTED_PROXIES": "127.0.0.1",
                                    "A2A_LOGIN_FAILURES_PER_MINUTE": "5"})
    try:
        for name, password in (("alice", "right"), ("bob", "pw")):
            subprocess.run([os.path.join(BIN, "flask"), "--app", "wsgi", "a2a",
                            "users", "create", name, "--password-stdin"], cwd=REPO,
                           env=server.env, input=password + "\n", text=True,
                           check=True, capture_output=True, timeout=60)
        mixed = dict(server.headers, **{"X-API-Key": "a2a_" + "x" * 43})
        mixed_status = post(server, send_body(), headers=mixed)[1]
        # Behind nginx: every client arrives from 127.0.0.1, named in XFF.
        for _ in range(40):
            post(server, send_body(), headers=dict(_basic("alice", "guess"),
                                                   **{"X-Forwarded-For": "1.2.3.4"}))
        other_user = post(server, send_body(), headers=dict(
            _basic("bob", "pw"), **{"X-Forwarded-For": "5.6.7.8"}))[1]
        same_address = post(server, send_body(), headers=dict(
            _basic("bob", "pw"), **{"X-Forwarded-For": "1.2.3.4"}))[1]
        return ("valid Bearer + invalid X-API-Key: %s; after 40 wrong logins as "
                "alice via the proxy, bob's right password: %s (other address), "
                "%s (same address)" % (mixed_status, other_user, same_address))
    finally:
        server.stop()


def h15_headers():
    server = Server(workers=1)
    try:
        task = post(server, send_body())[2]["result"]["id"]
        v10 = dict(server.headers, **{"A2A-Version": "1.0"})
        answers = [
            requests.post(server.url + ECHO, json=_rpc("tasks/get", {"id": task}),
                          headers=server.headers),
            requests.get(server.url + "/api/v1/agents/echo/rest/tasks/" + task,
                         headers=v10),
            requests.get(server.url + "/api/v1/agents/echo/rest/tasks", headers=v10),
            requests.get(server.url + "/api/v1/agents", headers=server.headers),
            requests.post(server.url + ECHO, json={}),
        ]
        no_store = sum(r.headers.get("Cache-Control") == "no-store" for r in answers)
        nosniff = sum(r.headers.get("X-Content-Type-Options") == "nosniff"
                      for r in answers)
        return ("%d caller-dependent answers: %d with Cache-Control: no-store, %d "
                "with nosniff" % (len(answers), no_store, nosniff))
    finally:
        server.stop()


def h16_duplicate_members():
    server = Server(workers=1)
    try:
        task = post(server, send_body("hi"), path=CHAT)[2]["result"]["id"]
        text = ('{"jsonrpc":"2.0","id":1,"method":"tasks/cancel",'
                '"method":"tasks/get","params":{"id":"%s"}}' % task)
        _, status, answer = post(server, text.encode(), path=CHAT)
        if isinstance(answer, dict) and "result" in answer:
            outcome = "ran %s (state %s)" % ("tasks/get", answer["result"]["status"]["state"])
        else:
            outcome = "refused %s" % (answer or {}).get("error", {}).get("code")
        return ('"method":"tasks/cancel","method":"tasks/get": HTTP %s, %s'
                % (status, outcome))
    finally:
        server.stop()


FINDINGS = [
    ("10", "ListTasks of big tasks", h10_big_list),
    ("11", "log injection", h11_log_injection),
    ("12", "anonymous log flood", h12_anonymous_log_flood),
    ("13", "bad input", h13_bad_input),
    ("14", "mixed credentials, shared proxy address", h14_credentials),
    ("15", "headers", h15_headers),
    ("16", "duplicate JSON members", h16_duplicate_members),
]
