"""The rows of the benchmark: what each configuration is and how its server starts.

One ``Row`` per configuration, in the order they run in each round.  A row
``needs`` the throwaway PostgreSQL cluster (``postgres.py``) or the a2a-sdk
1.3 venv (``sdk13.py``); when that is missing here, or when the code it
measures does not exist yet (``pending``), the row is printed as skipped with
the reason instead of failing the run.
"""

import importlib.util
import os
import subprocess

from processes import HERE, HOST, PY, ROOT, Server, free_port, gunicorn_cmd

US_PATH = "/api/v1/agents/echo/a2a"
SERVERS = os.path.join(HERE, "servers")


class Row:
    def __init__(self, key, label, what, proto="0.3", needs=(), pending=None):
        self.key, self.label, self.what, self.proto = key, label, what, proto
        self.needs = set(needs)
        self.pending = pending


def _us_postgres_pending():
    """Why "US on PostgreSQL" cannot run here: a2a_flask without its
    PostgreSQL store (``a2a_flask.storage.postgres``, the ``postgres`` extra)."""
    try:
        if importlib.util.find_spec("a2a_flask.storage.postgres") is not None:
            return None
    except ImportError:
        pass
    return "a2a_flask.storage.postgres cannot be imported (pip install -e '.[postgres]')"


ROWS = [
    Row("ceiling", "CEILING", "bare Flask route on gunicorn, no database"),
    Row("durable", "DURABLE CEILING", "the same route + 1 SQLite INSERT per send, 1 SELECT per get"),
    Row("floor", "FLOOR", "one route doing only the contract's work: marshmallow, key lookup, "
        "working committed before the agent, outcome, one-statement read (servers/floor.py)"),
    Row("floor-sync", "FLOOR sync", "FLOOR with `-k sync --threads 1`: the limit of the shipped "
        "file against sync workers (a bare route doing the contract's work)"),
    Row("us", "US", "gunicorn wsgi:app, echo agent, SQLite"),
    Row("us-sync", "US sync", "US with `-k sync --threads 1`: the shipped gunicorn.conf.py (gthread) "
        "against sync workers, same tree, same run"),
    Row("us-demo", "US demo", "US as `gunicorn wsgi:app` runs by default: the demo's in-process "
        "claimers of background turns on (wsgi.py's A2A_IN_PROCESS_WORKER=4); every other US row "
        "sets 0, the production setting (deploy/a2a.env)"),
    Row("us-skewed", "US skewed", "US with one of its workers paused for the first 0.5 s of each "
        "load, so that every connection of the load opens on the other worker; gunicorn.conf.py's "
        "KEEPALIVE_REQUESTS must spread them again (a run where they all landed on one worker "
        "served at that worker's rate)"),
    Row("us10", "US 1.0", "the same, A2A 1.0 JSON-RPC (SendMessage/GetTask, A2A-Version: 1.0)",
        proto="1.0"),
    Row("peer-sqlite", "PEER sqlite", "a2a-sdk 0.3.x, DatabaseTaskStore on SQLite (aiosqlite)"),
    Row("peer-memory", "PEER memory", "a2a-sdk 0.3.x, InMemoryTaskStore"),
    Row("peer13-sqlite", "PEER 1.3 sqlite", "a2a-sdk 1.3.x (A2A 1.0), DatabaseTaskStore on SQLite",
        proto="1.0", needs={"sdk13"}),
    Row("peer13-memory", "PEER 1.3 memory", "a2a-sdk 1.3.x (A2A 1.0), InMemoryTaskStore",
        proto="1.0", needs={"sdk13"}),
    Row("pg-durable", "PG DURABLE CEILING", "bare Flask route + 1 INSERT / 1 SELECT through psycopg_pool",
        needs={"postgres"}),
    Row("pg-floor", "PG FLOOR", "FLOOR on PostgreSQL", needs={"postgres"},
        pending=_us_postgres_pending()),
    Row("pg-floor-sync", "PG FLOOR sync", "PG FLOOR with `-k sync --threads 1`", needs={"postgres"},
        pending=_us_postgres_pending()),
    Row("us-pg", "US postgres", "gunicorn wsgi:app, echo agent, A2A_DATABASE=postgresql://",
        needs={"postgres"}, pending=_us_postgres_pending()),
    Row("us-pg-sync", "US postgres sync", "US postgres with `-k sync --threads 1`",
        needs={"postgres"}, pending=_us_postgres_pending()),
    Row("peer-pg", "PEER postgres", "a2a-sdk 0.3.x, DatabaseTaskStore on PostgreSQL (asyncpg)",
        needs={"postgres"}),
    Row("peer13-pg", "PEER 1.3 postgres", "a2a-sdk 1.3.x (A2A 1.0), DatabaseTaskStore on PostgreSQL",
        proto="1.0", needs={"postgres", "sdk13"}),
]
BY_KEY = {r.key: r for r in ROWS}
CONFIGS = [r.key for r in ROWS]
# the scale run's two US configurations (prefill.py)
BY_KEY["us-empty"] = Row("us-empty", "US empty db", "US on an empty database")
BY_KEY["us-scale"] = Row("us-scale", "US prefilled db", "US on the pre-filled database")
LABELS = {k: r.label for k, r in BY_KEY.items()}
METHODS = {"send": "message/send", "get": "tasks/get"}
METHODS_10 = {"send": "SendMessage", "get": "GetTask"}
#: The rows run as their base row with sync workers, one thread each.
SYNC_ROWS = {"us-sync": "us", "us-pg-sync": "us-pg", "floor-sync": "floor",
             "pg-floor-sync": "pg-floor"}
