"""The FastAPI application: routes, error mapping, client IP and body-size guards."""

from __future__ import annotations

import contextlib
import functools
import json
import logging

from fastapi import FastAPI
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shortlist import __version__
from shortlist.api.clientip import client_ip
from shortlist.api.errors import error_body, install_error_handlers
from shortlist.api.probe_cache import ProbeCache
from shortlist.api.ratelimit import RateLimiter
from shortlist.api.routes import (
    account_pages,
    alerts,
    employer,
    events,
    intake,
    jobs,
    oidc,
    pages,
    privacy,
    probes,
    searches,
    shortlist,
    sources,
    webhooks,
)
from shortlist.api.routes import accounts as accounts_routes
from shortlist.api.streams import StreamSlots
from shortlist.bootstrap import Services

log = logging.getLogger(__name__)


class GuardMiddleware:
    """Pure ASGI middleware: resolves the client IP once per request and refuses bodies over
    ``max_body_bytes`` (checked on Content-Length and while streaming) with a JSON 413."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        trusted_proxies: str,
        forwarded_header: str = "x-forwarded-for",
    ) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.trusted_proxies = trusted_proxies
        self.forwarded_header = forwarded_header

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        peer = scope.get("client")
        ip = client_ip(
            peer[0] if peer else None, headers, self.trusted_proxies, self.forwarded_header
        )
        scope.setdefault("state", {})["client_ip"] = ip
        length = headers.get("content-length")
        if length is not None and (
            not length.isascii() or not length.isdigit() or int(length) > self.max_body_bytes
        ):
            await _send_413(send, self.max_body_bytes)
            return
        received = 0
        too_large = False

        async def limited_receive() -> Message:
            nonlocal received, too_large
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    too_large = True
                    raise _BodyTooLarge
            return message

        started = False

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if too_large:
                # The app saw its body reading fail and answers that (FastAPI: a 400 "error
                # parsing the body"); the client gets the 413 below instead.
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        with contextlib.suppress(_BodyTooLarge):
            await self.app(scope, limited_receive, guarded_send)
        if too_large and not started:
            await _send_413(send, self.max_body_bytes)


class _BodyTooLarge(Exception):
    pass


async def _send_413(send: Send, limit: int) -> None:
    body = json.dumps(error_body("too_large", f"request body exceeds {limit} bytes")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json"), (b"connection", b"close")],
        }
    )
    await send({"type": "http.response.body", "body": body})


@functools.cache
def api_routes() -> tuple[BaseRoute, ...]:
    """Every route of the API and the pages, built once per process. Each router's routes are
    complete where they are declared (path, tags, responses, dependencies: FastAPI's
    ``APIRouter.add_api_route``); an app given them as its routes serves them as they are,
    where ``include_router`` made every new app analyse each endpoint's parameters again on its
    first request (~100 ms of CPU per app: FastAPI 0.165 builds an included router's routes
    per app, lazily). The routes read the process's services from ``request.app.state``, so
    apps may share them (the tests make many)."""
    routers = (
        probes.router,
        jobs.router,
        searches.router,
        shortlist.router,
        privacy.router,
        sources.router,
        webhooks.router,
        events.router,
        intake.router,
        alerts.router,
        employer.router,
        alerts.people_router,
        accounts_routes.router,
        account_pages.router,
        oidc.router,
        pages.router,
    )
    return tuple(route for router in routers for route in router.routes)


def create_app(services: Services) -> FastAPI:
    settings = services.settings
    app = FastAPI(
        routes=list(api_routes()),
        title="shortlist",
        version=__version__,
        description="Semantic search for jobs and talent on PostgreSQL + pgvector.",
    )
    app.state.services = services
    app.state.search_limiter = RateLimiter(settings.search_rate_limit)
    app.state.probe_limiter = RateLimiter(settings.probe_rate_limit)
    app.state.probe_cache = ProbeCache(settings.status_cache_seconds)
    app.state.stream_slots = StreamSlots(
        per_token=settings.sse_per_token, total=settings.sse_max_streams
    )
    install_error_handlers(app)
    app.state.oidc = oidc.client_for(settings)

    app.add_middleware(
        GuardMiddleware,
        max_body_bytes=settings.max_body_bytes,
        trusted_proxies=settings.trusted_proxies,
        forwarded_header=settings.forwarded_header,
    )
    return app
