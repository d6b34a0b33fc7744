"""Helpers every backend and the service share: ids, timestamps, digests."""

import hashlib
import json
import secrets
import time
from datetime import datetime, timezone


def new_id(prefix):
    """An opaque, unguessable id (128 random bits) with a readable prefix.

    The random part follows the time in milliseconds, so that new rows land at
    the end of the indexes instead of on random pages: inserts stay cheap and
    local however many millions of tasks the database holds.
    """
    return "%s%012x%s" % (prefix, time.time_ns() // 1000000, secrets.token_hex(16))


def now_iso(moment=None):
    """ISO 8601 UTC with milliseconds and ``Z``, as A2A timestamps are."""
    now = moment or datetime.now(timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (now.microsecond // 1000)


def dumps(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def fingerprint(message):
    """A stable digest of a message, to tell a retry from a different message."""
    canonical = json.dumps(message, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
