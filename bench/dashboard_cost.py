"""The operator page's JSON on a large SQLite database: how long one
``GET PREFIX/dashboard/`` takes (issue target: 250 ms or less on the
1,000,000 tasks of the scale run, 2 cores).

A few real tasks of several callers and states are made through HTTP (in
process), then multiplied through the storage's bulk import (prefill.py's
``multiply_tasks``) to ``--tasks``; the database is kept in bench/.cache/
for the next run (or at ``--db``). After two warm-up calls, prints each
call's wall time, and the best and the median of wall and CPU times.

    python bench/dashboard_cost.py [--tasks 1000000] [--calls 10] [--db PATH]
"""

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]

from flask import Flask  # noqa: E402

from a2a_flask import A2A  # noqa: E402
from a2a_flask.demo import register_demo_agents  # noqa: E402
from prefill import multiply_tasks  # noqa: E402


def _app(path):
    app = Flask("dashboard_cost")
    app.config.update(A2A_DATABASE=path, A2A_DASHBOARD=True, A2A_AUTH="required")
    a2a = A2A(app)
    register_demo_agents(a2a, slow_agent=False)

    @a2a.agent("broken")
    def broken(turn):
        raise ValueError("a failure for the page")
    return app


def _templates(app):
    credentials = app.extensions["a2a"].credentials
    client = app.test_client()
    for n in range(8):
        key = credentials.create_key(None, "caller %d" % n)[1]
        for agent, text in (("echo", "hi"), ("chat", "hello"), ("broken", "x")):
            answer = client.post("/api/v1/agents/%s/a2a" % agent, headers={
                "Authorization": "Bearer " + key}, json={
                "jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
                    "message": {"role": "user", "messageId": "m-%s-%d" % (agent, n),
                                "parts": [{"kind": "text", "text": text}]}}})
            assert answer.status_code == 200, answer.data


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=1_000_000)
    p.add_argument("--calls", type=int, default=10)
    p.add_argument("--db", default=None, help="the database [default: in bench/.cache/]")
    args = p.parse_args()
    cache = os.path.join(HERE, ".cache")
    os.makedirs(cache, exist_ok=True)
    path = args.db or os.path.join(cache, "dashboard-%d.sqlite3" % args.tasks)
    app = _app(path)
    storage = app.extensions["a2a"].storage
    if sum(storage.task_counts().values()) < args.tasks:
        if not sum(storage.task_counts().values()):
            _templates(app)
        storage.close()
        t0 = time.time()
        multiply_tasks(path, args.tasks, progress=lambda line: None)
        print("prefilled %d tasks in %.0f s" % (args.tasks, time.time() - t0))
        app = _app(path)
    operator = app.extensions["a2a"].credentials.create_key(
        set(), "operator", operator=True)[1]
    client = app.test_client()
    headers = {"Authorization": "Bearer " + operator, "Accept": "application/json"}
    for _ in range(2):  # warm: the page cache, the statements
        client.get("/api/v1/dashboard/", headers=headers)
    walls, cpus = [], []
    for _ in range(args.calls):
        wall, cpu = time.perf_counter(), time.process_time()
        answer = client.get("/api/v1/dashboard/", headers=headers)
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
        assert answer.status_code == 200, answer.data
    body = answer.get_json()
    counts = {name: sum(agent["tasks"].values()) for name, agent in body["agents"].items()}
    print("tasks by agent: %s; failures listed: %d; slowest among %d" % (
        counts, len(body["failures"]), body["slowest_of"]))
    print("GET dashboard/ JSON, wall ms: %s" % ", ".join("%.0f" % t for t in walls))
    print("wall: best %.0f ms, median %.0f ms; CPU: best %.0f ms, median %.0f ms" % (
        min(walls), statistics.median(walls), min(cpus), statistics.median(cpus)))


if __name__ == "__main__":
    main()
