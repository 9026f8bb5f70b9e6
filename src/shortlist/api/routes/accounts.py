"""Accounts over HTTP (SPEC §10): the session (sign in, sign out, everywhere), ``/api/me``,
people's API keys, invitations, password reset, the second factor, an organisation's members,
invitations and e-mail domains, and the first owner's set-up.

A cookie-authenticated request that changes anything carries the session's CSRF token
(shortlist.api.deps.check_csrf); signing in itself has no session yet and needs none."""

from __future__ import annotations

import base64
import io
from typing import Any

import pyotp
from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from shortlist.accounts import store
from shortlist.accounts.mail import invitation_link, reset_link, send_link, verify_link
from shortlist.accounts.passwords import hash_password, verify_password
from shortlist.accounts.secrets import digest
from shortlist.accounts.signin import (
    SignedIn,
    check_totp,
    clear_session_cookie,
    end_all_sessions,
    end_session,
    sessions_of,
    set_session_cookie,
    sign_in_password,
    start_session,
)
from shortlist.api.deps import ClientIPDep, ServicesDep, UserDep
from shortlist.api.errors import error_responses
from shortlist.auth import MANAGERS, OrgKind, OrgRole, Principal
from shortlist.config import Settings
from shortlist.db.sql import load_queries
from shortlist.errors import BadInput, Forbidden, NotFound, Unauthorized

router = APIRouter(tags=["accounts"])
QUERIES = load_queries("shortlist.accounts")


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class SessionIn(_In):
    email: str = Field(max_length=320)
    password: str = Field(max_length=1000)
    otp: str | None = Field(None, max_length=20)


class AcceptIn(_In):
    token: str = Field(min_length=10, max_length=200)
    password: str | None = Field(None, max_length=1000)
    name: str | None = Field(None, max_length=200)
    email: str | None = Field(None, max_length=320)
    """The address the invitation was sent to (a signed-in invitee need not repeat it)."""


class KeyIn(_In):
    name: str = Field(min_length=1, max_length=200)
    role: OrgRole | None = None
    expires_in_days: int = Field(90, alias="expiresInDays", ge=1, le=store.KEY_MAX_DAYS)


class ResetRequestIn(_In):
    email: str = Field(max_length=320)


class ResetIn(_In):
    token: str = Field(min_length=10, max_length=200)
    password: str = Field(max_length=1000)


class TotpIn(_In):
    otp: str = Field(max_length=20)


class SwitchIn(_In):
    organisation: int = Field(ge=1, le=2**62)


class InviteIn(_In):
    email: str = Field(max_length=320)
    role: OrgRole


class MemberIn(_In):
    role: OrgRole


class DomainIn(_In):
    domain: str = Field(max_length=253)
    role: OrgRole = OrgRole.reviewer


class OrgSettingsIn(_In):
    require_second_factor: bool = Field(alias="requireSecondFactor")


class SetupIn(_In):
    token: str = Field(min_length=10, max_length=200)
    email: str = Field(max_length=320)
    password: str = Field(max_length=1000)
    name: str = Field("", max_length=200)
    organisation: str = Field(min_length=1, max_length=200)


def _signed_in(response: Response, signed: SignedIn, settings: Settings) -> dict[str, Any]:
    set_session_cookie(response, signed, settings)
    return {"csrfToken": signed.csrf_token}


def _ua(request: Request) -> str | None:
    return request.headers.get("user-agent")


# --- the session -----------------------------------------------------------------------------


@router.post("/api/session", responses=error_responses(401, 403))
async def sign_in(
    body: SessionIn,
    request: Request,
    response: Response,
    services: ServicesDep,
    client_ip: ClientIPDep,
) -> dict[str, Any]:
    """Sign in with e-mail and password (and ``otp`` when the account has a second factor):
    sets the session cookie; 401 otherwise (the same answer for unknown addresses)."""
    async with services.pool.connection() as conn:
        signed = await sign_in_password(
            conn,
            email=body.email,
            password=body.password,
            otp=body.otp,
            client_ip=client_ip,
            user_agent=_ua(request),
            settings=services.settings,
        )
        await conn.commit()
    return _signed_in(response, signed, services.settings)


