"""API keys and built-in users of ``PostgresStorage``: its writes (the reads
are ``storage.credential_reads``'s); what a key or a password is, and how it
is hashed, is ``a2a_flask.auth.credentials``. Each operation is one
statement; every change is conditional and checked."""

from typing import List, Optional, Sequence, Tuple

from ..base import KeyNotFoundError, KeyRow, UserExistsError, UserNotFoundError
from ..common import KEY_COLUMNS, user_row
from ..credential_reads import CredentialReads
from .tasks import NOW


class CredentialOperations(CredentialReads):
    """Mixed into ``PostgresStorage``."""
    def insert_key(self, key: KeyRow, key_hash: str) -> KeyRow:
        key.created_at = self._one(
            "INSERT INTO a2a_api_keys (id, prefix, label, scope, created_at,"
            " last_used_at, revoked_at, operator, tenant, key_hash) VALUES (%s, %s,"
            " %s, %s, " + NOW + ", %s, %s, %s, %s, %s) RETURNING created_at",
            (key.id, key.prefix, key.label, key.scope, key.last_used_at,
             key.revoked_at, key.operator, key.tenant, key_hash))[0]
        return key

    def revoke_key(self, key_id: str) -> None:
        # The UPDATE and, in the same statement, whether the key exists at all.
        revoked, exists = self._one(
            "WITH u AS (UPDATE a2a_api_keys SET revoked_at = " + NOW +
            " WHERE id = %s AND revoked_at IS NULL RETURNING 1)"
            " SELECT EXISTS (SELECT FROM u),"
            " EXISTS (SELECT FROM a2a_api_keys WHERE id = %s)", (key_id, key_id))
        if not (revoked or exists):
            raise KeyNotFoundError(key_id)

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

    def delete_user(self, name: str) -> None:
        if self._one("DELETE FROM a2a_users WHERE name = %s RETURNING 1",
                     (name,)) is None:
            raise UserNotFoundError(name)

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
                    % KEY_COLUMNS,
                    [key.astuple() + (key_hash,) for key, key_hash in keys])
            if users:
                cur.executemany(
                    "INSERT INTO a2a_users (name, password_hash, created_at,"
                    " operator, tenant) VALUES (%s, %s, %s, %s, %s)"
                    " ON CONFLICT DO NOTHING",
                    [user_row(user) for user in users])
