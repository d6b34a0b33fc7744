"""Ids the service makes (tasks, contexts, messages, artifacts)."""

import base64
import os
import time

#: base64url's 64 characters in ASCII order: the text of an id sorts as its
#: bytes do, so ids made later sort later.
_SORTED_B64 = bytes.maketrans(
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
    b"-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz")


def new_id(prefix: str) -> str:
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
