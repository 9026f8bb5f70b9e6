"""The reaper: recovers what vanished workers and silent searches leave behind.

Who owns a row whose lease ran out, one rule per queue table (a lease runs out only when its
worker process is gone or hung: a live process renews everything it holds):

    table               lost row goes to      after MAX_LOST_WORKERS losses   owner
    job_listings        claimable again        (no limit)                     the indexer's claim
    candidates          claimable again        (no limit)                     the indexer's claim
    search_tiers        queued (same page)     failed                         this reaper
    search_candidates   queued                 failed_transient               this reaper

A lease that ran out in a database outage is not a lost worker (:class:`Reaper`): its worker
could neither renew it nor give it back.

Every ``reaper_interval`` it also completes a ``running`` search with nothing left to do (its
last worker died between its commit and the completion check), and marks ``stale`` a running
search with no progress for ``stale_after`` and no candidate held by a live worker, until
``POST /api/searches/{id}/retry``; and erases bought profiles nobody marked once
``SHORTLIST_PROFILE_RETENTION_DAYS`` have passed since their last refresh, and the personal data
of handled inbound e-mail ``SHORTLIST_MAIL_RETENTION_DAYS`` after it arrived (shortlist.privacy).

Any number of reapers may run (one per worker process): each step is a guarded UPDATE, so two
reapers never double-apply a transition.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from shortlist.config import Settings
from shortlist.db.types import AsyncPool
from shortlist.privacy import purge_expired_attempts, purge_expired_mail, purge_expired_profiles
from shortlist.queue.periodic import Periodic, run_periodic
from shortlist.queue.worker import database_trouble
from shortlist.talent import repository as repo

log = logging.getLogger(__name__)

MAX_LOST_WORKERS = 3
"""Workers lost on one tier page or one candidate before it fails instead of going back."""


@dataclass(frozen=True)
class ReapReport:
    requeued_candidates: int = 0
    failed_candidates: int = 0
    requeued_tiers: int = 0
    failed_tiers: int = 0
    completed: int = 0
    stale: int = 0
    purged_profiles: int = 0
    erased_mail: int = 0

    def __bool__(self) -> bool:
        return any(
            (
                self.purged_profiles,
                self.erased_mail,
                self.requeued_candidates,
                self.failed_candidates,
                self.requeued_tiers,
                self.failed_tiers,
                self.completed,
                self.stale,
            )
        )


async def reap_once(pool: AsyncPool, settings: Settings, *, count_lost: bool = True) -> ReapReport:
    """One round. ``count_lost``: a lease that ran out is a lost worker (see :class:`Reaper`)."""
    # One statement per transaction: the reaper never holds locks across tables.
    async with pool.connection() as conn:
        lost = await repo.reap_lost_candidates(conn, MAX_LOST_WORKERS, counted=count_lost)
        await conn.commit()
        tiers = await repo.reap_lost_tiers(conn, MAX_LOST_WORKERS, counted=count_lost)
        await conn.commit()
    for row in lost:
        log.warning(
            "search %s candidate %d: worker lost, now %s",
            row["search_id"],
            row["id"],
            row["status"],
        )
    # Completion before staleness: a search that is merely silent because it is finished is
    # complete, not stale.
    async with pool.connection() as conn:
        done = await repo.running_searches_without_work(conn)
    completed = 0
    for search_id in done:
        async with pool.connection() as conn, conn.transaction():
            done_now = await repo.complete_search_if_done(conn, search_id)
        if done_now:
            completed += 1
    async with pool.connection() as conn, conn.transaction():
        stale = await repo.mark_stale_searches(conn, settings.stale_after)
    for search_id in stale:
        log.warning(
            "search %s: no progress for %.0fs, marked stale", search_id, settings.stale_after
        )
    # Retention (shortlist.privacy): bought profiles nobody marked, past their time.
    purged = await purge_expired_profiles(pool, settings.profile_retention_days)
    # ... and inbound e-mail's personal data (the row stays), past its time.
    erased_mail = await purge_expired_mail(pool, settings.mail_retention_days)
    # ... and who the attempts and held people of long-finished searches were.
    await purge_expired_attempts(pool, settings.attempt_retention_days)
    report = ReapReport(
        purged_profiles=len(purged),
        erased_mail=erased_mail,
        requeued_candidates=sum(1 for c in lost if c["status"] == "queued"),
        failed_candidates=sum(1 for c in lost if c["status"] == "failed_transient"),
        requeued_tiers=sum(1 for t in tiers if t["status"] == "queued"),
        failed_tiers=sum(1 for t in tiers if t["status"] == "failed"),
        completed=completed,
        stale=len(stale),
    )
    if report:
        log.info("reaper: %s", report)
    return report


@dataclass
class Reaper:
    """The reaper's rounds, and what it saw of the database between them.

    While the database is down nobody can renew a lease or give a claim back, so every lease
    held across an outage runs out, its worker alive: that is not a lost worker. After a round
    failed on the database, the reaper still puts what ran out back in the queue, but counts
    no lost worker (a tier page's claim is taken off its attempts) until one lease has passed
    since the database answered again, the time a claim a live worker could not give back
    takes to run out."""

    pool: AsyncPool
    settings: Settings
    forgive_until: float = 0.0
    """Monotonic time until which a lease that runs out is not counted against its item."""
    outage: bool = False

    async def round(self) -> ReapReport:
        now = time.monotonic()
        try:
            report = await reap_once(
                self.pool, self.settings, count_lost=not self.outage and now >= self.forgive_until
            )
        except Exception as exc:
            if database_trouble(exc):
                self.outage = True
            raise
        if self.outage:
            self.outage = False
            self.forgive_until = now + self.settings.lease_seconds
        return report


def reaper_job(pool: AsyncPool, settings: Settings) -> Periodic:
    """A round every ``reaper_interval`` (shortlist.queue.periodic)."""
    return Periodic("reaper", settings.reaper_interval, Reaper(pool, settings).round)


async def run_reaper(pool: AsyncPool, settings: Settings, stop: asyncio.Event) -> None:
    """Reap every ``reaper_interval`` until ``stop``; a failed round is logged and retried."""
    await run_periodic([reaper_job(pool, settings)], stop)
