#!/usr/bin/env python3
"""One-command benchmark of a2a_flask against its ceilings and the official SDK.

    python bench/run.py            # full run (~10 min on 2 cores)
    python bench/run.py --quick    # smoke run (~2 min)

See bench/README.md.  Everything runs on 127.0.0.1; every load is bounded in
time (--duration) and count (--max-requests); every server is started in its
own process group with a fresh temporary database and killed in a finally
block.
"""

import argparse
import hashlib
import http.client
import json
import os
import platform
import random
import resource
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import loadgen  # noqa: E402

PY = sys.executable
HOST = "127.0.0.1"
US_PATH = "/api/v1/agents/echo/a2a"

CONFIGS = ["ceiling", "durable", "us", "peer-sqlite", "peer-memory"]
LABELS = {
    "ceiling": "CEILING",
    "durable": "DURABLE CEILING",
    "us": "US",
    "peer-sqlite": "PEER sqlite",
    "peer-memory": "PEER memory",
    "us-empty": "US empty db",
    "us-scale": "US prefilled db",
}
METHODS = {"send": "message/send", "get": "tasks/get"}


def log(*a):
    print(*a, flush=True)


def die(msg):
    log("\n!!! " + msg)
    sys.exit(1)


# --------------------------------------------------------------------------
# servers
# --------------------------------------------------------------------------

_RUNNING = []


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


_GUNICORN_FLAGS = None


def gunicorn_cmd(workers, port, app, chdir=None):
    global _GUNICORN_FLAGS
    if _GUNICORN_FLAGS is None:
        helptext = subprocess.run([PY, "-m", "gunicorn", "--help"], capture_output=True,
                                  text=True, timeout=60).stdout
        # gunicorn >= 25 opens a control socket at a fixed path by default:
        # turn it off so that servers never share one.
        _GUNICORN_FLAGS = ["--no-control-socket"] if "--no-control-socket" in helptext else []
    cmd = [PY, "-m", "gunicorn", "-w", str(workers), "-b", f"{HOST}:{port}"] + _GUNICORN_FLAGS
    if chdir:
        cmd += ["--chdir", chdir]
    return cmd + [app]


class Server:
    def __init__(self, name, cmd, env, cwd, port, path, headers, logdir, db=None):
        self.name, self.cmd, self.cwd, self.port, self.path = name, cmd, cwd, port, path
        self.env = dict(os.environ, **env)
        self.headers = headers
        self.db = db
        self.logfile = os.path.join(logdir, f"{name}-{port}.log")
        self.proc = None
        self.note = ""

    def start(self, timeout=60.0):
        self._log = open(self.logfile, "wb")
        self.proc = subprocess.Popen(self.cmd, cwd=self.cwd, env=self.env, stdout=self._log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        _RUNNING.append(self)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                c = http.client.HTTPConnection(HOST, self.port, timeout=2)
                c.request("GET", "/")
                c.getresponse().read()
                c.close()
                return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"{self.name} did not answer on port {self.port} within {timeout}s:\n{self.tail()}")

    def tail(self, n=25):
        try:
            with open(self.logfile, "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode(errors="replace")
        except OSError:
            return ""

    def stop(self):
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            pass
        try:  # the group: workers that outlived their master
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self._log.close()
        if self in _RUNNING:
            _RUNNING.remove(self)
        self.proc = None


def stop_all():
    for s in list(_RUNNING):
        s.stop()


def cpu_busy(seconds=1.0):
    """Share of all CPUs busy over ``seconds`` (Linux /proc/stat), or None."""
    def sample():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]
    try:
        t0, i0 = sample()
        time.sleep(seconds)
        t1, i1 = sample()
        return 1 - (i1 - i0) / max(1, t1 - t0)
    except (OSError, ValueError, IndexError):
        return None


def _on_signal(signum, frame):
    raise SystemExit(f"stopped by signal {signum}")


# --------------------------------------------------------------------------
# the configurations
# --------------------------------------------------------------------------

