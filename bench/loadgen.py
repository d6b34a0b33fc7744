"""Multi-process Python HTTP load generator (fallback when ``wrk`` is absent).

Each of ``procs`` processes drives its share of ``connections`` HTTP/1.1
connections with raw sockets and a ``selectors`` loop (one request in flight
per connection, like wrk).  Requests are prebuilt bytes; answers are checked
with substring/regex tests on every response and a full ``json.loads`` on
one response in ``FULL_CHECK_EVERY``.  Servers that close the connection
after each answer (gunicorn's sync worker) are handled by reconnecting; like
wrk, latency is measured from the first byte sent, not from connect.

Bounded: stops after ``duration`` seconds or ``max_requests`` requests per
process, whichever comes first; a request unanswered after ``timeout``
seconds counts as an error.  Loopback targets only.

    from loadgen import run_load
    run_load("127.0.0.1", 8000, "/rpc", mode="send", duration=10, connections=16)
"""

import json
import multiprocessing as mp
import os
import re
import selectors
import socket
import time

FULL_CHECK_EVERY = 64
_ERR_RE = re.compile(rb'"error"\s*:')
_LOOPBACK = ("127.", "localhost", "::1")

# The two JSON-RPC bindings the servers speak: A2A 0.3 (``message/send``,
# ``tasks/get``; a2a_flask, the ceilings, a2a-sdk 0.3.x) and A2A 1.0
# (``SendMessage``, ``GetTask`` with the ``A2A-Version: 1.0`` header; a2a-sdk 1.x).
METHODS = {
    "0.3": {"send": "message/send", "get": "tasks/get"},
    "1.0": {"send": "SendMessage", "get": "GetTask"},
}
HEADERS = {"0.3": {}, "1.0": {"A2A-Version": "1.0"}}
_DONE_RE = {
    "0.3": re.compile(rb'"state"\s*:\s*"completed"'),
    "1.0": re.compile(rb'"state"\s*:\s*"TASK_STATE_COMPLETED"'),
}


def message(text, message_id, proto="0.3"):
    """A user message with one text part, as ``proto`` spells it."""
    if proto == "1.0":
        return {"role": "ROLE_USER", "messageId": message_id, "parts": [{"text": text}]}
    return {"kind": "message", "role": "user", "messageId": message_id, "parts": [{"kind": "text", "text": text}]}


def result_task(result, proto="0.3"):
    """The Task in a send or get result (1.0 wraps SendMessage's in ``task``)."""
    if proto == "1.0" and isinstance(result, dict) and isinstance(result.get("task"), dict):
        return result["task"]
    return result


def _send_body(nonce, pid, n, proto="0.3"):
    if proto == "1.0":
        return (
            b'{"jsonrpc":"2.0","id":%d,"method":"SendMessage","params":{"message":'
            b'{"role":"ROLE_USER","messageId":"py-%s-%d-%d","parts":[{"text":"hello"}]}}}' % (n, nonce, pid, n)
        )
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"message/send","params":{"message":'
        b'{"kind":"message","role":"user","messageId":"py-%s-%d-%d",'
        b'"parts":[{"kind":"text","text":"hello"}]}}}' % (n, nonce, pid, n)
    )


def _get_body(i, task_id, proto="0.3"):
    return b'{"jsonrpc":"2.0","id":%d,"method":"%s","params":{"id":"%s"}}' % (
        i, METHODS[proto]["get"].encode(), task_id.encode())


def _head(host, port, path, extra):
    h = b"POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n" % (
        path.encode(), host.encode(), port)
    for k, v in extra.items():
        h += b"%s: %s\r\n" % (k.encode(), v.encode())
    return h + b"Content-Length: "


def check_answer(mode, status, body, expect_id=None, full=False, proto="0.3"):
    """Return None when the answer is correct, else a short reason."""
    if status != 200:
        return f"HTTP {status}"
    if _ERR_RE.search(body):
        return "JSON-RPC error"
    if not _DONE_RE[proto].search(body):
        return "state not completed"
    if expect_id is not None and not re.search(rb'"id"\s*:\s*"%s"' % re.escape(expect_id.encode()), body):
        return "wrong task id"
    if full:
        try:
            obj = json.loads(body)
        except ValueError:
            return "invalid JSON"
        res = result_task(obj.get("result"), proto) if isinstance(obj, dict) else None
        if "error" in obj or not isinstance(res, dict):
            return "no result"
        done = "TASK_STATE_COMPLETED" if proto == "1.0" else "completed"
        if (proto == "0.3" and res.get("kind") != "task") or (res.get("status") or {}).get("state") != done:
            return "result is not a completed task"
        if expect_id is not None and res.get("id") != expect_id:
            return "wrong task id"
        if mode == "send" and not res.get("artifacts"):
            return "no artifact"
    return None


