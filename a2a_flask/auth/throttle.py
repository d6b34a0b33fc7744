"""Failed logins counted in memory, per (address, name) and per name.

After ``limit`` (A2A_LOGIN_FAILURES_PER_MINUTE) failures within a minute for
one name from one client address, or ``name_limit``
(A2A_LOGIN_FAILURES_PER_NAME_PER_MINUTE, much higher) for one name from all
addresses, further HTTP Basic attempts for that name are refused with 429
(and ``Retry-After``) before any password is hashed, so a flood costs
nothing. Counted per (address, name), not per address: behind one proxy or
NAT, an attacker guessing at one name does not lock out the other users at
the same address. Counted in each worker process: with N workers an
attacker gets at most N x LIMIT tries a minute per name and address.
"""

import threading
import time
from collections import deque

from .. import errors

LIMIT = 5
NAME_LIMIT = 100
WINDOW = 60.0
#: Keys remembered at most: past it the oldest are forgotten (bounded memory).
MAX_KEYS = 10000


class LoginThrottle:
    """Failed HTTP Basic logins per (address, name) and per name, lately."""

    def __init__(self, limit=LIMIT, window=WINDOW, clock=time.monotonic,
                 name_limit=NAME_LIMIT):
        self.limit = limit
        self.name_limit = name_limit
        self.window = window
        self.clock = clock
        self._failures = {}  # key -> deque of failure times, oldest first
        self._lock = threading.Lock()

    def _keys(self, address, name):
        return ((("pair", address, name), self.limit),
                (("name", name), self.name_limit))

    def check(self, address, name):
        """``TooManyRequests`` when ``name`` failed too often lately, from
        ``address`` or from anywhere."""
        now = self.clock()
        with self._lock:
            for key, limit in self._keys(address, name):
                times = self._failures.get(key)
                if not times:
                    continue
                while times and now - times[0] >= self.window:
                    times.popleft()
                if len(times) >= limit:
                    wait = max(1, int(self.window - (now - times[0])) + 1)
                    raise errors.TooManyRequestsError(
                        "Too many failed logins for this user name lately: "
                        "try again in %d s." % wait, retry_after=wait)

    def failed(self, address, name):
        now = self.clock()
        with self._lock:
            if len(self._failures) >= MAX_KEYS:
                for key in list(self._failures)[:MAX_KEYS // 2]:
                    del self._failures[key]
            for key, limit in self._keys(address, name):
                times = self._failures.setdefault(key, deque(maxlen=limit))
                times.append(now)
