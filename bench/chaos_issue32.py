"""Chaos rows of issue 32 ("the second attack run"), for bench/chaos.py:
one key filling the disk (Q1), a PostgreSQL crash with the agent's run in
between (P1), long ids on both backends (I1), Basic with a new user name
each time (B1). Rows M1 (concurrent ListTasks, bench/chaos_memory.py) and
C1 (the client against a hostile server, bench/chaos_client.py) are the
issue's too. Each row prints its figures and PASS or FAIL against the
issue's targets.

    python bench/chaos.py --only Q1,P1,I1,B1

Q1 needs root (a 200 MB tmpfs); P1 and I1's PostgreSQL half need the
machine's PostgreSQL server binaries (a throwaway cluster, tests/pgcluster.py).
"""

import base64
import collections
import glob
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

import requests

from chaos_harness import BIN, ECHO, REPO, Server, free_port, post, send_body

SERVERS = os.path.join(REPO, "bench", "servers")
COUNTED = "/api/v1/agents/counted/a2a"
SLOW = "/api/v1/agents/slow/a2a"
MiB = 1024 * 1024


def _rpc(method, params, id=1):
    return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}


def _new_key(server, app="wsgi"):
    return subprocess.run(
        [os.path.join(BIN, "flask"), "--app", app, "a2a", "keys", "create", "--quiet"],
        cwd=REPO, env=server.env, check=True, capture_output=True, text=True,
        timeout=60).stdout.strip()


def _error(answer):
    return answer.get("error") if isinstance(answer, dict) else None


def _verdict(checks):
    failed = [name for name, ok in checks.items() if not ok]
    return "PASS" if not failed else "FAIL (%s)" % ", ".join(failed)


def _p99(times):
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else float("inf")


def _cluster():
    """A throwaway PostgreSQL cluster (default durability), or the reason why not."""
    sys.path.insert(0, os.path.join(REPO, "tests"))
    import pgcluster
    why = pgcluster.unavailable()
    if why:
        return None, why
    pgcluster.free_port = free_port  # CHAOS_PORTS holds for it too
    return pgcluster.Cluster().start(), None


# -- Q1: one key filling the disk --------------------------------------------

def _mount(size_mb):
    mount = tempfile.mkdtemp(prefix="a2a-chaos-disk-")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm" % size_mb, "tmpfs",
                       mount], capture_output=True).returncode:
        os.rmdir(mount)
        return None
    return mount


def _umount(mount):
    for _ in range(50):  # the killed workers may hold the files a moment
        if not subprocess.run(["umount", mount], capture_output=True).returncode:
            os.rmdir(mount)
            return
        time.sleep(0.1)


def _fill(server, headers, threads=4, refusals_each=2, seconds=60.0, mixed=False):
    """Big echo sends (~1.8 MB stored each) from ``threads`` threads until
    each was refused ``refusals_each`` times; [(messageId, status, answer)].
    ``mixed``: sizes from 1 kB up, so that writes near a full disk half succeed."""
    sizes = iter(range(10 ** 9))
    results, lock, stop = [], threading.Lock(), time.monotonic() + seconds

    def run():
        session, refused = requests.Session(), 0
        while refused < refusals_each and time.monotonic() < stop:
            n = next(sizes)
            body = send_body("x" * ((1000 + n * 97 * 1000 % 900000) if mixed else 900000))
            _, status, answer = post(server, body, headers=headers, session=session,
                                     timeout=60)
            with lock:
                results.append((body["params"]["message"]["messageId"], status, answer))
            refused += _error(answer) is not None or status != 200

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(seconds + 60)
    return results


def _stored_message_ids(database):
    conn = sqlite3.connect("file:%s?mode=ro" % database, uri=True)
    try:  # closed here: an open file would keep the tmpfs from unmounting
        return {row[0] for row in conn.execute("SELECT message_id FROM a2a_deliveries")}
    finally:
        conn.close()


