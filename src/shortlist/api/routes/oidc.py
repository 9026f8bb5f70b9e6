"""Sign-in through OpenID Connect: ``GET /auth/oidc/login`` sends the browser to the issuer,
``GET /auth/oidc/callback`` brings it back signed in (shortlist.accounts.oidc does the
protocol; shortlist.accounts.signin turns the identity into a session).

A failed callback answers a 4xx with a JSON error (``{"error": {"code", "message"}}``) and
creates no session; the only change it makes is to use up the sign-in it belonged to (one
that names no sign-in of this browser changes nothing at all). A
database connection is held only around the statements, never while the issuer is called.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from shortlist.accounts.oidc import (
    CALLBACK_PATH,
    LOGIN_TTL,
    LoginStateInvalid,
    OidcClient,
    OidcConfig,
    OidcFailure,
    PendingLogin,
    ProviderRefused,
    SsoNotConfigured,
    error_code_text,
    safe_return_to,
    save_login,
    take_login,
)
from shortlist.accounts.signin import set_session_cookie, sign_in_verified_identity
from shortlist.api.deps import ClientIPDep, ServicesDep
from shortlist.api.errors import error_body, error_responses
from shortlist.config import Settings

router = APIRouter(tags=["accounts"])

PLAIN_COOKIE = "shortlist_oidc"
SECURE_COOKIE = "__Host-shortlist_oidc"
"""The cookie binding a sign-in under way to its browser (its value's hash is in the row)."""


def client_for(settings: Settings) -> OidcClient | None:
    """The process's client of the configured issuer (None: no SSO), its discovery started in
    the background (create_app calls this once)."""
    if not (settings.oidc_issuer and settings.oidc_client_id and settings.oidc_client_secret):
        return None  # the settings hold all three or none
    client = OidcClient(
        OidcConfig(settings.oidc_issuer, settings.oidc_client_id, settings.oidc_client_secret)
    )
    client.start_warm_up()
    return client


def _client(request: Request) -> OidcClient:
    client: OidcClient | None = getattr(request.app.state, "oidc", None)
    if client is None:
        raise SsoNotConfigured(
            "single sign-on is not configured (SHORTLIST_OIDC_ISSUER, SHORTLIST_OIDC_CLIENT_ID,"
            " SHORTLIST_OIDC_CLIENT_SECRET)"
        )
    return client


def _secure(settings: Settings) -> bool:
    return (settings.public_url or "").startswith("https://")


def _cookie(settings: Settings) -> str:
    return SECURE_COOKIE if _secure(settings) else PLAIN_COOKIE


def redirect_uri(request: Request, settings: Settings) -> str:
    """``{SHORTLIST_PUBLIC_URL}/auth/oidc/callback`` (the address registered at the issuer);
    unset: the address this request came to."""
    base = settings.public_url or str(request.base_url)
    return base.rstrip("/") + CALLBACK_PATH


def _failure(exc: OidcFailure, settings: Settings, *, ended: bool = False) -> JSONResponse:
    """The JSON error; ``ended``: the sign-in it belonged to is used up, and so its cookie
    (a request that names no sign-in of this browser leaves the browser's own alone)."""
    response = JSONResponse(error_body(exc.code, str(exc)), exc.status)
    if ended:
        _forget_cookie(response, settings)
    return response


def _forget_cookie(response: Response, settings: Settings) -> None:
    response.delete_cookie(
        _cookie(settings), path="/", secure=_secure(settings), httponly=True, samesite="lax"
    )


@router.get(
    "/auth/oidc/login",
    response_class=RedirectResponse,
    status_code=302,
    responses=error_responses(400, 404, 503),
)
async def oidc_login(
    request: Request,
    services: ServicesDep,
    next_page: Annotated[str | None, Query(alias="next", max_length=2000)] = None,
) -> Response:
    """Start a sign-in at the issuer; back at ``next`` (a page of this site) when done."""
    settings = services.settings
    try:
        client = _client(request)
        login = PendingLogin.new(safe_return_to(next_page), redirect_uri(request, settings))
        url = await client.authorization_url(login)
    except OidcFailure as exc:
        return _failure(exc, settings)
    async with services.pool.connection() as conn, conn.transaction():
        await save_login(conn, login)
    response = RedirectResponse(url, status_code=302)
    response.set_cookie(
        _cookie(settings),
        login.browser,
        max_age=LOGIN_TTL,
        path="/",
        secure=_secure(settings),
        httponly=True,
        # Lax: sent on the issuer's top-level redirect back to the callback (a GET).
        samesite="lax",
    )
    return response


@router.get(
    "/auth/oidc/callback",
    response_class=RedirectResponse,
    status_code=303,
    responses=error_responses(400, 403, 404, 503),
)
async def oidc_callback(
    request: Request,
    services: ServicesDep,
    client_ip: ClientIPDep,
    state: Annotated[str | None, Query(max_length=500)] = None,
    code: Annotated[str | None, Query(max_length=2000)] = None,
    error: Annotated[str | None, Query(max_length=200)] = None,
    iss: Annotated[str | None, Query(max_length=2000)] = None,
) -> Response:
    """Where the issuer sends the browser back (Core §3.1.2.5): the code is redeemed, the ID
    token checked, the person signed in and sent to the page they started from."""
    settings = services.settings
    login: PendingLogin | None = None
    try:
        client = _client(request)
        browser = request.cookies.get(_cookie(settings))
        if not state or not browser:
            raise LoginStateInvalid(
                "no sign-in is under way in this browser (or it expired): start again"
            )
        async with services.pool.connection() as conn, conn.transaction():
            login = await take_login(conn, state, browser)
        if login is None:
            raise LoginStateInvalid(
                "this sign-in is unknown, already used or expired (state): start again"
            )
        if error is not None:
            raise ProviderRefused(
                f"the identity provider ended the sign-in: {error_code_text(error)}"
            )
        if not code:
            raise ProviderRefused("the identity provider sent no code")
        identity = await client.redeem(login, code, iss)
    except OidcFailure as exc:
        return _failure(exc, settings, ended=login is not None)
    async with services.pool.connection() as conn, conn.transaction():
        signed_in = await sign_in_verified_identity(
            conn,
            issuer=identity.issuer,
            subject=identity.subject,
            email=identity.email,
            email_verified=identity.email_verified,
            name=identity.name,
            client_ip=client_ip,
        )
    response = RedirectResponse(login.return_to, status_code=303)
    set_session_cookie(response, signed_in, settings)
    _forget_cookie(response, settings)
    return response
