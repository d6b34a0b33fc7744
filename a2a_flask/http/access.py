"""One record per call to an agent (JSON-RPC or HTTP+JSON), on the logger
``a2a_flask.access``.

The record names the agent, the method, the task and context, the caller's id
(an API key's id or a user name: never a key or a password), the outcome (the
task's state, or the JSON-RPC error code), the duration in milliseconds and
the protocol version of the call (0.3 or 1.0).
``http/pipeline.py`` notes what it read (``Notes``); ``logged_call`` wraps it and
reads the outcome from the answer it made.
"""

import atexit
import json
import logging
import os
import queue
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional

from flask import request

from ..auth.proxies import client_address
from ..logs import (FIELD_CHARS, PLAIN_DATEFMT, PLAIN_FORMAT, UNSAFE, PlainFormatter,
                    SameStreamHandler, StderrHandler, clean, taken_from)

if TYPE_CHECKING:  # pragma: no cover
    from flask import Response

    from ..auth.callers import Caller
    from ..protocol.jsonrpc import Envelope

log = logging.getLogger("a2a_flask.access")


class Notes:
    """What ``http/pipeline.py`` noted of one call for its record: a plain
    object handed to the answer, not attributes of Flask's ``g`` (each
    read or write of ``g`` goes through a context-local proxy)."""

    __slots__ = ("envelope", "caller", "version", "result", "error_code")

    def __init__(self) -> None:
        self.envelope: Optional[Envelope] = None
        self.caller: Optional[Caller] = None
        self.version = "0.3"
        #: The result a call answers with (its JSON-RPC ``result``): the
        #: record reads it rather than parsing the answer's body again.
        self.result: Any = None
        #: The A2A (JSON-RPC) code of the error a call answers with: an
        #: HTTP+JSON error body holds the HTTP status as its ``code``.
        self.error_code: Optional[int] = None

    def note(self, envelope: Optional["Envelope"], caller: Optional["Caller"],
             version: str = "0.3") -> None:
        """What the call was, in which protocol version, and who made it, as
        far as the pipeline got."""
        self.envelope, self.caller, self.version = envelope, caller, version


def _task_from_params(params):
    if not isinstance(params, dict):
        return None
    message = params.get("message")
    task_id = params.get("id")
    if task_id is None and isinstance(message, dict):
        task_id = message.get("taskId")
    return task_id if isinstance(task_id, str) else None


def call_fields(agent: Optional[str], notes: Notes, response: "Response") -> Dict[str, Any]:
    """The fields of the access record of one answered call (its JSON-RPC
    result when noted, else read from the response)."""
    envelope, caller = notes.envelope, notes.caller
    fields = {"agent": agent,
              "method": envelope.method if envelope is not None else None,
              "version": notes.version,
              "taskId": None, "contextId": None,
              "caller": caller.id if caller is not None else None,
              "state": None, "code": None, "status": response.status_code}
    result, error = notes.result, None
    if result is None:
        try:
            body = json.loads(response.get_data())
        except ValueError:  # not ours to judge: the record says what is known
            body = {}
        result, error = body.get("result"), body.get("error")
        if error is None and "code" in body:
            error = body  # a bare error object (401)
        if result is None and error is None:
            result = body  # an HTTP+JSON answer
    if error is None and isinstance(result, dict) and "task" in result:
        result = result["task"]  # A2A 1.0 SendMessageResponse
    if isinstance(result, dict) and (result.get("kind") == "task" or (
            "status" in result and "id" in result)):
        fields["taskId"] = result.get("id")
        fields["contextId"] = result.get("contextId")
        fields["state"] = (result.get("status") or {}).get("state")
    elif isinstance(error, dict):
        fields["code"] = notes.error_code or error.get("code")
        data = error.get("data")
        if isinstance(data, dict) and isinstance(data.get("taskId"), str):
            fields["taskId"] = data["taskId"]
    if fields["taskId"] is None and envelope is not None:
        fields["taskId"] = _task_from_params(envelope.params)
    for name in _CALLER_SENT:
        value = fields[name]
        # clean() only where it changes something: most fields are short ids,
        # printable ASCII, which holds none of UNSAFE (two checks in C, where
        # the pattern's character class costs its own step per character).
        if isinstance(value, str) and (len(value) > FIELD_CHARS or not (
                value.isascii() and value.isprintable()) and UNSAFE.search(value)):
            fields[name] = clean(value)
    return fields


#: The fields a caller may have written (a method name, ids, a state read
#: back from its own answer): escaped and cut before any record holds them.
_CALLER_SENT = ("agent", "method", "taskId", "contextId", "caller", "state")


