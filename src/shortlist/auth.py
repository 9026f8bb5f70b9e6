"""API tokens: shown once, stored as a SHA-256 hash, carried as ``Authorization: Bearer``.

Tokens are 256 random bits, so a fast hash is the right tool (no password stretching needed:
there is nothing to brute-force that is smaller than the token itself).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from enum import StrEnum

from shortlist.db.types import AsyncConn, SyncConn

TOKEN_PREFIX = "sl_"


class Role(StrEnum):
    company = "company"
    recruiter = "recruiter"
    admin = "admin"


@dataclass(frozen=True)
class Principal:
    token_id: int
    name: str
    role: Role

    @property
    def is_admin(self) -> bool:
        return self.role is Role.admin


def hash_token(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


_INSERT = "INSERT INTO api_tokens (name, role, token_hash) VALUES (%s, %s, %s) RETURNING id"
_LOOKUP = (
    "SELECT id, name, role::text AS role FROM api_tokens"
    " WHERE token_hash = %s AND revoked_at IS NULL"
)


def create_token(conn: SyncConn, name: str, role: Role) -> tuple[Principal, str]:
    """Create a token; returns the principal and the plain token (never stored)."""
    token = new_token()
    row = conn.execute(_INSERT, (name, role.value, hash_token(token))).fetchone()
    assert row is not None
    conn.commit()
    return Principal(int(row["id"]), name, role), token


async def create_token_async(conn: AsyncConn, name: str, role: Role) -> tuple[Principal, str]:
    token = new_token()
    cur = await conn.execute(_INSERT, (name, role.value, hash_token(token)))
    row = await cur.fetchone()
    assert row is not None
    await conn.commit()
    return Principal(int(row["id"]), name, role), token


async def authenticate(conn: AsyncConn, token: str) -> Principal | None:
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    cur = await conn.execute(_LOOKUP, (hash_token(token),))
    row = await cur.fetchone()
    if row is None:
        return None
    return Principal(int(row["id"]), str(row["name"]), Role(row["role"]))
