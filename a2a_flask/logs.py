"""Log records of the service: formats, and routing to gunicorn's error log.

The package only logs (on ``a2a_flask`` and ``a2a_flask.access``); where the
records go is the host's choice. Under gunicorn, ``route_to_gunicorn`` (called
by the shipped ``gunicorn.conf.py``) writes them to gunicorn's error log, with
time and level, in the plain format or, with ``A2A_LOG_FORMAT=json``, as one
JSON object per line.
"""

import json
import logging
import re
import threading
import time
from typing import Any, Optional, Tuple

#: The ``a2a_flask`` records gunicorn shows (INFO: access records too).
LEVEL = logging.INFO
PLAIN_FORMAT = "%(asctime)s [%(process)d] [%(levelname)s] %(name)s: %(message)s"
PLAIN_DATEFMT = "[%Y-%m-%d %H:%M:%S %z]"  # gunicorn's own
FORMATS = ("plain", "json")

#: The most characters of one field a record keeps (the length is noted).
FIELD_CHARS = 200
#: What would break a line or fool a terminal: C0/C1 controls, DEL, the
#: Unicode line and paragraph separators, bidirectional overrides.
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f"
                    "\u202a-\u202e\u2066-\u2069]")
#: What JSON may carry raw but a log reader may take for a line break.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\u200e\u200f"
                          "\u202a-\u202e\u2066-\u2069]")


def _escaped(match):
    code = ord(match.group())
    return "\\x%02x" % code if code < 0x100 else "\\u%04x" % code


def escape(text: str) -> str:
    """``text`` with every control character written as an escape: one
    record is one line, whatever a caller sent."""
    return UNSAFE.sub(_escaped, text) if UNSAFE.search(text) else text


def clean(value: Any, limit: int = FIELD_CHARS) -> Any:
    """A field as a record may carry it: escaped (``escape``), and cut at
    ``limit`` characters with the full length noted. Not a string: as is."""
    if not isinstance(value, str):
        return value
    if len(value) > limit:
        value = "%s...(%d chars)" % (value[:limit], len(value))
    return escape(value)


class CleanArgs(logging.Filter):
    """Every string argument and extra field of a record, ``clean``: what a
    caller sent (a path, an agent name, a task id) may reach a message."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(clean(arg) for arg in record.args)
        elif isinstance(record.args, dict):
            record.args = {key: clean(arg) for key, arg in record.args.items()}
        for key, value in vars(record).items():
            if key not in _STANDARD and isinstance(value, str):
                setattr(record, key, clean(value))
        return True

# Attributes every LogRecord has: what is left are the fields given in extra=.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message", "asctime", "taskName"}


# Records of the package's own logger: cleaned whatever handler shows them
# (the access logger cleans its fields itself, on the hot path: access.py).
logging.getLogger("a2a_flask").addFilter(CleanArgs())


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line: time, level, logger, message,
    the record's extra fields, and the traceback (as one string) if any."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": self._time(record),
            "level": record.levelname,
            "logger": record.name,
            "pid": record.process,
            "message": record.getMessage(),
        }
        entry.update((key, value) for key, value in vars(record).items()
                     if key not in _STANDARD and not key.startswith("_"))
        if record.exc_info:
            entry["traceback"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["traceback"] = record.exc_text
        text = json.dumps(entry, ensure_ascii=False, default=str)
        return _JSON_UNSAFE.sub(_json_escaped, text) if _JSON_UNSAFE.search(
            text) else text

    @staticmethod
    def _time(record):
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + (
            ".%03dZ" % record.msecs)


class RefusalBudget:
    """Records of anonymous refusals (no caller was authenticated, the call
    was refused), per client address: at most ``burst`` at once, refilled at
    ``per_minute``; past it they are dropped, and the next record logged for
    that address says how many (``dropped``). A flood of bad calls costs the
    log a bounded amount; authenticated calls are always recorded."""

    MAX_ADDRESSES = 10000

    def __init__(self, per_minute=60, burst=20, clock=time.monotonic,
                 trusted_proxies=frozenset()):
        #: A2A_TRUSTED_PROXIES: whose X-Forwarded-For names the address.
        self.trusted_proxies = trusted_proxies
        self.rate = per_minute / 60.0
        self.burst = burst
        self.clock = clock
        self._buckets = {}  # address -> [tokens, last time, dropped]
        self._lock = threading.Lock()

    def admit(self, address: Optional[str]) -> Tuple[bool, int]:
        """(logged?, how many were dropped before this one)."""
        now = self.clock()
        with self._lock:
            bucket = self._buckets.get(address)
            if bucket is None:
                if len(self._buckets) >= self.MAX_ADDRESSES:
                    self._buckets.clear()  # bounded memory; a fresh start
                bucket = self._buckets[address] = [float(self.burst), now, 0]
            bucket[0] = min(self.burst, bucket[0] + (now - bucket[1]) * self.rate)
            bucket[1] = now
            if bucket[0] < 1.0:
                bucket[2] += 1
                return False, 0
            bucket[0] -= 1.0
            dropped, bucket[2] = bucket[2], 0
            return True, dropped



def _json_escaped(match):
    return "\\u%04x" % ord(match.group())


class PlainFormatter(logging.Formatter):
    """The plain format, the message escaped: one record, one line (a
    traceback, when there is one, follows on its own lines as usual)."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = escape(record.message)
        return super().formatMessage(record)