@router.delete("/api/session", status_code=204)
async def sign_out(
    response: Response,
    services: ServicesDep,
    principal: UserDep,
    everywhere: bool = False,
) -> Response:
    """Sign out (``?everywhere=true``: every session of yours ends)."""
    async with services.pool.connection() as conn:
        if everywhere:
            await end_all_sessions(conn, _user_id(principal))
        elif principal.session_id is not None:
            await end_session(conn, principal.session_id)
        await conn.commit()
    out = Response(status_code=204)
    clear_session_cookie(out, services.settings)
    return out


@router.post("/api/session/organisation")
async def switch_organisation(
    body: SwitchIn,
    request: Request,
    response: Response,
    services: ServicesDep,
    principal: UserDep,
    client_ip: ClientIPDep,
) -> dict[str, Any]:
    """Act for another of your organisations: a new session (a change of role is a new token)."""
    if principal.session_id is None:
        raise BadInput("only a browser session switches organisation")
    user_id = _user_id(principal)
    async with services.pool.connection() as conn:
        members = await store.memberships_of(conn, user_id)
        if not any(m.org.id == body.organisation for m in members):
            raise NotFound("no such organisation of yours")
        cur = await conn.execute(
            "SELECT method FROM sessions WHERE id = %s", (principal.session_id,)
        )
        row = await cur.fetchone()
        await end_session(conn, principal.session_id)
        signed = await start_session(
            conn,
            user_id,
            method=str(row["method"]) if row else "password",
            client_ip=client_ip,
            user_agent=_ua(request),
            org_id=body.organisation,
        )
        await conn.commit()
    return _signed_in(response, signed, services.settings)


def _user_id(principal: Principal) -> int:
    if principal.user_id is None:
        raise Unauthorized("sign in first")
    return principal.user_id


@router.get("/api/me")
async def me(services: ServicesDep, principal: UserDep) -> dict[str, Any]:
    """Who is signed in, their organisations and roles, the one acted for, the CSRF token."""
    async with services.pool.connection() as conn:
        user = await store.user_by_id(conn, _user_id(principal))
        members = await store.memberships_of(conn, _user_id(principal))
    if user is None:
        raise Unauthorized("sign in first")
    return {
        "user": {"email": user.email, "name": user.name},
        "organisations": [
            {"id": m.org.id, "name": m.org.name, "role": m.role.value, "kind": m.org.kind.value}
            for m in members
        ],
        "current": principal.org_id,
        "csrfToken": principal.csrf_token,
        "secondFactor": user.second_factor,
        "siteAdmin": user.site_admin,
        "verified": user.verified,
    }


@router.get("/api/me/sessions")
async def my_sessions(services: ServicesDep, principal: UserDep) -> dict[str, Any]:
    async with services.pool.connection() as conn:
        rows = await sessions_of(conn, _user_id(principal), services.settings)
    for r in rows:
        r["current"] = r["id"] == principal.session_id
    return {"sessions": rows}


@router.delete("/api/me/sessions/{session_id}", status_code=204)
async def end_my_session(session_id: int, services: ServicesDep, principal: UserDep) -> None:
    async with services.pool.connection() as conn:
        cur = await conn.execute(
            "UPDATE sessions SET ended_at = now()"
            " WHERE id = %s AND user_id = %s AND ended_at IS NULL RETURNING id",
            (session_id, _user_id(principal)),
        )
        if await cur.fetchone() is None:
            raise NotFound("no live session of yours with that id")
        await conn.commit()


# --- API keys --------------------------------------------------------------------------------


@router.get("/api/keys")
async def list_keys(services: ServicesDep, principal: UserDep) -> dict[str, Any]:
    """Your API keys (never their secrets)."""
    async with services.pool.connection() as conn:
        return {"keys": await store.keys_of(conn, _user_id(principal))}