def _value(value):
    """A field in the plain record: quoted when it holds a space, ``=`` or a
    quote, so no value reads as another ``key=value``."""
    if value is None:
        return "-"
    text = value if isinstance(value, str) else str(value)
    if not text or " " in text or "=" in text or '"' in text:
        return '"%s"' % text.replace('"', '\\"')  # escaped already: no controls
    return text


def _text(fields):
    outcome = fields["state"] if fields["state"] is not None else (
        fields["code"] if fields["code"] is not None else "ok")
    text = ("call agent=%s method=%s task=%s context=%s caller=%s outcome=%s "
            "ms=%.1f version=%s" % (
                _value(fields["agent"]), _value(fields["method"]),
                _value(fields["taskId"]), _value(fields["contextId"]),
                _value(fields["caller"]), _value(outcome), fields["ms"],
                fields["version"]))
    if fields.get("dropped"):
        text += " dropped=%d" % fields["dropped"]
    return text


def _anonymous_refusal(fields, caller):
    return caller is None and (fields["status"] >= 400
                               or fields["code"] is not None)


def logged_call(agent: Optional[str], answer: Callable[[Notes], "Response"],
                observe: Optional[Callable[[Dict[str, Any]], None]] = None, tracing: Any = None,
                refusals: Any = None) -> "Response":
    """``answer(notes)``, the call's response, with its access record logged
    (and passed to ``observe(fields)``, the metrics, when given); with
    ``tracing``, inside the call's server span, described by the record; an
    anonymous refusal only as far as ``refusals`` (a ``logs.RefusalBudget``)
    admits."""
    if tracing is not None:
        with tracing.server_span(agent, request.headers) as span:
            return _logged_call(agent, answer, observe, lambda fields, caller:
                                tracing.end_call(span, fields, caller and caller.kind),
                                refusals)
    return _logged_call(agent, answer, observe, refusals=refusals)


def _logged_call(agent, answer, observe=None, describe=None, refusals=None):
    notes = Notes()
    started = time.perf_counter()
    response = answer(notes)
    elapsed_ms = (time.perf_counter() - started) * 1000.0
    logged = log.isEnabledFor(logging.INFO)
    if observe is None and describe is None and not logged:
        return response
    fields = call_fields(agent, notes, response)
    fields["ms"] = round(elapsed_ms, 1)
    if describe is not None:
        describe(fields, notes.caller)
    if logged and refusals is not None and _anonymous_refusal(fields, notes.caller):
        logged, fields["dropped"] = refusals.admit(
            client_address(refusals.trusted_proxies, request.environ))
    if logged:
        _write_record(log, _text(fields), fields, __file__)
    if observe is not None:
        observe(fields)
    return response


# -- writing the record ---------------------------------------------------------
#
# Here, not in ``logs.py``: only the access record is written this way (one
# on every call), and each module a call enters is one more room.

_stamp: list = [None, ""]  # (second, text): moves once a second, read per record


def _plain_stamp(created: float) -> str:
    """``PLAIN_DATEFMT`` of ``created`` (local time, as ``logging``
    formats it), made once a second."""
    second = int(created)
    if _stamp[0] != second:
        _stamp[:] = [second, time.strftime(PLAIN_DATEFMT, time.localtime(second))]
    return _stamp[1]


def _plain_handlers(logger: logging.Logger) -> Optional[list]:
    """The handlers that would write a record of ``logger`` (a child of
    ``a2a_flask`` with no handler or filter of its own) when they are all
    ours in the plain format and no other handler takes it, else None."""
    if logger.handlers or logger.filters or not logger.propagate:
        return None
    parent: Optional[logging.Logger] = logger.parent
    if parent is None or parent.name != "a2a_flask" or not parent.handlers:
        return None
    handlers = []
    for handler in parent.handlers:
        fmt = handler.formatter
        if (type(handler) not in (StderrHandler, SameStreamHandler)
                or handler.filters or type(fmt) is not PlainFormatter
                or fmt._fmt != PLAIN_FORMAT or fmt.datefmt != PLAIN_DATEFMT):
            return None
        if logging.INFO >= handler.level:
            handlers.append(handler)
    # Another handler (the host's, above a2a_flask) takes it: logging's way.
    return None if taken_from(parent, logging.INFO) else handlers


