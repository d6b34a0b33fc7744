"""An HTTP/1.1 proxy in front of a test server that can lose answers.

``DroppingProxy(upstream_port)`` listens on a free port of 127.0.0.1 and
forwards each request (keep-alive, ``Content-Length`` bodies: what the
clients under test send) to the upstream server. ``drop(n)``: the next
``n`` requests whose path contains ``match`` (default: POSTs) are forwarded
and answered upstream, but the proxy closes the client's connection instead
of passing the answer on: the request ran, the caller never hears of it.
``requests`` records (method, path, headers, body) of every request seen.
"""

import http.client
import socket
import threading


class DroppingProxy:
    def __init__(self, upstream_port):
        self.upstream_port = upstream_port
        self.requests = []
        self._drops = 0
        self._match = None
        self._lock = threading.Lock()
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def drop(self, count=1, match=None):
        with self._lock:
            self._drops, self._match = count, match

    def close(self):
        self._closed = True
        self._sock.close()

    def _accept(self):
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _should_drop(self, method, path):
        with self._lock:
            wanted = (self._match in path) if self._match else method == "POST"
            if self._drops > 0 and wanted:
                self._drops -= 1
                return True
        return False

    def _serve(self, conn):
        reader = conn.makefile("rb")
        upstream = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=60)
        try:
            while True:
                line = reader.readline()
                if not line:
                    return
                method, path, _ = line.decode("latin-1").split(" ", 2)
                headers = []
                while True:
                    header = reader.readline().decode("latin-1")
                    if header in ("\r\n", "\n", ""):
                        break
                    name, value = header.split(":", 1)
                    headers.append((name.strip(), value.strip()))
                length = int(dict((k.lower(), v) for k, v in headers).get(
                    "content-length", "0"))
                body = reader.read(length) if length else None
                self.requests.append((method, path, dict(headers), body or b""))
                upstream.putrequest(method, path, skip_host=True,
                                    skip_accept_encoding=True)
                for name, value in headers:
                    upstream.putheader(name, value)
                upstream.endheaders(body)
                answer = upstream.getresponse()
                data = answer.read()
                if self._should_drop(method, path):
                    conn.shutdown(socket.SHUT_RDWR)
                    return
                out = ["HTTP/1.1 %d %s" % (answer.status, answer.reason)]
                out += ["%s: %s" % (k, v) for k, v in answer.getheaders()
                        if k.lower() not in ("transfer-encoding", "connection",
                                             "content-length")]
                out += ["Content-Length: %d" % len(data), "", ""]
                conn.sendall("\r\n".join(out).encode("latin-1") + data)
        except (OSError, ValueError):
            return
        finally:
            upstream.close()
            reader.close()
            conn.close()
