"""API tokens: shown once, stored as a SHA-256 hash, carried as ``Authorization: Bearer``.

Tokens are 256 random bits, so a fast hash is the right tool (no password stretching needed:
there is nothing to brute-force that is smaller than the token itself).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from shortlist.db.types import AsyncConn, SyncConn

TOKEN_PREFIX = "sl_"


class Role(StrEnum):
    """What a caller may do, as the API's routes ask it (SPEC §9's token roles)."""

    company = "company"
    recruiter = "recruiter"
    admin = "admin"


class OrgKind(StrEnum):
    employer = "employer"
    recruiting = "recruiting"
    both = "both"


class OrgRole(StrEnum):
    """A person's role in an organisation (shortlist.accounts)."""

    owner = "owner"
    admin = "admin"
    recruiter = "recruiter"
    employer = "employer"
    reviewer = "reviewer"


MANAGERS = frozenset({OrgRole.owner, OrgRole.admin})


def roles_of(org_role: OrgRole | None, kind: OrgKind | None, site_admin: bool) -> frozenset[Role]:
    """The API roles a member acts with: searching people in a recruiting organisation
    (owners, admins, recruiters), posting jobs in an employer's (owners, admins, employers),
    everything as a site admin. A reviewer reads what is shared and gets neither."""
    roles: set[Role] = {Role.admin} if site_admin else set()
    if org_role is None or kind is None:
        return frozenset(roles)
    if kind in (OrgKind.recruiting, OrgKind.both) and org_role in (*MANAGERS, OrgRole.recruiter):
        roles.add(Role.recruiter)
    if kind in (OrgKind.employer, OrgKind.both) and org_role in (*MANAGERS, OrgRole.employer):
        roles.add(Role.company)
    return frozenset(roles)


@dataclass(frozen=True)
class Principal:
    """Who makes a request: an API key (``token_id``) or a browser session (``session_id``),
    always a user acting for one organisation (``org_id``) when they belong to one."""

    token_id: int | None
    name: str
    role: Role
    company: str | None = None
    """The company a company token posts as (every listing it writes carries it); None for the
    other roles."""
    user_id: int | None = None
    org_id: int | None = None
    org_role: OrgRole | None = None
    session_id: int | None = None
    csrf_token: str | None = None
    roles: frozenset[Role] = field(default_factory=frozenset)
    """Every role it acts with (``role`` is the first of them, kept for the single-role code)."""

    def __post_init__(self) -> None:
        # Built from a token role alone (older call sites): that role. A member's roles come
        # from their organisation role, and a reviewer's are empty.
        if not self.roles and self.org_role is None:
            object.__setattr__(self, "roles", frozenset({self.role}))

    @property
    def is_admin(self) -> bool:
        return Role.admin in self.roles

    @property
    def stream_key(self) -> int:
        """Whose open event streams are counted together: a key's, or a session's."""
        return self.token_id if self.token_id is not None else -(self.session_id or 0)


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
    SELECT t.id, t.name, t.role::text AS role, t.company_name, t.user_id, t.org_id,
           t.org_role::text AS org_role, m.role::text AS member_role, o.kind::text AS org_kind,
           o.name AS org_name, u.is_site_admin
      FROM api_tokens AS t
      JOIN users AS u ON u.id = t.user_id AND u.disabled_at IS NULL
      JOIN organisations AS o ON o.id = t.org_id
      LEFT JOIN memberships AS m ON m.user_id = t.user_id AND m.org_id = t.org_id
     WHERE t.token_hash = %s AND {_VALID}
       -- a person's key acts with its role while they still hold it (or manage the
       -- organisation); a service account's with its token role
       AND (t.org_role IS NULL
            OR m.role = t.org_role OR m.role IN ('owner', 'admin'))
), touched AS (
    UPDATE api_tokens AS t SET last_used_at = now()
      FROM found
     WHERE t.id = found.id
       AND (t.last_used_at IS NULL OR t.last_used_at < now() - interval '1 minute')
)
SELECT * FROM found
"""
_STILL_VALID = f"""
SELECT EXISTS (SELECT 1 FROM api_tokens AS t JOIN users AS u ON u.id = t.user_id
                WHERE t.id = %s AND {_VALID} AND u.disabled_at IS NULL) AS valid
"""
_SESSION_STILL_VALID = """
SELECT EXISTS (SELECT 1 FROM sessions AS s JOIN users AS u ON u.id = s.user_id
                WHERE s.id = %s AND s.ended_at IS NULL AND u.disabled_at IS NULL) AS valid
"""
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
    return principal_of_key(row)


def principal_of_key(row: dict[str, Any]) -> Principal:
    """The principal of a key's row (``_LOOKUP``)."""
    site_admin = bool(row["is_site_admin"])
    if row["org_role"] is None:
        # A service account's key (every token made before accounts, and by the CLI): its
        # token role, as SPEC §9 says.
        role = Role(row["role"])
        roles = frozenset({role, Role.admin} if site_admin else {role})
        return Principal(
            int(row["id"]),
            str(row["name"]),
            role,
            row["company_name"] or None,
            user_id=int(row["user_id"]),
            org_id=int(row["org_id"]),
            org_role=OrgRole(row["member_role"]) if row["member_role"] else None,
            roles=roles,
        )
    org_role = OrgRole(row["org_role"])
    roles = roles_of(org_role, OrgKind(row["org_kind"]), site_admin)
    return Principal(
        int(row["id"]),
        str(row["name"]),
        primary_role(roles),
        str(row["org_name"]) if Role.company in roles else None,
        user_id=int(row["user_id"]),
        org_id=int(row["org_id"]),
        org_role=org_role,
        roles=roles,
    )


def primary_role(roles: frozenset[Role]) -> Role:
    for role in (Role.admin, Role.recruiter, Role.company):
        if role in roles:
            return role
    # A reviewer: reads what is shared (Principal.roles stays empty: no route role admits it).
    return Role.recruiter


async def still_valid(conn: AsyncConn, who: Principal | int) -> bool:
    """Whether the key (or session) is still good now: not revoked, expired or ended, its
    person not disabled (an open event stream asks)."""
    if isinstance(who, int):
        cur = await conn.execute(_STILL_VALID, (who,))
    elif who.token_id is not None:
        cur = await conn.execute(_STILL_VALID, (who.token_id,))
    else:
        cur = await conn.execute(_SESSION_STILL_VALID, (who.session_id,))
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