def _write_record(logger: logging.Logger, text: str, fields: dict, path: str) -> None:
    """An INFO record of ``text`` (already escaped) with ``fields`` as its
    extra attributes, on ``logger``. When only our own handlers in the plain
    format would show it, its line is written as they would write it, with
    no ``LogRecord`` made (a record on every call); else it goes through
    ``logging`` as usual."""
    handlers = _plain_handlers(logger)
    if handlers is None:
        # log.info() less its search of the stack for the caller's source
        # line, which no format here shows.
        logger.handle(logger.makeRecord(logger.name, logging.INFO, path, 0,
                                        text, (), None, extra=fields))
        return
    now = time.time()
    line = "%s [%d] [INFO] %s: %s\n" % (_plain_stamp(now), os.getpid(), logger.name, text)
    for handler in handlers:
        target = handler.target if isinstance(handler, SameStreamHandler) else handler
        # Never wait for the stream's lock: its holder lets the interpreter
        # go while it writes, and hundreds of calls queued behind it each
        # waited for the lock and then for the interpreter in turn (gets at
        # 1,000 connections: docs/benchmarks.md, "The access record's
        # lock"). A line whose stream is busy is written by LATE_LINES.
        if not target.lock.acquire(blocking=False):
            if LATE_LINES.put(handler, target, line):
                continue
            target.lock.acquire()  # the queue is full: wait, as every line did
        try:
            try:
                target.stream.write(line)
                target.stream.flush()
            finally:
                target.lock.release()
        except Exception:  # a log line must never break a request
            handler.handleError(logger.makeRecord(logger.name, logging.INFO, path, 0,
                                                  text, (), None, extra=fields))


class LateLines:
    """Access lines whose stream another thread was writing to: written in
    order by one thread of the process, as soon as it holds the stream's
    lock, several in one write when they came together. Started at the first
    such line (each gunicorn worker its own, after the fork); at exit the
    process waits for what is queued to be written (``flush``)."""

    #: The longest the exit waits for queued lines (a stream stuck for good).
    FLUSH_SECONDS = 5.0
    #: Lines queued at most (about 2.5 MB): past them, as when the stream
    #: stops taking lines (a full pipe), a call waits for the lock again
    #: rather than the queue growing without end.
    MAX_QUEUED = 10000

    def __init__(self) -> None:
        #: (handler, target, line), or a flush's (None, event, None).
        self._queue = queue.SimpleQueue()  # type: queue.SimpleQueue[Any]
        self._thread: Optional[threading.Thread] = None
        self._starting = threading.Lock()
        self._flushed_at_exit = False

    def put(self, handler: logging.Handler, target: logging.Handler, line: str) -> bool:
        """``line`` queued for ``target``'s stream (``handler``'s errors);
        False when MAX_QUEUED are queued already (nothing queued)."""
        if self._queue.qsize() >= self.MAX_QUEUED:
            return False
        self._queue.put((handler, target, line))
        if self._thread is None:
            self._start()
        return True

    def flush(self, timeout: Optional[float] = None) -> bool:
        """Wait until the lines queued so far are written (at most
        ``timeout`` s, FLUSH_SECONDS by default); whether they were."""
        if self._thread is None:
            return True
        written = threading.Event()
        self._queue.put((None, written, None))
        return written.wait(self.FLUSH_SECONDS if timeout is None else timeout)

    def _start(self) -> None:
        with self._starting:
            if self._thread is None:
                if not self._flushed_at_exit:
                    atexit.register(self.flush)
                    self._flushed_at_exit = True
                thread = threading.Thread(target=self._run, name="a2a-access-lines",
                                          daemon=True)
                thread.start()
                self._thread = thread

    def _forked(self) -> None:
        """In a forked child: the parent's lines and thread are not its own."""
        self._queue = queue.SimpleQueue()
        self._thread = None
        self._starting = threading.Lock()

    def _run(self) -> None:
        while True:
            items = [self._queue.get()]
            while True:  # and whatever came meanwhile: one write for them all
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            self._write(items)

    @staticmethod
    def _write(items: list) -> None:
        at = 0
        while at < len(items):
            handler, target, _ = items[at]
            if handler is None:  # a flush: the lines before it are written
                target.set()
                at += 1
                continue
            end = at + 1
            while end < len(items) and items[end][0] is not None \
                    and items[end][1] is target:
                end += 1
            text = "".join(item[2] for item in items[at:end])
            at = end
            try:
                with target.lock:
                    target.stream.write(text)
                    target.stream.flush()
            except Exception:  # as a line written at once: reported, never raised
                handler.handleError(logging.makeLogRecord(
                    {"name": log.name, "msg": text, "levelno": logging.INFO,
                     "levelname": "INFO"}))


#: The process's late lines (``LateLines``).
LATE_LINES = LateLines()
os.register_at_fork(after_in_child=LATE_LINES._forked)