@router.post("/api/keys", status_code=201)
async def create_key(body: KeyIn, services: ServicesDep, principal: UserDep) -> dict[str, Any]:
    """A key for the organisation you act for, with your role or less; the secret is in
    ``token``, shown this once."""
    user_id = _user_id(principal)
    async with services.pool.connection() as conn:
        members = await store.memberships_of(conn, user_id)
        membership = next((m for m in members if m.org.id == principal.org_id), None)
        if membership is None:
            raise Forbidden("act for an organisation first: a key belongs to one")
        key, secret = await store.create_key(
            conn,
            user_id,
            membership,
            name=body.name,
            role=body.role,
            days=body.expires_in_days,
        )
        await conn.commit()
    return {**key, "token": secret}


@router.delete("/api/keys/{key_id}", status_code=204)
async def revoke_key(key_id: int, services: ServicesDep, principal: UserDep) -> None:
    if not 1 <= key_id <= 2**62:
        raise NotFound("no live key of yours with that id")
    async with services.pool.connection() as conn:
        await store.revoke_key(conn, _user_id(principal), key_id)
        await conn.commit()


# --- invitations -----------------------------------------------------------------------------


@router.post("/api/invitations/accept")
async def accept_invitation(
    body: AcceptIn,
    request: Request,
    response: Response,
    services: ServicesDep,
    client_ip: ClientIPDep,
) -> dict[str, Any]:
    """Accept an invitation (single use, 72 hours, only by the address invited): a new
    account takes ``password`` (and ``name``); an existing one signs in with its password.
    Sets the session cookie."""
    async with services.pool.connection() as conn:
        peek = await store.peek_invitation(conn, body.token)
        if peek is None or peek["accepted_at"] or peek["revoked_at"]:
            raise NotFound("this invitation is unknown or was used already")
        email = (body.email or peek["email"]).strip()
        if email.lower() != str(peek["email"]).lower():
            raise Forbidden("this invitation is for another address")
        user = await store.user_by_email(conn, email)
        if user is not None and user.disabled:
            raise Forbidden("this account is disabled")
        if user is not None and user.password_hash is not None:
            # An existing account proves it is theirs with its password.
            if not body.password or not await verify_password(body.password, user.password_hash):
                raise Unauthorized("sign in with your password to accept this invitation")
        elif not body.password:
            raise BadInput("choose a password (at least 8 characters)", field="password")
        password_hash = (
            None
            if user is not None and user.password_hash
            else await hash_password(body.password or "")
        )
        taken = await store.take_invitation(conn, body.token, email)
        if taken is None:
            raise NotFound("this invitation has expired or was used already")
        if user is None:
            # The link reached this address: it is verified.
            user = await store.create_user(
                conn, email, name=body.name or "", password_hash=password_hash, verified=True
            )
        else:
            if password_hash is not None:
                await store.set_password_hash(conn, user.id, password_hash)
            await store.mark_verified(conn, user.id)
            if body.name:
                await store.set_name(conn, user.id, body.name)
        await store.add_member(conn, user.id, int(taken["org_id"]), OrgRole(taken["role"]))
        signed = await start_session(
            conn,
            user.id,
            method="invitation",
            client_ip=client_ip,
            user_agent=_ua(request),
            org_id=int(taken["org_id"]),
        )
        await conn.commit()
    return _signed_in(response, signed, services.settings)


# --- password change, reset and address verification ---------------------------------------


class PasswordChangeIn(_In):
    current: str = Field(max_length=1000)
    new: str = Field(max_length=1000)


@router.post("/api/me/password")
async def change_password(
    body: PasswordChangeIn, services: ServicesDep, principal: UserDep
) -> dict[str, str]:
    """A new password, given the current one; every other session of the account ends."""
    async with services.pool.connection() as conn:
        user = await store.user_by_id(conn, _user_id(principal))
        assert user is not None
        if not await verify_password(body.current, user.password_hash):
            raise Unauthorized("the current password is wrong")
        await store.set_password_hash(conn, user.id, await hash_password(body.new))
        await end_all_sessions(conn, user.id, keep=principal.session_id)
        await conn.commit()
    return {"status": "password changed; your other sessions were signed out"}


