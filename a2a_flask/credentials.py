"""API keys and built-in users, stored in the service's SQLite file.

Secrets never reach the database in clear: a key is stored as its SHA-256
(a 256-bit random key needs no slow hash) and found by it, so a wrong key
costs the same lookup as a right one; passwords are hashed with werkzeug.
"""

import hashlib
import json
import secrets
import time
from datetime import datetime, timedelta, timezone

from werkzeug.security import check_password_hash, generate_password_hash

from .store import now_iso

KEY_PREFIX = "a2a_"
#: Last use is recorded to the minute: a write per request would cost more.
LAST_USED_GRANULARITY = timedelta(minutes=1)
_dummy_hash = []  # made on first need: hashing at import slows every start


def _check_dummy_password(password):
    """Spend a password check when the user does not exist, so that the answer
    takes as long and tells nothing about which users exist."""
    if not _dummy_hash:
        _dummy_hash.append(generate_password_hash("not a password"))
    check_password_hash(_dummy_hash[0], password)


_cutoff = [None, None]  # (second, text): moves once a second, read per request


def _last_used_cutoff():
    """A last use older than this is worth recording again."""
    second = int(time.time())
    if _cutoff[0] != second:
        moment = datetime.fromtimestamp(second, timezone.utc) - LAST_USED_GRANULARITY
        _cutoff[:] = [second, now_iso(moment)]
    return _cutoff[1]


_verified = {}  # user name -> digest of (stored hash, password) last checked
_VERIFIED_MAX = 1024


def _proof(stored_hash, password):
    # Only a fast digest, in this process's memory: never stored or logged.
    return hashlib.sha256((stored_hash + "\0" + password).encode("utf-8")).digest()


class CredentialError(Exception):
    """A credential command could not be carried out; the text says why."""


def hash_key(key):
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


class ApiKey:
    """A stored key, without its secret."""

    __slots__ = ("id", "prefix", "label", "scope", "created_at", "last_used_at",
                 "revoked_at")

    def __init__(self, id, prefix, label, scope, created_at, last_used_at,
                 revoked_at):
        self.id = id
        self.prefix = prefix
        self.label = label
        #: None for every agent, else a frozenset of agent names.
        self.scope = None if scope == "*" else frozenset(json.loads(scope))
        self.created_at = created_at
        self.last_used_at = last_used_at
        self.revoked_at = revoked_at

    @property
    def scope_text(self):
        return "*" if self.scope is None else ",".join(sorted(self.scope))


_KEY_COLUMNS = "id, prefix, label, scope, created_at, last_used_at, revoked_at"


class Credentials:
    """Keys and users of one ``Store``."""

    def __init__(self, store):
        self.store = store

    # -- API keys ----------------------------------------------------------

    def create_key(self, agents=None, label=None):
        """A new key for ``agents`` (None: every agent): (ApiKey, secret).

        The secret is returned once, here, and never stored.
        """
        secret = KEY_PREFIX + secrets.token_urlsafe(32)  # 256 bits
        scope = "*" if agents is None else json.dumps(sorted(set(agents)))
        # Not new_id()[:16]: new_id starts with the time, so that would be a
        # timestamp, the same for two keys made in one millisecond.
        row = ("key_" + secrets.token_hex(6), secret[:10], label, scope, now_iso(),
               None, None)
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO a2a_api_keys (id, prefix, label, scope, created_at,"
                " last_used_at, revoked_at, key_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                row + (hash_key(secret),))
        return ApiKey(*row), secret

    def keys(self):
        rows = self.store.connection().execute(
            "SELECT %s FROM a2a_api_keys ORDER BY created_at, id" % _KEY_COLUMNS)
        return [ApiKey(*row) for row in rows]

    def revoke_key(self, key_id):
        with self.store.transaction() as conn:
            row = conn.execute("SELECT revoked_at FROM a2a_api_keys WHERE id = ?",
                               (key_id,)).fetchone()
            if row is None:
                raise CredentialError("no API key with id %r (see: a2a keys list)"
                                      % key_id)
            if row[0] is None:
                conn.execute("UPDATE a2a_api_keys SET revoked_at = ? WHERE id = ?",
                             (now_iso(), key_id))

    def find_key(self, secret):
        """The live key with this secret, or None; records its use."""
        conn = self.store.connection()
        row = conn.execute(
            "SELECT %s FROM a2a_api_keys WHERE key_hash = ? AND revoked_at IS NULL"
            % _KEY_COLUMNS, (hash_key(secret),)).fetchone()
        if row is None:
            return None
        key = ApiKey(*row)
        # ISO timestamps of one format sort as text: no parsing per request.
        if key.last_used_at is None or key.last_used_at < _last_used_cutoff():
            key.last_used_at = now_iso()
            with self.store.transaction() as conn:
                conn.execute("UPDATE a2a_api_keys SET last_used_at = ? WHERE id = ?",
                             (key.last_used_at, key.id))
        return key

    # -- built-in users --------------------------------------------------------

    def create_user(self, name, password):
        if not name or ":" in name:
            raise CredentialError("user name %r must be non-empty, without ':'"
                                  % name)
        if not password:
            raise CredentialError("the password must not be empty")
        with self.store.transaction() as conn:
            if conn.execute("SELECT 1 FROM a2a_users WHERE name = ?",
                            (name,)).fetchone():
                raise CredentialError("a user named %r already exists" % name)
            conn.execute("INSERT INTO a2a_users (name, password_hash, created_at)"
                         " VALUES (?, ?, ?)",
                         (name, generate_password_hash(password), now_iso()))

    def users(self):
        """(name, created_at) of every built-in user."""
        return self.store.connection().execute(
            "SELECT name, created_at FROM a2a_users ORDER BY name").fetchall()

    def has_users(self):
        return self.store.connection().execute(
            "SELECT EXISTS (SELECT 1 FROM a2a_users)").fetchone()[0] == 1

    def delete_user(self, name):
        with self.store.transaction() as conn:
            if not conn.execute("DELETE FROM a2a_users WHERE name = ?",
                                (name,)).rowcount:
                raise CredentialError("no user named %r" % name)

    def check_user(self, name, password, before_slow_check=None):
        """True when ``password`` is ``name``'s.

        A slow hash (scrypt) on every request would cost each Basic call tens
        of milliseconds, so a success is remembered in this process, keyed by
        the stored hash: a deleted user or a new password is refused at once.
        ``before_slow_check()`` runs before any hash is computed (and may
        raise: the login throttle), not before a remembered success.
        """
        row = self.store.connection().execute(
            "SELECT password_hash FROM a2a_users WHERE name = ?", (name,)).fetchone()
        if before_slow_check is not None and (
                row is None or _verified.get(name) != _proof(row[0], password)):
            before_slow_check()
        if row is None:
            _check_dummy_password(password)
            return False
        stored = row[0]
        proof = _proof(stored, password)
        if _verified.get(name) == proof:
            return True
        if not check_password_hash(stored, password):
            return False
        if len(_verified) >= _VERIFIED_MAX:
            _verified.clear()
        _verified[name] = proof
        return True
