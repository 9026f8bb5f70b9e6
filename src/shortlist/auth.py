"""API tokens: shown once, stored as a SHA-256 hash, carried as ``Authorization: Bearer``.

Tokens are 256 random bits, so a fast hash is the right tool (no password stretching needed:
there is nothing to brute-force that is smaller than the token itself).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

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
# A token is valid until revoked or expired; each check sees a revocation at once (no cache).
_VALID = "revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())"
# One round trip: find the token and, at most once a minute, note that it was used (a write
# per request would turn every read into a row update).
_LOOKUP = f"""
WITH found AS (
    SELECT id, name, role::text AS role, company_name FROM api_tokens
     WHERE token_hash = %s AND {_VALID}
), touched AS (
    UPDATE api_tokens AS t SET last_used_at = now()
      FROM found
     WHERE t.id = found.id
       AND (t.last_used_at IS NULL OR t.last_used_at < now() - interval '1 minute')
)
SELECT id, name, role, company_name FROM found
"""
_STILL_VALID = f"SELECT EXISTS (SELECT 1 FROM api_tokens WHERE id = %s AND {_VALID}) AS valid"
_SET_EXPIRY = "UPDATE api_tokens SET expires_at = now() + %s * interval '1 day' WHERE id = %s"
_LIST = """
SELECT t.id, t.name, t.role::text AS role, t.company_name AS company,
       t.created_at, t.expires_at, t.last_used_at, t.revoked_at
  FROM api_tokens AS t
 ORDER BY t.created_at, t.id
"""
# Revoking never deletes: the recruiter's searches, results and marks stay (migration 0022).
_REVOKE = (
    "UPDATE api_tokens SET revoked_at = now() WHERE name = %s AND revoked_at IS NULL RETURNING id"
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


async def still_valid(conn: AsyncConn, token_id: int) -> bool:
    """Whether the token is neither revoked nor expired now (an open event stream asks)."""
    cur = await conn.execute(_STILL_VALID, (token_id,))
    row = await cur.fetchone()
    return bool(row and row["valid"])


def set_expiry(conn: SyncConn, token_id: int, days: float) -> None:
    """The token expires ``days`` from now."""
    conn.execute(_SET_EXPIRY, (days, token_id))
    conn.commit()


def list_tokens(conn: SyncConn) -> list[dict[str, Any]]:
    """Every token with its state (never its secret, which is not stored anyway)."""
    rows = conn.execute(_LIST).fetchall()
    now = datetime.now().astimezone()
    out: list[dict[str, Any]] = []
    for r in rows:
        expired = r["expires_at"] is not None and r["expires_at"] <= now
        state = "revoked" if r["revoked_at"] else "expired" if expired else "active"
        out.append({**r, "state": state})
    return out


def revoke_tokens(conn: SyncConn, name: str) -> int:
    """Revoke every live token named ``name``; returns how many."""
    rows = conn.execute(_REVOKE, (name,)).fetchall()
    conn.commit()
    return len(rows)