class _Conn:
    __slots__ = ("sock", "buf", "t0", "expect", "mode_i")

    def __init__(self):
        self.sock = None
        self.buf = bytearray()
        self.t0 = 0.0
        self.expect = None
        self.mode_i = 0


def _parse(buf):
    """Return (status, body, close) when ``buf`` holds a full response, else None."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = bytes(buf[:end]).lower()
    status = int(head[9:12])
    close = b"connection: close" in head or head.startswith(b"http/1.0")
    i = head.find(b"content-length:")
    if i >= 0:
        j = head.find(b"\r\n", i)
        n = int(head[i + 15:j if j >= 0 else len(head)])
        if len(buf) < end + 4 + n:
            return None
        return status, bytes(buf[end + 4:end + 4 + n]), close, end + 4 + n
    if b"transfer-encoding: chunked" in head:
        pos, body = end + 4, bytearray()
        while True:
            j = buf.find(b"\r\n", pos)
            if j < 0:
                return None
            size = int(bytes(buf[pos:j]).split(b";")[0], 16)
            if len(buf) < j + 2 + size + 2:
                return None
            if size == 0:
                k = buf.find(b"\r\n\r\n", j)
                if k < 0:
                    return None
                return status, bytes(body), close, k + 4
            body += buf[j + 2:j + 2 + size]
            pos = j + 2 + size + 2
    # no length: body runs to connection close (not expected here)
    return None


def _worker(args, conn_out):
    (host, port, path, mode, headers, nconn, duration, max_requests, pool, start_at,
     timeout, nonce, wid, proto) = args
    head = _head(host, port, path, dict(HEADERS[proto], **headers))
    pool_reqs = []
    if mode == "get":
        for i, tid in enumerate(pool):
            body = _get_body(i, tid, proto)
            pool_reqs.append((head + b"%d\r\n\r\n" % len(body) + body, tid))
    sel = selectors.DefaultSelector()
    conns = [_Conn() for _ in range(nconn)]
    lat = []
    errors = 0
    reasons = {}
    samples = []
    sent = 0
    answered = 0
    pid = os.getpid()
    nonce_b = nonce.encode()
    gi = (wid * 53) % max(1, len(pool_reqs))

    def fail(reason, body=b""):
        nonlocal errors
        errors += 1
        reasons[reason] = reasons.get(reason, 0) + 1
        if len(samples) < 3:
            samples.append(f"{reason}: {body[:300]!r}")

    def connect(c):
        s = socket.create_connection((host, port), timeout=timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        c.sock = s
        sel.register(s, selectors.EVENT_READ, c)

    def drop(c):
        if c.sock is not None:
            try:
                sel.unregister(c.sock)
            except (KeyError, ValueError):
                pass
            c.sock.close()
            c.sock = None
        c.buf.clear()

    def fire(c):
        nonlocal sent, gi
        if c.sock is None:
            connect(c)
        if mode == "get":
            req, c.expect = pool_reqs[gi]
            gi = (gi + 1) % len(pool_reqs)
        else:
            body = _send_body(nonce_b, pid, sent, proto)
            req = head + b"%d\r\n\r\n" % len(body) + body
            c.expect = None
        c.t0 = time.perf_counter()
        c.sock.sendall(req)
        sent += 1

    while time.time() < start_at:
        time.sleep(0.001)
    t_start = time.perf_counter()
    t_end = t_start + duration
    for c in conns:
        try:
            fire(c)
        except OSError as e:
            fail(f"connect/send: {e.__class__.__name__}")
            drop(c)
    inflight = sum(1 for c in conns if c.sock is not None)
    while inflight:
        now = time.perf_counter()
        events = sel.select(timeout=0.2)
        now = time.perf_counter()
        for key, _ in events:
            c = key.data
            try:
                data = c.sock.recv(65536)
            except OSError:
                data = b""
            if not data:
                fail("connection closed before answer", bytes(c.buf))
                drop(c)
                inflight -= 1
                continue
            c.buf += data
            try:
                parsed = _parse(c.buf)
            except ValueError:
                parsed = (0, bytes(c.buf), True, len(c.buf))
            if parsed is None:
                continue
            status, body, close, used = parsed
            lat.append(now - c.t0)
            answered += 1
            why = check_answer(mode, status, body, c.expect, full=answered % FULL_CHECK_EVERY == 1, proto=proto)
            if why:
                fail(why, body)
            del c.buf[:used]
            if close:
                drop(c)
            if now >= t_end or sent >= max_requests:
                drop(c)
                inflight -= 1
                continue
            try:
                fire(c)
            except OSError as e:
                fail(f"connect/send: {e.__class__.__name__}")
                drop(c)
                inflight -= 1
        # per-request timeout
        for c in conns:
            if c.sock is not None and now - c.t0 > timeout:
                fail("timeout")
                drop(c)
                inflight -= 1
    elapsed = time.perf_counter() - t_start
    conn_out.send({"lat": lat, "errors": errors, "reasons": reasons, "samples": samples,
                   "answered": answered, "sent": sent, "elapsed": elapsed,
                   "capped": sent >= max_requests})
    conn_out.close()


def percentile(sorted_vals, p):
    if not sorted_vals:
        return float("nan")
    k = min(len(sorted_vals) - 1, max(0, int(round(p / 100.0 * len(sorted_vals) + 0.5)) - 1))
    return sorted_vals[k]


def run_load(host, port, path, mode="send", headers=None, duration=10.0, connections=16,
             procs=2, pool=None, max_requests=1_000_000, timeout=10.0, nonce="x", proto="0.3"):
    """Drive the server; return dict(requests, rps, p50_ms, p99_ms, errors, ...)."""
    if not host.startswith(_LOOPBACK):
        raise ValueError("loopback targets only")
    if mode == "get" and not pool:
        raise ValueError("tasks/get needs a pool of task ids")
    procs = max(1, min(procs, connections))
    share = [connections // procs + (1 if i < connections % procs else 0) for i in range(procs)]
    ctx = mp.get_context("fork")
    start_at = time.time() + 0.3
    children = []
    for wid, n in enumerate(share):
        rx, tx = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_worker, args=((host, port, path, mode, headers or {}, n, duration,
                                               max_requests // procs, list(pool or []), start_at,
                                               timeout, nonce, wid, proto), tx), daemon=True)
        p.start()
        tx.close()
        children.append((p, rx))
    parts = []
    deadline = time.time() + duration + timeout + 30
    try:
        for p, rx in children:
            if rx.poll(max(0.1, deadline - time.time())):
                parts.append(rx.recv())
            else:
                parts.append({"lat": [], "errors": 1, "reasons": {"generator hung": 1}, "samples": [],
                              "answered": 0, "sent": 0, "elapsed": duration, "capped": False})
    finally:
        for p, _ in children:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
                p.join()
    lat = sorted(x for part in parts for x in part["lat"])
    elapsed = max(part["elapsed"] for part in parts)
    reasons = {}
    for part in parts:
        for k, v in part["reasons"].items():
            reasons[k] = reasons.get(k, 0) + v
    return {
        "requests": len(lat),
        "rps": len(lat) / elapsed if elapsed > 0 else 0.0,
        "p50_ms": percentile(lat, 50) * 1000,
        "p90_ms": percentile(lat, 90) * 1000,
        "p99_ms": percentile(lat, 99) * 1000,
        "max_ms": (lat[-1] * 1000) if lat else float("nan"),
        "errors": sum(part["errors"] for part in parts),
        "error_reasons": reasons,
        "error_samples": [s for part in parts for s in part["samples"]][:3],
        "elapsed_s": elapsed,
        "capped": any(part["capped"] for part in parts),
    }


if __name__ == "__main__":  # tiny manual check: python bench/loadgen.py PORT PATH
    import sys

    print(run_load("127.0.0.1", int(sys.argv[1]), sys.argv[2], duration=3))
