"""FastAPI dependencies (as full-stack-fastapi-template's ``api/deps.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

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
    pool: PoolDep,
    _scheme: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER_SCHEME)] = None,
) -> Principal | None:
    token = _bearer(request)
    if token is None:
        return None
    async with pool.connection() as conn:
        principal = await authenticate(conn, token)
    if principal is None:
        raise Unauthorized("unknown or revoked token")
    return principal


OptionalPrincipalDep = Annotated[Principal | None, Depends(optional_principal)]


def require_role(*roles: Role) -> Callable[..., Coroutine[Any, Any, Principal]]:
    """A dependency that admits a valid token of one of ``roles`` (admin always passes)."""
    allowed = {*roles, Role.admin}

    async def dependency(principal: OptionalPrincipalDep) -> Principal:
        if principal is None:
            raise Unauthorized("this endpoint needs an API token")
        if principal.role not in allowed:
            names = ", ".join(sorted(r.value for r in allowed))
            raise Forbidden(f"this endpoint needs a token with role {names}")
        return principal

    return dependency


CompanyDep = Annotated[Principal, Depends(require_role(Role.company))]
RecruiterDep = Annotated[Principal, Depends(require_role(Role.recruiter))]
AdminDep = Annotated[Principal, Depends(require_role())]
