"""Signing in: a password (and a second factor), an invitation, the first-run setup link, or an
identity an OpenID Provider verified (``sign_in_verified_identity``, called by the OpenID
Connect callback) — each ends in a new server-side session and its cookie.

Sessions (OWASP ASVS 5.0 V7): a 256-bit random token in the cookie, only its sha256 in
PostgreSQL; a new one at every sign-in and change of organisation or role; idle and absolute
timeouts (``SHORTLIST_SESSION_IDLE_MINUTES``, ``SHORTLIST_SESSION_ABSOLUTE_HOURS``); a CSRF
token per session. The cookie is ``__Host-shortlist_session; Secure; HttpOnly; SameSite=Lax;
Path=/`` when the public address is https; on plain-HTTP loopback (the embedded default) it is
``shortlist_session`` without ``Secure`` (a browser would drop a Secure cookie sent over http).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import psycopg
import pyotp
from starlette.responses import Response

from shortlist.accounts import store
from shortlist.accounts.passwords import verify_password
from shortlist.accounts.secrets import digest, new_secret
from shortlist.auth import OrgKind, OrgRole, Principal, primary_role, roles_of
from shortlist.config import Settings
from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn
from shortlist.errors import BadInput, RateLimited, Unauthorized

QUERIES = load_queries("shortlist.accounts")

SECURE_COOKIE = "__Host-shortlist_session"
PLAIN_COOKIE = "shortlist_session"
THROTTLE_WINDOW = 15 * 60


class SignInRefused(Unauthorized):
    """No account, invitation or e-mail domain lets this identity in (HTTP 401)."""


class SecondFactorNeeded(Unauthorized):
    """The password was right; the account needs its TOTP code too (HTTP 401, field otp)."""


@dataclass(frozen=True)
class SignedIn:
    session_token: str
    session_id: int
    user_id: int
    org_id: int | None
    csrf_token: str


# --- cookies ---------------------------------------------------------------------------------


def cookie_secure(settings: Settings) -> bool:
    return (settings.public_url or "").startswith("https://")


def cookie_name(settings: Settings) -> str:
    return SECURE_COOKIE if cookie_secure(settings) else PLAIN_COOKIE


def set_session_cookie(response: Response, signed_in: SignedIn, settings: Settings) -> None:
    """The session cookie on ``response`` (a session cookie: no Max-Age; the server ends it)."""
    response.set_cookie(
        cookie_name(settings),
        signed_in.session_token,
        path="/",
        secure=cookie_secure(settings),
        httponly=True,
        samesite="lax",
    )


def clear_session_cookie(response: Response, settings: Settings) -> None:
    response.delete_cookie(
        cookie_name(settings),
        path="/",
        secure=cookie_secure(settings),
        httponly=True,
        samesite="lax",
    )


# --- sessions --------------------------------------------------------------------------------


async def start_session(
    conn: AsyncConn,
    user_id: int,
    *,
    method: str,
    client_ip: str | None,
    user_agent: str | None = None,
    org_id: int | None = None,
) -> SignedIn:
    """A new session for ``user_id`` acting for ``org_id`` (default: their first organisation)."""
    if org_id is None:
        members = await store.memberships_of(conn, user_id)
        org_id = members[0].org.id if members else None
    token, csrf = new_secret(), new_secret()
    cur = await conn.execute(
        QUERIES["create_session"],
        {
            "token_hash": digest(token),
            "user_id": user_id,
            "org_id": org_id,
            "csrf_token": csrf,
            "method": method,
            "client_ip": (client_ip or "")[:100] or None,
            "user_agent": (user_agent or "")[:300] or None,
        },
    )
    row = await cur.fetchone()
    assert row is not None
    return SignedIn(token, int(row["id"]), user_id, org_id, csrf)


async def session_principal(conn: AsyncConn, token: str, settings: Settings) -> Principal | None:
    """The principal of a live session cookie, or None."""
    if not token or len(token) > 200:
        return None
    cur = await conn.execute(
        QUERIES["session_lookup"],
        {
            "token_hash": digest(token),
            "idle_minutes": settings.session_idle_minutes,
            "absolute_hours": settings.session_absolute_hours,
        },
    )
    row = await cur.fetchone()
    if row is None:
        return None
    org_role = OrgRole(row["org_role"]) if row["org_role"] else None
    # An organisation that requires a second factor is acted for only by a session that gave one.
    if row["require_second_factor"] and "totp" not in str(row["method"]):
        org_role = None
    kind = OrgKind(row["org_kind"]) if row["org_kind"] and org_role else None
    roles = roles_of(org_role, kind, bool(row["is_site_admin"]))
    return Principal(
        None,
        str(row["email"]),
        primary_role(roles),
        str(row["org_name"]) if org_role and row["org_name"] else None,
        user_id=int(row["user_id"]),
        org_id=int(row["org_id"]) if org_role else None,
        org_role=org_role,
        session_id=int(row["session_id"]),
        csrf_token=str(row["csrf_token"]),
        roles=roles,
    )


async def end_session(conn: AsyncConn, session_id: int) -> None:
    await conn.execute(QUERIES["end_session"], {"session_id": session_id})


async def end_all_sessions(conn: AsyncConn, user_id: int, *, keep: int | None = None) -> None:
    await conn.execute(QUERIES["end_user_sessions"], {"user_id": user_id, "keep": keep})


async def sessions_of(conn: AsyncConn, user_id: int, settings: Settings) -> list[dict[str, Any]]:
    cur = await conn.execute(
        QUERIES["sessions_of"],
        {
            "user_id": user_id,
            "idle_minutes": settings.session_idle_minutes,
            "absolute_hours": settings.session_absolute_hours,
        },
    )
    return [
        {
            "id": int(r["id"]),
            "method": r["method"],
            "createdAt": r["created_at"].isoformat(),
            "lastSeenAt": r["last_seen_at"].isoformat(),
            "clientIp": r["client_ip"],
            "userAgent": r["user_agent"],
        }
        for r in await cur.fetchall()
    ]


# --- throttle --------------------------------------------------------------------------------


def _account_key(email: str) -> bytes:
    return digest(email.strip().lower())


async def _check_throttle(conn: AsyncConn, email: str, client_ip: str, settings: Settings) -> None:
    """Refuse a client that failed too often for this address, or for any (ASVS 6.3.1). Keyed
    by the address asked (known or not: the same answer either way) and the client, so an
    attacker's failures never lock the owner out from their own client."""
    cur = await conn.execute(
        QUERIES["recent_failures"], {"account_key": _account_key(email), "client_ip": client_ip}
    )
    row = await cur.fetchone()
    assert row is not None
    if (
        int(row["account"]) >= settings.signin_failures_per_account
        or int(row["client"]) >= settings.signin_failures_per_client
    ):
        raise RateLimited(
            "too many failed sign-ins from this client: try again later",
            retry_after=THROTTLE_WINDOW,
        )


