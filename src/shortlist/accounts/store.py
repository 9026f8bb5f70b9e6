"""The rows of accounts (migration 0029): organisations, people, memberships, e-mail domains,
invitations, single-use links and people's API keys. Each function runs in the caller's
transaction and commits nothing."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shortlist.accounts.secrets import digest, new_secret
from shortlist.auth import TOKEN_PREFIX, OrgKind, OrgRole, Role, hash_token, roles_of
from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn, Row
from shortlist.errors import BadInput, Conflict, NotFound

QUERIES = load_queries("shortlist.accounts")

# An address as the HTML form's type=email accepts it (WHATWG), at most 320 characters.
_EMAIL = re.compile(
    r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
    r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)


def normal_email(email: str) -> str:
    """An address as stored: trimmed; checked for shape (compared case-insensitively, citext)."""
    address = email.strip()
    if len(address) > 320 or not _EMAIL.match(address):
        raise BadInput("not an e-mail address", field="email")
    return address


@dataclass(frozen=True)
class Organisation:
    id: int
    name: str
    kind: OrgKind
    require_second_factor: bool


@dataclass(frozen=True)
class User:
    id: int
    email: str
    name: str
    password_hash: str | None
    verified: bool
    totp_secret: str | None
    second_factor: bool
    site_admin: bool
    disabled: bool


def _org(row: Row) -> Organisation:
    return Organisation(
        int(row["id"]), str(row["name"]), OrgKind(row["kind"]), bool(row["require_second_factor"])
    )


def _user(row: Row) -> User:
    return User(
        id=int(row["id"]),
        email=str(row["email"]),
        name=str(row["name"]),
        password_hash=row["password_hash"],
        verified=row["email_verified_at"] is not None,
        totp_secret=row["totp_secret"],
        second_factor=row["totp_enabled_at"] is not None,
        site_admin=bool(row["is_site_admin"]),
        disabled=row["disabled_at"] is not None,
    )


async def _one(conn: AsyncConn, name: str, params: dict[str, Any]) -> Row | None:
    cur = await conn.execute(QUERIES[name], params)
    return await cur.fetchone()


async def _all(conn: AsyncConn, name: str, params: dict[str, Any]) -> list[Row]:
    cur = await conn.execute(QUERIES[name], params)
    return await cur.fetchall()


# --- organisations ---------------------------------------------------------------------------


async def create_org(conn: AsyncConn, name: str, kind: OrgKind) -> Organisation:
    clean = " ".join(name.split())
    if not 1 <= len(clean) <= 200:
        raise BadInput("an organisation's name has 1 to 200 characters", field="name")
    row = await _one(conn, "create_org", {"name": clean, "kind": kind.value})
    if row is None:
        raise Conflict(f"an organisation named {clean!r} exists already")
    return _org(row)


async def org_by_name(conn: AsyncConn, name: str) -> Organisation:
    row = await _one(conn, "org_by_name", {"name": name})
    if row is None:
        raise NotFound(f"no organisation named {name!r}")
    return _org(row)


async def org_by_id(conn: AsyncConn, org_id: int) -> Organisation | None:
    row = await _one(conn, "org_by_id", {"org_id": org_id})
    return None if row is None else _org(row)


async def set_second_factor_required(conn: AsyncConn, org_id: int, required: bool) -> None:
    await conn.execute(QUERIES["set_org_second_factor"], {"org_id": org_id, "required": required})


# --- people ----------------------------------------------------------------------------------


async def user_by_email(conn: AsyncConn, email: str) -> User | None:
    row = await _one(conn, "user_by_email", {"email": email.strip()})
    return None if row is None else _user(row)


async def user_by_id(conn: AsyncConn, user_id: int) -> User | None:
    row = await _one(conn, "user_by_id", {"user_id": user_id})
    return None if row is None else _user(row)


async def create_user(
    conn: AsyncConn,
    email: str,
    *,
    name: str = "",
    password_hash: str | None = None,
    verified: bool = False,
    site_admin: bool = False,
) -> User:
    """A person (an existing one with that address is returned unchanged)."""
    row = await _one(
        conn,
        "create_user",
        {
            "email": normal_email(email),
            "name": " ".join(name.split())[:200],
            "password_hash": password_hash,
            "verified": verified,
            "site_admin": site_admin,
        },
    )
    assert row is not None
    return _user(row)


async def set_password_hash(conn: AsyncConn, user_id: int, password_hash: str) -> None:
    await conn.execute(
        QUERIES["set_password"], {"user_id": user_id, "password_hash": password_hash}
    )


async def set_name(conn: AsyncConn, user_id: int, name: str) -> None:
    await conn.execute(
        QUERIES["set_name"], {"user_id": user_id, "name": " ".join(name.split())[:200]}
    )


async def mark_verified(conn: AsyncConn, user_id: int) -> None:
    await conn.execute(QUERIES["mark_verified"], {"user_id": user_id})


async def disable_user(conn: AsyncConn, email: str) -> bool:
    """Disable a person: their sessions end, their keys are revoked, the intake addresses they
    own stop taking mail. False: no such address."""
    rows = await _all(conn, "disable_user", {"email": email.strip()})
    return bool(rows)


async def list_users(conn: AsyncConn, org_id: int | None = None) -> list[dict[str, Any]]:
    return [
        {
            "id": int(r["id"]),
            "email": r["email"],
            "name": r["name"],
            "service": bool(r["service"]),
            "siteAdmin": bool(r["is_site_admin"]),
            "disabled": r["disabled_at"] is not None,
            "secondFactor": bool(r["second_factor"]),
            "createdAt": r["created_at"].isoformat(),
            "organisations": r["organisations"],
        }
        for r in await _all(conn, "list_users", {"org_id": org_id})
    ]


async def count_people(conn: AsyncConn) -> int:
    row = await _one(conn, "count_people", {})
    return int(row["n"]) if row else 0


# --- memberships -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Membership:
    org: Organisation
    role: OrgRole


async def memberships_of(conn: AsyncConn, user_id: int) -> list[Membership]:
    return [
        Membership(_org(r), OrgRole(r["role"]))
        for r in await _all(conn, "memberships_of", {"user_id": user_id})
    ]


async def add_member(conn: AsyncConn, user_id: int, org_id: int, role: OrgRole) -> None:
    await conn.execute(
        QUERIES["add_member"], {"user_id": user_id, "org_id": org_id, "role": role.value}
    )


async def remove_member(conn: AsyncConn, user_id: int, org_id: int) -> None:
    row = await _one(conn, "owners_left", {"org_id": org_id, "user_id": user_id})
    members = await memberships_of(conn, user_id)
    is_owner = any(m.org.id == org_id and m.role is OrgRole.owner for m in members)
    if is_owner and row is not None and int(row["n"]) == 0:
        raise Conflict("an organisation keeps at least one owner")
    await conn.execute(QUERIES["remove_member"], {"user_id": user_id, "org_id": org_id})


# --- e-mail domains --------------------------------------------------------------------------

_DOMAIN = re.compile(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?\.[a-z]{2,}$")


async def add_domain(conn: AsyncConn, org_id: int, domain: str, role: OrgRole) -> None:
    clean = domain.strip().lower().lstrip("@")
    if not _DOMAIN.match(clean) or len(clean) > 253:
        raise BadInput("not a domain name", field="domain")
    if role is OrgRole.owner:
        raise BadInput("people joining by their domain cannot become owners", field="role")
    row = await _one(conn, "add_domain", {"org_id": org_id, "domain": clean, "role": role.value})
    if row is None:
        raise Conflict(f"{clean} belongs to another organisation")


async def remove_domain(conn: AsyncConn, org_id: int, domain: str) -> None:
    await conn.execute(
        QUERIES["remove_domain"], {"org_id": org_id, "domain": domain.strip().lower()}
    )


async def domains_of(conn: AsyncConn, org_id: int) -> list[dict[str, str]]:
    return [
        {"domain": r["domain"], "defaultRole": r["default_role"]}
        for r in await _all(conn, "domains_of", {"org_id": org_id})
    ]


async def org_of_domain(conn: AsyncConn, email: str) -> tuple[int, OrgRole] | None:
    domain = email.rpartition("@")[2].lower()
    row = await _one(conn, "org_of_domain", {"domain": domain})
    return None if row is None else (int(row["org_id"]), OrgRole(row["default_role"]))


# --- invitations -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Invitation:
    id: int
    token: str
    expires_at: datetime


async def invite(
    conn: AsyncConn,
    org_id: int,
    email: str,
    role: OrgRole,
    *,
    invited_by: int | None,
    hours: int,
) -> Invitation:
    token = new_secret()
    row = await _one(
        conn,
        "create_invitation",
        {
            "token_hash": digest(token),
            "org_id": org_id,
            "email": normal_email(email),
            "role": role.value,
            "invited_by": invited_by,
            "hours": hours,
        },
    )
    assert row is not None
    return Invitation(int(row["id"]), token, row["expires_at"])


async def peek_invitation(conn: AsyncConn, token: str) -> Row | None:
    return await _one(conn, "peek_invitation", {"token_hash": digest(token)})


async def take_invitation(conn: AsyncConn, token: str, email: str) -> Row | None:
    """Consume the invitation ``token`` for ``email`` (None: unknown, used, expired, revoked,
    or for another address)."""
    return await _one(conn, "take_invitation", {"token_hash": digest(token), "email": email})


async def take_pending_invitations(conn: AsyncConn, email: str) -> list[Row]:
    return await _all(conn, "pending_invitations_for", {"email": email})


async def invitations_of(conn: AsyncConn, org_id: int) -> list[dict[str, Any]]:
    def state(r: Row) -> str:
        if r["accepted_at"]:
            return "accepted"
        if r["revoked_at"]:
            return "revoked"
        return "expired" if r["expires_at"] <= datetime.now(r["expires_at"].tzinfo) else "open"

    return [
        {
            "id": int(r["id"]),
            "email": r["email"],
            "role": r["role"],
            "createdAt": r["created_at"].isoformat(),
            "expiresAt": r["expires_at"].isoformat(),
            "state": state(r),
        }
        for r in await _all(conn, "invitations_of", {"org_id": org_id})
    ]


async def revoke_invitation(conn: AsyncConn, org_id: int, invitation_id: int) -> None:
    if await _one(conn, "revoke_invitation", {"id": invitation_id, "org_id": org_id}) is None:
        raise NotFound("no open invitation with that id")


# --- single-use links ------------------------------------------------------------------------


async def create_link(conn: AsyncConn, user_id: int, purpose: str, minutes: int) -> str:
    token = new_secret()
    await conn.execute(
        QUERIES["create_link"],
        {"token_hash": digest(token), "user_id": user_id, "purpose": purpose, "minutes": minutes},
    )
    return token


async def take_link(conn: AsyncConn, token: str, purpose: str) -> int | None:
    row = await _one(conn, "take_link", {"token_hash": digest(token), "purpose": purpose})
    return None if row is None else int(row["user_id"])


# --- people's API keys -----------------------------------------------------------------------

KEY_MAX_DAYS = 366


async def create_key(
    conn: AsyncConn,
    user_id: int,
    membership: Membership,
    *,
    name: str,
    role: OrgRole | None,
    days: int,
) -> tuple[dict[str, Any], str]:
    """A key of ``user_id`` acting for the membership's organisation with ``role`` (their own
    when None; never above it). Returns the key's row and its secret (shown once)."""
    wanted = role or membership.role
    if wanted is not membership.role and membership.role not in (OrgRole.owner, OrgRole.admin):
        raise BadInput(f"a key acts with your role ({membership.role.value}) or less", field="role")
    if wanted is OrgRole.owner and membership.role is not OrgRole.owner:
        raise BadInput("only an owner makes owner keys", field="role")
    if not 1 <= days <= KEY_MAX_DAYS:
        raise BadInput(f"a key expires in 1 to {KEY_MAX_DAYS} days", field="expiresInDays")
    clean = " ".join(name.split())
    if not 1 <= len(clean) <= 200:
        raise BadInput("a key's name has 1 to 200 characters", field="name")
    roles = roles_of(wanted, membership.org.kind, False)
    token_role = Role.company if roles == {Role.company} else Role.recruiter
    secret = TOKEN_PREFIX + new_secret()
    row = await _one(
        conn,
        "create_key",
        {
            "name": clean,
            "role": token_role.value,
            "token_hash": hash_token(secret),
            "company": membership.org.name if token_role is Role.company else None,
            "user_id": user_id,
            "org_id": membership.org.id,
            "org_role": wanted.value,
            "days": days,
        },
    )
    assert row is not None
    return _key(
        row | {"org": membership.org.name, "revoked_at": None, "last_used_at": None}
    ), secret


def _key(r: Row) -> dict[str, Any]:
    now = datetime.now(r["created_at"].tzinfo)
    expired = r["expires_at"] is not None and r["expires_at"] <= now
    return {
        "id": int(r["id"]),
        "name": r["name"],
        "organisation": r["org"],
        "role": r["org_role"],
        "createdAt": r["created_at"].isoformat(),
        "expiresAt": None if r["expires_at"] is None else r["expires_at"].isoformat(),
        "lastUsedAt": None if r["last_used_at"] is None else r["last_used_at"].isoformat(),
        "state": "revoked" if r["revoked_at"] else "expired" if expired else "active",
    }


async def keys_of(conn: AsyncConn, user_id: int) -> list[dict[str, Any]]:
    return [_key(r) for r in await _all(conn, "keys_of", {"user_id": user_id})]


async def revoke_key(conn: AsyncConn, user_id: int, key_id: int) -> None:
    if await _one(conn, "revoke_key", {"id": key_id, "user_id": user_id}) is None:
        raise NotFound("no live key of yours with that id")