@router.post("/api/password/reset-request", status_code=202)
async def request_reset(body: ResetRequestIn, services: ServicesDep) -> dict[str, str]:
    """Send a reset link to the address if it has an account; the same answer either way."""
    settings = services.settings
    async with services.pool.connection() as conn:
        user = await store.user_by_email(conn, body.email) if "@" in body.email else None
        token = None
        if user is not None and not user.disabled:
            token = await store.create_link(conn, user.id, "reset", settings.account_link_minutes)
        await conn.commit()
    if user is not None and token is not None:
        await send_link(
            settings,
            to=user.email,
            subject="Reset your shortlist password",
            intro="Someone (you, we hope) asked to reset the password of this account.",
            url=reset_link(settings, token),
            valid_for=f"{settings.account_link_minutes} minutes",
        )
    return {"status": "if the address has an account, a link is on its way"}


@router.post("/api/password/reset")
async def reset_password(body: ResetIn, services: ServicesDep) -> dict[str, str]:
    """Set a new password with a reset link's token (single use, short-lived); every session
    of the account ends."""
    password_hash = await hash_password(body.password)
    async with services.pool.connection() as conn:
        user_id = await store.take_link(conn, body.token, "reset")
        if user_id is None:
            raise NotFound("this reset link is unknown, used or expired")
        await store.set_password_hash(conn, user_id, password_hash)
        await store.mark_verified(conn, user_id)
        await end_all_sessions(conn, user_id)
        await conn.commit()
    return {"status": "password changed: sign in with it"}


@router.post("/api/me/verify", status_code=202)
async def send_verification(services: ServicesDep, principal: UserDep) -> dict[str, str]:
    settings = services.settings
    async with services.pool.connection() as conn:
        user = await store.user_by_id(conn, _user_id(principal))
        assert user is not None
        token = await store.create_link(conn, user.id, "verify", settings.account_link_minutes)
        await conn.commit()
    sent = await send_link(
        settings,
        to=user.email,
        subject="Confirm your address for shortlist",
        intro="Confirm this address for your shortlist account.",
        url=verify_link(settings, token),
        valid_for=f"{settings.account_link_minutes} minutes",
    )
    return {"status": "sent" if sent else "no mail relay is configured"}


class VerifyIn(_In):
    token: str = Field(min_length=10, max_length=200)


@router.post("/api/account/verify")
async def verify_address(body: VerifyIn, services: ServicesDep) -> dict[str, str]:
    async with services.pool.connection() as conn:
        user_id = await store.take_link(conn, body.token, "verify")
        if user_id is None:
            raise NotFound("this link is unknown, used or expired")
        await store.mark_verified(conn, user_id)
        await conn.commit()
    return {"status": "address confirmed"}


# --- the second factor -----------------------------------------------------------------------


@router.post("/api/me/totp")
async def start_totp(services: ServicesDep, principal: UserDep) -> dict[str, Any]:
    """A new TOTP secret (not in force until confirmed with a code from it)."""
    secret = pyotp.random_base32()
    async with services.pool.connection() as conn:
        user = await store.user_by_id(conn, _user_id(principal))
        assert user is not None
        await conn.execute(QUERIES["set_totp_secret"], {"user_id": user.id, "secret": secret})
        await conn.commit()
    uri = pyotp.TOTP(secret).provisioning_uri(name=user.email, issuer_name="shortlist")
    return {"secret": secret, "uri": uri, "qrSvg": _qr_svg(uri)}


def _qr_svg(uri: str) -> str | None:
    """The URI as a QR code (SVG) when the optional ``segno`` is installed; else None."""
    try:
        import segno  # type: ignore[import-not-found]
    except ImportError:
        return None
    out = io.BytesIO()
    segno.make(uri).save(out, kind="svg")
    return base64.b64encode(out.getvalue()).decode()


