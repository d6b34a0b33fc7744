"""The app the server tests run under gunicorn: ``gunicorn server_app:app``
(from tests/). The demo agents ``echo`` and ``chat`` (the default agent), plus:

- ``crash``: raises an exception whose text is ``SECRET``: it must reach the
  server log, never the caller.
- ``bg`` / ``bg_retry``: background agents (``background`` below).
- ``slow``: works for a bounded time. Text ``poll S`` (the default, S=10):
  checks ``turn.canceled`` every 20 ms for at most S seconds; ``sleep S``:
  sleeps S seconds without looking. Either way it then returns ``LATE``
  (a result that must be discarded when the task was canceled meanwhile).
  When the message's metadata has ``announce`` (a file path), the task id is
  written there first, so that a test knows which task is working.

Settings come from A2A_* environment variables, as in wsgi.py.
"""

import logging
import os
import time

from flask import Flask

from a2a_flask import A2A, config_from_env
from a2a_flask.demo import register_demo_agents

SECRET = "secret-internal-detail"
LATE = "late-result-of-slow"
MAX_SECONDS = 20.0

# INFO of a2a_flask to stderr (the server log), e.g. "result is discarded".
_handler = logging.StreamHandler()
_handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
_logger = logging.getLogger("a2a_flask")
_logger.addHandler(_handler)
_logger.setLevel(logging.INFO)


def crash(turn):
    """Always fails."""
    raise RuntimeError("%s: the agent broke on %r" % (SECRET, turn.text))


def slow(turn):
    """Works for a while (bounded), then answers."""
    announce = (turn.message.get("metadata") or {}).get("announce")
    if announce:
        with open(announce + ".tmp", "w") as f:
            f.write(turn.task_id)
        os.replace(announce + ".tmp", announce)
    words = turn.text.split()
    mode = words[0] if words else "poll"
    seconds = min(float(words[1]) if len(words) > 1 else 10.0, MAX_SECONDS)
    if mode == "sleep":
        time.sleep(seconds)
    else:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not turn.canceled:
            time.sleep(0.02)
    return "%s (%s)" % (LATE, turn.text)


def background(turn):
    """A background agent (``bg``; ``bg_retry`` with retry=True): appends
    its task id to the file ``BG_LEDGER`` names (one line per run), then as
    ``slow`` (``poll S`` / ``sleep S``; no text: at once), reporting
    progress; answers ``ran <text>``."""
    ledger = os.environ.get("BG_LEDGER")
    if ledger:
        with open(ledger, "a") as f:
            f.write("%s %d\n" % (turn.task_id, turn.attempt))
    words = turn.text.split()
    if len(words) == 2 and words[0] in ("poll", "sleep"):
        slow(turn)
    return "ran " + turn.text


app = Flask(__name__)
app.config["A2A_DEFAULT_AGENT"] = "chat"
app.config.update(config_from_env())
a2a = A2A(app)
register_demo_agents(a2a, slow_agent=False)
a2a.add_agent("crash", crash)
a2a.add_agent("slow", slow)
a2a.add_agent("bg", background, background=True)
a2a.add_agent("bg_retry", background, background=True, retry=True)
