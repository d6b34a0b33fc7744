#!/usr/bin/env python3
"""One-command benchmark of a2a_flask against its ceilings and the official SDK.

    python bench/run.py            # full run (~15 min on 2 cores)
    python bench/run.py --quick    # smoke run (~4 min)

See bench/README.md.  Everything runs on 127.0.0.1; every load is bounded in
time (--duration) and count (--max-requests); every server is started in its
own process group with a fresh temporary database and killed in a finally
block; the PostgreSQL rows share one throwaway cluster, stopped at the end.

The modules: configs.py (the rows and how each server starts), processes.py
(server processes), measure.py (checked requests and loads), report.py
(tables, ratios, targets), charts.py (the PNG charts), prefill.py (the scale
run), postgres.py (the throwaway PostgreSQL cluster), sdk13.py (the a2a-sdk 1.3 venv).
"""

import argparse
import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import postgres  # noqa: E402
import processes  # noqa: E402
import sdk13  # noqa: E402
from charts import write_charts  # noqa: E402
from configs import (BY_KEY, CONFIGS, LABELS, PER_PROCESS, make_server, release,  # noqa: E402
                     round_order, unavailable)
from measure import drive, make_pool, probe  # noqa: E402
from prefill import scale_run  # noqa: E402
from processes import Auth, cpu_busy, log, on_signal, stop_all  # noqa: E402
from report import header, make_row, print_summary, print_table, skipped_row, summarize  # noqa: E402


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", type=float, default=None, help="seconds per measured load (default 10, quick 3)")
    p.add_argument("--warmup", type=float, default=None, help="seconds of unmeasured message/send load "
                                                              "after each start (default 2, quick 1)")
    p.add_argument("--rounds", type=int, default=2, help="rounds; configurations interleave (default 2)")
    p.add_argument("--connections", type=int, default=16, help="concurrent connections (default 16)")
    p.add_argument("--workers", type=int, default=2, help="server worker processes (default 2)")
    p.add_argument("--peer-workers", type=int, default=None, help="uvicorn workers of PEER (default: --workers)")
    p.add_argument("--peer-stock-uvicorn", action="store_true",
                   help="run PEER under uvicorn's own --workers: without the launcher's fix for "
                        "uvicorn #3149 (no TCP_NODELAY) and its socket per worker")
    p.add_argument("--threads", type=int, default=2, help="wrk threads / Python generator processes (default 2)")
    p.add_argument("--pool", type=int, default=None, help="tasks created for the tasks/get load (default 200)")
    p.add_argument("--max-requests", type=int, default=1_000_000, help="count bound per load (default 1e6)")
    p.add_argument("--loadgen", choices=["auto", "wrk", "python"], default="auto",
                   help="auto: wrk when on PATH, else the Python generator")
    p.add_argument("--wait-quiet", type=float, default=0, metavar="S",
                   help="before each load, wait up to S seconds for other processes to leave the CPUs idle")
    p.add_argument("--only", default=",".join(CONFIGS), help="comma-separated configurations: " + ",".join(CONFIGS))
    p.add_argument("--skip-scale", action="store_true", help="skip the pre-filled database run")
    p.add_argument("--scale-tasks", type=int, default=None, help="tasks in the pre-filled database "
                                                                  "(default 1,000,000; quick 20,000)")
    p.add_argument("--scale-pool", type=int, default=2000, help="random task ids for tasks/get in the scale run")
    p.add_argument("--pg-bindir", default=None, help="folder of PostgreSQL's initdb and pg_ctl "
                                                     "(default: /usr/lib/postgresql/15/bin)")
    p.add_argument("--sdk13-venv", default=sdk13.DEFAULT_VENV,
                   help="venv of a2a-sdk 1.3 for the PEER 1.3 rows, created when missing (default bench/.cache/sdk13)")
    p.add_argument("--quick", action="store_true", help="smoke run: 3 s loads, 20,000 prefilled tasks")
    p.add_argument("--out", default=os.path.join(HERE, "results.json"), help="JSON results")
    p.add_argument("--figures", default=os.path.join(HERE, "results-figures"),
                   help="folder of the PNG charts (bench/charts.py); bench/figures holds "
                        "the ones the documentation shows")
    p.add_argument("--gunicorn-args", default="", metavar="ARGS",
                   help="more gunicorn flags for CEILING, DURABLE CEILING and US alike "
                        "(e.g. '-k sync'); all three read the project's gunicorn.conf.py")
    a = p.parse_args(argv)
    processes.GUNICORN_EXTRA[:] = shlex.split(a.gunicorn_args)
    a.duration = a.duration or (3.0 if a.quick else 10.0)
    a.warmup = a.warmup if a.warmup is not None else (1.0 if a.quick else 2.0)
    a.pool = a.pool or (100 if a.quick else 200)
    a.scale_tasks = a.scale_tasks or (20_000 if a.quick else 1_000_000)
    a.peer_workers = a.peer_workers or a.workers
    a.only = [c.strip() for c in a.only.split(",") if c.strip()]
    for c in a.only:
        if c not in CONFIGS:
            p.error(f"unknown configuration {c!r}")
    if a.loadgen == "auto":
        a.loadgen = "wrk" if shutil.which("wrk") else "python"
    elif a.loadgen == "wrk" and not shutil.which("wrk"):
        p.error("wrk is not on PATH (apt-get install wrk)")
    if a.duration <= 0 or a.rounds < 1 or a.connections < 1 or a.max_requests < 1:
        p.error("--duration, --rounds, --connections and --max-requests must be positive")
    return a


