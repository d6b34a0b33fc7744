"""API keys and built-in users, kept by the storage (SQLite or PostgreSQL).

Secrets never reach the database in clear: a key is stored as its SHA-256
(a 256-bit random key needs no slow hash) and found by it, so a wrong key
costs the same lookup as a right one; passwords are hashed as
passwords.py says.
"""

import hashlib
import json
import secrets
import time
from datetime import datetime, timedelta, timezone
from typing import Callable, Dict, Iterable, List, Optional, Tuple

from . import passwords
from .key_uses import KeyUses
from ..storage.base import (KeyNotFoundError, KeyRow, TaskRecord, UserExistsError,
                            UserNotFoundError)
from ..storage.common import now_iso

KEY_PREFIX = "a2a_"
#: Last use is recorded to the minute: a write per request would cost more
#: (and the uses of one second are written together: key_uses.py).
LAST_USED_GRANULARITY = timedelta(minutes=1)
_dummy_hash: List[str] = []  # made on first need: hashing at import slows every start


def _check_dummy_password(password):
    """Spend a password check when the user does not exist, so that the answer
    takes as long and tells nothing about which users exist."""
    if not _dummy_hash:
        _dummy_hash.append(passwords.hash_password("not a password"))
    passwords.check_password(_dummy_hash[0], password)


_cutoff = [None, None]  # (second, text): moves once a second, read per request


def _last_used_cutoff():
    """A last use older than this is worth recording again."""
    second = int(time.time())
    if _cutoff[0] != second:
        moment = datetime.fromtimestamp(second, timezone.utc) - LAST_USED_GRANULARITY
        _cutoff[:] = [second, now_iso(moment)]
    return _cutoff[1]


_verified: Dict[str, str] = {}  # user name -> digest of (stored hash, password) last checked
_VERIFIED_MAX = 1024


def _proof(stored_hash, password):
    # Only a fast digest, in this process's memory: never stored or logged.
    return hashlib.sha256((stored_hash + "\0" + password).encode("utf-8")).digest()


def key_owner(key_id: str) -> str:
    """The owner of the tasks of the callers using API key ``key_id``."""
    return "key:" + key_id


class CredentialError(Exception):
    """A credential command could not be carried out; the text says why."""


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


class StoredApiKey:
    """A stored key, without its secret."""

    __slots__ = ("id", "prefix", "label", "scope", "created_at", "last_used_at",
                 "revoked_at", "operator", "tenant")

    def __init__(self, id, prefix, label, scope, created_at, last_used_at,
                 revoked_at, operator=False, tenant=None):
        self.id = id
        self.prefix = prefix
        self.label = label
        #: None for every agent, else a frozenset of agent names.
        self.scope = None if scope == "*" else frozenset(json.loads(scope))
        self.created_at = created_at
        self.last_used_at = last_used_at
        self.revoked_at = revoked_at
        #: Opens the operator's page (reaching agents is the scope's say).
        self.operator = bool(operator)
        #: The one tenant the key acts in (A2A_TENANTS), None for none.
        self.tenant = tenant

    @property
    def scope_text(self) -> str:
        if self.scope is None:
            return "*"
        return ",".join(sorted(self.scope)) or "(no agent)"


