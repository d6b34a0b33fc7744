"""Log records of the service: formats, and routing to gunicorn's error log.

The package only logs (on ``a2a_flask`` and ``a2a_flask.access``); where the
records go is the host's choice. Under gunicorn, ``route_to_gunicorn`` (called
by the shipped ``gunicorn.conf.py``) writes them to gunicorn's error log, with
time and level, in the plain format or, with ``A2A_LOG_FORMAT=json``, as one
JSON object per line.
"""

import json
import logging
import time

#: The ``a2a_flask`` records gunicorn shows (INFO: access records too).
LEVEL = logging.INFO
PLAIN_FORMAT = "%(asctime)s [%(process)d] [%(levelname)s] %(name)s: %(message)s"
PLAIN_DATEFMT = "[%Y-%m-%d %H:%M:%S %z]"  # gunicorn's own
FORMATS = ("plain", "json")

# Attributes every LogRecord has: what is left are the fields given in extra=.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {
    "message", "asctime", "taskName"}


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line: time, level, logger, message,
    the record's extra fields, and the traceback (as one string) if any."""

    def format(self, record):
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
        return json.dumps(entry, ensure_ascii=False, default=str)

    @staticmethod
    def _time(record):
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + (
            ".%03dZ" % record.msecs)


def formatter(log_format):
    """The formatter for ``A2A_LOG_FORMAT`` (``plain`` or ``json``)."""
    log_format = (log_format or "plain").strip().lower()
    if log_format not in FORMATS:
        raise ValueError("A2A_LOG_FORMAT=%r: expected 'plain' or 'json'" % log_format)
    if log_format == "json":
        return JsonFormatter()
    return logging.Formatter(PLAIN_FORMAT, PLAIN_DATEFMT)


class _SameStreamHandler(logging.Handler):
    """Writes to the stream of another handler, looked up at each record.

    gunicorn reopens its log files on SIGUSR1 (logrotate) by swapping the
    stream of its handlers: following it, our records land in the new file.
    """

    def __init__(self, target, fmt):
        super().__init__()
        self.target = target
        self.setFormatter(fmt)

    def emit(self, record):
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


def log_to_stderr(log_format="plain", unless_root=False):
    """``a2a_flask`` records (INFO: access records, agents' tracebacks) on
    stderr in ``log_format``, unless a handler already takes them: one on
    ``a2a_flask`` (gunicorn.conf.py's, the host's), or with ``unless_root``
    one on the root logger (the host configured logging). Called at
    ``init_app``, so that under uWSGI, Waitress or a gunicorn without the
    shipped conf the records are not lost for want of a handler."""
    logger = logging.getLogger("a2a_flask")
    if logger.handlers or (unless_root and logging.getLogger().handlers):
        return
    handler = logging.StreamHandler()
    handler.setFormatter(formatter(log_format))
    logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(LEVEL)


def route_to_gunicorn(error_log, log_format="plain"):
    """Send ``a2a_flask`` records to the handlers of gunicorn's error logger.

    In json mode gunicorn's own lines become JSON too, so that the whole file
    is one object per line.
    """
    fmt = formatter(log_format)
    logger = logging.getLogger("a2a_flask")
    for handler in [h for h in logger.handlers if isinstance(h, _SameStreamHandler)]:
        logger.removeHandler(handler)
    for target in error_log.handlers:
        if not hasattr(target, "stream"):  # syslog: gunicorn formats those
            continue
        if isinstance(fmt, JsonFormatter):
            target.setFormatter(fmt)
        logger.addHandler(_SameStreamHandler(target, fmt))
    logger.setLevel(LEVEL)
    logger.propagate = False
