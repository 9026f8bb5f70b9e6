"""The backfill workers of one process: the tier queue and the candidate queue, each on the
shared :class:`~shortlist.queue.QueueWorker` loop, woken by NOTIFY on ``shortlist_backfill``
(fired by triggers whenever tiers or stubs are queued or change status)."""

from __future__ import annotations

from typing import Any

from shortlist.queue import QueueWorker, WorkerConfig
from shortlist.services import Services
from shortlist.sources.factory import Sources, make_sources, rate_limits
from shortlist.sources.limits import PgRateGate
from shortlist.talent.candidates import CandidateQueue
from shortlist.talent.tiers import TierQueue

SOURCES_KEY = "sources"
# Both queues wake on NOTIFY; polling is the fallback, and what makes a tier deferred by a
# 429 (not_before in the future, no NOTIFY when it falls due) run on time.
POLL_INTERVAL = 1.0
# What the loop backs off on: a throttled provider (the candidate queue re-raises 429s, with
# their Retry-After, which wins when longer), a failed claim, an unexpected error. Short: a
# provider pause is usually seconds, and the database is usually back within seconds.
BACKOFF_BASE = 0.5
BACKOFF_MAX = 30.0


def sources_of(services: Services) -> Sources:
    """This process's external sources, created on first use and closed with the services.
    Tests put their own under ``services.extras["sources"]`` beforehand."""
    sources = services.extras.get(SOURCES_KEY)
    if sources is None:
        sources = make_sources(
            services.settings,
            limiter=PgRateGate(services.pool, rate_limits(services.settings)),
        )
        services.extras[SOURCES_KEY] = sources
    assert isinstance(sources, Sources)
    return sources


def build_backfill_workers(services: Services) -> list[QueueWorker[Any]]:
    settings = services.settings
    # Created now, not on first use: a worker without provider URLs fails at start-up with
    # SourcesNotConfigured rather than failing every claimed item later.
    sources_of(services)

    def sources() -> Sources:
        return sources_of(services)

    # Never longer than the providers' own retry delay (tests scale that down with time).
    backoff_base = min(BACKOFF_BASE, settings.retry_delay)

    tiers = QueueWorker(
        TierQueue(services.pool, settings, sources),
        WorkerConfig(
            batch_size=1,
            # A discovery call may hang for two timeouts plus a retry delay; other searches'
            # tiers must not queue behind it. The provider gate bounds the actual calls.
            concurrency=settings.backfill_concurrency,
            poll_interval=POLL_INTERVAL,
            backoff_base=backoff_base,
            backoff_max=BACKOFF_MAX,
            lease=settings.lease_seconds,
        ),
        notifier=services.notifier,
    )
    candidates = QueueWorker(
        CandidateQueue(
            services.pool, services.embedder, sources, min_score=settings.backfill_min_score
        ),
        WorkerConfig(
            # One candidate per task: a slow enrichment holds back only itself.
            batch_size=1,
            concurrency=settings.backfill_concurrency,
            poll_interval=POLL_INTERVAL,
            throttle=0.0,
            backoff_base=backoff_base,
            backoff_max=BACKOFF_MAX,
            lease=settings.lease_seconds,
        ),
        notifier=services.notifier,
    )
    return [tiers, candidates]
