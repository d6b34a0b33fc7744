"""Chaos row of issue 32 item 1, for bench/chaos.py: concurrent ListTasks.

One key's 32 connections page through 1.0 ListTasks (pageSize 100,
includeArtifacts, the whole history) of 24 tasks of ~1.8 MB each, for
BURST_SECONDS, against ``gunicorn wsgi:app`` with the shipped gunicorn.conf.py
(gthread, 1,024 threads a worker); another key's innocent caller reads one
small task with GetTask meanwhile. Printed: each worker's peak RSS, the
innocent caller's p99 alone and under the burst, the attackers' answers by
HTTP status, each worker's RSS before the burst and 10 s after it, and PASS
or FAIL against the issue's targets: every worker under 400 MB, the
innocent p99 under 300 ms, no call failing but by the documented busy
answer (503 with Retry-After), each worker's RSS 10 s after the burst at
most 1.5x its RSS before.

    python bench/chaos.py --only M1
"""

import json
import os
import re
import statistics
import subprocess
import threading
import time

import requests

from chaos_harness import BIN, ECHO, REPO, Server, post, send_body

TASKS = 24
#: The text of each send: the echo agent answers it back, so that a task
#: holds ~1.8 MB (its message and the reply), under A2A_MAX_CONTENT_LENGTH.
TEXT_CHARS = 900 * 1000
ATTACKERS = 32
BURST_SECONDS = 20.0
IDLE_SECONDS = 10.0
#: The issue's targets.
MAX_WORKER_MB = 400
MAX_P99_MS = 300
MAX_RSS_GROWTH = 1.5

_TOKEN = re.compile(rb'"nextPageToken":"([^"]*)"')


def _status_kb(pid, field):
    try:
        with open("/proc/%d/status" % pid) as f:
            return int(re.search(r"%s:\s+(\d+)" % field, f.read()).group(1))
    except (OSError, AttributeError):
        return 0


def _rpc(method, params, id=1):
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


def _innocent_times(server, headers, task_id, stop):
    """GetTask latencies (seconds) of one small task until ``stop`` is set."""
    session = requests.Session()
    body = json.dumps(_rpc("GetTask", {"id": task_id})).encode()
    times = []
    while not stop.is_set():
        started = time.perf_counter()
        try:
            r = session.post(server.url + ECHO, data=body, headers=headers, timeout=60)
            ok = r.status_code == 200 and b'"result"' in r.content
        except requests.RequestException:
            ok = False
        times.append(time.perf_counter() - started if ok else float("inf"))
        time.sleep(0.02)
    return times


def _p99(times):
    if not times:
        return float("inf")
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def _attack(server, headers, stop, statuses, lock):
    """Page through every task, again and again, until ``stop``; counts each
    answer by its status ("503 busy": 503 with Retry-After)."""
    session = requests.Session()
    token = ""
    while not stop.is_set():
        params = {"pageSize": 100, "includeArtifacts": True}
        if token:
            params["pageToken"] = token
        try:
            r = session.post(server.url + ECHO, json=_rpc("ListTasks", params),
                             headers=headers, timeout=120)
            content = r.content
            if r.status_code == 503 and r.headers.get("Retry-After"):
                label, token = "503 busy", token
                time.sleep(min(float(r.headers["Retry-After"]), 1.0))
            elif r.status_code == 200 and b'"result"' in content[:200]:
                label = "200"
                # The token from the answer's end: parsing 8 MB of JSON in
                # 32 threads here would starve the server of CPU.
                found = _TOKEN.search(content[-4096:])
                token = found.group(1).decode() if found else ""
            else:
                label, token = "%s other" % r.status_code, ""
        except requests.RequestException as exc:
            label, token = type(exc).__name__, ""
        with lock:
            statuses[label] = statuses.get(label, 0) + 1


