"""What both PEER servers share: the task store they are given, and running
their ASGI app under uvicorn, its workers spread and with TCP_NODELAY.

Used by ``peer.py`` (a2a-sdk 0.3.x) and ``peer13.py`` (a2a-sdk 1.3.x, another
venv): only names both SDK versions have are imported, and only when called.

``PEER_STORE`` is ``memory`` (``InMemoryTaskStore``, process-local),
``sqlite`` (``DatabaseTaskStore`` on ``sqlite+aiosqlite:///$PEER_DB``) or
``postgres`` (``DatabaseTaskStore`` with ``PEER_DB`` a ``postgresql://`` URL,
driven through asyncpg); the SDK's defaults otherwise (no pragmas, its pool).

uvicorn's supervisor for several workers binds the listening socket with
``proto`` 0, so asyncio never sets TCP_NODELAY on the accepted connections and
every keep-alive answer waits ~40 ms for a delayed ACK (uvicorn issue #3149,
open for uvicorn 0.54; one worker binds through asyncio and is spared).
Its workers also share that one socket, and a worker's accept loop takes
every connection that is waiting: the 16 connections of a load, opened at
once, often all landed on one worker, and the round ran at one worker's
rate (docs/benchmarks.md, "The SDK's one-worker rounds").

Unless ``stock``, several workers are therefore run as one uvicorn server
per process, each on a socket of its own, made with ``IPPROTO_TCP`` (so
TCP_NODELAY is set) and bound with SO_REUSEPORT, so that the kernel spreads
the connections over them. ``stock`` runs uvicorn's own workers, bug and all.
"""

import os
import signal
import socket
import sys
import traceback


def engine(path):
    """``PEER_DB``: a SQLite file path, or a ``postgresql://`` URL (asyncpg)."""
    from sqlalchemy.ext.asyncio import create_async_engine

    if path.startswith("postgresql://"):
        return create_async_engine(path.replace("postgresql://", "postgresql+asyncpg://", 1))
    return create_async_engine(f"sqlite+aiosqlite:///{path}")


def make_store():
    from a2a.server.tasks import InMemoryTaskStore

    kind = os.environ.get("PEER_STORE", "memory")
    if kind == "memory":
        return InMemoryTaskStore()
    if kind in ("sqlite", "postgres"):
        from a2a.server.tasks import DatabaseTaskStore

        return DatabaseTaskStore(engine(os.environ["PEER_DB"]))
    raise SystemExit(f"PEER_STORE must be memory, sqlite or postgres, not {kind!r}")


async def init_db(path):
    """Create the SDK's table before several workers race to create it."""
    from a2a.server.tasks import DatabaseTaskStore

    eng = engine(path)
    await DatabaseTaskStore(eng).initialize()
    await eng.dispose()


def serve_uvicorn(app_ref, host, port, workers, stock=False):
    import uvicorn

    if workers > 1 and not stock:
        _serve_spread(app_ref, host, port, workers)
        return
    uvicorn.run(app_ref, app_dir=os.path.dirname(os.path.abspath(__file__)), host=host,
                port=port, workers=workers, access_log=False, log_level="warning")


def _serve_spread(app_ref, host, port, workers):
    """``workers`` uvicorn servers, one per forked process, each on its own
    SO_REUSEPORT socket (TCP, so that TCP_NODELAY is set); this process
    passes SIGTERM and SIGINT on and waits for them."""
    children = []
    for _ in range(workers):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                _serve_one(app_ref, host, port)
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stderr.flush()
                os._exit(code)
        children.append(pid)

    def pass_on(signum, frame):
        for pid in children:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, pass_on)
    signal.signal(signal.SIGINT, pass_on)
    for pid in children:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def _serve_one(app_ref, host, port):
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(2048)  # uvicorn's default backlog
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:  # as uvicorn.run(app_dir=...) does
        sys.path.insert(0, here)
    config = uvicorn.Config(app_ref, host=host, port=port, access_log=False,
                            log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])
