"""Measurement: one checked request, the tasks/get pool, and a bounded load.

``drive`` runs one load with wrk (``load.lua``) or the Python generator
(``loadgen.py``) and adds the CPU taken meanwhile by the server's process
group, by the generator and by everything else (Linux ``/proc``); with
``--wait-quiet`` a load that other processes disturbed runs again.
"""

import http.client
import json
import os
import resource
import subprocess
import time
import uuid

import loadgen
from configs import LABELS, method_label
from processes import HERE, HOST, cpu_busy, log

NOISY = 0.15  # CPU (in cores) taken by other processes during a load that makes it suspect


def rpc(srv, mode, params, conn=None):
    """One JSON-RPC call of ``mode`` ("send" or "get") in the server's protocol."""
    method = loadgen.METHODS[srv.proto][mode]
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    c = conn or http.client.HTTPConnection(HOST, srv.port, timeout=30)
    headers = dict(srv.headers, **loadgen.HEADERS[srv.proto])
    c.request("POST", srv.path, body, dict(headers, **{"Content-Type": "application/json"}))
    r = c.getresponse()
    data = r.read()
    if conn is None:
        c.close()
    return r.status, data


def send_params(text="hello", mid=None, proto="0.3"):
    return {"message": loadgen.message(text, mid or uuid.uuid4().hex, proto)}


def sent_task_id(body, proto="0.3"):
    return loadgen.result_task(json.loads(body)["result"], proto)["id"]


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
    names = loadgen.METHODS[srv.proto]
    status, body = rpc(srv, "send", send_params(proto=srv.proto), conn=c)
    why = loadgen.check_answer("send", status, body, full=True, proto=srv.proto)
    if why:
        return f"{names['send']}: {why}: {body[:400]!r}"
    task_id = sent_task_id(body, srv.proto)
    status, body = rpc(srv, "get", {"id": task_id}, conn=c)
    why = loadgen.check_answer("get", status, body, task_id, full=True, proto=srv.proto)
    if why:
        return f"{names['get']}: {why}: {body[:400]!r}"
    got = json.loads(body)["result"]
    if not got.get("artifacts") or not got.get("history"):
        return f"tasks/get: task without artifacts or history: {body[:400]!r}"
    return None


def make_pool(srv, n):
    ids = []
    c = http.client.HTTPConnection(HOST, srv.port, timeout=30)
    try:
        for i in range(n):
            status, body = rpc(srv, "send", send_params(f"pool {i}", proto=srv.proto), conn=c)
            why = loadgen.check_answer("send", status, body, full=True, proto=srv.proto)
            if why:
                raise RuntimeError(f"creating the tasks/get pool: {why}: {body[:300]!r}")
            ids.append(sent_task_id(body, srv.proto))
    finally:
        c.close()
    return ids


def _children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_snapshot(pgid, parent=None):
    """(all CPUs busy seconds, CPU seconds of process group ``pgid``); Linux only.

    With ``parent`` (a PostgreSQL postmaster: its backends each start a session
    of their own), that process and its children count with the group.
    """
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
        if int(fields[2]) == pgid or (parent and parent in (int(d), int(fields[1]))):
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
           srv.headers.get("Authorization", "-"), str(cap), uuid.uuid4().hex[:8], srv.proto]
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


def drive(srv, mode, pool, args, tmp, duration=None, opening=None):
    """One measured load; with --wait-quiet, a load that other processes disturbed runs again (twice at most).
    ``opening()``, when given, runs just before each load starts (after the wait for quiet)."""
    measured = duration is None
    duration = duration or args.duration
    for attempt in range(3 if measured and args.wait_quiet > 0 else 1):
        if measured:
            wait_quiet(args)
        if opening is not None:
            opening()
        res = _drive(srv, mode, pool, args, tmp, duration)
        res["attempts"] = attempt + 1
        if (res.get("other_cpu") or 0) <= NOISY or res["errors"]:
            break
        if attempt < 2 and measured and args.wait_quiet > 0:
            log(f"    ({LABELS.get(srv.name, srv.name)} {method_label(srv.name, mode)}: other processes took "
                f"{res['other_cpu'] * 100:.0f}% CPU, {res['rps']:.0f} req/s discarded, again)")
    return res


def _drive(srv, mode, pool, args, tmp, duration):
    snap0 = _cpu_snapshot(srv.proc.pid, srv.cpu_parent)
    cpu0, t0 = _children_cpu(), time.time()
    if args.loadgen == "wrk":
        res = run_wrk(srv, mode, pool, args, tmp, duration)
    else:
        res = loadgen.run_load(HOST, srv.port, srv.path, mode=mode, headers=srv.headers,
                               duration=duration, connections=args.connections,
                               procs=args.threads, pool=pool, max_requests=args.max_requests,
                               nonce=uuid.uuid4().hex[:8], proto=srv.proto)
    wall = max(1e-6, time.time() - t0)
    gen = _children_cpu() - cpu0
    snap1 = _cpu_snapshot(srv.proc.pid, srv.cpu_parent)
    res["gen_cpu"] = gen / wall
    res["srv_cpu"] = res["other_cpu"] = None
    if snap0 and snap1:
        srv_s = snap1[1] - snap0[1]
        res["srv_cpu"] = srv_s / wall
        res["other_cpu"] = max(0.0, (snap1[0] - snap0[0]) - srv_s - gen) / wall
    return res