@router.post("/api/me/totp/confirm")
async def confirm_totp(body: TotpIn, services: ServicesDep, principal: UserDep) -> dict[str, str]:
    async with services.pool.connection() as conn:
        user = await store.user_by_id(conn, _user_id(principal))
        assert user is not None
        if user.totp_secret is None or not await check_totp(conn, user, body.otp):
            raise BadInput("wrong code: check the device's clock and try again", field="otp")
        await conn.execute(QUERIES["enable_totp"], {"user_id": user.id, "step": None})
        await end_all_sessions(conn, user.id, keep=principal.session_id)
        await conn.commit()
    return {"status": "second factor on"}


@router.delete("/api/me/totp", status_code=204)
async def remove_totp(body: TotpIn, services: ServicesDep, principal: UserDep) -> None:
    async with services.pool.connection() as conn:
        user = await store.user_by_id(conn, _user_id(principal))
        assert user is not None
        if not user.second_factor or not await check_totp(conn, user, body.otp):
            raise BadInput("wrong code", field="otp")
        await conn.execute(QUERIES["disable_totp"], {"user_id": user.id})
        await conn.commit()


# --- an organisation's people ----------------------------------------------------------------


def _manager(principal: Principal) -> int:
    if principal.org_id is None or (principal.org_role not in MANAGERS and not principal.is_admin):
        raise Forbidden("only an owner or admin of the organisation manages its people")
    return principal.org_id


@router.get("/api/org")
async def organisation(services: ServicesDep, principal: UserDep) -> dict[str, Any]:
    """The organisation you act for: members, open invitations, e-mail domains."""
    if principal.org_id is None:
        raise NotFound("you act for no organisation")
    async with services.pool.connection() as conn:
        org = await store.org_by_id(conn, principal.org_id)
        assert org is not None
        members = await store.list_users(conn, org.id)
        manager = principal.org_role in MANAGERS
        invitations = await store.invitations_of(conn, org.id) if manager else []
        domains = await store.domains_of(conn, org.id)
    return {
        "id": org.id,
        "name": org.name,
        "kind": org.kind.value,
        "requireSecondFactor": org.require_second_factor,
        "members": [
            {
                "id": m["id"],
                "email": m["email"],
                "name": m["name"],
                "service": m["service"],
                "disabled": m["disabled"],
                "role": next(o["role"] for o in m["organisations"] if o["id"] == org.id),
            }
            for m in members
        ],
        "invitations": invitations,
        "domains": domains,
        "manager": manager,
    }


@router.post("/api/org/invitations", status_code=201)
async def invite(
    body: InviteIn, request: Request, services: ServicesDep, principal: UserDep
) -> dict[str, Any]:
    """Invite an address with a role; the link goes by e-mail (``url`` is in the answer only
    when no relay is configured, for the inviter to pass on)."""
    org_id = _manager(principal)
    if body.role is OrgRole.owner and principal.org_role is not OrgRole.owner:
        raise Forbidden("only an owner invites owners")
    settings = services.settings
    if not settings.public_url:
        # Links point where the inviter reached us when no public address is configured.
        base = str(request.base_url).rstrip("/")
        settings = settings.model_copy(update={"public_url": base})
    async with services.pool.connection() as conn:
        org = await store.org_by_id(conn, org_id)
        assert org is not None
        invitation = await store.invite(
            conn,
            org_id,
            body.email,
            body.role,
            invited_by=principal.user_id,
            hours=settings.invitation_hours,
        )
        await conn.commit()
    url = invitation_link(settings, invitation.token)
    sent = await send_link(
        settings,
        to=body.email.strip(),
        subject=f"You are invited to {org.name} on shortlist",
        intro=f"You are invited to join {org.name} on shortlist as {body.role.value}.",
        url=url,
        valid_for=f"{settings.invitation_hours} hours",
    )
    return {"id": invitation.id, "sent": sent, "url": None if sent else url}


