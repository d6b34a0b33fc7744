"""API keys and built-in users of ``SqliteStorage``: its writes (the reads
are ``storage.credential_reads``'s); what a key or a password is, and how it
is hashed, is ``a2a_flask.auth.credentials``."""

from typing import List, Optional, Sequence, Tuple

from ..base import KeyNotFoundError, KeyRow, UserExistsError, UserNotFoundError
from ..common import KEY_COLUMNS, user_row
from ..credential_reads import CredentialReads


class CredentialOperations(CredentialReads):
    """Mixed into ``SqliteStorage``."""
    def insert_key(self, key: KeyRow, key_hash: str) -> KeyRow:
        key.created_at = self._now()
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO a2a_api_keys (%s, key_hash) VALUES"
                " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)" % KEY_COLUMNS,
                key.astuple() + (key_hash,))
        return key

    def revoke_key(self, key_id: str) -> None:
        with self.transaction() as conn:
            if conn.execute("UPDATE a2a_api_keys SET revoked_at = ? WHERE id = ?"
                            " AND revoked_at IS NULL",
                            (self._now(), key_id)).rowcount:
                return
            if conn.execute("SELECT 1 FROM a2a_api_keys WHERE id = ?",
                            (key_id,)).fetchone() is None:
                raise KeyNotFoundError(key_id)

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

    def delete_user(self, name: str) -> None:
        with self.transaction() as conn:
            if not conn.execute("DELETE FROM a2a_users WHERE name = ?",
                                (name,)).rowcount:
                raise UserNotFoundError(name)

    def import_credentials(self, keys: Sequence[Tuple[KeyRow, str]],
                           users: Sequence[Tuple]) -> None:
        with self.transaction() as conn:
            conn.executemany(
                "INSERT INTO a2a_api_keys (%s, key_hash) VALUES"
                " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING" % KEY_COLUMNS,
                [key.astuple() + (key_hash,) for key, key_hash in keys])
            conn.executemany(
                "INSERT INTO a2a_users (name, password_hash, created_at, operator,"
                " tenant) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [user_row(user) for user in users])
