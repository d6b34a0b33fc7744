#!/usr/bin/env python3
"""Background agents under load: throughput through ``flask a2a worker``
beside DURABLE CEILING, and the long-turn scenario of issue 13.

    python bench/background.py throughput [--turns 600] [--connections 16]
    python bench/background.py slow60 [--callers 20] [--seconds 60]

``throughput``: gunicorn (2 workers) on a fresh SQLite file, plus one, then
two ``flask a2a worker --threads 4``; ``--turns`` non-blocking sends of the
echo work to the background agent ``echo_bg`` from ``--connections``
threads; turns/s is turns / (last turn completed - first send), read from
the store's task counts. DURABLE CEILING (bench/servers/ceiling.py with
one SQLite INSERT per send) is driven by the same Python client for the
same number of sends, so the two rows share the client's cost.

``slow60``: the demo's ``slow`` agent (``--seconds`` per turn) on a 2-worker
gunicorn plus one ``flask a2a worker --threads 20``; ``--callers``
concurrent callers each send one non-blocking message then poll
``tasks/get`` every second until it completes. Prints every web answer's
latency (max, p99), timeouts and refused calls. ~70 s: not for CI.

Everything runs on 127.0.0.1, servers in their own process groups, killed
in a finally block; every load is bounded in count and time.
"""

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SERVERS = os.path.join(HERE, "servers")
BIN = os.path.dirname(sys.executable)
sys.path.insert(0, HERE)

from processes import free_port, gunicorn_cmd  # noqa: E402

PATH = "/api/v1/agents/%s/a2a"
_group = []


def start(cmd, env, cwd, log_path):
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, cwd=cwd, env=dict(os.environ, **env),
                                stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    _group.append(proc)
    return proc


def stop_all():
    while _group:
        proc = _group.pop()
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def wait_http(url, deadline=30):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            requests.get(url + "/.well-known/agent-card.json", timeout=2)
            return
        except requests.RequestException:
            time.sleep(0.1)
    raise RuntimeError("server at %s did not start" % url)


def wait_log(path, needle, deadline=30):
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        with open(path, errors="replace") as f:
            if needle in f.read():
                return
        time.sleep(0.1)
    raise RuntimeError("%s: no %r" % (path, needle))


def send_body(text, blocking=False):
    return {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
        "message": {"kind": "message", "role": "user", "messageId": uuid.uuid4().hex,
                    "parts": [{"kind": "text", "text": text}]},
        "configuration": {"blocking": blocking}}}


def a2a_env(db):
    return {"A2A_DATABASE": db, "A2A_AUTH": "off", "PYTHONUNBUFFERED": "1"}


def start_service(tmp, tag, app, workers, threads, gunicorn_workers=2,
                  extra_env=None):
    db = os.path.join(tmp, tag + ".sqlite3")
    env = dict(a2a_env(db), **(extra_env or {}))
    port = free_port()
    cwd = SERVERS if app.startswith("background_app") else ROOT
    start(gunicorn_cmd(gunicorn_workers, port, app, chdir=cwd) + [
        "--timeout", "30"], env, cwd, os.path.join(tmp, tag + "-gunicorn.log"))
    url = "http://127.0.0.1:%d" % port
    wait_http(url)
    for n in range(workers):
        log_path = os.path.join(tmp, "%s-worker%d.log" % (tag, n))
        start([os.path.join(BIN, "flask"), "--app", app.split(":")[0], "a2a",
               "worker", "--threads", str(threads)], env, cwd, log_path)
        wait_log(log_path, "running agents")
    return url, db


