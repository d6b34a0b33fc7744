"""Failed logins counted per username and per client address, in memory.

After ``limit`` (A2A_LOGIN_FAILURES_PER_MINUTE) failures within a minute for either, further HTTP
Basic attempts are refused with 429 (and ``Retry-After``) before any password
is hashed, so a flood costs nothing. Counted in each worker process: with N
workers an attacker gets at most N x LIMIT tries a minute per address.
"""

import threading
import time
from collections import deque

from .. import errors

LIMIT = 5
WINDOW = 60.0
#: Keys remembered at most: past it the oldest are forgotten (bounded memory).
MAX_KEYS = 10000


class LoginThrottle:
    """Failed HTTP Basic logins per address and per name in the last minute."""

    def __init__(self, limit=LIMIT, window=WINDOW, clock=time.monotonic):
        self.limit = limit
        self.window = window
        self.clock = clock
        self._failures = {}  # key -> deque of failure times, oldest first
        self._lock = threading.Lock()

    def check(self, *keys):
        """``TooManyRequests`` when any key failed ``limit`` times lately."""
        now = self.clock()
        with self._lock:
            for key in keys:
                times = self._failures.get(key)
                if not times:
                    continue
                while times and now - times[0] >= self.window:
                    times.popleft()
                if len(times) >= self.limit:
                    wait = max(1, int(self.window - (now - times[0])) + 1)
                    raise errors.TooManyRequestsError(
                        "Too many failed logins for this user or from this "
                        "address: try again in %d s." % wait, retry_after=wait)

    def failed(self, *keys):
        now = self.clock()
        with self._lock:
            if len(self._failures) >= MAX_KEYS:
                for key in list(self._failures)[:MAX_KEYS // 2]:
                    del self._failures[key]
            for key in keys:
                times = self._failures.setdefault(key, deque(maxlen=self.limit))
                times.append(now)
