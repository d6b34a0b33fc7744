"""gunicorn settings for the service: ``gunicorn wsgi:app`` from this folder
reads this file. Command-line options (``--bind``, ``--workers``...) and
``GUNICORN_CMD_ARGS`` override what is set here.

Copy it beside your own app: nothing here is specific to the demo.
"""

import gc
import glob
import multiprocessing
import os

import gunicorn.config

from a2a_flask.config import DEFAULTS, REFUSED_BODY_DRAIN_BYTES, parse_value

# Imported here, in the master, so that every worker forks with them
# loaded: the workers share their pages with the master (frozen in
# on_starting, out of the collections that would copy them), and a worker
# recycled by max_requests starts without ~250 ms of imports. The storage
# backend is imported only when the app is built (storage.open_storage).
import a2a_flask.extension  # noqa: E402,F401  Flask and the service
import a2a_flask.storage.sqlite  # noqa: E402,F401

bind = "127.0.0.1:8000"  # behind nginx (deploy/nginx-a2a.conf)
# Threaded workers (gthread): a call holds a thread, not a process, while its
# agent runs or while a blocking send waits for a background turn (A2A 1.0
# section 3.2.2: until the turn ends, however long). One process per core
# runs Python; 1,024 threads per process wait (sleeping threads cost no CPU, and
# a thread is only started when every other one is busy). 1,000 callers
# waiting at once need 1,000 threads: each worker could take them all, since
# a burst of connections is not shared evenly between workers (with 512 per
# worker, 1,000 callers of a 30 s agent saw a p99 of 61 s: calls queued
# behind a full worker). Past that, calls wait in the listen backlog, then
# nginx answers 502/504 (docs/serving.md). Measured in
# bench/README.md ("Agents that wait"); the sync workers of before answered
# one call per process, so 5 callers blocked the service.
workers = max(multiprocessing.cpu_count(), 2)
worker_class = "gthread"
threads = 1024
# A worker accepts this many connections at most: a few more than its
# threads (nginx's kept-alive ones), so that a worker whose threads are all
# waiting leaves new calls to another worker instead of queueing them.
worker_connections = threads + 32
# gthread's timeout is the heartbeat of a worker's main loop, not a limit on
# a call: a blocking send may wait 10 minutes and more (nginx's
# proxy_read_timeout is the limit, deploy/nginx-a2a-proxy.conf). A stuck worker is
# still restarted after it.
timeout = 120
graceful_timeout = 30
keepalive = 5  # nginx keeps connections to us open
# Recycle workers now and then: a slow leak in an agent cannot grow for ever.
# Rarely, though: a worker that is replaced stalls the calls queued on it (the
# app is built again in the new worker). Every 2,000 calls made message/send's
# p99 88 ms under the benchmark's load, against 21 ms with no recycling
# (bench/run.py --quick --only durable,us, same run); at 100,000 a busy
# worker is replaced every few minutes, an idle one practically never.
max_requests = 100000
max_requests_jitter = 10000
errorlog = "-"  # stderr: the journal under systemd; --error-logfile to a file
loglevel = "info"
accesslog = None  # nginx logs requests; a2a_flask.access logs each call

# gunicorn 25+ opens a control socket by default, at one path shared by every
# gunicorn of the user: off. Older versions do not know the setting.
if hasattr(gunicorn.config, "ControlSocketDisable"):
    control_socket_disable = True

LOG_FORMAT = os.environ.get("A2A_LOG_FORMAT", DEFAULTS["A2A_LOG_FORMAT"])


# A body declared past this is refused unread (413); the app drains one
# over the limit by less. gunicorn would close the connection after the
# 413 anyway (it drains 64 KiB at most) though the answer said keep-alive,
# and the client's next request on it would be lost: say "close" instead.
# The limit is read from the environment: an app that sets it in its code
# sets A2A_MAX_CONTENT_LENGTH in gunicorn's environment too.
CLOSE_PAST_BYTES = parse_value(
    "A2A_MAX_CONTENT_LENGTH",
    os.environ.get("A2A_MAX_CONTENT_LENGTH",
                   str(DEFAULTS["A2A_MAX_CONTENT_LENGTH"]))) \
    + REFUSED_BODY_DRAIN_BYTES


# A kept-alive connection is closed after this many requests, as nginx
# closes its own after keepalive_requests: its client (nginx's upstream
# pool, another agent) connects again, and the worker that accepts the new
# connection first is the one whose main loop is free, the less busy one.
# Without it connections stay on the worker that accepted them: when a
# burst of them all landed on one of two workers, that worker served them
# all at its own rate while the other idled, for as long as they lasted.
# 25 spreads them again within a second or two; one connection per 25 calls
# costs nothing measurable (docs/benchmarks.md, "Connections that all land
# on one worker"; bench/run.py's row US skewed).
KEEPALIVE_REQUESTS = 25


def pre_request(worker, req):
    if req.req_number >= KEEPALIVE_REQUESTS:
        req.force_close()
    for name, value in req.headers:
        if name == "CONTENT-LENGTH":
            if value.isdigit() and int(value) > CLOSE_PAST_BYTES:
                req.force_close()
            return


def _route_logs(server):
    from a2a_flask.logs import route_to_gunicorn

    route_to_gunicorn(server.log.error_log, LOG_FORMAT)


def on_starting(server):
    # In the master, before any worker forks: the workers inherit it.
    _route_logs(server)
    # A worker told to stop while it boots stops once booted, instead of
    # serving on until the master kills it (a2a_flask.stopping).
    from a2a_flask.stopping import keep_early_stop_signals

    keep_early_stop_signals()
    # What the master imported is shared with every worker it forks, as long
    # as nothing writes to its pages: frozen, the workers' collections leave
    # it alone (docs/benchmarks.md, "The master's imports").
    gc.collect()
    gc.freeze()
    metrics_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if metrics_dir:  # counts of a previous run must not add up with ours
        os.makedirs(metrics_dir, exist_ok=True)
        for path in glob.glob(os.path.join(metrics_dir, "*.db")):
            os.remove(path)


def post_worker_init(worker):
    from a2a_flask.stopping import deliver_early_stop_signals

    deliver_early_stop_signals()
    # The app is built: what exists now lives as long as the worker. Frozen,
    # it is left out of every collection; a full one walked all of it while
    # every call of the worker waited (docs/benchmarks.md, "Collections").
    gc.collect()
    gc.freeze()


def on_reload(server):
    # SIGHUP: gunicorn made new log handlers; follow them.
    _route_logs(server)


def child_exit(server, worker):
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