async def _record_failure(conn: AsyncConn, email: str, client_ip: str) -> None:
    await conn.execute(
        QUERIES["record_failure"], {"account_key": _account_key(email), "client_ip": client_ip}
    )
    await conn.commit()


# --- second factor ---------------------------------------------------------------------------

TOTP_INTERVAL = 30


def totp_step_of(secret: str, code: str, now: float | None = None) -> int | None:
    """The time step (30 s) whose code ``code`` is, within one step either side; None when
    it is none of them."""
    code = code.strip().replace(" ", "")
    if not (code.isascii() and code.isdigit() and len(code) == 6):
        return None
    totp = pyotp.TOTP(secret, interval=TOTP_INTERVAL)
    step = int((time.time() if now is None else now) // TOTP_INTERVAL)
    for candidate in (step, step - 1, step + 1):
        if pyotp.utils.strings_equal(totp.at(candidate * TOTP_INTERVAL), code):
            return candidate
    return None


async def check_totp(conn: AsyncConn, user: store.User, code: str) -> bool:
    """Whether ``code`` is the user's current code and was never used before (a code is good
    for one sign-in: ASVS 6.5.1)."""
    if user.totp_secret is None:
        return False
    step = totp_step_of(user.totp_secret, code)
    if step is None:
        return False
    cur = await conn.execute(QUERIES["use_totp_step"], {"user_id": user.id, "step": step})
    return await cur.fetchone() is not None


# --- sign-in by password ---------------------------------------------------------------------

WRONG = "wrong e-mail address or password"


async def sign_in_password(
    conn: AsyncConn,
    *,
    email: str,
    password: str,
    otp: str | None,
    client_ip: str,
    user_agent: str | None,
    settings: Settings,
) -> SignedIn:
    """A session for the right address and password (and TOTP code when the account has a
    second factor). Every failure is the same 401 ("wrong e-mail address or password"), after
    the same Argon2 work whether the address exists or not."""
    if len(email) > 320 or len(password) > 1000:
        raise BadInput("e-mail address or password too long")
    await _check_throttle(conn, email, client_ip, settings)
    user = await store.user_by_email(conn, email) if "@" in email else None
    usable = user is not None and not user.disabled
    ok = await verify_password(password, user.password_hash if usable and user else None)
    if not ok or user is None:
        await _record_failure(conn, email, client_ip)
        raise Unauthorized(WRONG)
    method = "password"
    if user.second_factor:
        if not otp:
            raise SecondFactorNeeded("this account needs its second-factor code (otp)")
        if not await check_totp(conn, user, otp):
            await _record_failure(conn, email, client_ip)
            raise Unauthorized("wrong second-factor code")
        method = "password+totp"
    await conn.execute(
        QUERIES["clear_failures"], {"account_key": _account_key(email), "client_ip": client_ip}
    )
    return await start_session(
        conn, user.id, method=method, client_ip=client_ip, user_agent=user_agent
    )


# --- sign-in by a verified OpenID Connect identity -------------------------------------------


async def sign_in_verified_identity(
    conn: psycopg.AsyncConnection[Any],
    *,
    issuer: str,
    subject: str,
    email: str,
    email_verified: bool,
    name: str | None,
    client_ip: str | None,
) -> SignedIn:
    """A session for the person an OpenID Provider vouched for (the callback has checked the ID
    token: signature by the issuer's JWKS, issuer, audience, nonce, expiry).

    The person is the one this (issuer, subject) signed in as before; else the account with
    this verified address (then bound to the identity); else a new account when an invitation
    for the address is open (every open one is accepted: the provider proved the address) or
    the address's domain is one of an organisation's (joining with its default role). Anyone
    else: :class:`SignInRefused`. Commits nothing: the caller commits with its own state."""
    found = await conn.execute(QUERIES["identity_user"], {"issuer": issuer, "subject": subject})
    bound = await found.fetchone()
    user: store.User | None
    if bound is not None:
        user = await store.user_by_id(conn, int(bound["user_id"]))
    else:
        if not email_verified:
            raise SignInRefused("the identity provider has not verified this e-mail address")
        try:
            address = store.normal_email(email)
        except BadInput as exc:
            raise SignInRefused("the identity provider gave no usable e-mail address") from exc
        user = await store.user_by_email(conn, address)
        if user is None:
            invited = await store.take_pending_invitations(conn, address)
            domain = await store.org_of_domain(conn, address)
            if not invited and domain is None:
                raise SignInRefused(
                    "no account for this address: ask an organisation's admin for an invitation"
                )
            user = await store.create_user(
                conn,
                address,
                name=name or "",
                verified=True,
            )
            for row in invited:
                await store.add_member(conn, user.id, int(row["org_id"]), OrgRole(row["role"]))
            if not invited and domain is not None:
                await store.add_member(conn, user.id, domain[0], domain[1])
        await conn.execute(
            QUERIES["bind_identity"], {"issuer": issuer, "subject": subject, "user_id": user.id}
        )
    if user is None or user.disabled:
        raise SignInRefused("this account is disabled")
    await store.mark_verified(conn, user.id)
    if name and not user.name:
        await store.set_name(conn, user.id, name)
    return await start_session(
        conn,
        user.id,
        method="oidc",
        client_ip=client_ip,
    )
