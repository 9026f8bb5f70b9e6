"""What an operator does with sources (CLI ``shortlist sources``, admin ``/api/sources``): add,
list, remove, and crawl now. Each function is one unit of work."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel

from shortlist.config import Settings
from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn, AsyncPool
from shortlist.errors import BadInput, Conflict, NotFound, TransientError
from shortlist.listings.sources.fetch import FetchPolicy, FetchRefused, check_address
from shortlist.listings.sources.models import SourceSpec
from shortlist.listings.sources.queue import CrawlQueue, CrawlResult
from shortlist.queue import LeaseKeeper, QueueWorker, WorkerConfig, wait_any

QUERIES = load_queries("shortlist.listings.sources")
BUSY_POLL_INTERVAL = 0.5
"""How often ``crawl_now`` looks again for a source another worker holds."""


class SourceOut(BaseModel):
    id: int
    spec: str
    kind: str
    company_name: str | None
    status: str
    """active, or failed (a permanent error: see ``last_error``)."""
    listings_open: int
    last_crawl_at: datetime | None
    last_success_at: datetime | None
    next_crawl_at: datetime
    last_error: str | None
    last_outcome: dict[str, Any] | None
    """Counts of the last successful crawl: new, changed, unchanged, closed, expired,
    skipped, duplicates, requests."""
    created_at: datetime


async def add_source(
    pool: AsyncPool, settings: Settings, spec_text: str, company_name: str | None = None
) -> SourceOut:
    """A new source (due at once). ``BadInput`` for a spec that is not one or a URL to a
    private address; ``Conflict`` if it is already a source."""
    spec = SourceSpec.parse(spec_text)
    company = (company_name or "").strip() or None
    if company is not None and len(company) > 200:
        raise BadInput("company is at most 200 characters", field="company")
    if spec.kind == "careers" and urlsplit(spec.key).hostname:
        try:
            await check_address(spec.key, FetchPolicy.from_settings(settings))
        except FetchRefused as exc:
            raise BadInput(str(exc), field="spec") from exc
        except TransientError:
            pass  # not resolvable now: checked again before every fetch
    async with pool.connection() as conn, conn.transaction():
        cur = await conn.execute(
            QUERIES["insert_source"],
            {"spec": spec.spec, "kind": spec.kind, "company_name": company},
        )
        row = await cur.fetchone()
        if row is None:
            cur = await conn.execute(QUERIES["source_by_spec"], {"spec": spec.spec})
            existing = await cur.fetchone()
            raise Conflict(f"{spec.spec} is already source {existing['id'] if existing else '?'}")
        return (await _list(conn, row["id"]))[0]


async def _list(conn: AsyncConn, source_id: int | None = None) -> list[SourceOut]:
    cur = await conn.execute(QUERIES["list_sources"], {"id": source_id})
    return [SourceOut.model_validate(dict(r)) for r in await cur.fetchall()]


async def list_sources(pool: AsyncPool) -> list[SourceOut]:
    async with pool.connection() as conn:
        return await _list(conn)


async def get_source(pool: AsyncPool, source_id: int) -> SourceOut:
    async with pool.connection() as conn:
        found = await _list(conn, source_id)
    if not found:
        raise NotFound(f"no source {source_id}")
    return found[0]


async def remove_source(pool: AsyncPool, source_id: int) -> None:
    """The source goes, and its open listings close (nothing keeps them true any more)."""
    async with pool.connection() as conn, conn.transaction():
        cur = await conn.execute(QUERIES["delete_source"], {"id": source_id})
        if await cur.fetchone() is None:
            raise NotFound(f"no source {source_id}")


async def crawl_now(
    pool: AsyncPool,
    settings: Settings,
    ids: Sequence[int] | None,
    *,
    on_done: Callable[[CrawlResult], None] | None = None,
    wait_for_busy: float = 600.0,
) -> list[CrawlResult]:
    """Crawl ``ids`` (None: every source) at once, in this process, failed sources too: the
    crawl queue's worker in drain mode. A source another worker is crawling right now is waited
    for (``wait_for_busy`` seconds; a crash's lease runs out within ``SHORTLIST_LEASE_SECONDS``)
    and then crawled."""
    if ids is None:
        wanted = [s.id for s in await list_sources(pool)]
    else:
        wanted = list(dict.fromkeys(ids))
        known = {s.id for s in await list_sources(pool)}
        missing = [i for i in wanted if i not in known]
        if missing:
            raise NotFound(f"no source {', '.join(map(str, missing))}")
    results: list[CrawlResult] = []

    def done(result: CrawlResult) -> None:
        results.append(result)
        if on_done is not None:
            on_done(result)

    queue = CrawlQueue(pool, settings, ids=wanted, on_done=done)
    config = WorkerConfig(
        # One source at a time, as ``sources crawl`` always has: its output follows the list.
        batch_size=1,
        concurrency=1,
        poll_interval=BUSY_POLL_INTERVAL,
        backoff_base=1.0,
        backoff_max=30.0,
        lease=settings.lease_seconds,
        heartbeat=settings.heartbeat_interval,
        grace=settings.shutdown_grace,
    )
    worker = QueueWorker(queue, config, keeper=LeaseKeeper(pool, every=settings.heartbeat_interval))
    deadline = time.monotonic() + wait_for_busy
    stop = asyncio.Event()
    while True:
        await worker.run(stop, drain=True)
        if not queue.todo:
            return results
        # What is left is leased by another worker (or a crashed one): wait for it.
        if time.monotonic() > deadline:
            raise TransientError(
                f"sources {', '.join(map(str, queue.todo))} are being crawled by another worker"
            )
        await wait_any(stop.wait(), timeout=BUSY_POLL_INTERVAL)