def _health(server):
    r = requests.get(server.url + "/api/v1/health", timeout=10)
    try:
        return r.status_code, r.json()
    except ValueError:
        return r.status_code, r.text[:80]


def _q1_phase(label, env, expect, **fill):
    """One server on a fresh 200 MB tmpfs: a slow task of another caller
    started, one key filling, then the other caller's read and cancel."""
    mount = _mount(200)
    if mount is None:
        return "%s: skipped, cannot mount a tmpfs" % label, True
    server = None
    try:
        server = Server(workers=2, database=os.path.join(mount, "a2a.sqlite3"), env=env)
        other = {"Authorization": "Bearer " + _new_key(server)}
        small = post(server, send_body("mine"), headers=other)[2]["result"]["id"]
        slow = post(server, send_body("60", blocking=False), path=SLOW,
                    headers=other)[2]["result"]["id"]
        started = time.monotonic()
        results = _fill(server, server.headers, **fill)
        took = time.monotonic() - started
        health = _health(server)
        read = post(server, _rpc("tasks/get", {"id": small}), headers=other)[2]
        cancel = post(server, _rpc("tasks/cancel", {"id": slow}), path=SLOW,
                      headers=other)[2]
        refusals = collections.Counter()
        nothing_stored = []
        for message_id, status, answer in results:
            error = _error(answer)
            if error is None and status == 200:
                continue
            if error is None:
                refusals["HTTP %s" % status] += 1
                continue
            text = error.get("message", "")
            kind = ("quota" if "quota" in text else
                    "reserve" if "A2A_MIN_FREE_DISK_BYTES" in text else
                    "full" if "full" in text or "space" in text else "other")
            refusals["%s %s/%s" % (kind, status, error.get("code"))] += 1
            if "nothing was stored" in text:
                nothing_stored.append(message_id)
        acknowledged = sum(1 for _, s, a in results if s == 200 and not _error(a))
        server.stop()
        stored = _stored_message_ids(server.database)
        false_nothing = sum(1 for m in nothing_stored if m in stored)
        leftovers = len(glob.glob(os.path.join(mount, "**", "*.tmp"), recursive=True))
        kinds = {k.split()[0] for k in refusals}
        checks = {
            "refused as %s" % expect: kinds == {expect},
            "no false 'nothing was stored'": false_nothing == 0,
            "no *.tmp left": leftovers == 0,
            "other's read": (read or {}).get("result", {}).get("id") == small,
        }
        if expect != "full":
            checks["other's cancel"] = ((cancel or {}).get("result", {}).get(
                "status", {}).get("state") == "canceled")
        if expect == "reserve":
            checks["/health 503 writes"] = (health[0] == 503 and isinstance(
                health[1], dict) and health[1].get("status") == "unavailable"
                and "writes" in health[1])
        figure = ("%s: %d acknowledged in %.0f s, refusals %s; 'nothing was stored' "
                  "for a stored task: %d; *.tmp left: %d; /health %s %s; other "
                  "caller's read %s, cancel %s"
                  % (label, acknowledged, took, dict(refusals), false_nothing, leftovers,
                     health[0], json.dumps(health[1])[:110],
                     "ok" if checks["other's read"] else json.dumps(read)[:80],
                     (cancel or {}).get("result", {}).get("status", {}).get("state")
                     or json.dumps(_error(cancel))[:120]))
        return figure, all(checks.values()) or _verdict(checks)
    finally:
        if server is not None:
            server.stop()
        _umount(mount)


