"""Endpoint secrets at rest: encrypted, never kept as they are.

A Standard Webhooks signature is an HMAC keyed with the endpoint's secret, so the sender needs
the secret itself at every attempt: a hash (as API tokens are kept) cannot sign. The secret is
therefore encrypted with Fernet (``cryptography``: AES-128-CBC + HMAC-SHA256, authenticated) and
stored as ``fernet:<token>``; the API shows it once, when it is made or rotated.

Keys: ``SHORTLIST_WEBHOOK_SECRET_KEYS``, comma-separated — the first encrypts, every one decrypts
(``MultiFernet``), so a key is replaced by putting the new one first and dropping the old one
once the upkeep has encrypted every secret again with the new one (:func:`seal_secrets`). Each
is any string of at least 32 characters (``openssl rand -hex 32``), stretched to a Fernet key
by SHA-256. Unset: the key migration 0044 generated in the database (``webhook_secret_key``),
which keeps a secret out of what the endpoints' table shows (an export, a query, a log line) but
not out of a copy of the whole database; with a key in the environment, a database copy alone
reveals no secret. Secrets stored before 0044 (``whsec_…``) are read as they are and encrypted
by the upkeep.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn, AsyncPool
from shortlist.errors import ConfigError
from shortlist.webhooks.signing import SECRET_PREFIX

_SQL = load_queries("shortlist.webhooks")
SEALED_PREFIX = "fernet:"
SETTING = "SHORTLIST_WEBHOOK_SECRET_KEYS"
MIN_KEY_CHARS = 32


class UnreadableSecret(Exception):
    """A stored secret none of the keys decrypts (its key was dropped from the setting)."""


def configured_keys(setting: str) -> list[bytes]:
    """The setting's keys as Fernet keys, first first; ``ConfigError`` for a short one."""
    keys = [k.strip() for k in setting.split(",") if k.strip()]
    for key in keys:
        if len(key) < MIN_KEY_CHARS:
            raise ConfigError(f"{SETTING}: each key needs at least {MIN_KEY_CHARS} characters")
    return [
        base64.urlsafe_b64encode(
            hashlib.sha256(b"shortlist webhook secrets\0" + k.encode()).digest()
        )
        for k in keys
    ]


@dataclass(frozen=True)
class SecretBox:
    """Encrypts secrets with the first key, decrypts with any."""

    keys: Sequence[bytes]

    def __post_init__(self) -> None:
        if not self.keys:
            raise ValueError("a secret box needs a key")

    @property
    def _fernet(self) -> MultiFernet:
        return MultiFernet([Fernet(k) for k in self.keys])

    def seal(self, secret: str) -> str:
        return SEALED_PREFIX + self._fernet.encrypt(secret.encode("utf-8")).decode("ascii")

    def open(self, stored: str) -> str:
        """The secret a stored value holds (one stored before encryption, as it is)."""
        if stored.startswith(SECRET_PREFIX):
            return stored
        try:
            return self._fernet.decrypt(stored.removeprefix(SEALED_PREFIX).encode()).decode()
        except InvalidToken:
            raise UnreadableSecret(
                f"the endpoint's secret cannot be decrypted: {SETTING} lacks the key it was"
                " encrypted with"
            ) from None

    def needs_sealing(self, stored: str) -> bool:
        """Stored as it is, or encrypted with a key that is not the first."""
        if stored.startswith(SECRET_PREFIX):
            return True
        token = stored.removeprefix(SEALED_PREFIX).encode()
        try:
            Fernet(self.keys[0]).decrypt(token)
        except InvalidToken:
            return True
        return False


_stored_keys: dict[tuple[str, int, str], bytes] = {}


async def secret_box(conn: AsyncConn, setting: str = "") -> SecretBox:
    """The box of ``SHORTLIST_WEBHOOK_SECRET_KEYS``, or of the database's key when it is unset;
    the database's key decrypts too (what was encrypted before the setting was made)."""
    where = (conn.info.host, conn.info.port, conn.info.dbname)
    stored = _stored_keys.get(where)
    if stored is None:
        cur = await conn.execute(_SQL["webhook_secret_key"])
        row = await cur.fetchone()
        assert row is not None, "migration 0044 stores the key"
        stored = _stored_keys[where] = base64.urlsafe_b64encode(bytes(row["key"]))
    return SecretBox([*configured_keys(setting), stored])


async def seal_secrets(pool: AsyncPool, setting: str = "") -> int:
    """Encrypt with the first key every secret stored as it is or under another key (the
    upkeep's, after 0044 or a key change); returns how many endpoints it changed."""
    changed = 0
    async with pool.connection() as conn, conn.transaction():
        box = await secret_box(conn, setting)
        cur = await conn.execute(_SQL["endpoint_secrets"])
        for row in await cur.fetchall():
            secret, previous = row["secret"], row["previous_secret"]
            if not box.needs_sealing(secret) and (
                previous is None or not box.needs_sealing(previous)
            ):
                continue
            try:
                sealed = box.seal(box.open(secret))
                sealed_previous = None if previous is None else box.seal(box.open(previous))
            except UnreadableSecret:
                continue  # the sender reports it on each attempt
            await conn.execute(
                _SQL["seal_endpoint_secrets"],
                {
                    "id": row["id"],
                    "secret": sealed,
                    "previous_secret": sealed_previous,
                    "was": secret,
                },
            )
            changed += 1
    return changed
