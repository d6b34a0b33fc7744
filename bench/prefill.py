"""The scale run: US on an empty database beside US on a database pre-filled
with many tasks, and the bytes per task on disk.

The pre-filled database is built once (a few real tasks through HTTP,
multiplied by ``multiply_tasks`` through the storage's bulk import) and cached in
``bench/.cache/``, keyed by the schema, the task count and the auth mode.
"""

import hashlib
import http.client
import json
import os
import random
import shutil
import sqlite3
import sys
import time

import loadgen
from configs import LABELS, make_server
from measure import drive, probe, rpc, send_params
from processes import HERE, HOST, ROOT, log
from report import make_row

sys.path.insert(0, ROOT)
from a2a_flask.storage.common import new_id  # noqa: E402
from a2a_flask.storage.base import TaskRecord  # noqa: E402
from a2a_flask.storage.sqlite import SqliteStorage  # noqa: E402

def db_bytes(path):
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


def checkpoint(path):
    c = sqlite3.connect(path)
    try:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        c.close()


def count_tasks(path):
    c = sqlite3.connect(path)
    try:
        return c.execute("SELECT count(*) FROM a2a_tasks").fetchone()[0]
    finally:
        c.close()


def sample_task_ids(path, n, agent="echo"):
    """``n`` random task ids of ``agent`` with the owner of the newest task."""
    c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        c.execute("PRAGMA busy_timeout = 10000")
        # a2a_tasks has no rowid (schema v5): tasks are picked through
        # random history rows (seq), a few per task.
        lo, hi = c.execute("SELECT min(seq), max(seq) FROM a2a_messages").fetchone()
        ids = set()
        tries = 0
        while len(ids) < n and tries < 20:
            tries += 1
            picks = [random.randint(lo, hi) for _ in range(n * 2)]
            q = ("SELECT id FROM a2a_tasks WHERE agent = ? AND state = 'completed' AND id IN"
                 " (SELECT task_id FROM a2a_messages WHERE seq IN (%s))" % ",".join("?" * len(picks)))
            ids.update(r[0] for r in c.execute(q, [agent] + picks))
        return list(ids)[:n]
    finally:
        c.close()


def _copy_task(task, n):
    """Template ``task`` as a new task: fresh task and context ids, message and
    artifact ids suffixed with ``_n`` (unique per copy)."""
    tid, cid = new_id("task_"), new_id("ctx_")  # as long as the service's

    def message(m):
        return dict(m, taskId=tid, contextId=cid, messageId=f"{m['messageId']}_{n}")

    history = [message(m) for m in task.history]
    status = history[-1] if task.status_message is not None else None
    artifacts = [dict(a, artifactId=f"{a['artifactId']}_{n}") for a in task.artifacts]
    return TaskRecord(tid, cid, task.agent, task.owner, task.state, task.updated_at,
                      status, artifacts, history, task.metadata, task.created_at)


def multiply_tasks(path, total, progress=log, batch=20_000):
    """Grow the a2a_flask database at ``path`` to ``total`` tasks.

    The tasks already there (a few real ones made through HTTP) are the
    templates: each new task copies one template (history, status message,
    artifacts, retry records) with fresh ids, written through the storage's
    bulk ``import_tasks`` (``batch`` tasks per transaction), so that this file
    knows nothing of the schema.
    """
    storage = SqliteStorage(path, synchronous="OFF")
    try:
        templates = [task for tasks in storage.export_tasks() for task in tasks]
        if not templates:
            raise RuntimeError("no template task to multiply")
        k = len(templates)
        start = n0 = sum(storage.task_counts().values())
        t0 = time.time()
        while n0 < total:
            n1 = min(total, n0 + batch)
            storage.import_tasks([_copy_task(templates[n % k], n) for n in range(n0, n1)])
            n0 = n1
            rate = (n0 - start) / max(1e-6, time.time() - t0)
            progress(f"  prefill: {n0:,}/{total:,} tasks ({rate:,.0f} tasks/s)")
    finally:
        storage.close()