def q1_disk_filling():
    if os.geteuid() != 0:
        return "skipped: needs root to mount a small tmpfs"
    phases = [
        ("quota 32 MiB", {"A2A_MAX_STORED_BYTES_PER_CALLER": str(32 * MiB),
                          "A2A_MIN_FREE_DISK_BYTES": str(48 * MiB)}, "quota"),
        ("default quota, reserve 48 MiB", {"A2A_MIN_FREE_DISK_BYTES": str(48 * MiB)},
         "reserve"),
        ("no reserve (disk really full), mixed sizes", {"A2A_MIN_FREE_DISK_BYTES": "0"},
         "full", {"refusals_each": 15, "mixed": True}),
    ]
    figures, verdicts = [], []
    for label, env, expect, *fill in phases:
        figure, ok = _q1_phase(label, env, expect, **(fill[0] if fill else {}))
        figures.append(figure)
        verdicts.append("PASS" if ok is True else ok)
    failed = [v for v in verdicts if v != "PASS"]
    return "; ".join(figures) + "; " + ("PASS" if not failed else " | ".join(failed))


# -- P1: PostgreSQL crash with the agent's run in between ---------------------

def _crash(cluster):
    """SIGKILL the postmaster, then its backends (a machine's crash), restart."""
    pid = cluster.postmaster_pid()
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                              text=True).stdout.split()
    os.kill(pid, signal.SIGKILL)
    for child in children:
        try:
            os.kill(int(child), signal.SIGKILL)
        except ProcessLookupError:
            pass
    time.sleep(1.0)
    # Here the dead postmaster may stay a zombie (a container's init that
    # does not reap), which PostgreSQL takes for a live one: its lock files
    # go, as an operator would remove it after checking the pid is dead.
    for stale in [os.path.join(cluster.data, "postmaster.pid")] + glob.glob(
            os.path.join(cluster.dir, ".s.PGSQL.*")):
        try:
            os.unlink(stale)
        except FileNotFoundError:
            pass
    cluster.resume()


def _send_until_answered(server, session, message_id, deadline):
    """A send retried with the same messageId while it may be; the last answer."""
    body = send_body("count me", message_id=message_id)
    while True:
        _, status, answer = post(server, body, path=COUNTED, session=session, timeout=30)
        error = _error(answer)
        if status == 200 and error is None:
            return "ok", answer["result"]["id"]
        retry = status == "EXC" or status in (502, 503) or (
            error is not None and (error.get("data") or {}).get("retry"))
        if not retry or time.monotonic() > deadline:
            return "failed", "%s %s" % (status, json.dumps(error)[:160] if error else answer)
        time.sleep(0.3)


def p1_postgres_crash(seconds=24.0, crashes=(6.0, 14.0), threads=8):
    cluster, why = _cluster()
    if cluster is None:
        return "skipped: " + why
    runs_dir = tempfile.mkdtemp(prefix="a2a-chaos-runs-")
    runs_file = os.path.join(runs_dir, "runs")
    server = None
    try:
        url = cluster.create_db("chaos_p1")
        server = Server(workers=2, database=url, app="chaos_app:app", env={
            "PYTHONPATH": os.pathsep.join([SERVERS, REPO]),
            "CHAOS_RUNS_FILE": runs_file, "CHAOS_AGENT_SECONDS": "1"})
        acknowledged, failures, lock = [], [], threading.Lock()
        sent, stop = [0], time.monotonic() + seconds

        def load(n):
            session, i = requests.Session(), 0
            while time.monotonic() < stop:
                i += 1
                message_id = "p1-%d-%d" % (n, i)
                with lock:
                    sent[0] += 1
                outcome, what = _send_until_answered(server, session, message_id,
                                                     time.monotonic() + 60)
                with lock:
                    (acknowledged if outcome == "ok" else failures).append(
                        (message_id, what))

        workers = [threading.Thread(target=load, args=(n,)) for n in range(threads)]
        started = time.monotonic()
        for w in workers:
            w.start()
        for at in crashes:
            time.sleep(max(0.0, started + at - time.monotonic()))
            _crash(cluster)
        for w in workers:
            w.join(120)
        lost = 0
        for _, task_id in acknowledged:
            answer = post(server, _rpc("tasks/get", {"id": task_id}), path=COUNTED)[2]
            lost += (answer or {}).get("result", {}).get("status", {}).get(
                "state") != "completed"
        with open(runs_file) as f:
            runs = collections.Counter(f.read().split())
        twice = sorted(m for m, n in runs.items() if n > 1)
        not_found = [f for f in failures if "-32001" in f[1] or "not found" in f[1].lower()]
        checks = {"no acknowledged task lost": lost == 0,
                  "no messageId run twice": not twice,
                  "no live send 'Task not found'": not not_found,
                  "every send answered": not failures}
        return ("%d PostgreSQL crashes (postmaster SIGKILLed, restarted) under %d "
                "callers of a 1 s agent for %.0f s: %d sends, %d acknowledged, %d "
                "lost; agent runs %d for %d messageIds, run twice: %d%s; failed "
                "sends %d%s (Task not found: %d); %s"
                % (len(crashes), threads, seconds, sent[0], len(acknowledged), lost,
                   sum(runs.values()), len(runs), len(twice),
                   " (%s)" % ", ".join(twice[:3]) if twice else "", len(failures),
                   " e.g. %s" % failures[0][1] if failures else "", len(not_found),
                   _verdict(checks)))
    finally:
        if server is not None:
            server.stop()
        cluster.stop()
        subprocess.run(["rm", "-rf", runs_dir])


