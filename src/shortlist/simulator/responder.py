"""Playing out a :class:`~shortlist.simulator.behaviour.Decision`: wait, then answer.

Shared by the generic dialect (:mod:`shortlist.simulator.app`) and the vendors' dialects
(:mod:`shortlist.simulator.vendors`); errors and extra headers come in the caller's dialect.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any, Literal

from fastapi import Request
from fastapi.responses import JSONResponse, Response
from starlette.types import Receive

from shortlist.simulator.behaviour import Decision, SimulatorState, format_seconds

# nginx's "client closed request": logged only, the client is gone and never sees it.
_CLIENT_CLOSED = 499


async def _until_disconnect(receive: Receive) -> None:
    # Per ASGI, once the (empty) request body has been read, receive() blocks until the client
    # goes away and then returns http.disconnect: no polling involved.
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


async def _wait(
    request: Request, state: SimulatorState, delay: float
) -> Literal["done", "disconnected", "released"]:
    """Sleep ``delay`` simulated seconds (``inf`` = until released), ending early if the client
    disconnects, so a hang whose client timed out does not hold a task for 90 s."""
    if delay <= 0:
        return "done"
    disconnect = asyncio.ensure_future(_until_disconnect(request.receive))
    timer: asyncio.Future[None] = (
        state.hang_waiter() if math.isinf(delay) else asyncio.ensure_future(asyncio.sleep(delay))
    )
    try:
        done, _ = await asyncio.wait({disconnect, timer}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        disconnect.cancel()
        timer.cancel()
    if disconnect in done:
        return "disconnected"
    return "released" if math.isinf(delay) else "done"


def _headers(decision: Decision) -> dict[str, str]:
    return {
        "X-Simulator-Outcome": decision.outcome,
        "X-Simulator-Attempt": str(decision.attempt),
    }


def _generic_rate_limited(retry_after: float, headers: dict[str, str]) -> Response:
    headers["Retry-After"] = format_seconds(retry_after)
    return JSONResponse({"error": "rate limited", "retry_after": retry_after}, 429, headers=headers)


def _generic_failed(status: int, message: str, headers: dict[str, str]) -> Response:
    return JSONResponse({"error": message}, status, headers=headers)


async def respond(
    request: Request,
    state: SimulatorState,
    endpoint: Literal["search", "enrich", "serp"],
    decision: Decision,
    body: Callable[[], dict[str, Any]],
    *,
    rate_limited: Callable[[float, dict[str, str]], Response] = _generic_rate_limited,
    failed: Callable[[int, str, dict[str, str]], Response] = _generic_failed,
    ok_headers: Callable[[dict[str, Any]], dict[str, str]] | None = None,
) -> Response:
    """Play out ``decision``: wait, then answer with an error or ``body()`` (errors and extra
    headers in the dialect of the caller: the generic API's by default, or a vendor's)."""
    state.enter(endpoint)
    try:
        state.record(endpoint, decision.outcome)
        headers = _headers(decision)
        if decision.outcome == "429":
            return rate_limited(state.retry_after(), headers)
        ended = await _wait(request, state, decision.delay_s)
        if ended == "disconnected":
            state.record(endpoint, "disconnected")
            return Response(status_code=_CLIENT_CLOSED, headers=headers)
        if ended == "released":
            return failed(503, "hang released by admin", headers)
        if decision.outcome == "5xx":
            return failed(decision.status, "upstream error", headers)
        payload = body()
        if ok_headers is not None:
            headers.update(ok_headers(payload))
        return JSONResponse(payload, headers=headers)
    finally:
        state.leave(endpoint)