class Auth:
    """Whether a2a_flask's ``a2a keys create`` CLI exists (then auth is on)."""

    def __init__(self, tmp):
        probe = os.path.join(tmp, "auth-probe.sqlite3")
        self.on = self.create_key(probe, check=False) is not None
        self.mode = "on (Bearer key from `flask a2a keys create`)" if self.on else \
            "off (A2A_AUTH=off: `flask a2a keys create` not available)"

    @staticmethod
    def create_key(db, check=True):
        env = dict(os.environ, A2A_DATABASE=db)
        env.pop("A2A_AUTH", None)
        r = subprocess.run([PY, "-m", "flask", "--app", "wsgi", "a2a", "keys", "create",
                            "--agents", "*", "--quiet"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=120)
        lines = [ln.strip() for ln in r.stdout.splitlines() if ln.strip()]
        if r.returncode == 0 and lines:
            return lines[-1]
        if check:
            raise RuntimeError(f"`flask a2a keys create` failed ({r.returncode}): {r.stderr[-2000:]}")
        return None

    def server_env(self, db, key=None):
        """(env, headers) for a US server on ``db``; creates a key there if needed."""
        env = {"A2A_DATABASE": db}
        if not self.on:
            env["A2A_AUTH"] = "off"
            return env, {}
        key = key or self.create_key(db)
        return env, {"Authorization": "Bearer " + key}


def make_server(cfg, args, tmp, auth, tag, db=None, key=None):
    port = free_port()
    base = os.path.join(tmp, f"{cfg}-{tag}")
    if cfg in ("ceiling", "durable"):
        env = {"BENCH_DB": base + ".sqlite3"} if cfg == "durable" else {"BENCH_DB": ""}
        return Server(cfg, gunicorn_cmd(args.workers, port, "ceiling:app",
                                        chdir=os.path.join(HERE, "servers")),
                      env, ROOT, port, "/rpc", {}, tmp, db=env["BENCH_DB"] or None)
    if cfg in ("us", "us-empty", "us-scale"):
        db = db or base + ".sqlite3"
        env, headers = auth.server_env(db, key)
        return Server(cfg, gunicorn_cmd(args.workers, port, "wsgi:app"), env, ROOT, port,
                      US_PATH, headers, tmp, db=db)
    if cfg in ("peer-sqlite", "peer-memory"):
        store = cfg.split("-")[1]
        env = {"PEER_STORE": store, "PEER_PORT": str(port)}
        if store == "sqlite":
            env["PEER_DB"] = base + ".sqlite3"
            subprocess.run([PY, os.path.join(HERE, "servers", "peer.py"), "--init-db", env["PEER_DB"]],
                           check=True, timeout=120)
        cmd = [PY, os.path.join(HERE, "servers", "peer.py"), "--serve", HOST, str(port),
               str(args.peer_workers)] + (["--stock"] if args.peer_stock_uvicorn else [])
        return Server(cfg, cmd, env, ROOT, port, "/", {}, tmp, db=env.get("PEER_DB"))
    raise ValueError(cfg)


# --------------------------------------------------------------------------
# requests and loads
# --------------------------------------------------------------------------

def rpc(srv, method, params, conn=None):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    c = conn or http.client.HTTPConnection(HOST, srv.port, timeout=30)
    c.request("POST", srv.path, body, dict(srv.headers, **{"Content-Type": "application/json"}))
    r = c.getresponse()
    data = r.read()
    if conn is None:
        c.close()
    return r.status, data


def send_params(text="hello", mid=None):
    return {"message": {"kind": "message", "role": "user", "messageId": mid or uuid.uuid4().hex,
                        "parts": [{"kind": "text", "text": text}]}}


def probe(srv):
    """Strict check of one message/send and its tasks/get; returns None or a reason.

    One keep-alive connection, so that a per-process store (PEER memory with
    several workers) answers the tasks/get from the worker that made the task.
    """
    c = http.client.HTTPConnection(HOST, srv.port, timeout=30)
    try:
        return _probe(srv, c)
    finally:
        c.close()


def _probe(srv, c):
    status, body = rpc(srv, "message/send", send_params(), conn=c)
    why = loadgen.check_answer("send", status, body, full=True)
    if why:
        return f"message/send: {why}: {body[:400]!r}"
    task = json.loads(body)["result"]
    status, body = rpc(srv, "tasks/get", {"id": task["id"]}, conn=c)
    why = loadgen.check_answer("get", status, body, task["id"], full=True)
    if why:
        return f"tasks/get: {why}: {body[:400]!r}"
    got = json.loads(body)["result"]
    if not got.get("artifacts") or not got.get("history"):
        return f"tasks/get: task without artifacts or history: {body[:400]!r}"
    return None


def make_pool(srv, n):
    ids = []
    c = http.client.HTTPConnection(HOST, srv.port, timeout=30)
    try:
        for i in range(n):
            status, body = rpc(srv, "message/send", send_params(f"pool {i}"), conn=c)
            why = loadgen.check_answer("send", status, body, full=True)
            if why:
                raise RuntimeError(f"creating the tasks/get pool: {why}: {body[:300]!r}")
            ids.append(json.loads(body)["result"]["id"])
    finally:
        c.close()
    return ids


def _children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_snapshot(pgid):
    """(all CPUs busy seconds, CPU seconds of process group ``pgid``); Linux only."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        busy = (v[0] + v[1] + v[2]) / _HZ  # user, nice, system: what processes are charged
    except (OSError, ValueError):
        return None
    group = 0
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            group += sum(int(x) for x in fields[11:15])
    return busy, group / _HZ


def run_wrk(srv, mode, pool, args, tmp, duration):
    threads = max(1, min(args.threads, args.connections))
    poolfile = "-"
    if mode == "get":
        poolfile = os.path.join(tmp, f"pool-{srv.port}.txt")
        with open(poolfile, "w") as f:
            f.write("\n".join(pool) + "\n")
    cap = max(1, args.max_requests // threads)
    cmd = ["wrk", "-t", str(threads), "-c", str(args.connections), "-d", f"{max(1, int(round(duration)))}s",
           "--timeout", "10s", "-s", os.path.join(HERE, "load.lua"),
           f"http://{HOST}:{srv.port}{srv.path}", "--", mode, poolfile,
           srv.headers.get("Authorization", "-"), str(cap), uuid.uuid4().hex[:8]]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("BENCH_RESULT ")), None)
    if r.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({r.returncode}): {r.stdout[-1500:]} {r.stderr[-1500:]}")
    w = json.loads(line[len("BENCH_RESULT "):])
    first = next((ln[len("BENCH_FIRST_ERROR "):] for ln in r.stdout.splitlines()
                  if ln.startswith("BENCH_FIRST_ERROR ")), None)
    sock_errors = w["connect_errors"] + w["read_errors"] + w["write_errors"] + w["timeouts"]
    reasons = {}
    if w["body_errors"]:
        reasons["bad answer"] = w["body_errors"]
    for k in ("connect_errors", "read_errors", "write_errors", "timeouts"):
        if w[k]:
            reasons[k] = w[k]
    secs = w["duration_us"] / 1e6
    return {
        "requests": w["requests"], "rps": w["requests"] / secs if secs else 0.0,
        "p50_ms": w["p50_us"] / 1000, "p90_ms": w["p90_us"] / 1000, "p99_ms": w["p99_us"] / 1000,
        "max_ms": w["max_us"] / 1000, "errors": w["body_errors"] + sock_errors,
        "error_reasons": reasons, "error_samples": [first] if first else [],
        "elapsed_s": secs, "capped": w["requests"] >= cap * threads,
    }


def wait_quiet(args):
    """Wait (at most --wait-quiet seconds) until other processes leave the CPUs idle."""
    if args.wait_quiet <= 0:
        return
    t0 = time.time()
    while time.time() - t0 < args.wait_quiet:
        busy = cpu_busy(0.5)
        if busy is None or busy * (os.cpu_count() or 1) < NOISY:
            break
    waited = time.time() - t0
    if waited > 1:
        log(f"    (waited {waited:.0f} s for other processes to go quiet)")


def drive(srv, mode, pool, args, tmp, duration=None):
    """One measured load; with --wait-quiet, a load that other processes disturbed runs again (twice at most)."""
    measured = duration is None
    duration = duration or args.duration
    for attempt in range(3 if measured and args.wait_quiet > 0 else 1):
        if measured:
            wait_quiet(args)
        res = _drive(srv, mode, pool, args, tmp, duration)
        res["attempts"] = attempt + 1
        if (res.get("other_cpu") or 0) <= NOISY or res["errors"]:
            break
        if attempt < 2 and measured and args.wait_quiet > 0:
            log(f"    ({LABELS.get(srv.name, srv.name)} {METHODS[mode]}: other processes took "
                f"{res['other_cpu'] * 100:.0f}% CPU, {res['rps']:.0f} req/s discarded, again)")
    return res


def _drive(srv, mode, pool, args, tmp, duration):
    snap0 = _cpu_snapshot(srv.proc.pid)
    cpu0, t0 = _children_cpu(), time.time()
    if args.loadgen == "wrk":
        res = run_wrk(srv, mode, pool, args, tmp, duration)
    else:
        res = loadgen.run_load(HOST, srv.port, srv.path, mode=mode, headers=srv.headers,
                               duration=duration, connections=args.connections,
                               procs=args.threads, pool=pool, max_requests=args.max_requests,
                               nonce=uuid.uuid4().hex[:8])
    wall = max(1e-6, time.time() - t0)
    gen = _children_cpu() - cpu0
    snap1 = _cpu_snapshot(srv.proc.pid)
    res["gen_cpu"] = gen / wall
    res["srv_cpu"] = res["other_cpu"] = None
    if snap0 and snap1:
        srv_s = snap1[1] - snap0[1]
        res["srv_cpu"] = srv_s / wall
        res["other_cpu"] = max(0.0, (snap1[0] - snap0[0]) - srv_s - gen) / wall
    return res


# --------------------------------------------------------------------------
# reporting
# --------------------------------------------------------------------------

ROW = "{:>5}  {:<16} {:<12} {:>7} {:>8} {:>8} {:>6}  {:>7} {:>7} {:>7}"
NOISY = 0.15  # CPU (in cores) taken by other processes during a load that makes it suspect


def _pct(x):
    return "?" if x is None else f"{x * 100:.0f}%"


def fmt_row(r):
    if r.get("skipped"):
        return ROW.format(r["round"], LABELS[r["config"]], METHODS[r["method"]], "-", "-", "-", "-",
                          "-", "-", "-") + "  skipped: " + r["skipped"]
    line = ROW.format(r["round"], LABELS[r["config"]], METHODS[r["method"]], f"{r['rps']:.0f}",
                      f"{r['p50_ms']:.2f}", f"{r['p99_ms']:.2f}", r["errors"],
                      _pct(r.get("srv_cpu")), _pct(r["gen_cpu"]), _pct(r.get("other_cpu")))
    if (r.get("other_cpu") or 0) > NOISY:
        line += "  noisy"
    return line


def header():
    return ROW.format("round", "config", "method", "req/s", "p50 ms", "p99 ms", "errors",
                      "server", "loadgen", "other")


def mean_of(rows, cfg, method, key="rps"):
    vals = [r[key] for r in rows if r["config"] == cfg and r["method"] == method and not r.get("skipped")]
    return sum(vals) / len(vals) if vals else None


def worst_of(rows, cfg, method, key="p99_ms"):
    vals = [r[key] for r in rows if r["config"] == cfg and r["method"] == method and not r.get("skipped")]
    return max(vals) if vals else None


def summarize(rows, scale_rows):
    ratios, targets = {}, []

    def ratio(name, a, b):
        if a is not None and b:
            ratios[name] = a / b
            return a / b
        return None

    us_send, us_get = mean_of(rows, "us", "send"), mean_of(rows, "us", "get")
    r1 = ratio("US/PEER sqlite message/send", us_send, mean_of(rows, "peer-sqlite", "send"))
    ratio("US/PEER memory message/send", us_send, mean_of(rows, "peer-memory", "send"))
    r3 = ratio("US/DURABLE CEILING message/send", us_send, mean_of(rows, "durable", "send"))
    ratio("US/CEILING message/send", us_send, mean_of(rows, "ceiling", "send"))
    ratio("US/PEER sqlite tasks/get", us_get, mean_of(rows, "peer-sqlite", "get"))
    ratio("US/PEER memory tasks/get", us_get, mean_of(rows, "peer-memory", "get"))
    r5 = ratio("US/CEILING tasks/get", us_get, mean_of(rows, "ceiling", "get"))
    ratio("US/DURABLE CEILING tasks/get", us_get, mean_of(rows, "durable", "get"))

    def target(text, value, ok, shown):
        if value is not None:
            targets.append({"target": text, "value": value, "pass": bool(ok), "shown": shown})

    if r3 is not None:
        target("message/send US >= 50% of DURABLE CEILING", r3, r3 >= 0.5, f"{r3 * 100:.0f}%")
    if r1 is not None:
        target("message/send US >= 10x PEER sqlite", r1, r1 >= 10, f"{r1:.1f}x")
    p99 = worst_of(rows, "us", "send")
    if p99 is not None:
        target("message/send US p99 < 25 ms (worst round)", p99, p99 < 25, f"{p99:.1f} ms")
    if r5 is not None:
        target("tasks/get US >= 70% of CEILING", r5, r5 >= 0.7, f"{r5 * 100:.0f}%")
    for m in ("send", "get"):
        e, s = mean_of(scale_rows, "us-empty", m), mean_of(scale_rows, "us-scale", m)
        if e and s is not None:
            ratios[f"prefilled/empty {METHODS[m]}"] = s / e
            target(f"{METHODS[m]} prefilled db within 15% of empty db", s / e, s / e >= 0.85,
                   f"{s / e * 100:.0f}% of empty")
    return ratios, targets


CPU_NOTE = ("server/loadgen/other: CPU used during the load by the server's processes, the load "
            "generator, and everything else on the machine (100% = one core); 'noisy': other > "
            f"{NOISY * 100:.0f}%")


def print_table(title, rows):
    log(f"\n== {title}")
    log(header())
    for r in rows:
        log(fmt_row(r))
    log(CPU_NOTE)


def print_summary(rows, scale_rows, ratios, targets, scale_info):
    log("\n== mean over rounds (drift = (max-min)/mean of req/s)")
    log("{:<16} {:<12} {:>9} {:>8} {:>9}  {}".format("config", "method", "req/s", "drift", "worst p99",
                                                      "per round req/s"))
    seen = []
    for r in rows + scale_rows:
        k = (r["config"], r["method"])
        if k in seen or r.get("skipped"):
            continue
        seen.append(k)
        vals = [x["rps"] for x in rows + scale_rows if (x["config"], x["method"]) == k and not x.get("skipped")]
        m = sum(vals) / len(vals)
        log("{:<16} {:<12} {:>9.0f} {:>7.1f}% {:>7.1f}ms  {}".format(
            LABELS[k[0]], METHODS[k[1]], m, (max(vals) - min(vals)) / m * 100,
            worst_of(rows + scale_rows, *k), " ".join(f"{v:.0f}" for v in vals)))
    if ratios:
        log("\n== ratios (means over rounds)")
        for k, v in ratios.items():
            log(f"{k:<36} {v:8.2f}")
    if scale_info:
        log("\n== scale")
        for k, v in scale_info.items():
            log(f"{k:<36} {v}")
    if targets:
        log("\n== targets")
        for t in targets:
            log(f"{'PASS' if t['pass'] else 'FAIL'}  {t['target']}: {t['shown']}")


def chart(path, rows, scale_rows):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("chart: skipped (matplotlib not installed; `pip install -e .[bench]`)")
        return None
    groups = [("message/send", rows, "send"), ("tasks/get", rows, "get")]
    if scale_rows:
        groups += [("scale: message/send", scale_rows, "send"), ("scale: tasks/get", scale_rows, "get")]
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 4.5))
    for ax, (title, rs, m) in zip(axes, groups):
        cfgs = [c for c in dict.fromkeys(r["config"] for r in rs if r["method"] == m and not r.get("skipped"))]
        rounds = sorted({r["round"] for r in rs})
        width = 0.8 / max(1, len(rounds))
        for i, rd in enumerate(rounds):
            vals = [next((r["rps"] for r in rs if r["config"] == c and r["method"] == m and r["round"] == rd
                          and not r.get("skipped")), 0) for c in cfgs]
            bars = ax.bar([x + i * width for x in range(len(cfgs))], vals, width, label=f"round {rd}")
        if hasattr(ax, "bar_label"):
            ax.bar_label(bars, fmt="%.0f", fontsize=7)
        ax.set_xticks([x + width * (len(rounds) - 1) / 2 for x in range(len(cfgs))])
        ax.set_xticklabels([LABELS[c].replace(" ", "\n", 1) for c in cfgs], fontsize=8)
        ax.set_title(title)
        ax.set_ylabel("requests/s")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    log(f"chart: {path}")
    return path


# --------------------------------------------------------------------------
# the scale run: a database pre-filled with many tasks
# --------------------------------------------------------------------------

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
        lo, hi = c.execute("SELECT min(rowid), max(rowid) FROM a2a_tasks").fetchone()
        ids = set()
        tries = 0
        while len(ids) < n and tries < 20:
            tries += 1
            picks = [random.randint(lo, hi) for _ in range(n * 2)]
            q = "SELECT id FROM a2a_tasks WHERE agent = ? AND state = 'completed' AND rowid IN (%s)" % (
                ",".join("?" * len(picks)))
            ids.update(r[0] for r in c.execute(q, [agent] + picks))
        return list(ids)[:n]
    finally:
        c.close()


def multiply_tasks(path, total, progress=log):
    """Grow the a2a_flask database at ``path`` to ``total`` tasks.

    The tasks already there (a few real ones made through HTTP) are the
    templates: each new task copies one template's rows in a2a_tasks,
    a2a_messages (history and status message), a2a_artifacts and
    a2a_deliveries, with fresh random ids written into the columns and into
    the JSON bodies (``replace``).  Bulk INSERT ... SELECT over a numbers
    table, 100,000 tasks per transaction.  This is the one place that knows
    the schema of a2a_flask/migrations.py: adapt it when the schema changes.
    """
    c = sqlite3.connect(path, isolation_level=None)
    try:
        c.execute("PRAGMA journal_mode = DELETE")
        c.execute("PRAGMA synchronous = OFF")
        c.execute("PRAGMA cache_size = -1048576")  # 1 GiB
        c.execute("PRAGMA temp_store = MEMORY")
        c.execute("CREATE TEMP TABLE tmpl AS SELECT row_number() OVER (ORDER BY rowid) - 1 AS k, *"
                  " FROM a2a_tasks")
        k = c.execute("SELECT count(*) FROM tmpl").fetchone()[0]
        if k == 0:
            raise RuntimeError("no template task to multiply")
        start = c.execute("SELECT count(*) FROM a2a_tasks").fetchone()[0]
        c.execute("CREATE TEMP TABLE tmpl_msg AS SELECT t.k, m.* FROM a2a_messages m"
                  " JOIN tmpl t ON t.id = m.task_id")
        c.execute("CREATE TEMP TABLE tmpl_art AS SELECT t.k, a.* FROM a2a_artifacts a"
                  " JOIN tmpl t ON t.id = a.task_id")
        c.execute("CREATE TEMP TABLE tmpl_del AS SELECT t.k, d.* FROM a2a_deliveries d"
                  " JOIN tmpl t ON t.id = d.task_id")
        c.execute("CREATE TEMP TABLE ids (n INTEGER PRIMARY KEY, tid TEXT, cid TEXT)")
        batch = 100_000
        n0 = start
        t0 = time.time()
        while n0 < total:
            n1 = min(total, n0 + batch)
            c.execute("BEGIN")
            c.execute("DELETE FROM ids")
            c.execute(
                "WITH RECURSIVE seq(n) AS (SELECT ? UNION ALL SELECT n + 1 FROM seq WHERE n + 1 < ?)"
                " INSERT INTO ids SELECT n, 'task_' || lower(hex(randomblob(16))),"
                " 'ctx_' || lower(hex(randomblob(16))) FROM seq", (n0, n1))
            c.execute(
                "INSERT INTO a2a_tasks (id, agent, owner, context_id, state, status_message,"
                " updated_at, created_at, metadata)"
                " SELECT i.tid, t.agent, t.owner, i.cid, t.state,"
                " replace(replace(replace(t.status_message, t.id, i.tid), t.context_id, i.cid),"
                " '\"' || json_extract(t.status_message, '$.messageId') || '\"',"
                " '\"' || json_extract(t.status_message, '$.messageId') || '_' || i.n || '\"'),"
                " t.updated_at, t.created_at, t.metadata"
                " FROM ids i JOIN tmpl t ON t.k = i.n % ? ORDER BY i.n", (k,))
            c.execute(
                "INSERT INTO a2a_messages (task_id, context_id, owner, agent, role, message_id, body)"
                " SELECT i.tid, i.cid, m.owner, m.agent, m.role, m.message_id || '_' || i.n,"
                " replace(replace(replace(m.body, t.id, i.tid), t.context_id, i.cid),"
                " '\"messageId\":\"' || m.message_id || '\"',"
                " '\"messageId\":\"' || m.message_id || '_' || i.n || '\"')"
                " FROM ids i JOIN tmpl t ON t.k = i.n % ? JOIN tmpl_msg m ON m.k = t.k"
                " ORDER BY i.n, m.seq", (k,))
            c.execute(
                "INSERT INTO a2a_artifacts (task_id, artifact_id, body)"
                " SELECT i.tid, a.artifact_id || '_' || i.n,"
                " replace(a.body, '\"' || a.artifact_id || '\"', '\"' || a.artifact_id || '_' || i.n || '\"')"
                " FROM ids i JOIN tmpl_art a ON a.k = i.n % ? ORDER BY i.n, a.seq", (k,))
            c.execute(
                "INSERT INTO a2a_deliveries (owner, agent, message_id, fingerprint, task_id)"
                " SELECT d.owner, d.agent, d.message_id || '_' || i.n, lower(hex(randomblob(32))), i.tid"
                " FROM ids i JOIN tmpl_del d ON d.k = i.n % ?", (k,))
            c.execute("COMMIT")
            n0 = n1
            rate = (n0 - start) / max(1e-6, time.time() - t0)
            progress(f"  prefill: {n0:,}/{total:,} tasks ({rate:,.0f} tasks/s)")
        c.execute("PRAGMA journal_mode = WAL")  # no ANALYZE: a live database has no statistics either
    finally:
        c.close()


def ensure_prefilled(args, tmp, auth):
    """The cached pre-filled database: (path, key or None, pool ids)."""
    schema = open(os.path.join(ROOT, "a2a_flask", "migrations.py"), "rb").read()
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
    srv = make_server("us-scale", args, tmp, auth, "build", db=building)
    key = srv.headers.get("Authorization", "")[len("Bearer "):] or None
    try:
        srv.start()
        c = http.client.HTTPConnection(HOST, srv.port, timeout=30)
        texts = ["hello", "What is the weather like in Paris tomorrow?",
                 "Summarize: " + "lorem ipsum dolor sit amet " * 8, "ping", "Thanks!",
                 "Translate 'good morning' into French, German and Spanish.", "ok", "hello again"]
        for i in range(16):
            status, body = rpc(srv, "message/send", send_params(texts[i % len(texts)]), conn=c)
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


def scale_run(args, tmp, auth, failures):
    rows, info = [], {}
    cached, meta = ensure_prefilled(args, tmp, auth)
    info["prefilled tasks"] = f"{meta['tasks']:,}"
    info["prefilled db bytes"] = f"{meta['bytes']:,} ({meta['bytes'] / 1e6:,.0f} MB)"
    info["prefilled bytes/task"] = f"{meta['bytes'] / meta['tasks']:,.0f}"
    for rd in range(1, args.rounds + 1):
        for cfg in ("us-empty", "us-scale"):
            db = os.path.join(tmp, f"{cfg}-{rd}.sqlite3")
            if cfg == "us-scale":
                t0 = time.time()
                shutil.copyfile(cached, db)
                if hasattr(os, "sync"):
                    os.sync()  # no background write-back of the copy during the loads
                log(f"scale: copied the prefilled database in {time.time() - t0:.1f} s")
            srv = make_server(cfg, args, tmp, auth, str(rd), db=db,
                              key=meta["key"] if cfg == "us-scale" else None)
            try:
                srv.start()
                why = probe(srv)
                if why:
                    raise RuntimeError(why)
                drive(srv, "send", None, args, tmp, duration=args.warmup)
                rows.append(_row(rd, cfg, "send", drive(srv, "send", None, args, tmp), failures))
                pool = meta["pool"] if cfg == "us-scale" else sample_task_ids(db, args.scale_pool)
                rows.append(_row(rd, cfg, "get", drive(srv, "get", pool, args, tmp), failures))
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


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------

def _row(rd, cfg, method, res, failures):
    row = dict(res, round=rd, config=cfg, method=method)
    row.pop("lat", None)
    log(fmt_row(row) + (f"   {res['error_reasons']} {res['error_samples'][:1]}" if res["errors"] else ""))
    if res["errors"]:
        failures.append(f"{LABELS[cfg]} {METHODS[method]} round {rd}: {res['errors']} errors "
                        f"{res['error_reasons']} e.g. {res['error_samples'][:1]}")
    if res.get("capped"):
        log(f"    note: hit --max-requests ({args_global.max_requests}); req/s of this row is a lower bound")
    return row


args_global = None


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
                   help="run PEER without the launcher's fix for uvicorn #3149 (no TCP_NODELAY with --workers > 1)")
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
    p.add_argument("--quick", action="store_true", help="smoke run: 3 s loads, 20,000 prefilled tasks")
    p.add_argument("--out", default=os.path.join(HERE, "results.json"), help="JSON results (PNG chart beside it)")
    a = p.parse_args(argv)
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


def main(argv=None):
    global args_global
    args = args_global = parse_args(argv)
    signal.signal(signal.SIGTERM, _on_signal)
    tmp = tempfile.mkdtemp(prefix="a2a-bench-")
    failures, rows, scale_rows, scale_info = [], [], [], {}
    auth = busy = None
    started = time.time()
    try:
        auth = Auth(tmp) if any(c.startswith("us") for c in args.only) or not args.skip_scale else None
        gen = (subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout.split("[")[0].strip()
               + f" + bench/load.lua ({args.threads} threads)"
               if args.loadgen == "wrk" else f"python bench/loadgen.py ({args.threads} processes; wrk not used)")
        stock = ", stock" if args.peer_stock_uvicorn else ""
        log(f"a2a_flask benchmark: {args.connections} connections, {args.workers} workers "
            f"(PEER: {args.peer_workers} uvicorn workers{stock}), {args.duration:g} s per load, "
            f"{args.rounds} rounds, {os.cpu_count()} CPUs, 127.0.0.1 only")
        log(f"load generator: {gen}")
        if auth:
            log(f"US auth: {auth.mode}")
        if args.peer_workers > 1 and "peer-memory" in args.only:
            log("note: PEER memory keeps tasks per process: with several uvicorn workers a tasks/get lands "
                "on a worker that never saw the task, so its tasks/get load is skipped "
                "(use --peer-workers 1 to measure it)")
        busy = cpu_busy()
        if busy is not None and busy > 0.15:
            log(f"WARNING: the machine is {busy * 100:.0f}% busy before the run: other processes skew the numbers")
        log("")
        log(header())
        for rd in range(1, args.rounds + 1):
            for cfg in [c for c in CONFIGS if c in args.only]:
                srv = make_server(cfg, args, tmp, auth, str(rd))
                try:
                    srv.start()
                    why = probe(srv)
                    if why:
                        raise RuntimeError(f"answer check failed: {why}")
                    if args.warmup > 0:
                        w = drive(srv, "send", None, args, tmp, duration=args.warmup)
                        if w["errors"]:
                            failures.append(f"{LABELS[cfg]} warmup round {rd}: {w['errors']} errors "
                                            f"{w['error_reasons']} e.g. {w['error_samples'][:1]}")
                    rows.append(_row(rd, cfg, "send", drive(srv, "send", None, args, tmp), failures))
                    if cfg == "peer-memory" and args.peer_workers > 1:
                        row = {"round": rd, "config": cfg, "method": "get",
                               "skipped": f"in-memory store with {args.peer_workers} workers"}
                        log(fmt_row(row))
                        rows.append(row)
                    else:
                        pool = make_pool(srv, args.pool)
                        rows.append(_row(rd, cfg, "get", drive(srv, "get", pool, args, tmp), failures))
                except Exception as e:  # noqa: BLE001
                    failures.append(f"{LABELS[cfg]} round {rd}: {e}")
                    log(f"!!! {LABELS[cfg]} round {rd}: {e}\n{srv.tail(10)}")
                finally:
                    srv.stop()
                for suffix in ("", "-wal", "-shm"):
                    if srv.db and os.path.exists(srv.db + suffix):
                        os.remove(srv.db + suffix)
        if not args.skip_scale:
            log(f"\n== scale run: US on an empty database vs {args.scale_tasks:,} pre-filled tasks")
            log(header())
            scale_rows, scale_info = scale_run(args, tmp, auth, failures)
    finally:
        stop_all()
        shutil.rmtree(tmp, ignore_errors=True)

    print_table("results per configuration and round", rows)
    if scale_rows:
        print_table("scale run", scale_rows)
    ratios, targets = summarize(rows, scale_rows)
    print_summary(rows, scale_rows, ratios, targets, scale_info)
    out = {
        "meta": {
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
            "python": platform.python_version(),
            "loadgen": args.loadgen, "connections": args.connections, "workers": args.workers,
            "peer_workers": args.peer_workers, "peer_stock_uvicorn": args.peer_stock_uvicorn,
            "duration_s": args.duration, "warmup_s": args.warmup,
            "rounds": args.rounds, "auth": auth.mode if auth else None,
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
    chart(os.path.splitext(args.out)[0] + ".png", rows, scale_rows)
    log(f"wall time: {time.time() - started:.0f} s; load average now {os.getloadavg()[0]:.2f}")
    if failures:
        log("\n!!! FAILED: wrong or missing answers:")
        for f in failures:
            log("!!!   " + f)
        sys.exit(1)


if __name__ == "__main__":
    main()