def concurrent_list_tasks():
    server = Server(workers=2)
    try:
        other_key = subprocess.run(
            [os.path.join(BIN, "flask"), "--app", "wsgi", "a2a", "keys", "create",
             "--quiet"], cwd=REPO, env=server.env, check=True, capture_output=True,
            text=True, timeout=60).stdout.strip()
        v10 = dict(server.headers, **{"A2A-Version": "1.0"})
        innocent = {"Authorization": "Bearer " + other_key, "A2A-Version": "1.0",
                    "Content-Type": "application/json"}
        text = "x" * TEXT_CHARS
        for _ in range(TASKS):
            took, status, answer = post(server, send_body(text), timeout=60)
            if status != 200 or "result" not in (answer or {}):
                return "could not set up: a send answered %s" % status
        small = post(server, send_body("hi"),
                     headers={"Authorization": innocent["Authorization"]})[2]
        task_id = small["result"]["id"]
        for _ in range(20):  # both workers warm: modules imported, pools open
            requests.post(server.url + ECHO, headers=innocent, timeout=30,
                          data=json.dumps(_rpc("GetTask", {"id": task_id})))
            requests.post(server.url + ECHO, headers=v10, timeout=30,
                          json=_rpc("ListTasks", {"pageSize": 1}))
        workers = server.workers()
        before = {pid: _status_kb(pid, "VmRSS") / 1024.0 for pid in workers}

        stop = threading.Event()
        alone_times = []
        alone = threading.Thread(target=lambda: alone_times.extend(
            _innocent_times(server, innocent, task_id, stop)))
        alone.start()
        time.sleep(3.0)
        stop.set()
        alone.join()

        stop = threading.Event()
        statuses, lock = {}, threading.Lock()
        attackers = [threading.Thread(target=_attack, daemon=True,
                                      args=(server, v10, stop, statuses, lock))
                     for _ in range(ATTACKERS)]
        busy_times = []
        watcher = threading.Thread(target=lambda: busy_times.extend(
            _innocent_times(server, innocent, task_id, stop)))
        for thread in attackers:
            thread.start()
        time.sleep(0.5)
        watcher.start()
        time.sleep(BURST_SECONDS)
        stop.set()
        watcher.join()
        for thread in attackers:
            thread.join(120)
        peaks = {pid: _status_kb(pid, "VmHWM") / 1024.0 for pid in workers}
        time.sleep(IDLE_SECONDS)
        after = {pid: _status_kb(pid, "VmRSS") / 1024.0 for pid in workers}
        alive = all(pid in server.workers() for pid in workers)

        failed = sum(n for label, n in statuses.items() if label not in ("200", "503 busy"))
        failed += sum(1 for t in busy_times if t == float("inf"))
        p99_alone, p99_busy = _p99(alone_times) * 1000, _p99(busy_times) * 1000
        checks = {
            "workers < %d MB" % MAX_WORKER_MB: max(peaks.values()) < MAX_WORKER_MB,
            "p99 < %d ms" % MAX_P99_MS: p99_busy < MAX_P99_MS,
            "no failed call": failed == 0 and alive,
            "RSS after <= %.1fx before" % MAX_RSS_GROWTH: all(
                after[pid] <= MAX_RSS_GROWTH * before[pid] for pid in workers),
        }
        verdict = "PASS" if all(checks.values()) else "FAIL (%s)" % ", ".join(
            name for name, ok in checks.items() if not ok)
        return ("%d connections of ListTasks pageSize=100+artifacts on %d tasks x 1.8 MB, %.0f s: "
                "worker peak RSS %s MB; innocent GetTask p99 %.0f -> %.0f ms (median "
                "%.0f ms, %d calls); answers %s; RSS before %s -> 10 s after %s MB; %s"
                % (ATTACKERS, TASKS, BURST_SECONDS,
                   "/".join("%.0f" % peaks[p] for p in workers), p99_alone, p99_busy,
                   statistics.median(busy_times) * 1000 if busy_times else 0,
                   len(busy_times),
                   ", ".join("%s: %d" % item for item in sorted(statuses.items())),
                   "/".join("%.0f" % before[p] for p in workers),
                   "/".join("%.0f" % after[p] for p in workers), verdict))
    finally:
        server.stop()


FINDINGS = [
    ("M1", "concurrent ListTasks", concurrent_list_tasks),
]