def prepare(ctx):
    """What the selected rows need: the API key mode, the PostgreSQL cluster, the 1.3 venv."""
    args, only = ctx.args, ctx.args.only
    if any(c.startswith(("us", "floor", "pg-floor")) for c in only) or not args.skip_scale:
        ctx.auth = Auth(ctx.tmp)
        log(f"US auth: {ctx.auth.mode}")
    if any("postgres" in BY_KEY[c].needs and not BY_KEY[c].pending for c in only):
        ctx.pg_missing = postgres.unavailable(args.pg_bindir)
        if ctx.pg_missing is None:
            cluster = postgres.Cluster(args.pg_bindir, parent=ctx.tmp)
            try:
                ctx.pg = cluster.start()
            except (RuntimeError, OSError, subprocess.SubprocessError) as e:
                cluster.stop()
                ctx.pg_missing = f"the PostgreSQL cluster did not start: {e}"
        if ctx.pg_missing is not None:
            log(f"postgres: rows skipped: {ctx.pg_missing}")
    if any("sdk13" in BY_KEY[c].needs for c in only):
        try:
            ctx.py13, version = sdk13.ensure(args.sdk13_venv)
            log(f"PEER 1.3: a2a-sdk {version} in {args.sdk13_venv}")
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            ctx.sdk13_missing = f"no a2a-sdk 1.3 venv: {e}"
            log(f"PEER 1.3: rows skipped: {ctx.sdk13_missing}")


#: Seconds a worker of the US skewed row is paused as its load's connections open.
SKEW_PAUSE = 0.5


def loaded(srv, cfg, mode, pool, args, tmp):
    """``drive``; for US skewed with one gunicorn worker stopped (SIGSTOP) for
    the first ``SKEW_PAUSE`` seconds of each load, so that the other accepts
    every connection it opens."""
    if cfg != "us-skewed":
        return drive(srv, mode, pool, args, tmp)
    workers = sorted(int(pid) for pid in subprocess.run(
        ["pgrep", "-P", str(srv.proc.pid)], capture_output=True, text=True).stdout.split())
    if len(workers) < 2:
        raise RuntimeError(f"US skewed needs 2 workers or more, found {workers}")
    paused, timers = workers[-1], []

    def pause():
        os.kill(paused, signal.SIGSTOP)
        timers.append(threading.Timer(SKEW_PAUSE, os.kill, (paused, signal.SIGCONT)))
        timers[-1].start()

    try:
        return drive(srv, mode, pool, args, tmp, opening=pause)
    finally:
        for timer in timers:
            timer.cancel()
        try:
            os.kill(paused, signal.SIGCONT)
        except ProcessLookupError:  # the worker exited meanwhile: its master starts another
            pass


