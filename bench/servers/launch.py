"""What both PEER servers share: the task store they are given, and running
their ASGI app under uvicorn with the TCP_NODELAY fix.

Used by ``peer.py`` (a2a-sdk 0.3.x) and ``peer13.py`` (a2a-sdk 1.3.x, another
venv): only names both SDK versions have are imported, and only when called.

``PEER_STORE`` is ``memory`` (``InMemoryTaskStore``, process-local),
``sqlite`` (``DatabaseTaskStore`` on ``sqlite+aiosqlite:///$PEER_DB``) or
``postgres`` (``DatabaseTaskStore`` with ``PEER_DB`` a ``postgresql://`` URL,
driven through asyncpg); the SDK's defaults otherwise (no pragmas, its pool).

uvicorn's supervisor for several workers binds the listening socket with
``proto`` 0, so asyncio never sets TCP_NODELAY on the accepted connections and
every keep-alive answer waits ~40 ms for a delayed ACK (uvicorn issue #3149,
open for uvicorn 0.54).  Unless ``stock``, the socket is re-created with
``IPPROTO_TCP``, as the single-worker path does, so the peer is measured
without that bug.
"""

import os
import socket


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
    from uvicorn.config import Config

    if not stock:
        bind_socket = Config.bind_socket

        def bind_tcp_socket(self):
            sock = bind_socket(self)
            if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.proto == 0:
                sock = socket.socket(sock.family, sock.type, socket.IPPROTO_TCP, fileno=sock.detach())
            return sock

        Config.bind_socket = bind_tcp_socket
    uvicorn.run(app_ref, app_dir=os.path.dirname(os.path.abspath(__file__)), host=host,
                port=port, workers=workers, access_log=False, log_level="warning")