# -- I1: long ids --------------------------------------------------------------

LENGTHS = (256, 300, 1024, 1025, 3000)


def _id_calls(n):
    """(label, path-less body, the field a refusal must name) per id kind."""
    long_id = ("i%d-%f-" % (n, time.time()) + "é" * n)[:n]  # 2-byte characters

    def message(**fields):
        body = send_body("long id")
        body["params"]["message"].update(fields)
        return body
    return [
        ("messageId", message(messageId=long_id), "message.messageId"),
        ("contextId", message(contextId=long_id), "message.contextId"),
        ("taskId", message(taskId=long_id), "message.taskId"),
        ("tasks/get id", _rpc("tasks/get", {"id": long_id}), "id"),
        ("tasks/cancel id", _rpc("tasks/cancel", {"id": long_id}), "id"),
    ]


def _long_ids_on(database, label):
    server = Server(workers=1, database=database)
    try:
        wrong = []
        calls = 0
        for n in LENGTHS:
            for what, body, field in _id_calls(n):
                calls += 1
                _, status, answer = post(server, body)
                error = _error(answer) or {}
                if n <= 256:  # within the limit: never refused for its length
                    if error.get("code") in (-32602, -32603):
                        wrong.append("%s %d: %s" % (what, n, error.get("code")))
                    continue
                if not (error.get("code") == -32602 and (error.get("data") or {}).get(
                        "field") == field and "256" in error.get("message", "")):
                    wrong.append("%s %d: HTTP %s %s" % (what, n, status,
                                                        json.dumps(error)[:120]))
        time.sleep(0.5)
        errors = sum(1 for line in server.log().splitlines()
                     if "ERROR" in line or "Traceback" in line)
        return ("%s: %d calls, %d answered otherwise than expected%s, %d ERROR/Traceback "
                "log lines" % (label, calls, len(wrong), " (%s)" % "; ".join(wrong[:3])
                               if wrong else "", errors)), not wrong and errors == 0
    finally:
        server.stop()


def i1_long_ids():
    rows = [_long_ids_on(None, "SQLite")]
    cluster, why = _cluster()
    if cluster is None:
        rows.append(("PostgreSQL skipped: " + why, False))
    else:
        try:
            rows.append(_long_ids_on(cluster.create_db("chaos_i1"), "PostgreSQL"))
        finally:
            cluster.stop()
    return ("ids of %s characters (messageId, contextId, taskId, tasks/get and "
            "tasks/cancel id; over 256 must be -32602 naming the field and 256): %s; %s"
            % (", ".join(str(n) for n in LENGTHS), "; ".join(r for r, _ in rows),
               "PASS" if all(ok for _, ok in rows) else "FAIL"))