SYNC_WORKERS = ["-k", "sync", "--threads", "1"]
# in-memory stores are per process: a tasks/get can land on a worker that never saw the task
PER_PROCESS = {"peer-memory", "peer13-memory"}


def round_order(cfgs, rd):
    """``cfgs`` in the order round ``rd`` runs them: in even rounds each sync
    row runs before its base row, so that a shipped/sync ratio averages both
    orders, not one row always run first of its pair."""
    order = list(cfgs)
    if rd % 2 == 0:
        for sync, base in SYNC_ROWS.items():
            if sync in order and base in order:
                i, j = order.index(sync), order.index(base)
                order[i], order[j] = order[j], order[i]
    return order


def method_label(cfg, mode):
    return (METHODS_10 if BY_KEY[cfg].proto == "1.0" else METHODS)[mode]


def unavailable(cfg, ctx):
    """Why ``cfg`` cannot run in this run (``ctx`` from run.py), or None."""
    row = BY_KEY[cfg]
    if row.pending:
        return row.pending
    if "postgres" in row.needs and ctx.pg is None:
        return ctx.pg_missing
    if "sdk13" in row.needs and ctx.py13 is None:
        return ctx.sdk13_missing
    return None


def _pg_name(cfg, tag):
    return f"bench_{cfg}_{tag}".replace("-", "_")


def make_server(cfg, ctx, tag, db=None, key=None):
    """The (not yet started) Server of ``cfg``, on a fresh database unless ``db``."""
    return count_postgres(_make_server(cfg, ctx, tag, db, key), ctx)


def _make_server(cfg, ctx, tag, db=None, key=None):
    args, tmp = ctx.args, ctx.tmp
    port = free_port()
    base = os.path.join(tmp, f"{cfg}-{tag}")
    row = BY_KEY[cfg]
    if cfg in ("ceiling", "durable", "pg-durable"):
        env = {"BENCH_DB": base + ".sqlite3" if cfg == "durable" else ""}
        if cfg == "pg-durable":
            env["BENCH_PG"] = db = ctx.pg.create_db(_pg_name(cfg, tag))
            subprocess.run([PY, os.path.join(SERVERS, "ceiling.py"), "--init-pg", db], check=True, timeout=120)
        return Server(cfg, gunicorn_cmd(args.workers, port, "ceiling:app", chdir=SERVERS),
                      env, ROOT, port, "/rpc", {}, tmp, db=db or env["BENCH_DB"] or None)
    if cfg in ("floor", "pg-floor", "floor-sync", "pg-floor-sync"):
        db = (ctx.pg.create_db(_pg_name(cfg, tag)) if cfg.startswith("pg-")
              else base + ".sqlite3")
        env, headers = ctx.auth.server_env(db)
        extra = SYNC_WORKERS if cfg in SYNC_ROWS else []
        return Server(cfg, gunicorn_cmd(args.workers, port, "floor:app", chdir=SERVERS,
                                        extra=extra),
                      env, ROOT, port, "/rpc", headers, tmp, db=db)
    if cfg in ("us", "us-demo", "us-skewed", "us10", "us-empty", "us-scale", "us-pg", "us-sync", "us-pg-sync"):
        if cfg in ("us-pg", "us-pg-sync"):
            db = ctx.pg.create_db(_pg_name(cfg, tag))
        db = db or base + ".sqlite3"
        env, headers = ctx.auth.server_env(db, key)
        # The production setting (deploy/a2a.env: background turns run by
        # `flask a2a worker`), as issue 31's targets are measured; the demo's
        # claimers poll the storage in every web process (row us-demo).
        if cfg != "us-demo":
            env["A2A_IN_PROCESS_WORKER"] = "0"
        extra = SYNC_WORKERS if cfg in SYNC_ROWS else []
        return Server(cfg, gunicorn_cmd(args.workers, port, "wsgi:app", extra=extra), env, ROOT,
                      port, US_PATH, headers, tmp, db=db, proto=row.proto)
    if cfg.startswith("peer"):
        store = {"pg": "postgres"}.get(cfg.split("-")[1], cfg.split("-")[1])
        py, script = (ctx.py13, "peer13.py") if cfg.startswith("peer13") else (PY, "peer.py")
        env = {"PEER_STORE": store, "PEER_PORT": str(port)}
        if store == "sqlite":
            env["PEER_DB"] = base + ".sqlite3"
        elif store == "postgres":
            env["PEER_DB"] = ctx.pg.create_db(_pg_name(cfg, tag))
        if store != "memory":  # the SDK's table, before several workers race to create it
            subprocess.run([py, os.path.join(SERVERS, script), "--init-db", env["PEER_DB"]],
                           check=True, timeout=120)
        cmd = [py, os.path.join(SERVERS, script), "--serve", HOST, str(port),
               str(args.peer_workers)] + (["--stock"] if args.peer_stock_uvicorn else [])
        return Server(cfg, cmd, env, ROOT, port, "/", {}, tmp, db=env.get("PEER_DB"), proto=row.proto)
    raise ValueError(cfg)


def count_postgres(srv, ctx):
    """The CPU of the PostgreSQL rows' cluster is part of the server's, not 'other'."""
    if srv.db and srv.db.startswith("postgresql://") and ctx.pg is not None:
        srv.cpu_parent = ctx.pg.postmaster_pid()
    return srv


def release(srv, ctx):
    """Drop the database a finished server used (SQLite files or a PostgreSQL database)."""
    if not srv.db:
        return
    if srv.db.startswith("postgresql://"):
        if ctx.pg is not None:
            ctx.pg.drop_db(srv.db.rsplit("/", 1)[1])
        return
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(srv.db + suffix):
            os.remove(srv.db + suffix)
