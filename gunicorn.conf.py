"""gunicorn settings for the service: ``gunicorn wsgi:app`` from this folder
reads this file. Command-line options (``--bind``, ``--workers``...) and
``GUNICORN_CMD_ARGS`` override what is set here.

Copy it beside your own app: nothing here is specific to the demo.
"""

import glob
import multiprocessing
import os

import gunicorn.config

from a2a_flask.config import DEFAULTS

# Imported here, in the master, so that every worker forks with it loaded: a
# worker recycled by max_requests then starts in ~30 ms instead of ~200 ms
# importing sqlite_utils (and numpy, when installed) again, a stall of its
# connections at every recycle. The backend is imported only when the app
# is built (storage.open_storage), so nothing else loads it in the master.
import a2a_flask.storage.sqlite  # noqa: E402,F401

bind = "127.0.0.1:8000"  # behind nginx (deploy/nginx-a2a.conf)
# Sync workers: each answers one call at a time, and a turn holds its worker
# while the agent runs. Two per core plus one keeps the cores busy while some
# workers wait on a model or a database.
workers = multiprocessing.cpu_count() * 2 + 1
# Measured against gthread with keep-alive (bench/README.md, "Profile"): on
# 127.0.0.1 with keep-alive clients, gthread took 10-60% more CPU per call
# than sync, for a bare Flask route and for this service alike (its poller,
# thread pool and GIL hand-offs cost more than the TCP connect they save).
worker_class = "sync"
# A turn may take a while (a model, a remote service): a worker silent for
# longer is killed, and its task failed by the next reader.
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


def _route_logs(server):
    from a2a_flask.logs import route_to_gunicorn

    route_to_gunicorn(server.log.error_log, LOG_FORMAT)


def on_starting(server):
    # In the master, before any worker forks: the workers inherit it.
    _route_logs(server)
    metrics_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if metrics_dir:  # counts of a previous run must not add up with ours
        os.makedirs(metrics_dir, exist_ok=True)
        for path in glob.glob(os.path.join(metrics_dir, "*.db")):
            os.remove(path)


def on_reload(server):
    # SIGHUP: gunicorn made new log handlers; follow them.
    _route_logs(server)


def child_exit(server, worker):
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