def ensure_prefilled(ctx):
    """The cached pre-filled database: (path, meta with key or None and pool ids)."""
    args, auth = ctx.args, ctx.auth
    schema = open(os.path.join(ROOT, "a2a_flask", "storage", "sqlite", "migrations.py"),
                  "rb").read()
    tag = hashlib.sha256(schema + repr((args.scale_tasks, auth.on, 3)).encode()).hexdigest()[:12]
    cache = os.path.join(HERE, ".cache")
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, f"prefilled-{args.scale_tasks}-{tag}.sqlite3")
    meta_path = path + ".json"
    if os.path.exists(path) and os.path.exists(meta_path):
        meta = json.load(open(meta_path))
        log(f"scale: using cached {os.path.relpath(path, ROOT)} ({meta['tasks']:,} tasks)")
        return path, meta
    for old in os.listdir(cache):  # one cached database at a time
        if old.startswith(f"prefilled-{args.scale_tasks}-"):
            os.remove(os.path.join(cache, old))
    log(f"scale: building a database with {args.scale_tasks:,} tasks (cached for later runs)")
    building = path + ".building"
    for p in (building, building + "-wal", building + "-shm"):
        if os.path.exists(p):
            os.remove(p)
    t0 = time.time()
    srv = make_server("us-scale", ctx, "build", db=building)
    key = srv.headers.get("Authorization", "")[len("Bearer "):] or None
    try:
        srv.start()
        c = http.client.HTTPConnection(HOST, srv.port, timeout=30)
        texts = ["hello", "What is the weather like in Paris tomorrow?",
                 "Summarize: " + "lorem ipsum dolor sit amet " * 8, "ping", "Thanks!",
                 "Translate 'good morning' into French, German and Spanish.", "ok", "hello again"]
        for i in range(16):
            status, body = rpc(srv, "send", send_params(texts[i % len(texts)]), conn=c)
            why = loadgen.check_answer("send", status, body, full=True)
            if why:
                raise RuntimeError(f"prefill template: {why}: {body[:300]!r}")
        c.close()
    finally:
        srv.stop()
    multiply_tasks(building, args.scale_tasks)
    checkpoint(building)
    n = count_tasks(building)
    size = db_bytes(building)
    pool = sample_task_ids(building, args.scale_pool)
    os.replace(building, path)
    for p in (building + "-wal", building + "-shm"):
        if os.path.exists(p):
            os.remove(p)
    meta = {"tasks": n, "bytes": size, "key": key, "pool": pool, "build_s": round(time.time() - t0, 1)}
    json.dump(meta, open(meta_path, "w"))
    log(f"scale: built in {meta['build_s']} s, {size / 1e6:,.0f} MB, {size / n:,.0f} bytes/task")
    return path, meta


def scale_run(ctx, failures):
    args, tmp = ctx.args, ctx.tmp
    rows, info = [], {}
    cached, meta = ensure_prefilled(ctx)
    info["prefilled tasks"] = f"{meta['tasks']:,}"
    info["prefilled db bytes"] = f"{meta['bytes']:,} ({meta['bytes'] / 1e6:,.0f} MB)"
    info["prefilled bytes/task"] = f"{meta['bytes'] / meta['tasks']:,.0f}"
    info["bytes_per_task"] = meta["bytes"] / meta["tasks"]  # for the target (report.summarize)
    for rd in range(1, args.rounds + 1):
        for cfg in ("us-empty", "us-scale"):
            db = os.path.join(tmp, f"{cfg}-{rd}.sqlite3")
            if cfg == "us-scale":
                t0 = time.time()
                shutil.copyfile(cached, db)
                if hasattr(os, "sync"):
                    os.sync()  # no background write-back of the copy during the loads
                log(f"scale: copied the prefilled database in {time.time() - t0:.1f} s")
            srv = make_server(cfg, ctx, str(rd), db=db,
                              key=meta["key"] if cfg == "us-scale" else None)
            try:
                srv.start()
                why = probe(srv)
                if why:
                    raise RuntimeError(why)
                drive(srv, "send", None, args, tmp, duration=args.warmup)
                rows.append(make_row(rd, cfg, "send", drive(srv, "send", None, args, tmp), failures,
                                     args.max_requests))
                pool = meta["pool"] if cfg == "us-scale" else sample_task_ids(db, args.scale_pool)
                rows.append(make_row(rd, cfg, "get", drive(srv, "get", pool, args, tmp), failures,
                                     args.max_requests))
            except Exception as e:  # noqa: BLE001
                failures.append(f"{LABELS[cfg]} round {rd}: {e}")
                log(f"!!! {LABELS[cfg]} round {rd}: {e}")
            finally:
                srv.stop()
            checkpoint(db)
            n = count_tasks(db)
            size = db_bytes(db)
            info[f"{LABELS[cfg]} round {rd}: tasks, bytes/task"] = f"{n:,}, {size / n:,.0f}"
            os.remove(db)
    return rows, info
