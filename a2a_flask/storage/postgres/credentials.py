"""API keys and built-in users of ``PostgresStorage``: rows only; what a key
or a password is, and how it is hashed, is ``a2a_flask.credentials``.
Each operation is one statement; every change is conditional and checked."""

from typing import List, Optional, Sequence, Tuple
from ..base import KeyNotFoundError, KeyRow, UserExistsError, UserNotFoundError
from .tasks import NOW

_KEY_COLUMNS = ("id, prefix, label, scope, created_at, last_used_at, revoked_at,"
                " operator, tenant")


class CredentialOperations:
    """Mixed into ``PostgresStorage``."""

    def _one(self, sql, args=()):
        with self.connection() as conn:
            return conn.execute(sql, args).fetchone()

    def _all(self, sql, args=()):
        with self.connection() as conn:
            return conn.execute(sql, args).fetchall()

    def insert_key(self, key: KeyRow, key_hash: str) -> KeyRow:
        key.created_at = self._one(
            "INSERT INTO a2a_api_keys (id, prefix, label, scope, created_at,"
            " last_used_at, revoked_at, operator, tenant, key_hash) VALUES (%s, %s,"
            " %s, %s, " + NOW + ", %s, %s, %s, %s, %s) RETURNING created_at",
            (key.id, key.prefix, key.label, key.scope, key.last_used_at,
             key.revoked_at, key.operator, key.tenant, key_hash))[0]
        return key

    def keys(self) -> List[KeyRow]:
        return [KeyRow(*row) for row in self._all(
            "SELECT %s FROM a2a_api_keys ORDER BY created_at, id" % _KEY_COLUMNS)]

    def revoke_key(self, key_id: str) -> None:
        # The UPDATE and, in the same statement, whether the key exists at all.
        revoked, exists = self._one(
            "WITH u AS (UPDATE a2a_api_keys SET revoked_at = " + NOW +
            " WHERE id = %s AND revoked_at IS NULL RETURNING 1)"
            " SELECT EXISTS (SELECT FROM u),"
            " EXISTS (SELECT FROM a2a_api_keys WHERE id = %s)", (key_id, key_id))
        if not (revoked or exists):
            raise KeyNotFoundError(key_id)

    def find_key(self, key_hash: str) -> Optional[KeyRow]:
        row = self._one("SELECT %s FROM a2a_api_keys WHERE key_hash = %%s"
                        " AND revoked_at IS NULL" % _KEY_COLUMNS, (key_hash,))
        return None if row is None else KeyRow(*row)

    def touch_keys(self, key_ids: List[str], older_than: str) -> int:
        return self._one(
            "WITH touched AS (UPDATE a2a_api_keys SET last_used_at = " + NOW +
            " WHERE id = ANY(%s) AND (last_used_at IS NULL OR last_used_at < %s)"
            " RETURNING 1) SELECT count(*) FROM touched",
            (list(key_ids), older_than))[0]

    def insert_user(self, name: str, password_hash: str, operator: bool = False,
                    tenant: Optional[str] = None) -> None:
        if self._one("INSERT INTO a2a_users (name, password_hash, created_at,"
                     " operator, tenant) VALUES (%s, %s, " + NOW + ", %s, %s)"
                     " ON CONFLICT DO NOTHING RETURNING 1",
                     (name, password_hash, bool(operator), tenant)) is None:
            raise UserExistsError(name)

    def user_is_operator(self, name: str) -> bool:
        row = self._one("SELECT operator FROM a2a_users WHERE name = %s", (name,))
        return bool(row and row[0])

    def users(self) -> List[Tuple[str, str]]:
        return [tuple(row) for row in self._all(
            "SELECT name, created_at FROM a2a_users ORDER BY name")]

    def has_users(self) -> bool:
        return self._one("SELECT EXISTS (SELECT FROM a2a_users)")[0]

    def delete_user(self, name: str) -> None:
        if self._one("DELETE FROM a2a_users WHERE name = %s RETURNING 1",
                     (name,)) is None:
            raise UserNotFoundError(name)

    def password_hash(self, name: str) -> Optional[str]:
        row = self._one("SELECT password_hash FROM a2a_users WHERE name = %s", (name,))
        return None if row is None else row[0]

    def user_tenant(self, name: str) -> Optional[str]:
        row = self._one("SELECT tenant FROM a2a_users WHERE name = %s", (name,))
        return None if row is None else row[0]

    # -- bulk copy (``flask a2a db copy``) ------------------------------------

    def export_credentials(self) -> Tuple[List[Tuple[KeyRow, str]],
                                          List[Tuple[str, str, str, bool, Optional[str]]]]:
        """(keys as (KeyRow, key hash), users as (name, password hash,
        created_at, operator, tenant)): everything ``import_credentials``
        needs, hashes only."""
        keys = [(KeyRow(*row[:9]), row[9]) for row in self._all(
            "SELECT %s, key_hash FROM a2a_api_keys ORDER BY created_at, id"
            % _KEY_COLUMNS)]
        users = [tuple(row) for row in self._all(
            "SELECT name, password_hash, created_at, operator, tenant FROM a2a_users"
            " ORDER BY name")]
        return keys, users

    def import_credentials(self, keys: Sequence[Tuple[KeyRow, str]],
                           users: Sequence[Tuple]) -> None:
        """Insert keys and users as they are (timestamps kept), in one
        transaction; a key id or user name already here is left as it is."""
        with self.transaction() as conn:
            cur = conn.cursor()
            if keys:
                cur.executemany(
                    "INSERT INTO a2a_api_keys (%s, key_hash) VALUES (%%s, %%s, %%s,"
                    " %%s, %%s, %%s, %%s, %%s, %%s, %%s) ON CONFLICT DO NOTHING"
                    % _KEY_COLUMNS,
                    [key.astuple() + (key_hash,) for key, key_hash in keys])
            if users:
                cur.executemany(
                    "INSERT INTO a2a_users (name, password_hash, created_at,"
                    " operator, tenant) VALUES (%s, %s, %s, %s, %s)"
                    " ON CONFLICT DO NOTHING",
                    [tuple(user[:3]) + (bool(user[3:4] and user[3]),
                                        user[4] if len(user) > 4 else None)
                     for user in users])
