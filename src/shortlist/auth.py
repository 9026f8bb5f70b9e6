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
    company: str | None = None
    """The company a company token posts as (every listing it writes carries it); None for the
    other roles."""

    @property
    def is_admin(self) -> bool:
        return self.role is Role.admin


def hash_token(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


_INSERT = (
    "INSERT INTO api_tokens (name, role, token_hash, company_name) VALUES (%s, %s, %s, %s)"
    " RETURNING id"
)
_LOOKUP = (
    "SELECT id, name, role::text AS role, company_name FROM api_tokens"
    " WHERE token_hash = %s AND revoked_at IS NULL"
)


def bound_company(name: str, role: Role, company: str | None) -> str | None:
    """The company a new token is bound to: ``company`` for a company token (its own name when
    none is given: the command line requires one, programs may rely on the name), None for the
    other roles, which post as nobody."""
    if role is not Role.company:
        return None
    return " ".join((company or name).split()) or None


def create_token(
    conn: SyncConn, name: str, role: Role, company: str | None = None
) -> tuple[Principal, str]:
    """Create a token; returns the principal and the plain token (never stored)."""
    token = new_token()
    bound = bound_company(name, role, company)
    row = conn.execute(_INSERT, (name, role.value, hash_token(token), bound)).fetchone()
    assert row is not None
    conn.commit()
    return Principal(int(row["id"]), name, role, bound), token


async def create_token_async(
    conn: AsyncConn, name: str, role: Role, company: str | None = None
) -> tuple[Principal, str]:
    token = new_token()
    bound = bound_company(name, role, company)
    cur = await conn.execute(_INSERT, (name, role.value, hash_token(token), bound))
    row = await cur.fetchone()
    assert row is not None
    await conn.commit()
    return Principal(int(row["id"]), name, role, bound), token


async def authenticate(conn: AsyncConn, token: str) -> Principal | None:
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    cur = await conn.execute(_LOOKUP, (hash_token(token),))
    row = await cur.fetchone()
    if row is None:
        return None
    return Principal(
        int(row["id"]), str(row["name"]), Role(row["role"]), row["company_name"] or None
    )
