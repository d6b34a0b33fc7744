"""API keys and built-in users of ``SqliteStorage``: rows only; what a key
or a password is, and how it is hashed, is ``a2a_flask.credentials``."""

from typing import List, Optional, Sequence, Tuple
from ..base import KeyNotFoundError, KeyRow, UserExistsError, UserNotFoundError

_KEY_COLUMNS = ("id, prefix, label, scope, created_at, last_used_at, revoked_at,"
                " operator, tenant")


def _user_row(user):
    """An exported user, operator flag then tenant last (False and None
    when an older export has none)."""
    name, password_hash, created_at = user[:3]
    return (name, password_hash, created_at, int(bool(user[3:4] and user[3])),
            user[4] if len(user) > 4 else None)


class CredentialOperations:
    """Mixed into ``SqliteStorage``."""

    def insert_key(self, key: KeyRow, key_hash: str) -> KeyRow:
        key.created_at = self._now()
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO a2a_api_keys (%s, key_hash) VALUES"
                " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)" % _KEY_COLUMNS,
                key.astuple() + (key_hash,))
        return key

    def keys(self) -> List[KeyRow]:
        return [KeyRow(*row) for row in self.connection().execute(
            "SELECT %s FROM a2a_api_keys ORDER BY created_at, id" % _KEY_COLUMNS)]

    def revoke_key(self, key_id: str) -> None:
        with self.transaction() as conn:
            if conn.execute("UPDATE a2a_api_keys SET revoked_at = ? WHERE id = ?"
                            " AND revoked_at IS NULL",
                            (self._now(), key_id)).rowcount:
                return
            if conn.execute("SELECT 1 FROM a2a_api_keys WHERE id = ?",
                            (key_id,)).fetchone() is None:
                raise KeyNotFoundError(key_id)

    def find_key(self, key_hash: str) -> Optional[KeyRow]:
        row = self.connection().execute(
            "SELECT %s FROM a2a_api_keys WHERE key_hash = ? AND revoked_at IS NULL"
            % _KEY_COLUMNS, (key_hash,)).fetchone()
        return None if row is None else KeyRow(*row)

    def touch_keys(self, key_ids: List[str], older_than: str) -> int:
        now = self._now()
        with self.transaction() as conn:
            return conn.executemany(
                "UPDATE a2a_api_keys SET last_used_at = ? WHERE id = ? AND"
                " (last_used_at IS NULL OR last_used_at < ?)",
                [(now, key_id, older_than) for key_id in key_ids]).rowcount

    def insert_user(self, name: str, password_hash: str, operator: bool = False,
                    tenant: Optional[str] = None) -> None:
        with self.transaction() as conn:
            if not conn.execute(
                    "INSERT INTO a2a_users (name, password_hash, created_at,"
                    " operator, tenant) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    (name, password_hash, self._now(), int(operator),
                     tenant)).rowcount:
                raise UserExistsError(name)

    def user_is_operator(self, name: str) -> bool:
        row = self.connection().execute(
            "SELECT operator FROM a2a_users WHERE name = ?", (name,)).fetchone()
        return bool(row and row[0])

    def users(self) -> List[Tuple[str, str]]:
        return [tuple(row) for row in self.connection().execute(
            "SELECT name, created_at FROM a2a_users ORDER BY name")]

    def has_users(self) -> bool:
        return self.connection().execute(
            "SELECT EXISTS (SELECT 1 FROM a2a_users)").fetchone()[0] == 1

    def delete_user(self, name: str) -> None:
        with self.transaction() as conn:
            if not conn.execute("DELETE FROM a2a_users WHERE name = ?",
                                (name,)).rowcount:
                raise UserNotFoundError(name)

    def password_hash(self, name: str) -> Optional[str]:
        row = self.connection().execute(
            "SELECT password_hash FROM a2a_users WHERE name = ?", (name,)).fetchone()
        return None if row is None else row[0]

    def user_tenant(self, name: str) -> Optional[str]:
        row = self.connection().execute(
            "SELECT tenant FROM a2a_users WHERE name = ?", (name,)).fetchone()
        return None if row is None else row[0]

    # -- bulk copy (``flask a2a db copy``) ------------------------------------

    def export_credentials(self) -> Tuple[List[Tuple[KeyRow, str]],
                                          List[Tuple[str, str, str, bool, Optional[str]]]]:
        conn = self.connection()
        keys = [(KeyRow(*row[:9]), row[9]) for row in conn.execute(
            "SELECT %s, key_hash FROM a2a_api_keys ORDER BY created_at, id"
            % _KEY_COLUMNS)]
        users = [tuple(row) for row in conn.execute(
            "SELECT name, password_hash, created_at, operator, tenant FROM a2a_users"
            " ORDER BY name")]
        return keys, users

    def import_credentials(self, keys: Sequence[Tuple[KeyRow, str]],
                           users: Sequence[Tuple]) -> None:
        with self.transaction() as conn:
            conn.executemany(
                "INSERT INTO a2a_api_keys (%s, key_hash) VALUES"
                " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING" % _KEY_COLUMNS,
                [key.astuple() + (key_hash,) for key, key_hash in keys])
            conn.executemany(
                "INSERT INTO a2a_users (name, password_hash, created_at, operator,"
                " tenant) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [_user_row(user) for user in users])
