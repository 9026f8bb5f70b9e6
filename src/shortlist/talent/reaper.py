"""The idle reaper: recovers what crashed workers and silent searches leave behind.

Every ``reaper_interval``:

1. a ``running`` candidate whose lease expired (its worker died mid-enrichment) becomes
   ``failed_transient`` — failed forward, with a retry in the UI, as the seed says;
2. a ``running`` tier whose lease expired goes back to the queue (or fails after
   MAX_TIER_ATTEMPTS lost workers in a row);
3. a ``running`` search with nothing left to do becomes ``complete`` (its last worker died
   between its commit and the completion check);
4. a ``running`` search with no progress for ``stale_after`` becomes ``stale``, until
   ``POST /api/searches/{id}/retry``.

Any number of reapers may run (one per worker process): each step is a guarded UPDATE, so two
reapers never double-apply a transition.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from shortlist.config import Settings
from shortlist.db.types import AsyncPool
from shortlist.services import Services
from shortlist.talent import repository as repo
from shortlist.talent.tiers import MAX_TIER_ATTEMPTS

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReapReport:
    lost_candidates: int = 0
    requeued_tiers: int = 0
    failed_tiers: int = 0
    completed: int = 0
    stale: int = 0

    def __bool__(self) -> bool:
        return any(
            (
                self.lost_candidates,
                self.requeued_tiers,
                self.failed_tiers,
                self.completed,
                self.stale,
            )
        )


async def reap_once(pool: AsyncPool, settings: Settings) -> ReapReport:
    # One statement per transaction: the reaper never holds locks across tables.
    async with pool.connection() as conn:
        lost = await repo.reap_lost_candidates(conn)
        await conn.commit()
        tiers = await repo.reap_lost_tiers(conn, MAX_TIER_ATTEMPTS)
        await conn.commit()
    for row in lost:
        log.warning("search %s candidate %d: worker lost, failed", row["search_id"], row["id"])
    # Completion before staleness: a search that is merely silent because it is finished is
    # complete, not stale.
    async with pool.connection() as conn:
        done = await repo.running_searches_without_work(conn)
    completed = 0
    for search_id in done:
        if await repo.try_complete(pool, search_id):
            completed += 1
    async with pool.connection() as conn, conn.transaction():
        stale = await repo.mark_stale_searches(conn, settings.stale_after)
    for search_id in stale:
        log.warning(
            "search %s: no progress for %.0fs, marked stale", search_id, settings.stale_after
        )
    report = ReapReport(
        lost_candidates=len(lost),
        requeued_tiers=sum(1 for t in tiers if t["status"] == "queued"),
        failed_tiers=sum(1 for t in tiers if t["status"] == "failed"),
        completed=completed,
        stale=len(stale),
    )
    if report:
        log.info("reaper: %s", report)
    return report


async def run_reaper(services: Services, stop: asyncio.Event) -> None:
    """Reap every ``reaper_interval`` until ``stop``; a failed round is logged and retried."""
    interval = services.settings.reaper_interval
    while not stop.is_set():
        try:
            await reap_once(services.pool, services.settings)
        except Exception:
            log.exception("reaper round failed; next round in %.1fs", interval)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=interval)
