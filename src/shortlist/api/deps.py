"""FastAPI dependencies (as full-stack-fastapi-template's ``api/deps.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from shortlist.accounts.secrets import same
from shortlist.accounts.signin import cookie_name, session_principal
from shortlist.auth import Principal, Role, authenticate
from shortlist.bootstrap import Services
from shortlist.db.types import AsyncConn, AsyncPool
from shortlist.errors import Forbidden, Unauthorized

# The dependencies below are ``async def`` although they never await: FastAPI runs a plain
# ``def`` dependency in its thread pool (https://fastapi.tiangolo.com/async/#dependencies),
# a thread hop per dependency per request for a dictionary lookup (three on every search).


async def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]


async def get_pool(services: ServicesDep) -> AsyncPool:
    return services.pool


PoolDep = Annotated[AsyncPool, Depends(get_pool)]


async def get_conn(pool: PoolDep) -> AsyncIterator[AsyncConn]:
    """A connection for one request; a transaction not committed by the route rolls back."""
    async with pool.connection() as conn:
        yield conn


ConnDep = Annotated[AsyncConn, Depends(get_conn)]


async def client_ip_of(request: Request) -> str:
    ip: str = request.state.client_ip
    return ip


ClientIPDep = Annotated[str, Depends(client_ip_of)]


def _bearer(request: Request) -> str | None:
    header = request.headers.get("authorization")
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("Authorization header must be 'Bearer <token>'")
    return token.strip()


# Declares the Bearer scheme in the OpenAPI schema (the lock in /docs, ``security`` on every
# operation that takes a token). It never answers by itself: ``_bearer`` parses the header, so a
# malformed one is a 401 with a clear message rather than being ignored.
BEARER_SCHEME = HTTPBearer(auto_error=False, description="An API token: `shortlist token create`")


async def optional_principal(
    request: Request,
    services: ServicesDep,
    _scheme: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER_SCHEME)] = None,
) -> Principal | None:
    """The caller: an API key (``Authorization: Bearer``), else a session cookie, else None.
    A cookie-authenticated request that changes anything must prove it comes from our own
    pages (:func:`check_csrf`)."""
    token = _bearer(request)
    if token is not None:
        async with services.pool.connection() as conn:
            principal = await authenticate(conn, token)
        if principal is None:
            raise Unauthorized("unknown or revoked token")
        return principal
    cookie = request.cookies.get(cookie_name(services.settings))
    if not cookie:
        return None
    async with services.pool.connection() as conn:
        principal = await session_principal(conn, cookie, services.settings)
        await conn.commit()
    if principal is None:
        # An ended or expired session is as good as none: public pages still answer.
        return None
    if request.method not in SAFE_METHODS:
        await check_csrf(request, principal, services.settings.public_url)
    return principal


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


async def check_csrf(request: Request, principal: Principal, public_url: str | None) -> None:
    """A state-changing request made with a session cookie carries the session's CSRF token
    (header ``X-CSRF-Token`` or form field ``csrf_token``) and, when the browser says where it
    comes from, comes from this site (``Sec-Fetch-Site``, ``Origin``); else 403."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        raise Forbidden(f"cross-site request refused (Sec-Fetch-Site: {site[:20]})")
    origin = request.headers.get("origin")
    if origin is not None:
        own = {f"{request.url.scheme}://{request.url.netloc}"}
        if public_url:
            parts = urlsplit(public_url)
            own.add(f"{parts.scheme}://{parts.netloc}")
        if origin not in own:
            raise Forbidden("cross-origin request refused (Origin)")
    sent = request.headers.get("x-csrf-token")
    if sent is None and request.headers.get("content-type", "").startswith(
        ("application/x-www-form-urlencoded", "multipart/form-data")
    ):
        form = await request.form()
        value = form.get("csrf_token")
        sent = value if isinstance(value, str) else None
    if not sent or principal.csrf_token is None or not same(sent, principal.csrf_token):
        raise Forbidden("missing or wrong CSRF token (header X-CSRF-Token, from GET /api/me)")


OptionalPrincipalDep = Annotated[Principal | None, Depends(optional_principal)]


def require_role(*roles: Role) -> Callable[..., Coroutine[Any, Any, Principal]]:
    """A dependency that admits a valid token of one of ``roles`` (admin always passes)."""
    allowed = {*roles, Role.admin}

    async def dependency(principal: OptionalPrincipalDep) -> Principal:
        if principal is None:
            raise Unauthorized("this endpoint needs an API token or a signed-in session")
        if not principal.roles & allowed:
            names = ", ".join(sorted(r.value for r in allowed))
            raise Forbidden(f"this endpoint needs a token with role {names}")
        return principal

    return dependency


CompanyDep = Annotated[Principal, Depends(require_role(Role.company))]
RecruiterDep = Annotated[Principal, Depends(require_role(Role.recruiter))]
AdminDep = Annotated[Principal, Depends(require_role())]


async def require_user(principal: OptionalPrincipalDep) -> Principal:
    """Any signed-in person (or a key of one)."""
    if principal is None or principal.user_id is None:
        raise Unauthorized("sign in first")
    return principal


UserDep = Annotated[Principal, Depends(require_user)]
