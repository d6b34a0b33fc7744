"""Failed logins counted in memory, per (address, name), per address and per
name.

Three counts of HTTP Basic failures within a minute, each with its limit:

* one name from one client address: ``limit``
  (A2A_LOGIN_FAILURES_PER_MINUTE). Per (address, name), so that an attacker
  guessing at one name behind a shared proxy or NAT does not lock out the
  other users at that address;
* one address, whatever the names: ``address_limit``
  (A2A_LOGIN_FAILURES_PER_ADDRESS). A new name costs a slow hash all the
  same (the dummy one), so a stream of new names is bounded here;
* one name from all addresses: ``name_limit``
  (A2A_LOGIN_FAILURES_PER_NAME_PER_MINUTE, much higher). Past it, an address
  that has not failed for that name within the minute still has its
  password checked (one try a minute per address), so the name's owner
  logging in from a new address is not locked out; the others wait.

A refused attempt (429, with ``Retry-After``) hashes nothing and is not
counted. An attempt let through counts against the limits until it ends
(``failed`` or ``passed``): the threads of one process checking at once
cannot all pass at the last free try. Counted in each worker process: with
N workers an attacker gets at most N x LIMIT tries a minute per name and
address.

Memory is bounded (``max_keys``) without forgetting a live count: a count
whose last failure is a minute old is worth nothing and is dropped first;
when the table is still full, failures that would need a new entry share
one overflow count of ``address_limit`` a minute, and once it is spent an
attempt with no entry of its own is refused until the overflow's oldest
failure is a minute old. Nobody's count is reset to make room.
"""

import hashlib
import threading
import time
from collections import OrderedDict, deque
from typing import Dict

from .. import errors

LIMIT = 5
ADDRESS_LIMIT = 30
NAME_LIMIT = 100
WINDOW = 60.0
#: Counts remembered at most (bounded memory); see the module's docstring.
MAX_KEYS = 10000
#: Longer names (and addresses) are keyed by their digest: an 8 KiB header
#: must not take 8 KiB of the table.
_LONGEST_KEY_PART = 64


def _part(text):
    if len(text) <= _LONGEST_KEY_PART:
        return text
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class LoginThrottle:
    """Failed HTTP Basic logins per (address, name), per address and per name,
    lately."""

    def __init__(self, limit=LIMIT, window=WINDOW, clock=time.monotonic,
                 name_limit=NAME_LIMIT, address_limit=ADDRESS_LIMIT,
                 max_keys=MAX_KEYS):
        self.limit = limit
        self.address_limit = address_limit
        self.name_limit = name_limit
        self.window = window
        self.clock = clock
        self.max_keys = max_keys
        # key -> deque of failure times, oldest first; the keys ordered by
        # their last failure, oldest first, so that dead ones are found first.
        self._failures = OrderedDict()
        self._overflow = deque(maxlen=address_limit)
        #: key -> attempts let through by ``check`` and not ended yet.
        self._in_flight: Dict[tuple, int] = {}
        self._lock = threading.Lock()

    def _keys(self, address, name):
        address, name = _part(address), _part(name)
        return (("pair", address, name), ("address", address), ("name", name))

    def _recent(self, times, now):
        while times and now - times[0] >= self.window:
            times.popleft()
        return times

    def _wait(self, times, now):
        if not times:  # only attempts in flight: at most a window away
            return max(1, int(self.window))
        return max(1, int(self.window - (now - times[0])) + 1)

    def _landed(self, keys):
        """The attempt ``check`` let through for ``keys`` has ended (lock held)."""
        for key in keys:
            left = self._in_flight.get(key, 0) - 1
            if left > 0:
                self._in_flight[key] = left
            else:
                self._in_flight.pop(key, None)

    def passed(self, address: str, name: str) -> None:
        """The attempt ``check`` let through did not fail (a right password,
        or it ended in another error): it holds no try any more."""
        keys = self._keys(address, name)
        with self._lock:
            self._landed(keys)

    def check(self, address, name):
        """``TooManyRequests`` when ``name`` failed too often lately from
        ``address``, or ``address`` did whatever the names, or ``name`` did
        from everywhere and also from ``address``."""
        now = self.clock()
        pair_key, address_key, name_key = self._keys(address, name)
        with self._lock:
            empty: deque = deque()
            pair = self._recent(self._failures.get(pair_key, empty), now)
            by_address = self._recent(self._failures.get(address_key, empty), now)
            by_name = self._recent(self._failures.get(name_key, empty), now)
            flying = self._in_flight.get
            # An attempt still running may yet fail: it holds its try. Its
            # wait is the window's (a minute) when no failure is counted yet.
            if len(pair) + flying(pair_key, 0) >= self.limit:
                self._refuse("for this user name", self._wait(pair, now))
            if len(by_address) + flying(address_key, 0) >= self.address_limit:
                self._refuse("from this address", self._wait(by_address, now))
            if len(by_name) + flying(name_key, 0) >= self.name_limit and pair:
                self._refuse("for this user name",
                             min(self._wait(pair, now), self._wait(by_name, now)))
            if address_key not in self._failures:
                overflow = self._recent(self._overflow, now)
                if len(overflow) >= self.address_limit:
                    self._refuse("", self._wait(overflow, now))
            for key in (pair_key, address_key, name_key):
                self._in_flight[key] = flying(key, 0) + 1

    @staticmethod
    def _refuse(whose, wait):
        raise errors.TooManyRequestsError(
            "Too many failed logins %s lately: try again in %d s."
            % (whose or "from new addresses", wait), retry_after=wait)

    def failed(self, address: str, name: str, checked: bool = True) -> None:
        """The attempt ``check`` let through failed: counted (``checked``
        False: a failure no ``check`` let through, counted all the same)."""
        now = self.clock()
        keys = self._keys(address, name)
        limits = (self.limit, self.address_limit, self.name_limit)
        with self._lock:
            if checked:
                self._landed(keys)
            failures = self._failures
            # Counts whose last failure left the window count nothing.
            while failures:
                oldest = next(iter(failures))
                times = failures[oldest]
                if times and now - times[-1] < self.window:
                    break
                del failures[oldest]
            overflowed = False
            for key, limit in zip(keys, limits):
                times = failures.get(key)
                if times is None:
                    if len(failures) >= self.max_keys:
                        # Full of live counts: this failure goes to the
                        # shared overflow count instead (once).
                        overflowed = True
                        continue
                    times = failures[key] = deque(maxlen=limit)
                times.append(now)
                failures.move_to_end(key)
            if overflowed:
                self._overflow.append(now)
