"""The account pages: ``/signin`` (password form, and "Sign in with SSO" when OpenID Connect is
configured), ``/signin/reset`` (a reset link's form), ``/invitation`` (accepting one),
``/setup`` (the first owner), ``/account`` (sessions, API keys, second factor, organisation
switch), ``/org`` (members and roles, invitations, e-mail domains) and ``/employer`` (the
organisation's jobs: post, edit, close, their status, the e-mail intake address). The forms
post JSON to the API from ``static/account.js`` (``employer.js``); a page that needs a session
redirects to ``/signin``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from shortlist.accounts import store
from shortlist.api.deps import OptionalPrincipalDep, ServicesDep
from shortlist.api.routes.pages import render

router = APIRouter(include_in_schema=False)


def _safe_next(next_: str | None) -> str:
    """Only a path of this site (no scheme, no //host): no open redirect."""
    if next_ and next_.startswith("/") and not next_.startswith("//") and "\\" not in next_:
        return next_[:500]
    return ""


@router.get("/signin", response_class=HTMLResponse)
async def signin_page(
    request: Request, services: ServicesDep, next: str | None = None, error: str | None = None
) -> HTMLResponse:
    context = {
        "sso": bool(services.settings.oidc_issuer),
        "next": _safe_next(next),
        "error": (error or "")[:200],
    }
    return render(request, "signin.html", context)


def _token_page(
    request: Request,
    page: str,
    token: str | None,
    heading: str,
    lead: str,
    action: str,
    email: str = "",
) -> HTMLResponse:
    context = {
        "page": page,
        "token": (token or "")[:200],
        "heading": heading,
        "lead": lead,
        "action": action,
        "email": email,
    }
    return render(request, "account_token.html", context)


@router.get("/signin/reset", response_class=HTMLResponse)
async def reset_page(request: Request, token: str | None = None) -> HTMLResponse:
    return _token_page(
        request,
        "reset",
        token,
        "Choose a new password",
        "The link works once; every session of the account is signed out.",
        "Set password",
    )


@router.get("/invitation", response_class=HTMLResponse)
async def invitation_page(
    request: Request, services: ServicesDep, token: str | None = None
) -> HTMLResponse:
    email = ""
    if token and len(token) <= 200:
        async with services.pool.connection() as conn:
            row = await store.peek_invitation(conn, token)
        if row is not None and not row["accepted_at"] and not row["revoked_at"]:
            email = str(row["email"])
    return _token_page(
        request,
        "invitation",
        token,
        "Accept your invitation",
        "Only the address invited may accept; the link works once, within 72 hours.",
        "Accept and sign in",
        email,
    )


@router.get("/setup", response_class=HTMLResponse)
async def setup_page(request: Request, token: str | None = None) -> HTMLResponse:
    return _token_page(
        request,
        "setup",
        token,
        "Set up shortlist",
        "The first account: the owner of your organisation and this instance's administrator.",
        "Create the account",
    )


def _needs_session(request: Request, principal: OptionalPrincipalDep) -> Response | None:
    if principal is None or principal.user_id is None:
        return RedirectResponse(f"/signin?next={request.url.path}", status_code=303)
    return None


@router.get("/account", response_class=HTMLResponse)
async def account_page(request: Request, principal: OptionalPrincipalDep) -> Response:
    return _needs_session(request, principal) or render(request, "account.html", {})


@router.get("/org", response_class=HTMLResponse)
async def org_page(request: Request, principal: OptionalPrincipalDep) -> Response:
    return _needs_session(request, principal) or render(request, "org.html", {})


@router.get("/employer", response_class=HTMLResponse)
async def employer_page(request: Request, principal: OptionalPrincipalDep) -> Response:
    return _needs_session(request, principal) or render(
        request, "employer.html", {}, nav="employer"
    )
