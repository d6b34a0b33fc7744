"""The reads of API keys and built-in users, written once for both backends:
each backend's connections run a statement (``_one``, ``_all``) and mark
its parameters (``MARK``) their own way; the writes, whose checks differ by
dialect, stay in each backend's ``credentials.py``."""

from typing import Any, Callable, List, Optional, Tuple

from .common import KEY_COLUMNS, Dialect
from .records import KeyRow


class CredentialReads(Dialect):
    """Mixed into each backend's ``CredentialOperations``."""

    # The backend's (its connections class, later in the storage's bases).
    _one: Callable[..., Any]
    _all: Callable[..., List[Any]]

    def keys(self) -> List[KeyRow]:
        return [KeyRow(*row) for row in self._all(
            "SELECT %s FROM a2a_api_keys ORDER BY created_at, id" % KEY_COLUMNS)]

    def find_key(self, key_hash: str) -> Optional[KeyRow]:
        row = self._one(self._marked(
            "SELECT %s FROM a2a_api_keys WHERE key_hash = ? AND revoked_at IS NULL"
            % KEY_COLUMNS), (key_hash,))
        return None if row is None else KeyRow(*row)

    def _user_column(self, column: str, name: str) -> Any:
        row = self._one(self._marked(
            "SELECT %s FROM a2a_users WHERE name = ?" % column), (name,))
        return None if row is None else row[0]

    def user_is_operator(self, name: str) -> bool:
        return bool(self._user_column("operator", name))

    def users(self) -> List[Tuple[str, str]]:
        return [tuple(row) for row in self._all(
            "SELECT name, created_at FROM a2a_users ORDER BY name")]

    def has_users(self) -> bool:
        return self._one("SELECT 1 FROM a2a_users LIMIT 1") is not None

    def password_hash(self, name: str) -> Optional[str]:
        return self._user_column("password_hash", name)

    def user_tenant(self, name: str) -> Optional[str]:
        return self._user_column("tenant", name)

    # -- bulk copy (``flask a2a db copy``) ------------------------------------

    def export_credentials(self) -> Tuple[List[Tuple[KeyRow, str]],
                                          List[Tuple[str, str, str, bool, Optional[str]]]]:
        """(keys as (KeyRow, key hash), users as (name, password hash,
        created_at, operator, tenant)): everything ``import_credentials``
        needs, hashes only."""
        keys = [(KeyRow(*row[:9]), row[9]) for row in self._all(
            "SELECT %s, key_hash FROM a2a_api_keys ORDER BY created_at, id"
            % KEY_COLUMNS)]
        users = [tuple(row) for row in self._all(
            "SELECT name, password_hash, created_at, operator, tenant FROM a2a_users"
            " ORDER BY name")]
        return keys, users
