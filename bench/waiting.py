#!/usr/bin/env python3
"""Agents that wait on a model: N concurrent callers of an agent that waits S
seconds, blocking or polling, over A2A 0.3 and 1.0, on the shipped
configuration, beside the official SDK servers running the same agent.

    python bench/waiting.py rows [--sizes 20x2,400x5,1000x30] [--servers ...]
    python bench/waiting.py starve     # echo p99 while 200 blocking callers wait
    python bench/waiting.py echo       # echo: old and new shipped config, interleaved
    python bench/waiting.py servers --sizes 400x5   # gevent, uWSGI, Waitress beside it
    python bench/waiting.py all

US: ``gunicorn -c gunicorn.conf.py`` (the shipped file, nothing tuned) on
bench/servers/background_app.py, and ``flask a2a worker`` with the arguments
of deploy/a2a-worker.service; agents ``wait`` (in the request) and
``wait_bg`` (background), both ``time.sleep(S)``. SDK: a2a-sdk 0.3.x
(bench/servers/peer.py) and 1.3.x (peer13.py, its own venv: bench/sdk13.py)
under uvicorn, their ``InMemoryTaskStore`` and ``DatabaseTaskStore`` on
SQLite, the executor sleeping S (``PEER_WAITS=1``; ``await asyncio.sleep``).
One API key per caller (US; the SDK servers check none). Polling callers poll
every 0.5 s on both sides (bench/waitload.py). Each row on fresh servers;
turns/s is turns / (last answer - first send); RSS is the peak of the summed
RSS of every process of the server (gunicorn master and workers plus the
worker for US), sampled every 0.5 s; PSS beside it (shared pages split among
the processes sharing them; printed, not judged). Targets (PASS/FAIL, ratios to the SDK
in the same run): turns/s >= 0.95 x the fastest SDK row of the same size and
mode; median <= 1.1 x S; RSS <= 2 x the SDK in-memory server of the same
protocol.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from loadgen import run_load  # noqa: E402
from processes import GUNICORN_CONF, HOST, PY, ROOT, Server, free_port, log, stop_all  # noqa: E402
from waitload import RssSampler, run_callers  # noqa: E402

SERVERS_DIR = os.path.join(HERE, "servers")
US_PATH = "/api/v1/agents/%s/a2a"
#: The echo configuration before this benchmark's issue: sync workers, 2 per
#: core plus one (what `echo` compares the shipped file against).
OLD_CONFIG_REV = "26f7b05"


def worker_args():
    """The arguments deploy/a2a-worker.service gives ``flask a2a worker``."""
    with open(os.path.join(ROOT, "deploy", "a2a-worker.service")) as unit:
        for line in unit:
            if line.startswith("ExecStart="):
                words = line.split()
                return words[words.index("worker") + 1:]
    raise RuntimeError("no ExecStart in deploy/a2a-worker.service")


class Us:
    """gunicorn (the shipped config) plus the worker on a fresh copy of a
    database holding ``keys`` API keys."""

    def __init__(self, tmp, template, keys, conf=GUNICORN_CONF, kind="shipped"):
        self.tmp, self.template, self.keys, self.conf = tmp, template, keys, conf
        self.kind = kind
        self.servers = []

    def web_command(self, port):
        """The web server: gunicorn with ``conf`` (the shipped one), or
        another WSGI server as docs/serving.md runs it (``servers``)."""
        bind = "%s:%d" % (HOST, port)
        gunicorn = [PY, "-m", "gunicorn", "-b", bind, "--chdir", SERVERS_DIR]
        uwsgi = [os.path.join(os.path.dirname(PY), "uwsgi"), "--http-socket", bind,
                 "--master", "--processes", "2", "--threads", "256", "--module",
                 "background_app:app", "--die-on-term", "--disable-logging",
                 "--listen", "1024", "--add-header", "Connection: close"]
        return {
            "shipped": gunicorn + ["-c", self.conf, "background_app:app"],
            "gevent": gunicorn + ["-c", self.conf, "-k", "gevent", "--worker-connections",
                                  "1000", "background_app:app"],
            "uwsgi": uwsgi,
            "waitress": [os.path.join(os.path.dirname(PY), "waitress-serve"),
                         "--listen=" + bind, "--threads=1024", "--connection-limit=2000",
                         "background_app:app"],
        }[self.kind]

    def start(self):
        db = os.path.join(self.tmp, "us-%d.sqlite3" % time.monotonic_ns())
        shutil.copy(self.template, db)
        port = free_port()
        env = {"A2A_DATABASE": db, "PYTHONUNBUFFERED": "1"}
        web = Server("us-" + self.kind, self.web_command(port), env, SERVERS_DIR, port,
                     US_PATH, {}, self.tmp, db=db)
        self.servers = [web.start()]
        worker = Server("us-worker", [PY, "-m", "flask", "--app", "background_app", "a2a",
                                      "worker"] + worker_args(), env, SERVERS_DIR, port,
                        None, {}, self.tmp)
        worker._log = open(worker.logfile, "wb")
        worker.proc = subprocess.Popen(worker.cmd, cwd=worker.cwd, env=worker.env,
                                       stdout=worker._log, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
        self.servers.append(worker)
        deadline = time.time() + 60
        while "running agents" not in worker.tail(50):
            if time.time() > deadline or worker.proc.poll() is not None:
                raise RuntimeError("the worker did not start:\n" + worker.tail())
            time.sleep(0.1)
        self.port = port
        return self

    def headers(self, n):
        return [{"Authorization": "Bearer " + key} for key in self.keys[:n]]

    def pgids(self):
        return [s.proc.pid for s in self.servers]

    def stop(self):
        for s in self.servers:
            s.stop()


class Sdk:
    """An official SDK server (0.3 or 1.3) with the waiting executor."""

    def __init__(self, tmp, version, store, python):
        self.tmp, self.version, self.store, self.python = tmp, version, store, python

    def start(self):
        port = free_port()
        script = "peer.py" if self.version == "0.3" else "peer13.py"
        env = {"PEER_WAITS": "1", "PEER_STORE": self.store, "PEER_PORT": str(port)}
        if self.store == "sqlite":
            env["PEER_DB"] = os.path.join(self.tmp, "sdk-%d.sqlite3" % time.monotonic_ns())
            subprocess.run([self.python, script, "--init-db", env["PEER_DB"]], cwd=SERVERS_DIR,
                           check=True, timeout=120, env=dict(os.environ, **env))
        self.server = Server("sdk%s-%s" % (self.version, self.store),
                             [self.python, script, "--serve", HOST, str(port), "1"], env,
                             SERVERS_DIR, port, "/", {}, self.tmp).start()
        self.port = port
        return self

    def headers(self, n):
        return [{} for _ in range(n)]

    def pgids(self):
        return [self.server.proc.pid]

    def stop(self):
        self.server.stop()


def make_template(tmp, count):
    """A database with ``count`` API keys (one per simulated caller)."""
    from a2a_flask.auth.credentials import Credentials
    from a2a_flask.storage.sqlite import SqliteStorage

    path = os.path.join(tmp, "template.sqlite3")
    storage = SqliteStorage(path)
    storage.migrate()
    credentials = Credentials(storage)
    keys = [credentials.create_key(None, "caller %d" % i)[1] for i in range(count)]
    storage.connection().execute("PRAGMA wal_checkpoint(TRUNCATE)")
    storage.close()
    return path, keys


def one_row(server, path, n, seconds, blocking, proto):
    server.start()
    try:
        with RssSampler(server.pgids()) as rss:
            figures = run_callers(server.port, path, server.headers(n), seconds, blocking, proto,
                                  deadline=seconds * 3 + 120)
        figures["rss_mb"] = rss.peak_mb
        figures["pss_mb"] = rss.peak_pss_mb
        return figures
    finally:
        server.stop()


def rows(args, tmp, template, keys):
    sizes = [tuple(int(x) for x in size.split("x")) for size in args.sizes.split(",")]
    sdk13 = args.sdk13_python
    if sdk13 is None and "sdk13" in args.servers:
        import sdk13 as sdk13_module
        sdk13 = sdk13_module.ensure(args.sdk13_venv)[0]
    table = []
    for n, seconds in sizes:
        plan = []
        for proto in ("0.3", "1.0"):
            if "us" in args.servers:
                plan.append(("US in request", proto, True, Us(tmp, template, keys), "wait"))
                for blocking in (True, False):
                    plan.append(("US background", proto, blocking, Us(tmp, template, keys),
                                 "wait_bg"))
            version, python = ("0.3", PY) if proto == "0.3" else ("1.3", sdk13)
            if ("sdk03" if proto == "0.3" else "sdk13") in args.servers:
                for store in ("memory", "sqlite"):
                    for blocking in (True, False):
                        plan.append(("SDK %s %s" % (version, store), proto, blocking,
                                     Sdk(tmp, version, store, python), None))
        for name, proto, blocking, server, agent in plan:
            path = US_PATH % agent if agent else "/"
            figures = one_row(server, path, n, seconds, blocking, proto)
            row = dict(figures, name=name, proto=proto, n=n, s=seconds,
                       mode="blocking" if blocking else "polling")
            table.append(row)
            log("%-16s %s %-8s N=%-4d S=%-3d turns/s %6.1f  median %6.2f s  p99 %6.2f s  "
                "RSS %6.0f MB (PSS %4.0f)  errors %d %s%s"
                % (name, proto, row["mode"], n, seconds, row["turns_s"], row["median_s"],
                   row["p99_s"], row["rss_mb"], row["pss_mb"], row["errors"],
                   row["error_samples"][:1],
                   "" if blocking else "  send answered p99 %.2f s" % row["send_p99_s"]))
    judge(table)
    return table


def judge(table):
    log("\nTargets (ratios to the SDK rows of the same run):")
    for row in table:
        if not row["name"].startswith("US"):
            continue
        peers = [r for r in table if r["name"].startswith("SDK") and r["n"] == row["n"]
                 and r["s"] == row["s"] and r["mode"] == row["mode"]]
        memory = [r for r in peers if "memory" in r["name"] and r["proto"] == row["proto"]]
        label = "%s %s %s N=%d S=%d" % (row["name"], row["proto"], row["mode"], row["n"], row["s"])
        if peers:
            best = max(r["turns_s"] for r in peers)
            ratio = row["turns_s"] / best if best else float("nan")
            log("  %-44s turns/s %.2fx fastest SDK (>= 0.95): %s"
                % (label, ratio, "PASS" if ratio >= 0.95 else "FAIL"))
        median = row["median_s"] / row["s"]
        log("  %-44s median %.2fx S (<= 1.10): %s"
            % (label, median, "PASS" if median <= 1.10 and row["errors"] == 0 else "FAIL"))
        if memory:
            ratio = row["rss_mb"] / memory[0]["rss_mb"]
            log("  %-44s RSS %.2fx SDK in memory (<= 2): %s  (by PSS %.2fx, not judged)"
                % (label, ratio, "PASS" if ratio <= 2 else "FAIL",
                   row["pss_mb"] / memory[0]["pss_mb"]))


def starve(args, tmp, template, keys):
    """Echo p99 of one more caller, idle and while 200 blocking callers wait."""
    import threading

    us = Us(tmp, template, keys).start()
    try:
        header = us.headers(1)[0]
        idle = run_load(HOST, us.port, US_PATH % "echo", headers=header, duration=5,
                        connections=1, procs=1)
        waiting = threading.Thread(target=run_callers, args=(
            us.port, US_PATH % "wait_bg", us.headers(200)[1:] + us.headers(1), 15, True))
        waiting.start()
        time.sleep(3)
        busy = run_load(HOST, us.port, US_PATH % "echo", headers=header, duration=5,
                        connections=1, procs=1)
        waiting.join()
    finally:
        us.stop()
    ratio = busy["p99_ms"] / idle["p99_ms"]
    log("echo p99 idle %.1f ms, while 200 blocking callers wait %.1f ms: %.2fx (<= 2): %s"
        % (idle["p99_ms"], busy["p99_ms"], ratio, "PASS" if ratio <= 2 else "FAIL"))


def echo(args, tmp, template, keys):
    """Echo throughput of the old and the new shipped config, interleaved."""
    old_conf = os.path.join(tmp, "old-gunicorn.conf.py")
    with open(old_conf, "w") as f:
        f.write(subprocess.run(["git", "show", "%s:gunicorn.conf.py" % args.old_config],
                               cwd=ROOT, capture_output=True, text=True, check=True).stdout)
    results = {"old": [], "new": []}
    for _ in range(args.rounds):
        for label, conf in (("old", old_conf), ("new", GUNICORN_CONF)):
            us = Us(tmp, template, keys, conf=conf).start()
            try:
                run_load(HOST, us.port, US_PATH % "echo", headers=us.headers(1)[0], duration=2,
                         connections=args.connections)  # warm
                r = run_load(HOST, us.port, US_PATH % "echo", headers=us.headers(1)[0],
                             duration=args.duration, connections=args.connections)
            finally:
                us.stop()
            results[label].append(r)
            log("echo %s config: %.0f req/s, p99 %.1f ms, errors %d"
                % (label, r["rps"], r["p99_ms"], r["errors"]))

    def median(values):
        return sorted(values)[len(values) // 2]

    old_rps, new_rps = (median([r["rps"] for r in results[k]]) for k in ("old", "new"))
    old_p99, new_p99 = (median([r["p99_ms"] for r in results[k]]) for k in ("old", "new"))
    log("echo, medians of %d interleaved rounds: old %.0f req/s p99 %.1f ms; new %.0f req/s "
        "p99 %.1f ms; req/s %.2fx (>= 0.95): %s; p99 %.2fx (<= 1.10): %s"
        % (args.rounds, old_rps, old_p99, new_rps, new_p99, new_rps / old_rps,
           "PASS" if new_rps >= 0.95 * old_rps else "FAIL", new_p99 / old_p99,
           "PASS" if new_p99 <= 1.10 * old_p99 else "FAIL"))


def servers(args, tmp, template, keys):
    """Other WSGI servers on the same app and worker (docs/serving.md's
    table): echo throughput, and N blocking callers of a background agent."""
    n, seconds = (int(x) for x in args.sizes.split(",")[0].split("x"))
    for kind in args.kinds.split(","):
        us = Us(tmp, template, keys, kind=kind).start()
        try:
            run_load(HOST, us.port, US_PATH % "echo", headers=us.headers(1)[0], duration=2,
                     connections=args.connections)
            echo_load = run_load(HOST, us.port, US_PATH % "echo", headers=us.headers(1)[0],
                                 duration=args.duration, connections=args.connections)
        finally:
            us.stop()
        row = one_row(Us(tmp, template, keys, kind=kind), US_PATH % "wait_bg", n, seconds,
                      True, "0.3")
        log("%-9s echo %5.0f req/s p99 %6.1f ms errors %d | %d blocking callers of a %d s "
            "background agent: %5.1f turns/s median %5.2f s RSS %4.0f MB errors %d"
            % (kind, echo_load["rps"], echo_load["p99_ms"], echo_load["errors"], n, seconds,
               row["turns_s"], row["median_s"], row["rss_mb"], row["errors"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["rows", "starve", "echo", "servers", "all"])
    parser.add_argument("--kinds", default="shipped,gevent,uwsgi,waitress",
                        help="servers: the WSGI servers to compare")
    parser.add_argument("--sizes", default="20x2,400x5,1000x30",
                        help="NxS,...: N callers of an agent that waits S seconds")
    parser.add_argument("--servers", default="us,sdk03,sdk13")
    parser.add_argument("--sdk13-venv", default=None)
    parser.add_argument("--sdk13-python", default=None)
    parser.add_argument("--old-config", default=OLD_CONFIG_REV)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=8.0)
    parser.add_argument("--connections", type=int, default=32)
    args = parser.parse_args()
    if args.sdk13_venv is None:
        import sdk13 as sdk13_module
        args.sdk13_venv = sdk13_module.DEFAULT_VENV
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    tmp = tempfile.mkdtemp(prefix="a2a-waiting-")
    try:
        most = max(int(size.split("x")[0]) for size in args.sizes.split(","))
        template, keys = make_template(tmp, max(most, 201))
        for what in (["rows", "starve", "echo"] if args.what == "all" else [args.what]):
            {"rows": rows, "starve": starve, "echo": echo,
             "servers": servers}[what](args, tmp, template, keys)
    finally:
        stop_all()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