# -- B1: Basic with new names ---------------------------------------------------

def _cpu_seconds(pids):
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
        except (OSError, IndexError, ValueError):
            pass
    return total


def _innocent(server, task_id, seconds):
    session = requests.Session()
    body = _rpc("tasks/get", {"id": task_id})
    times, stop = [], time.monotonic() + seconds
    while time.monotonic() < stop:
        took, status, _ = post(server, body, session=session)
        times.append(took if status == 200 else float("inf"))
        time.sleep(0.01)
    return times


def b1_basic_new_names(seconds=15.0, threads=2, workers=2):
    server = Server(workers=workers)
    try:
        # With no user at all, Basic is refused before any hash: one user
        # makes every unknown name cost the dummy hash, as in the issue.
        subprocess.run([os.path.join(BIN, "flask"), "--app", "wsgi", "a2a", "users",
                        "create", "alice", "--password-stdin"], cwd=REPO,
                       env=server.env, input="right\n", text=True, check=True,
                       capture_output=True, timeout=60)
        task_id = post(server, send_body())[2]["result"]["id"]
        alone = _innocent(server, task_id, 3.0)
        pids = server.workers()
        cpu_before = _cpu_seconds(pids)
        statuses, retry_after, lock = collections.Counter(), [0], threading.Lock()
        stop, counter = time.monotonic() + seconds, [0]

        def attack():
            session = requests.Session()
            while time.monotonic() < stop:
                with lock:
                    counter[0] += 1
                    name = "new-name-%d" % counter[0]
                auth = base64.b64encode(("%s:guess" % name).encode()).decode()
                try:
                    r = session.post(server.url + ECHO, json=send_body(), timeout=30,
                                     headers={"Authorization": "Basic " + auth})
                    status = r.status_code
                    has_retry = status == 429 and r.headers.get("Retry-After", "").isdigit()
                except requests.RequestException as exc:
                    status, has_retry = type(exc).__name__, False
                with lock:
                    statuses[status] += 1
                    retry_after[0] += has_retry

        attackers = [threading.Thread(target=attack) for _ in range(threads)]
        for a in attackers:
            a.start()
        time.sleep(0.3)
        busy = _innocent(server, task_id, seconds - 0.5)
        for a in attackers:
            a.join(60)
        cpu = _cpu_seconds(pids) - cpu_before
        # Each worker allows A2A_LOGIN_FAILURES_PER_ADDRESS (30) a minute.
        hashes_allowed = workers * 30
        checks = {"429 with Retry-After": statuses[429] > 0 and retry_after[0] == statuses[429],
                  "slow hashes <= %d" % hashes_allowed: statuses[401] <= hashes_allowed,
                  "only 401/429": set(statuses) <= {401, 429},
                  "innocent calls all answered": float("inf") not in busy}
        return ("%d anonymous threads, a new user name per try, %.0f s: %d tries (%s), "
                "%d of the 429s with Retry-After; workers' CPU %.1f s in %.0f s; innocent "
                "tasks/get p99 %.1f ms alone -> %.1f ms (%d calls); %s"
                % (threads, seconds, sum(statuses.values()),
                   ", ".join("%s: %d" % kv for kv in sorted(statuses.items(), key=str)),
                   retry_after[0], cpu, seconds, _p99(alone) * 1000,
                   _p99(busy) * 1000, len(busy), _verdict(checks)))
    finally:
        server.stop()


FINDINGS = [
    ("Q1", "one key filling the disk", q1_disk_filling),
    ("P1", "PostgreSQL crash with the agent's run in between", p1_postgres_crash),
    ("I1", "long ids, both backends", i1_long_ids),
    ("B1", "Basic with new names", b1_basic_new_names),
]