class Credentials:
    """Keys and users of one ``Storage``: what a key is and how secrets are
    hashed is decided here; the storage keeps rows."""

    #: Live keys remembered per process (``remembered_key``), at most this many.
    REMEMBERED_MAX = 1024

    def __init__(self, storage):
        self.storage = storage
        self._live = {}  # key hash -> StoredApiKey found live by find_key
        self._uses = KeyUses(storage, _last_used_cutoff)

    # -- API keys ----------------------------------------------------------

    def create_key(self, agents: Optional[Iterable[str]] = None,
                   label: Optional[str] = None,
                   operator: bool = False,
                   tenant: Optional[str] = None) -> Tuple[StoredApiKey, str]:
        """A new key for ``agents`` (None: every agent; an empty set: none),
        acting in ``tenant`` only (None: where no tenant is named):
        (StoredApiKey, secret). ``operator``: it opens the operator's page.

        The secret is returned once, here, and never stored.
        """
        secret = KEY_PREFIX + secrets.token_urlsafe(32)  # 256 bits
        scope = "*" if agents is None else json.dumps(sorted(set(agents)))
        # Not new_id()[:16]: new_id starts with the time, so that would be a
        # timestamp, the same for two keys made in one millisecond.
        row = self.storage.insert_key(KeyRow(
            "key_" + secrets.token_hex(6), secret[:10], label, scope, None,
            operator=operator, tenant=tenant), hash_key(secret))
        return StoredApiKey(*row.astuple()), secret

    def keys(self) -> List[StoredApiKey]:
        """Every key; its last use as this process knows it when that is
        later than the stored one: a use waits up to a second for its write
        (key_uses.py), and the key of the very request asking (the
        operator's page's) would read "never"."""
        noted = {key.id: key.last_used_at for key in list(self._live.values())}
        keys = [StoredApiKey(*row.astuple()) for row in self.storage.keys()]
        for key in keys:
            use = noted.get(key.id)
            if use is not None and (key.last_used_at is None or key.last_used_at < use):
                key.last_used_at = use
        return keys

    def revoke_key(self, key_id: str) -> List[TaskRecord]:
        """Revoke the key, then cancel its tasks that are ``working``: its
        queued background turns never start, its running ones see
        ``turn.canceled``. Returns the tasks canceled (revoking again cancels
        what is left)."""
        try:
            self.storage.revoke_key(key_id)
        except KeyNotFoundError:
            raise CredentialError("no API key with id %r (see: a2a keys list)"
                                  % key_id) from None
        return self.storage.cancel_tasks(owner=key_owner(key_id),
                                         states=["working"])

    def find_key(self, secret: str) -> Optional[StoredApiKey]:
        """The live key with this secret, or None; records its use."""
        key_hash = hash_key(secret)
        row = self.storage.find_key(key_hash)
        if row is None:
            self._live.pop(key_hash, None)
            return None
        key = StoredApiKey(*row.astuple())
        # ISO timestamps of one format sort as text: no parsing per request.
        cutoff = _last_used_cutoff()
        if key.last_used_at is None or key.last_used_at < cutoff:
            key.last_used_at = now_iso()
            self._uses.note(key.id)
        if len(self._live) >= self.REMEMBERED_MAX:
            self._live.clear()
        self._live[key_hash] = key
        return key

    def remembered_key(self, secret: str) -> Optional[Tuple[StoredApiKey, str]]:
        """(StoredApiKey, its hash) of a key ``find_key`` found live in this process
        less than a minute ago (its use then noted), else None. Not proof
        that it is live *now*: whoever takes it checks that in the storage
        statement of the call (``remembered_key`` of ``Storage.get_task`` and
        ``start_turn``) or with ``key_is_live``, so a revoked key is refused
        at once all the same."""
        key_hash = hash_key(secret)
        key = self._live.get(key_hash)
        if key is None or key.last_used_at is None \
                or key.last_used_at < _last_used_cutoff():
            return None
        return key, key_hash

    def key_is_live(self, key_hash: str) -> bool:
        """Whether the key with this hash is live now (one lookup)."""
        if self.storage.find_key(key_hash) is not None:
            return True
        self._live.pop(key_hash, None)
        return False

    # -- built-in users --------------------------------------------------------

    def create_user(self, name: str, password: str, operator: bool = False,
                    tenant: Optional[str] = None) -> None:
        if not name or ":" in name:
            raise CredentialError("user name %r must be non-empty, without ':'"
                                  % name)
        if not password:
            raise CredentialError("the password must not be empty")
        try:
            self.storage.insert_user(name, passwords.hash_password(password),
                                     operator, tenant)
        except UserExistsError:
            raise CredentialError("a user named %r already exists" % name) from None

    def user_is_operator(self, name: str) -> bool:
        return self.storage.user_is_operator(name)

    def users(self) -> List[Tuple[str, str]]:
        """(name, created_at) of every built-in user."""
        return self.storage.users()

    def user_tenant(self, name: str) -> Optional[str]:
        """The tenant built-in user ``name`` acts in, None for none."""
        return self.storage.user_tenant(name)

    def has_users(self) -> bool:
        return self.storage.has_users()

    def delete_user(self, name: str) -> None:
        try:
            self.storage.delete_user(name)
        except UserNotFoundError:
            raise CredentialError("no user named %r" % name) from None

    def check_user(self, name: str, password: str,
                   before_slow_check: Optional[Callable[[], None]] = None) -> bool:
        """True when ``password`` is ``name``'s.

        A slow hash (pbkdf2, scrypt) on every request would cost each Basic call tens
        of milliseconds, so a success is remembered in this process, keyed by
        the stored hash: a deleted user or a new password is refused at once.
        ``before_slow_check()`` runs before any hash is computed (and may
        raise: the login throttle), not before a remembered success.
        """
        stored = self.storage.password_hash(name)
        # A slow hash holds no connection: a process has few (SQLite's pool).
        self.storage.release_connection()
        if before_slow_check is not None and (
                stored is None or _verified.get(name) != _proof(stored, password)):
            before_slow_check()
        if stored is None:
            _check_dummy_password(password)
            return False
        proof = _proof(stored, password)
        if _verified.get(name) == proof:
            return True
        if not passwords.check_password(stored, password):
            return False
        if len(_verified) >= _VERIFIED_MAX:
            _verified.clear()
        _verified[name] = proof
        return True
