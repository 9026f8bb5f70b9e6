"""``GET /api/searches/{id}/events``: a recruiter search as a stream of Server-Sent Events.

The push twin of polling ``GET /api/results``: the same rows, read by the same service function
(:func:`shortlist.talent.service.results_page`, one consistent snapshot per read) and serialised
by the same response models, in the same rank order — only delivered when they are committed
instead of on the client's next poll. Events:

* ``result`` — one new result row (``id:`` is its rank), exactly as in ``results[]`` of
  ``/api/results``; rows are sent strictly in rank order, each once;
* ``status`` — the search's status, result count and candidates-by-status changed;
* ``candidate`` — an attempt (a stub not in the results) appeared or changed status; one that
  leaves the attempts because it succeeded is sent once more with ``"status": "succeeded"``;
* ``complete`` — nothing more will arrive: the search is complete and nothing is queued or
  running. The stream ends after it.

A comment line is sent as a heartbeat every ``HEARTBEAT_SECONDS`` so proxies keep the
connection open. ``?after=N`` (or ``Last-Event-ID``) resumes after rank N.

How it wakes: the ``searches`` trigger NOTIFYs :data:`~shortlist.db.channels.SEARCH_EVENTS` with
the search id on every update of the row (each append bumps ``result_count``), and so does the
candidate stubs' trigger when a stub is added or changes status (migration 0022). Both arrive
through the process's one :class:`~shortlist.queue.notify.Notifier`; only its own search's id
makes the stream re-read. It also re-reads every ``RESYNC_SECONDS`` without a notification, so
a NOTIFY lost while the listener reconnects delays an event by seconds, never forever.

It ends after ``complete`` — the search complete with nothing in flight, or ``stale`` — and,
with ``"status": "revoked"``, within one resync of its token being revoked or expiring.

Only the search's owner or an admin may open it (``Authorization: Bearer``, as every other
endpoint: the page reads the stream with ``fetch()``, so no token ever goes into a URL).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse
from starlette.background import BackgroundTask

from shortlist.api.deps import RecruiterDep, ServicesDep
from shortlist.api.routes import searches as searches_api
from shortlist.api.streams import StreamSlots, holding
from shortlist.auth import Principal, still_valid
from shortlist.bootstrap import Services
from shortlist.db import channels
from shortlist.db.types import Row
from shortlist.errors import NotFound
from shortlist.queue.notify import Notifier
from shortlist.talent import service
from shortlist.talent.repository import SearchRecord
from shortlist.validation import small_int

log = logging.getLogger(__name__)

router = APIRouter(tags=["searches"])

HEARTBEAT_SECONDS = 15.0
RESYNC_SECONDS = 5.0
MIN_SYNC_INTERVAL = 0.05
"""Notifications closer together than this are read in one go."""
RECONNECT_MS = 3000
BUSY_STATUSES = ("queued", "running")


def sse_frame(event: str, data: Any, *, event_id: int | None = None) -> str:
    lines = [f"event: {event}"]
    if event_id is not None:
        lines.append(f"id: {event_id}")
    # json.dumps never emits a newline (no indent), so the payload is one ``data:`` line.
    lines.append("data: " + json.dumps(data, separators=(",", ":"), default=str))
    return "\n".join(lines) + "\n\n"


# The results endpoint's own row converters (module-private there): one mapping from rows to
# JSON, so a streamed row and a polled row can never differ.
def result_json(row: Row) -> dict[str, Any]:
    """A ``results[]`` entry, built by the very model ``GET /api/results`` answers with."""
    out: dict[str, Any] = searches_api.result_out(row).model_dump(mode="json", by_alias=True)
    return out


def attempt_json(row: Row) -> dict[str, Any]:
    """An ``attempts[]`` entry, as ``GET /api/results`` has it."""
    out: dict[str, Any] = searches_api.attempt_out(row).model_dump(mode="json", by_alias=True)
    return out


@dataclass
class StreamState:
    """What this stream has sent so far, to send only differences."""

    last_rank: int
    status: dict[str, Any] | None = None
    attempts: dict[int, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Snapshot:
    search: SearchRecord
    results: list[dict[str, Any]]
    counts: dict[str, int]
    attempts: list[dict[str, Any]]
    hidden_count: int = 0

    @property
    def finished(self) -> bool:
        """Nothing more will arrive: complete with nothing in flight, or stale (a stale search
        waits for its retry, which a client follows with a new stream)."""
        busy = sum(self.counts.get(s, 0) for s in BUSY_STATUSES)
        return self.search.status == "stale" or (self.search.status == "complete" and busy == 0)


async def read_snapshot(
    services: Services, principal: Principal, search_id: str, after: int
) -> Snapshot:
    """Everything after rank ``after``, read exactly as ``GET /api/results`` reads it (same
    service function, one consistent snapshot per page) and in its JSON shapes."""
    results: list[dict[str, Any]] = []
    while True:
        page = await service.results_page(
            services, principal, search_id, after=after, limit=service.MAX_PAGE, audit_as="stream"
        )
        results.extend(result_json(r) for r in page.results)
        if len(page.results) < service.MAX_PAGE:
            break
        after = page.next_after
    return Snapshot(
        page.search,
        results,
        page.candidate_counts,
        [attempt_json(r) for r in page.attempts],
        page.hidden_count,
    )


def frames_for(state: StreamState, snap: Snapshot) -> list[str]:
    """The events that bring a client that saw ``state`` up to ``snap``; updates ``state``."""
    frames: list[str] = []
    for row in snap.results:
        rank = int(row["rank"])
        if rank <= state.last_rank:
            continue
        if rank != state.last_rank + 1:
            break  # never out of order: a gap is filled on the next read
        frames.append(sse_frame("result", row, event_id=rank))
        state.last_rank = rank

    current: dict[int, dict[str, Any]] = {}
    for item in snap.attempts:
        current[item["candidateId"]] = item
        if state.attempts.get(item["candidateId"]) != item:
            frames.append(sse_frame("candidate", item))
    for gone_id, gone in state.attempts.items():
        if gone_id not in current:
            frames.append(
                sse_frame("candidate", {**gone, "status": "succeeded", "lastError": None})
            )
    state.attempts = current

    status = {
        "searchId": str(snap.search.id),
        "status": snap.search.status,
        "isRunning": snap.search.status == "running",
        "resultCount": max(snap.search.result_count, state.last_rank),
        "candidates": snap.counts,
        "hiddenCount": snap.hidden_count,
    }
    if status != state.status:
        frames.append(sse_frame("status", status))
        state.status = status
    return frames


class Wakeups:
    """Notifications that concern one search, from the process's shared listener: the
    searches row's and its stubs' triggers both send the search id on SEARCH_EVENTS
    (migration 0022), so a stream wakes for its own search only."""

    def __init__(self, notifier: Notifier, search_id: uuid.UUID) -> None:
        self.notifier = notifier
        self.search_id = str(search_id)
        self.search_events = notifier.payloads(channels.SEARCH_EVENTS)

    def close(self) -> None:
        self.notifier.drop_payloads(channels.SEARCH_EVENTS, self.search_events)

    def _pending(self) -> bool:
        """Drain queued payloads; true if one is ours ("" = the listener reconnected)."""
        relevant = False
        while not self.search_events.empty():
            payload = self.search_events.get_nowait()
            relevant = relevant or payload in ("", self.search_id)
        return relevant

    async def wait(self, seconds: float) -> bool:
        """Until a relevant notification (True) or ``seconds`` have passed (False)."""
        deadline = time.monotonic() + seconds
        while True:
            if self._pending():
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                payload = await asyncio.wait_for(self.search_events.get(), timeout=remaining)
                if payload in ("", self.search_id):
                    return True


async def search_event_stream(
    services: Services,
    principal: Principal,
    search_id: uuid.UUID,
    after: int,
    *,
    heartbeat: float | None = None,
    resync: float | None = None,
) -> AsyncGenerator[str, None]:
    """The SSE body for one search, ending after ``complete``."""
    heartbeat = HEARTBEAT_SECONDS if heartbeat is None else heartbeat
    resync = RESYNC_SECONDS if resync is None else resync
    # Listen before the first read, so nothing committed after that read goes unnoticed.
    wakeups = Wakeups(services.notifier, search_id)
    state = StreamState(after)
    last_sent = time.monotonic()
    last_sync = 0.0
    try:
        yield f"retry: {RECONNECT_MS}\n\n"
        while True:
            since = time.monotonic() - last_sync
            if since < MIN_SYNC_INTERVAL:
                await asyncio.sleep(MIN_SYNC_INTERVAL - since)  # coalesce a burst of NOTIFYs
            last_sync = time.monotonic()
            # A token revoked or expired while the stream is open: it ends here, within one
            # resync interval, as any other request of that token would now be refused.
            async with services.pool.connection() as conn:
                valid = await still_valid(conn, principal)
            if not valid:
                yield sse_frame("complete", {"searchId": str(search_id), "status": "revoked"})
                return
            try:
                snap = await read_snapshot(services, principal, str(search_id), state.last_rank)
            except NotFound:  # deleted while we watched
                yield sse_frame("complete", {"searchId": str(search_id), "status": "gone"})
                return
            frames = frames_for(state, snap)
            if frames:
                yield "".join(frames)
                last_sent = time.monotonic()
            if snap.finished and state.last_rank >= snap.search.result_count:
                yield sse_frame(
                    "complete",
                    {
                        "searchId": str(search_id),
                        "status": snap.search.status,
                        "resultCount": state.last_rank,
                        "candidates": snap.counts,
                    },
                )
                return
            idle = time.monotonic() - last_sent
            woke = await wakeups.wait(min(resync, max(0.0, heartbeat - idle)))
            if not woke and time.monotonic() - last_sent >= heartbeat:
                yield ": keep-alive\n\n"
                last_sent = time.monotonic()
    finally:
        wakeups.close()


@router.get(
    "/api/searches/{search_id}/events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def search_events(
    request: Request,
    search_id: str,
    services: ServicesDep,
    principal: RecruiterDep,
    after: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    last_event_id: Annotated[str | None, Header()] = None,
) -> StreamingResponse:
    """Follow a search as Server-Sent Events (owner or admin; see the module docstring).
    At most ``SHORTLIST_SSE_PER_TOKEN`` open streams per token and ``SHORTLIST_SSE_MAX_STREAMS``
    in all: beyond, 429 (the page polls instead)."""
    # Checked before the response starts, so a stranger gets the API's JSON 404, not a stream.
    page = await service.results_page(
        services, principal, search_id, after=0, limit=1, audit_as=None
    )
    resume_after = small_int(last_event_id)
    if resume_after is not None:
        after = max(after, resume_after)
    slots: StreamSlots = request.app.state.stream_slots
    slot = slots.acquire(principal.stream_key)
    body = holding(slot, search_event_stream(services, principal, page.search.id, after))
    return StreamingResponse(
        body,
        # A stream whose body never started (client gone at once) frees its slot here.
        background=BackgroundTask(slot.release),
        media_type="text/event-stream",
        headers={
            "Cache-Control": "no-cache, no-store, no-transform",
            "X-Accel-Buffering": "no",
        },
    )