def run_row(ctx, cfg, rd, rows, failures):
    """Start ``cfg``, check it, warm it up, measure send and get, stop it."""
    args, tmp = ctx.args, ctx.tmp
    why = unavailable(cfg, ctx)
    if why:
        rows += [skipped_row(rd, cfg, m, why) for m in ("send", "get")]
        return
    srv = None
    try:
        srv = make_server(cfg, ctx, str(rd))
        srv.start()
        why = probe(srv)
        if why:
            raise RuntimeError(f"answer check failed: {why}")
        if args.warmup > 0:
            w = drive(srv, "send", None, args, tmp, duration=args.warmup)
            if w["errors"]:
                failures.append(f"{LABELS[cfg]} warmup round {rd}: {w['errors']} errors "
                                f"{w['error_reasons']} e.g. {w['error_samples'][:1]}")
        rows.append(make_row(rd, cfg, "send", loaded(srv, cfg, "send", None, args, tmp), failures,
                             args.max_requests))
        if cfg in PER_PROCESS and args.peer_workers > 1:
            rows.append(skipped_row(rd, cfg, "get", f"in-memory store with {args.peer_workers} workers"))
        else:
            pool = make_pool(srv, args.pool)
            rows.append(make_row(rd, cfg, "get", loaded(srv, cfg, "get", pool, args, tmp), failures,
                                 args.max_requests))
    except Exception as e:  # noqa: BLE001
        failures.append(f"{LABELS[cfg]} round {rd}: {e}")
        log(f"!!! {LABELS[cfg]} round {rd}: {e}\n{srv.tail(10) if srv else ''}")
    finally:
        if srv is not None:
            srv.stop()
            try:
                release(srv, ctx)
            except Exception as e:  # noqa: BLE001
                log(f"    (could not drop {srv.db}: {e})")


def main(argv=None):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, on_signal)
    tmp = tempfile.mkdtemp(prefix="a2a-bench-")
    os.chmod(tmp, 0o755)  # the PostgreSQL cluster's folder inside belongs to `postgres` when run as root
    ctx = types.SimpleNamespace(args=args, tmp=tmp, auth=None, pg=None, py13=None,
                                pg_missing="not started", sdk13_missing="not installed")
    failures, rows, scale_rows, scale_info = [], [], [], {}
    busy = None
    started = time.time()
    try:
        gen = (subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout.split("[")[0].strip()
               + f" + bench/load.lua ({args.threads} threads)"
               if args.loadgen == "wrk" else f"python bench/loadgen.py ({args.threads} processes; wrk not used)")
        stock = ", stock" if args.peer_stock_uvicorn else ""
        log(f"a2a_flask benchmark: {args.connections} connections, {args.workers} workers "
            f"(PEER: {args.peer_workers} uvicorn workers{stock}), {args.duration:g} s per load, "
            f"{args.rounds} rounds, {os.cpu_count()} CPUs, 127.0.0.1 only")
        log(f"load generator: {gen}")
        prepare(ctx)
        if args.peer_workers > 1 and PER_PROCESS & set(args.only):
            log("note: PEER memory keeps tasks per process: with several uvicorn workers a tasks/get lands "
                "on a worker that never saw the task, so its tasks/get load is skipped "
                "(use --peer-workers 1 to measure it)")
        busy = cpu_busy()
        if busy is not None and busy > 0.15:
            log(f"WARNING: the machine is {busy * 100:.0f}% busy before the run: other processes skew the numbers")
        log("")
        log(header())
        for rd in range(1, args.rounds + 1):
            for cfg in round_order([c for c in CONFIGS if c in args.only], rd):
                run_row(ctx, cfg, rd, rows, failures)
        if not args.skip_scale:
            log(f"\n== scale run: US on an empty database vs {args.scale_tasks:,} pre-filled tasks")
            log(header())
            scale_rows, scale_info = scale_run(ctx, failures)
    finally:
        stop_all()
        if ctx.pg is not None:
            ctx.pg.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    print_table("results per configuration and round", rows)
    if scale_rows:
        print_table("scale run", scale_rows)
    ratios, targets = summarize(rows, scale_rows, scale_info)
    print_summary(rows, scale_rows, ratios, targets, scale_info)
    out = {
        "meta": {
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
            "python": platform.python_version(),
            "loadgen": args.loadgen, "connections": args.connections, "workers": args.workers,
            "peer_workers": args.peer_workers, "peer_stock_uvicorn": args.peer_stock_uvicorn,
            "duration_s": args.duration, "warmup_s": args.warmup,
            "rounds": args.rounds, "auth": ctx.auth.mode if ctx.auth else None,
            "scale_tasks": None if args.skip_scale else args.scale_tasks,
            "wall_s": round(time.time() - started, 1), "cpu_busy_before": busy,
        },
        "runs": rows, "scale_runs": scale_rows, "scale": scale_info,
        "ratios": ratios, "targets": targets, "failures": failures,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    log(f"\nresults: {args.out}")
    write_charts(args.figures, rows, scale_rows, meta=out["meta"])
    log(f"wall time: {time.time() - started:.0f} s; load average now {os.getloadavg()[0]:.2f}")
    if failures:
        log("\n!!! FAILED: wrong or missing answers:")
        for f in failures:
            log("!!!   " + f)
        sys.exit(1)


if __name__ == "__main__":
    main()
