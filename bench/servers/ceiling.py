"""CEILING and DURABLE CEILING servers for the benchmark.

A bare Flask JSON-RPC-shaped route, run by gunicorn exactly like the package:

    gunicorn -w 2 -b 127.0.0.1:PORT --chdir bench/servers ceiling:app

Without ``BENCH_DB`` it touches no database (CEILING).  With
``BENCH_DB=/path/file.sqlite3`` (DURABLE CEILING) every ``message/send``
does one SQLite INSERT of the request body (WAL, synchronous=NORMAL, one
connection per worker process) and ``tasks/get`` one SELECT by primary key.
With ``BENCH_PG=postgresql://...`` (PG DURABLE CEILING) the same INSERT and
SELECT go to PostgreSQL through psycopg 3 and a psycopg_pool pool opened in
each worker process after the fork (gunicorn's sync worker runs one request
at a time, so one connection per worker); ``python ceiling.py --init-pg URL``
creates the table before the workers start.
``BENCH_WRITES=2`` makes each ``message/send`` two INSERTs, each its own
transaction (the price of committing a task as working before its agent
runs, then its outcome: bench/README.md, "The limit").
The answer has the shape of an A2A Task so the load generator's checks
(state completed, asked id echoed) apply unchanged.
"""

import os
import sqlite3
import uuid

from flask import Flask, json, jsonify, request

app = Flask(__name__)

DB_PATH = os.environ.get("BENCH_DB") or None
PG_URL = os.environ.get("BENCH_PG") or None
WRITES = int(os.environ.get("BENCH_WRITES") or 1)
_conn = None
_pool = None
TABLE_DDL = "CREATE TABLE IF NOT EXISTS requests (id TEXT PRIMARY KEY, body TEXT NOT NULL)"


def db():
    """One connection per worker process, opened lazily after the fork."""
    global _conn
    if _conn is None:
        conn = sqlite3.connect(DB_PATH, timeout=10, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout=10000")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(TABLE_DDL)
        _conn = conn
    return _conn


def pg_pool():
    """One pool per worker process, opened lazily after the fork."""
    global _pool
    if _pool is None:
        from psycopg_pool import ConnectionPool

        _pool = ConnectionPool(PG_URL, min_size=1, max_size=1, kwargs={"autocommit": True}, open=True)
    return _pool


def store(task_id, raw):
    if PG_URL:
        with pg_pool().connection() as c:
            c.execute("INSERT INTO requests (id, body) VALUES (%s, %s)", (task_id, raw.decode()))
    elif DB_PATH:
        db().execute("INSERT INTO requests (id, body) VALUES (?, ?)", (task_id, raw))


def load(task_id):
    """The stored request body of ``task_id``, or None."""
    if PG_URL:
        with pg_pool().connection() as c:
            row = c.execute("SELECT body FROM requests WHERE id = %s", (task_id,)).fetchone()
    else:
        row = db().execute("SELECT body FROM requests WHERE id = ?", (task_id,)).fetchone()
    return None if row is None else row[0]


def _task(task_id, message):
    text = ""
    for part in message.get("parts") or []:
        if part.get("kind") == "text":
            text += part.get("text", "")
    return {
        "kind": "task",
        "id": task_id,
        "contextId": "ctx_" + task_id[5:],
        "status": {"state": "completed"},
        "artifacts": [{"artifactId": "art_" + task_id[5:], "parts": [{"kind": "text", "text": text}]}],
        "history": [message],
    }


def _error(rid, code, message):
    return jsonify({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


@app.post("/rpc")
def rpc():
    raw = request.get_data()
    try:
        req = json.loads(raw)
    except ValueError:
        return _error(None, -32700, "Parse error")
    rid = req.get("id")
    method = req.get("method")
    params = req.get("params") or {}
    if method == "message/send":
        message = params.get("message") or {}
        task_id = "task_" + uuid.uuid4().hex
        store(task_id, raw)
        for n in range(1, WRITES):
            store("%s.%d" % (task_id, n), raw)
        return jsonify({"jsonrpc": "2.0", "id": rid, "result": _task(task_id, message)})
    if method == "tasks/get":
        task_id = params.get("id") or ""
        if DB_PATH or PG_URL:
            body = load(task_id)
            if body is None:
                return _error(rid, -32001, "Task not found")
            message = json.loads(body)["params"]["message"]
        else:
            message = {"kind": "message", "role": "user", "messageId": "m",
                       "parts": [{"kind": "text", "text": "hello"}]}
        return jsonify({"jsonrpc": "2.0", "id": rid, "result": _task(task_id, message)})
    return _error(rid, -32601, "Method not found")


if __name__ == "__main__":
    import sys

    if len(sys.argv) != 3 or sys.argv[1] != "--init-pg":
        raise SystemExit("usage: ceiling.py --init-pg URL")
    import psycopg

    with psycopg.connect(sys.argv[2], autocommit=True) as c:
        c.execute(TABLE_DDL)
