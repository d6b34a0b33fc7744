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
counted. Counted in each worker process: with N workers an attacker gets at
most N x LIMIT tries a minute per name and address.

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
        self._lock = threading.Lock()

    def _keys(self, address, name):
        address, name = _part(address), _part(name)
        return (("pair", address, name), ("address", address), ("name", name))

    def _recent(self, times, now):
        while times and now - times[0] >= self.window:
            times.popleft()
        return times

    def _wait(self, times, now):
        return max(1, int(self.window - (now - times[0])) + 1)

    def check(self, address, name):
        """``TooManyRequests`` when ``name`` failed too often lately from
        ``address``, or ``address`` did whatever the names, or ``name`` did
        from everywhere and also from ``address``."""
        now = self.clock()
        pair_key, address_key, name_key = self._keys(address, name)
        with self._lock:
            empty = deque()
            pair = self._recent(self._failures.get(pair_key, empty), now)
            by_address = self._recent(self._failures.get(address_key, empty), now)
            by_name = self._recent(self._failures.get(name_key, empty), now)
            if len(pair) >= self.limit:
                self._refuse("for this user name", self._wait(pair, now))
            if len(by_address) >= self.address_limit:
                self._refuse("from this address", self._wait(by_address, now))
            if len(by_name) >= self.name_limit and pair:
                self._refuse("for this user name",
                             min(self._wait(pair, now), self._wait(by_name, now)))
            if address_key not in self._failures:
                overflow = self._recent(self._overflow, now)
                if len(overflow) >= self.address_limit:
                    self._refuse("", self._wait(overflow, now))

    @staticmethod
    def _refuse(whose, wait):
        raise errors.TooManyRequestsError(
            "Too many failed logins %s lately: try again in %d s."
            % (whose or "from new addresses", wait), retry_after=wait)

    def failed(self, address, name):
        now = self.clock()
        keys = self._keys(address, name)
        limits = (self.limit, self.address_limit, self.name_limit)
        with self._lock:
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
