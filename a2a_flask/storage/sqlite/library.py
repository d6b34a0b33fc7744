"""The SQLite library this process loads: refused at start when it is older
than the oldest this backend is written for, or lacks the JSON functions."""

import sqlite3
from typing import Optional, Sequence

from ..errors import UnsupportedSqliteError

#: The oldest SQLite served (Ubuntu 20.04's); every statement of this backend
#: runs on it, and the compatibility matrix loads it (docs/compatibility.md).
SQLITE_FLOOR = (3, 31, 1)


def check_sqlite_library(version_info: Optional[Sequence[int]] = None,
                         probe: Optional[sqlite3.Connection] = None) -> None:
    """Refuse, at start, a SQLite below ``SQLITE_FLOOR`` or built without the
    JSON functions (JSON1; in every build from 3.38, an option before):
    otherwise the first statement that needs them fails a caller's call.
    ``version_info`` and ``probe`` (a connection) are for tests."""
    found = sqlite3.sqlite_version_info if version_info is None else version_info
    if tuple(found) < SQLITE_FLOOR:
        raise UnsupportedSqliteError(
            "Python loads SQLite %s; a2a_flask needs SQLite %s or later. "
            "Upgrade the system's libsqlite3, or use a Python linked against "
            "a newer one." % (".".join(map(str, found)),
                              ".".join(map(str, SQLITE_FLOOR))))
    conn = sqlite3.connect(":memory:") if probe is None else probe
    try:
        conn.execute("SELECT json_remove('{\"a\": 1}', '$.a')").fetchone()
    except sqlite3.OperationalError as exc:
        raise UnsupportedSqliteError(
            "Python loads SQLite %s built without the JSON functions (%s); "
            "a2a_flask needs them. Debian's and Ubuntu's libsqlite3 have them; "
            "a SQLite built from source needs -DSQLITE_ENABLE_JSON1."
            % (".".join(map(str, found)), exc)) from exc
    finally:
        if probe is None:
            conn.close()
