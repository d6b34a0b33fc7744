"""Run an ASGI app of the PEER servers under uvicorn, with the TCP_NODELAY fix.

No SDK import here: both ``peer.py`` (a2a-sdk 0.3.x) and ``peer13.py``
(a2a-sdk 1.3.x, another venv) use it.

uvicorn's supervisor for several workers binds the listening socket with
``proto`` 0, so asyncio never sets TCP_NODELAY on the accepted connections and
every keep-alive answer waits ~40 ms for a delayed ACK (uvicorn issue #3149,
open for uvicorn 0.54).  Unless ``stock``, the socket is re-created with
``IPPROTO_TCP``, as the single-worker path does, so the peer is measured
without that bug.
"""

import os
import socket


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
