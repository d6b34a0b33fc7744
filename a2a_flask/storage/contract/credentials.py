"""The storage contract, API keys and built-in users (rows only: the hashing
policy is ``auth/credentials.py``'s)."""

import abc
from typing import List, Optional, Tuple

from ..records import KeyRow


class CredentialStorage(abc.ABC):
    """API keys and built-in users, as rows."""

    # -- keys and users (hashing policy stays in credentials.py) -----------------

    @abc.abstractmethod
    def insert_key(self, key: KeyRow, key_hash: str) -> KeyRow:
        """Store a new key (and its ``tenant``) under its hash; its
        ``created_at`` is set here."""

    @abc.abstractmethod
    def keys(self) -> List[KeyRow]:
        """Every key, oldest first."""

    @abc.abstractmethod
    def revoke_key(self, key_id: str) -> None:
        """Set ``revoked_at`` if unset (conditional UPDATE; revoking twice is
        no change); ``KeyNotFoundError`` when there is no such key."""

    @abc.abstractmethod
    def find_key(self, key_hash: str) -> Optional[KeyRow]:
        """The live (unrevoked) key with this hash, or None."""

    @abc.abstractmethod
    def touch_keys(self, key_ids: List[str], older_than: str) -> int:
        """Record uses, in one write: ``last_used_at`` = now for each of
        ``key_ids`` where it is NULL or older than ``older_than``; returns
        how many keys changed."""

    @abc.abstractmethod
    def insert_user(self, name: str, password_hash: str,
                    operator: bool = False, tenant: Optional[str] = None) -> None:
        """A new built-in user (``operator``: it opens the operator's page;
        of ``tenant``, None: of none); ``UserExistsError`` when the name is
        taken."""

    @abc.abstractmethod
    def user_is_operator(self, name: str) -> bool:
        """Whether built-in user ``name`` exists and is an operator."""

    @abc.abstractmethod
    def users(self) -> List[Tuple[str, str]]:
        """(name, created_at) of every user, by name."""

    @abc.abstractmethod
    def has_users(self) -> bool:
        """True when there is at least one user."""

    @abc.abstractmethod
    def delete_user(self, name: str) -> None:
        """``UserNotFoundError`` when there is no such user."""

    @abc.abstractmethod
    def password_hash(self, name: str) -> Optional[str]:
        """The stored password hash of ``name``, or None."""

    @abc.abstractmethod
    def user_tenant(self, name: str) -> Optional[str]:
        """The tenant user ``name`` acts in, None for none (or no such user)."""
