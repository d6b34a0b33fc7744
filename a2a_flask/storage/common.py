"""Helpers every backend and the service share: ids, timestamps, digests."""

import base64
import hashlib
import json
import os
import time
from datetime import datetime, timezone

#: base64url's 64 characters in ASCII order: the text of an id sorts as its
#: bytes do, so ids made later sort later.
_SORTED_B64 = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
    b"-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")


def new_id(prefix):
    """An opaque, unguessable id (128 random bits) with a readable prefix.

    The random part follows the time in milliseconds, so that new rows land at
    the end of the indexes instead of on random pages: inserts stay cheap and
    local however many millions of tasks the database holds. Six bits per
    character (30 after the prefix, not 44 hex digits): an id is stored up to
    ten times per task (rows, indexes, message bodies).
    """
    raw = (time.time_ns() // 1000000).to_bytes(6, "big") + os.urandom(16)
    return prefix + base64.urlsafe_b64encode(raw).translate(
        _SORTED_B64).decode("ascii").rstrip("=")


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