@router.delete("/api/org/invitations/{invitation_id}", status_code=204)
async def revoke_invitation(invitation_id: int, services: ServicesDep, principal: UserDep) -> None:
    org_id = _manager(principal)
    async with services.pool.connection() as conn:
        await store.revoke_invitation(conn, org_id, invitation_id)
        await conn.commit()


@router.put("/api/org/members/{user_id}")
async def set_member_role(
    user_id: int, body: MemberIn, services: ServicesDep, principal: UserDep
) -> dict[str, str]:
    """Change a member's role: their sessions end (a new role is a new session)."""
    org_id = _manager(principal)
    if body.role is OrgRole.owner and principal.org_role is not OrgRole.owner:
        raise Forbidden("only an owner makes owners")
    async with services.pool.connection() as conn:
        members = await store.memberships_of(conn, user_id)
        current = next((m for m in members if m.org.id == org_id), None)
        if current is None:
            raise NotFound("no such member")
        if current.role is OrgRole.owner and body.role is not OrgRole.owner:
            await store.remove_member(conn, user_id, org_id)  # refuses the last owner
        await store.add_member(conn, user_id, org_id, body.role)
        await end_all_sessions(conn, user_id)
        await conn.commit()
    return {"role": body.role.value}


@router.delete("/api/org/members/{user_id}", status_code=204)
async def remove_member(user_id: int, services: ServicesDep, principal: UserDep) -> None:
    org_id = _manager(principal)
    async with services.pool.connection() as conn:
        await store.remove_member(conn, user_id, org_id)
        await end_all_sessions(conn, user_id)
        await conn.commit()


@router.post("/api/org/domains", status_code=201)
async def add_domain(body: DomainIn, services: ServicesDep, principal: UserDep) -> dict[str, str]:
    org_id = _manager(principal)
    async with services.pool.connection() as conn:
        await store.add_domain(conn, org_id, body.domain, body.role)
        await conn.commit()
    return {"domain": body.domain.strip().lower(), "defaultRole": body.role.value}


@router.delete("/api/org/domains/{domain}", status_code=204)
async def remove_domain(domain: str, services: ServicesDep, principal: UserDep) -> None:
    org_id = _manager(principal)
    async with services.pool.connection() as conn:
        await store.remove_domain(conn, org_id, domain)
        await conn.commit()


@router.patch("/api/org")
async def org_settings(
    body: OrgSettingsIn, services: ServicesDep, principal: UserDep
) -> dict[str, bool]:
    org_id = _manager(principal)
    async with services.pool.connection() as conn:
        await store.set_second_factor_required(conn, org_id, body.require_second_factor)
        await conn.commit()
    return {"requireSecondFactor": body.require_second_factor}


# --- the first owner -------------------------------------------------------------------------


@router.post("/api/setup")
async def first_owner(
    body: SetupIn,
    request: Request,
    response: Response,
    services: ServicesDep,
    client_ip: ClientIPDep,
) -> dict[str, Any]:
    """With the set-up link ``shortlist serve`` printed (once, while nobody has an account):
    the first person, a site admin and the owner of a new organisation."""
    password_hash = await hash_password(body.password)
    async with services.pool.connection() as conn:
        cur = await conn.execute(QUERIES["take_setup_link"], {"token_hash": digest(body.token)})
        if await cur.fetchone() is None:
            raise NotFound("this set-up link is unknown or was used already")
        user = await store.create_user(
            conn,
            body.email,
            name=body.name,
            password_hash=password_hash,
            verified=True,
            site_admin=True,
        )
        org = await store.create_org(conn, body.organisation, OrgKind.both)
        await store.add_member(conn, user.id, org.id, OrgRole.owner)
        signed = await start_session(
            conn,
            user.id,
            method="setup",
            client_ip=client_ip,
            user_agent=_ua(request),
            org_id=org.id,
        )
        await conn.commit()
    return _signed_in(response, signed, services.settings)
