"""Callers of an agent that waits: N concurrent asyncio callers, each on its
own keep-alive connection and with its own API key, blocking or polling
(every ``POLL`` s), over A2A 0.3 or 1.0 JSON-RPC; and the RSS of every
process of a server's process group, sampled while they run.

    from waitload import run_callers, RssSampler
    result = run_callers(port, path, keys, seconds=2, blocking=True, proto="0.3")

A turn's time runs from its send to the answer that shows it terminal (the
send's own answer for a blocking caller). Everything is bounded: a caller
gives up after ``deadline`` s; a request unanswered after ``seconds * 3 +
60`` s counts as an error. Loopback only.
"""

import asyncio
import json
import os
import threading
import time
import uuid

from loadgen import HEADERS, message, percentile, result_task

POLL = 0.5
HOST = "127.0.0.1"
#: States a caller stops at (0.3 spelling, and 1.0's TASK_STATE_ names).
DONE = {"completed", "failed", "canceled", "rejected", "input-required",
        "auth-required"}


def _done(state):
    if state.startswith("TASK_STATE_"):
        state = state[len("TASK_STATE_"):].lower().replace("_", "-")
    return state in DONE


class _Connection:
    """One HTTP/1.1 keep-alive connection; reopened when the server closed it."""

    def __init__(self, port, headers):
        self.port, self.headers = port, headers
        self.reader = self.writer = None

    async def post(self, path, body, timeout):
        data = json.dumps(body).encode()
        head = ["POST %s HTTP/1.1" % path, "Host: %s:%d" % (HOST, self.port),
                "Content-Type: application/json", "Content-Length: %d" % len(data)]
        head += ["%s: %s" % item for item in self.headers.items()]
        request = ("\r\n".join(head) + "\r\n\r\n").encode() + data
        for attempt in (1, 2):
            if self.writer is None:
                self.reader, self.writer = await asyncio.open_connection(HOST, self.port)
            try:
                self.writer.write(request)
                return await asyncio.wait_for(self._answer(), timeout)
            except (ConnectionError, asyncio.IncompleteReadError) as exc:
                self.close()
                if attempt == 2:
                    raise exc

    async def _answer(self):
        status = int((await self.reader.readline()).split()[1])
        length, close = 0, False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode("latin-1").partition(":")
            name = name.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "connection" and "close" in value.lower():
                close = True
        body = await self.reader.readexactly(length)
        if close:
            self.close()
        return status, json.loads(body)

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def _send_body(seconds, blocking, proto):
    config = ({"returnImmediately": not blocking} if proto == "1.0"
              else {"blocking": blocking})
    return {"jsonrpc": "2.0", "id": 1,
            "method": "SendMessage" if proto == "1.0" else "message/send",
            "params": {"message": message(str(seconds), uuid.uuid4().hex, proto),
                       "configuration": config}}


def _get_body(task_id, proto):
    return {"jsonrpc": "2.0", "id": 2,
            "method": "GetTask" if proto == "1.0" else "tasks/get",
            "params": {"id": task_id, "historyLength": 0}}


async def _caller(port, path, headers, seconds, blocking, proto, turns, deadline,
                  times, errors, start, answered):
    conn = _Connection(port, dict(headers, **HEADERS[proto]))
    timeout = seconds * 3 + 60
    await start.wait()
    try:
        for _ in range(turns):
            if time.monotonic() > deadline:
                return
            began = time.monotonic()
            try:
                status, body = await conn.post(path, _send_body(seconds, blocking, proto),
                                               timeout)
                task = result_task(body.get("result"), proto) if status == 200 else None
                if not task:
                    errors.append("send: HTTP %d %s" % (status, str(body)[:160]))
                    return
                answered.append(time.monotonic() - began)
                while not _done(task["status"]["state"]):
                    if time.monotonic() > deadline:
                        errors.append("unfinished at the deadline")
                        return
                    await asyncio.sleep(POLL)
                    status, body = await conn.post(path, _get_body(task["id"], proto),
                                                   timeout)
                    task = body.get("result") if status == 200 else None
                    if not task:
                        errors.append("get: HTTP %d %s" % (status, str(body)[:160]))
                        return
                times.append((began, time.monotonic()))
            except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError,
                    ValueError) as exc:
                errors.append("%s: %s" % (type(exc).__name__, exc))
                return
    finally:
        conn.close()


def run_callers(port, path, headers_per_caller, seconds, blocking, proto="0.3",
                turns=1, deadline=None):
    """Run len(headers_per_caller) callers at once; a dict of the figures."""
    deadline_s = deadline or seconds * (turns + 2) + 60

    async def main():
        times, errors, start, answered = [], [], asyncio.Event(), []
        end = time.monotonic() + deadline_s
        tasks = [asyncio.ensure_future(_caller(port, path, headers, seconds, blocking,
                                               proto, turns, end, times, errors, start,
                                               answered))
                 for headers in headers_per_caller]
        await asyncio.sleep(0.2)  # every caller waiting for the start
        start.set()
        await asyncio.gather(*tasks)
        return times, errors, sorted(answered)

    times, errors, answered = asyncio.run(main())
    spans = sorted(end - began for began, end in times)
    elapsed = (max(end for _, end in times) - min(began for began, _ in times)
               if times else float("nan"))
    return {"turns": len(times), "turns_s": len(times) / elapsed if times else 0.0,
            "median_s": percentile(spans, 50), "p99_s": percentile(spans, 99),
            # A polling caller's wait for its send's answer (blocking: the turn).
            "send_p99_s": percentile(answered, 99) if answered else float("nan"),
            "errors": len(errors), "error_samples": errors[:3]}


def group_memory_kb(pgids):
    """(RSS, PSS) in kB, summed over every process in these process groups.
    RSS counts a page shared by forked processes once in each; PSS splits
    it among them (``/proc/PID/smaps_rollup``)."""
    rss = pss = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[2]) not in pgids:
                continue
            with open("/proc/%s/smaps_rollup" % pid) as f:
                for line in f:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1])
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return rss, pss


class RssSampler:
    """The peak summed RSS and PSS (MB) of process groups, sampled every
    ``every`` s."""

    def __init__(self, pgids, every=0.5):
        self.pgids, self.every = set(pgids), every
        self.peak_kb = self.peak_pss_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            rss, pss = group_memory_kb(self.pgids)
            self.peak_kb = max(self.peak_kb, rss)
            self.peak_pss_kb = max(self.peak_pss_kb, pss)
            self._stop.wait(self.every)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    @property
    def peak_mb(self):
        return self.peak_kb / 1024.0

    @property
    def peak_pss_mb(self):
        return self.peak_pss_kb / 1024.0
