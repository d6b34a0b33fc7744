"""Filtered ListTasks for a caller holding many tasks: before and after the
listing indexes of schema v7, and what they do to another caller.

A database is filled (bulk import) with TASKS tasks of one caller (100,000
by default; ``A2A_AUTH=off``, so every caller is that one) of agent echo: 98%
completed, 1% input-required, 1% failed, ten tasks per context, 100 in the
context ``ctx-hot``. Then, once without the v7 indexes ``a2a_tasks_context``
and ``a2a_tasks_state`` (dropped: the listing as schema v5 ran it) and once
with them, against gunicorn (10 sync workers, so that no call waits for a
free worker):

- ListTasks (1.0 JSON-RPC, pageSize 50, so totalSize too) by contextId and
  by status: median of 20 calls each;
- an echo ``message/send``: median and 99th percentile of 200 calls, alone,
  then while 8 clients run filtered ListTasks back to back.

    python bench/listing.py [--tasks 100000] [--database URL] [--port 9710]

SQLite by default (a file in bench/.cache/); ``--database postgresql://...``
runs on PostgreSQL (an empty database: the tables are made). Timings on a
shared machine vary: compare the two runs of one invocation.
"""

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
from a2a_flask.config import Settings  # noqa: E402
from a2a_flask.storage import open_storage  # noqa: E402
from a2a_flask.storage.base import TaskRecord  # noqa: E402

OWNER, AGENT = "anonymous", "echo"
STATES = ["completed"] * 98 + ["input-required", "failed"]
FILTERS = {"contextId": {"contextId": "ctx-hot"},
           "status": {"status": "TASK_STATE_INPUT_REQUIRED"}}
LIST_INDEXES = {
    "a2a_tasks_context": "(owner, agent, context_id, updated_at DESC, id DESC)",
    "a2a_tasks_state": "(owner, agent, state, updated_at DESC, id DESC)",
}


def _task(n):
    task_id, context = "task_bench_%07d" % n, "ctx-%06d" % (n // 10)
    if n % 1000 < 1:
        context = "ctx-hot"
    stamp = "2026-01-01T00:%02d:%02d.%03dZ" % (n // 60000 % 60, n // 1000 % 60, n % 1000)
    user = {"kind": "message", "role": "user", "messageId": "m-%d" % n,
            "parts": [{"kind": "text", "text": "hello %d" % n}],
            "taskId": task_id, "contextId": context}
    reply = {"kind": "message", "role": "agent", "messageId": "a-%d" % n,
             "parts": [{"kind": "text", "text": "hello %d" % n}],
             "taskId": task_id, "contextId": context}
    return TaskRecord(task_id, context, AGENT, OWNER, STATES[n % 100], stamp,
                      reply, [], [user, reply], None, stamp)


def fill(database, total):
    storage = open_storage(Settings({"A2A_DATABASE": database}, "."))
    storage.migrate()
    if storage.count_tasks(OWNER, AGENT) < total:
        for start in range(0, total, 10_000):
            storage.import_tasks([_task(n) for n in range(start, min(start + 10_000, total))],
                                 deliveries=False)
            print("  filled %d" % min(start + 10_000, total), file=sys.stderr)
    return storage


def set_indexes(storage, present):
    with storage.transaction() as conn:
        for name, columns in LIST_INDEXES.items():
            conn.execute("DROP INDEX IF EXISTS %s" % name)
            if present:
                conn.execute("CREATE INDEX %s ON a2a_tasks %s" % (name, columns))
        conn.execute("ANALYZE")


def start_gunicorn(database, port):
    env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_")}
    env.update(A2A_DATABASE=database, A2A_AUTH="off", A2A_AUTO_MIGRATE="0")
    gunicorn = os.path.join(os.path.dirname(sys.executable), "gunicorn")
    process = subprocess.Popen(
        [gunicorn, "--workers", "10", "--bind", "127.0.0.1:%d" % port,
         "--timeout", "120", "wsgi:app"], cwd=ROOT, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            _call(port, "tasks/get", {"id": "none"})
            return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("gunicorn did not start")


def _call(port, method, params, version=None, conn=None):
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Content-Type": "application/json"}
    if version:
        headers["A2A-Version"] = version
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    started = time.perf_counter()
    conn.request("POST", "/api/v1/agents/%s/a2a" % AGENT, body, headers)
    answer = json.loads(conn.getresponse().read())
    elapsed = (time.perf_counter() - started) * 1000
    if own:
        conn.close()
    return elapsed, answer


def list_once(port, name, conn=None):
    elapsed, answer = _call(port, "ListTasks", dict(FILTERS[name], pageSize=50),
                            "1.0", conn)
    assert "result" in answer, answer
    return elapsed, answer["result"].get("totalSize")


def echo_latencies(port, count):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    found = []
    for i in range(count):
        elapsed, answer = _call(port, "message/send", {"message": {
            "kind": "message", "role": "user", "messageId": "e-%d-%f" % (i, time.time()),
            "parts": [{"kind": "text", "text": "ping"}]}}, conn=conn)
        assert "result" in answer, answer
        found.append(elapsed)
    conn.close()
    return found


def p(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def measure(port):
    row = {}
    for name in FILTERS:
        runs = [list_once(port, name) for _ in range(20)]
        row["list " + name] = statistics.median(r[0] for r in runs)
        row["totalSize " + name] = runs[0][1]
    alone = echo_latencies(port, 200)
    row["echo p50 alone"], row["echo p99 alone"] = p(alone, 0.5), p(alone, 0.99)
    stop, lists = threading.Event(), []

    def lister(name):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        while not stop.is_set():
            lists.append(list_once(port, name, conn)[0])
        conn.close()
    threads = [threading.Thread(target=lister, args=(name,))
               for name in list(FILTERS) * 4]
    for thread in threads:
        thread.start()
    time.sleep(1.0)
    started = time.monotonic()
    busy = echo_latencies(port, 200)
    seconds = time.monotonic() - started
    stop.set()
    for thread in threads:
        thread.join()
    row["echo p50 during 8 lists"] = p(busy, 0.5)
    row["echo p99 during 8 lists"] = p(busy, 0.99)
    row["lists/s during"] = len(lists) / max(seconds, 1e-9)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--database", default=None)
    parser.add_argument("--port", type=int, default=9710)
    args = parser.parse_args()
    database = args.database
    if database is None:
        os.makedirs(os.path.join(HERE, ".cache"), exist_ok=True)
        database = os.path.join(HERE, ".cache", "listing-%d.sqlite3" % args.tasks)
    print("filling %s with %d tasks of one caller" % (database, args.tasks),
          file=sys.stderr)
    storage = fill(database, args.tasks)
    rows = {}
    for label, present in (("before (no v7 listing indexes)", False),
                           ("after (schema v7)", True)):
        set_indexes(storage, present)
        process = start_gunicorn(database, args.port)
        try:
            rows[label] = measure(args.port)
        finally:
            os.killpg(process.pid, 15)
            process.wait(30)
    keys = list(next(iter(rows.values())))
    print("%-26s %s" % ("", "  ".join("%32s" % label for label in rows)))
    for key in keys:
        print("%-26s %s" % (key, "  ".join(
            "%32s" % (("%.1f ms" % row[key]) if "list " in key or "echo" in key
                      else ("%.1f" % row[key] if isinstance(row[key], float)
                            else str(row[key])))
            for row in rows.values())))


if __name__ == "__main__":
    main()