def fire(url, path, bodies, connections):
    """POST every body from ``connections`` threads; (first, last) send
    times and the number of answers that were not HTTP 200 with a result."""
    lock, queue, bad, times = threading.Lock(), list(bodies), [0], []

    def run():
        session = requests.Session()
        while True:
            with lock:
                if not queue:
                    return
                body = queue.pop()
            times.append(time.monotonic())
            answer = session.post(url + path, json=body, timeout=30)
            if answer.status_code != 200 or "result" not in answer.json():
                with lock:
                    bad[0] += 1

    threads = [threading.Thread(target=run) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return min(times), max(times), bad[0]


def throughput(args):
    from a2a_flask.storage.sqlite import SqliteStorage

    rows = []
    with tempfile.TemporaryDirectory(prefix="a2a-bg-bench-") as tmp:
        try:
            port = free_port()
            start(gunicorn_cmd(2, port, "ceiling:app", chdir=SERVERS),
                  {"BENCH_DB": os.path.join(tmp, "durable.sqlite3")}, ROOT,
                  os.path.join(tmp, "ceiling.log"))
            url = "http://127.0.0.1:%d" % port
            wait_http(url)
            bodies = [send_body("hello") for _ in range(args.turns)]
            first, last, bad = fire(url, "/rpc", bodies, args.connections)
            rows.append(("DURABLE CEILING (same client)", args.turns / (last - first),
                         None, bad))
            stop_all()
            for workers in (1, 2):
                url, db = start_service(tmp, "bg%d" % workers, "background_app:app",
                                        workers, args.threads)
                fire(url, PATH % "echo_bg", [send_body("warm") for _ in range(20)], 4)
                storage = SqliteStorage(db)
                warm = storage.task_counts().get("completed", 0)
                bodies = [send_body("hello") for _ in range(args.turns)]
                first, last, bad = fire(url, PATH % "echo_bg", bodies,
                                        args.connections)
                deadline = time.monotonic() + 120
                while (storage.task_counts().get("completed", 0) - warm < args.turns - bad
                       and time.monotonic() < deadline):
                    time.sleep(0.01)
                done = time.monotonic()
                completed = storage.task_counts().get("completed", 0) - warm
                rows.append(("background echo, %d worker(s) x %d threads"
                             % (workers, args.threads), args.turns / (last - first),
                             completed / (done - first), bad))
                stop_all()
        finally:
            stop_all()
    print("\n%-44s %12s %14s %6s" % ("row", "sends/s", "turns/s done", "bad"))
    for name, sends, turns, bad in rows:
        print("%-44s %12.0f %14s %6d" % (name, sends, "-" if turns is None
                                          else "%.0f" % turns, bad))
    ceiling = rows[0][1]
    for name, sends, turns, bad in rows[1:]:
        print("%s: completed turns/s = %.0f%% of DURABLE CEILING sends/s"
              % (name, 100 * turns / ceiling))
    meta = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": "%s, %d CPUs" % (platform.machine(), os.cpu_count()),
            "turns": args.turns, "connections": args.connections,
            "threads": args.threads}
    found = [{"row": name, "sends_per_s": sends, "turns_per_s": turns, "bad": bad}
             for name, sends, turns, bad in rows]
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "background": found}, f, indent=1)
    print("results: %s" % args.out)
    from charts import write_charts

    write_charts(args.figures, [], background_rows=found, background_meta=meta)


def slow60(args):
    latencies, problems, lock = [], [], threading.Lock()
    results = {}
    with tempfile.TemporaryDirectory(prefix="a2a-bg-slow-") as tmp:
        try:
            url, _ = start_service(tmp, "slow", "wsgi:app", 1, 20,
                                   extra_env={"A2A_BLOCKING_WAIT_SECONDS": "10"})

            def call(session, body):
                began = time.monotonic()
                try:
                    answer = session.post(url + PATH % "slow", json=body, timeout=10)
                except requests.RequestException as exc:
                    with lock:
                        problems.append("timeout/refused: %s" % type(exc).__name__)
                    return None
                with lock:
                    latencies.append(time.monotonic() - began)
                if answer.status_code != 200 or "result" not in answer.json():
                    with lock:
                        problems.append("HTTP %d %s" % (answer.status_code, answer.text[:200]))
                    return None
                return answer.json()["result"]

            def caller(n):
                session = requests.Session()
                task = call(session, send_body(str(args.seconds)))
                if task is None:
                    return
                deadline = time.monotonic() + args.seconds + 60
                while time.monotonic() < deadline:
                    time.sleep(1)
                    got = call(session, {"jsonrpc": "2.0", "id": 2, "method": "tasks/get",
                                         "params": {"id": task["id"], "historyLength": 0}})
                    if got and got["status"]["state"] != "working":
                        results[n] = (got["status"]["state"],
                                      got["status"]["message"]["parts"][0]["text"])
                        return

            began = time.monotonic()
            threads = [threading.Thread(target=caller, args=(n,)) for n in range(args.callers)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            took = time.monotonic() - began
        finally:
            stop_all()
    latencies.sort()
    print("callers %d, turn %d s: %d web answers in %.1f s; max %.3f s, p99 %.3f s, "
          "median %.3f s; timeouts/refused/errors: %d"
          % (args.callers, args.seconds, len(latencies), took, latencies[-1],
             latencies[int(len(latencies) * 0.99) - 1], latencies[len(latencies) // 2],
             len(problems)))
    print("outcomes: %s" % sorted(set(results.values())), "of", len(results))
    for problem in problems[:10]:
        print("  ", problem)
    return 0 if (not problems and len(results) == args.callers
                 and latencies[-1] < 1.0) else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    t = sub.add_parser("throughput")
    t.add_argument("--turns", type=int, default=600)
    t.add_argument("--connections", type=int, default=16)
    t.add_argument("--threads", type=int, default=4, help="threads per worker")
    t.add_argument("--out", default=os.path.join(HERE, "results-background.json"))
    t.add_argument("--figures", default=os.path.join(HERE, "results-figures"),
                   help="folder of background.png (bench/charts.py)")
    s = sub.add_parser("slow60")
    s.add_argument("--callers", type=int, default=20)
    s.add_argument("--seconds", type=int, default=60)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *a: (stop_all(), sys.exit(1)))
    if args.mode == "throughput":
        return throughput(args)
    return slow60(args)


if __name__ == "__main__":
    sys.exit(main() or 0)