def formatter(log_format: Optional[str]) -> logging.Formatter:
    """The formatter for ``A2A_LOG_FORMAT`` (``plain`` or ``json``)."""
    log_format = (log_format or "plain").strip().lower()
    if log_format not in FORMATS:
        raise ValueError("A2A_LOG_FORMAT=%r: expected 'plain' or 'json'" % log_format)
    if log_format == "json":
        return JsonFormatter()
    return PlainFormatter(PLAIN_FORMAT, PLAIN_DATEFMT)


def _taken_elsewhere(record):
    """Whether a handler other than ours takes ``record``: one the host put on
    the logger that made it, on ``a2a_flask`` or above it (the root logger:
    ``basicConfig``, ``dictConfig``, pytest's ``caplog``), walking up as
    ``logging`` does. Looked up at each record, so a host that configures
    logging after ``init_app`` gets each record once, from its handlers."""
    # The registry itself, not getLogger: no lock taken on every record.
    logger = logging.Logger.manager.loggerDict.get(record.name)
    if not isinstance(logger, logging.Logger):  # a PlaceHolder, or not one
        logger = logging.getLogger("a2a_flask")
    return taken_from(logger, record.levelno)


def taken_from(logger: Optional[logging.Logger], levelno: int) -> bool:
    """Whether a handler other than ours, on ``logger`` or a logger it
    propagates to, takes a record of ``levelno``."""
    while logger is not None:
        for handler in logger.handlers:
            if (not isinstance(handler, FallbackHandler)
                    and levelno >= handler.level):
                return True
        if not logger.propagate:
            return False
        logger = logger.parent
    return False


class FallbackHandler(logging.Handler):
    """A handler of ours: it writes only the records no host handler takes.
    The ``a2a_flask`` logger keeps propagating, as Flask's own does."""

    def handle(self, record: logging.LogRecord) -> bool:
        if _taken_elsewhere(record):
            return False
        return super().handle(record)


class StderrHandler(FallbackHandler, logging.StreamHandler):
    """``a2a_flask`` records on stderr, when nothing else shows them."""


class SameStreamHandler(FallbackHandler):
    """Writes to the stream of another handler, looked up at each record.

    gunicorn reopens its log files on SIGUSR1 (logrotate) by swapping the
    stream of its handlers: following it, our records land in the new file.
    """

    def __init__(self, target, fmt):
        super().__init__()
        self.target = target
        self.setFormatter(fmt)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            target = self.target
            target.acquire()
            try:
                target.stream.write(text + "\n")
                target.stream.flush()
            finally:
                target.release()
        except Exception:  # a log line must never break a request
            self.handleError(record)


def log_to_stderr(log_format: str = "plain", unless_root: bool = False) -> None:
    """``a2a_flask`` records (INFO: access records, agents' tracebacks) on
    stderr in ``log_format``, as long as no handler of the host's takes them
    (``FallbackHandler``: one on the root logger, set up before or after this
    call). Called at ``init_app``, so that under uWSGI, Waitress,
    ``flask run`` or a gunicorn without the shipped conf the records are not
    lost for want of a handler. Nothing is done when ``a2a_flask`` has a
    handler already (gunicorn.conf.py's, the host's, an earlier app's).

    The level is set to INFO unless the host chose one, or, with
    ``unless_root``, configured the root logger (its level is then the
    host's choice)."""
    logger = logging.getLogger("a2a_flask")
    if logger.handlers:
        return
    handler = StderrHandler()
    handler.setFormatter(formatter(log_format))
    logger.addHandler(handler)
    if logger.level == logging.NOTSET and not (
            unless_root and logging.getLogger().handlers):
        logger.setLevel(LEVEL)


def route_to_gunicorn(error_log: logging.Logger, log_format: str = "plain") -> None:
    """Send ``a2a_flask`` records to the handlers of gunicorn's error logger.

    In json mode gunicorn's own lines become JSON too, so that the whole file
    is one object per line.
    """
    fmt = formatter(log_format)
    logger = logging.getLogger("a2a_flask")
    for handler in [h for h in logger.handlers if isinstance(h, SameStreamHandler)]:
        logger.removeHandler(handler)
    for target in error_log.handlers:
        if not hasattr(target, "stream"):  # syslog: gunicorn formats those
            continue
        if isinstance(fmt, JsonFormatter):
            target.setFormatter(fmt)
        logger.addHandler(SameStreamHandler(target, fmt))
    for stderr in [h for h in logger.handlers if isinstance(h, StderrHandler)]:
        logger.removeHandler(stderr)  # gunicorn's error log is stderr's place
    logger.setLevel(LEVEL)
