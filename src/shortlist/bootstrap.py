"""The composition root: what one shortlist process is made of, built in one place.

:class:`Services` holds the long-lived parts a process shares (settings, pool, notification
listener, lease keeper, embedder and, where the backfill runs, the external sources);
:func:`open_services` builds and closes them, :func:`build_workers` assembles the queue
workers of a process by kind. The API, the CLI commands, the tests and the benchmarks all
start here; nothing else constructs these parts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Collection, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shortlist import places
from shortlist.accounts.demo import load_demo_accounts
from shortlist.alerts import people as people_alerts
from shortlist.alerts.bounces import Bounces
from shortlist.alerts.digests import DigestQueue
from shortlist.alerts.matcher import MatchQueue
from shortlist.alerts.store import purge_unconfirmed
from shortlist.config import Settings, index_build_overrides
from shortlist.db import channels
from shortlist.db.pool import PoolShare, open_async_pool
from shortlist.db.replicas import CHECK_INTERVAL, ReadPools, open_read_pools, read_urls
from shortlist.db.types import AsyncPool
from shortlist.embedding.base import Embedder
from shortlist.embedding.factory import check_embedder, configured_model, make_space_embedder
from shortlist.embedding.local import LocalEmbedder
from shortlist.embedding.spaces import EmbedderFactory, Spaces
from shortlist.heap import HEAP_TRIM_EVERY, trim_heap
from shortlist.indexer import CORPORA, LISTINGS, ClaimedRow, Corpus, EmbeddingQueue
from shortlist.indexer.migration import coordinator_job
from shortlist.indexer.retune import retune_job
from shortlist.listings.mail.queue import MailQueue
from shortlist.listings.mail.reply import Relay
from shortlist.listings.mail.sandbox import ParserPool
from shortlist.listings.rates import RateCache
from shortlist.listings.result_cache import ResultCache
from shortlist.listings.sample import load_sample_listings
from shortlist.listings.sources.queue import CrawlQueue
from shortlist.queue import LeaseKeeper, Notifier, QueueWorker, WorkerConfig
from shortlist.queue.periodic import Periodic, run_periodic
from shortlist.talent.candidates import CandidateQueue
from shortlist.talent.reaper import reaper_job
from shortlist.talent.sample import load_sample_candidates
from shortlist.talent.tiers import TierQueue
from shortlist.talent.vendors.factory import (
    Sources,
    check_half_configured,
    make_sources,
    rate_limits,
)
from shortlist.talent.vendors.limits import PgRateGate
from shortlist.webhooks import store as webhook_store
from shortlist.webhooks.secrets import seal_secrets
from shortlist.webhooks.sender import SendPolicy, WebhookQueue

if TYPE_CHECKING:
    from fastapi import FastAPI

    from shortlist.simulator import SimulatorConfig

log = logging.getLogger(__name__)

Runner = Callable[[asyncio.Event], Coroutine[Any, Any, None]]
"""A worker coroutine of the process: runs until the event is set, then drains."""
WORKER_KINDS = ("indexer", "backfill", "reaper", "mail", "crawler", "webhooks", "alerts")

# The backfill queues wake on NOTIFY; polling is the fallback, and what makes a tier deferred by
# a 429 (not_before in the future, no NOTIFY when it falls due) run on time.
BACKFILL_POLL_INTERVAL = 1.0
# What a backfill worker backs off on: a throttled provider (the candidate queue re-raises 429s,
# with their Retry-After, which wins when longer), a failed claim, an unexpected error. Short: a
# provider pause is usually seconds, and the database is usually back within seconds.
BACKFILL_BACKOFF_BASE = 0.5
BACKFILL_BACKOFF_MAX = 30.0


@dataclass
class Services:
    settings: Settings
    database_url: str
    pool: AsyncPool
    notifier: Notifier
    spaces: Spaces
    """The embedding models in use: the active one (queries, search) and one being built."""
    sources: Sources | None = None
    """The talent providers: only in processes that run the backfill."""
    worker_pool: AsyncPool | None = None
    """The in-process workers' own pool (``serve``: ``SHORTLIST_DB_WORKER_POOL_MAX``), so a
    flood of requests never takes the workers' connections, nor the workers the requests';
    None: the workers use ``pool`` (a process of workers only)."""
    keeper: LeaseKeeper = field(init=False)
    """Renews every lease this process's workers hold, in one statement per beat."""
    reads: ReadPools = field(init=False)
    """Where searches read: a healthy read replica, else ``pool`` (the only pool that writes)."""
    mail_parser: ParserPool = field(init=False)
    """The parser processes e-mailed job posts are read in (started on first use)."""
    search_cache: ResultCache = field(init=False)
    """Answers of repeated job searches, until a listing changes."""
    intake: PoolShare = field(init=False)
    """The share of ``pool`` the e-mail intake (SMTP and ``POST /api/jobs/email``) may hold:
    ``SHORTLIST_MAIL_DB_CONNECTIONS``, and never all of it."""
    rates: RateCache = field(init=False)
    """The reference exchange rates job searches convert salaries with (read once a minute)."""

    def __post_init__(self) -> None:
        self.keeper = LeaseKeeper(self.work_pool, every=self.settings.heartbeat_interval)
        self.intake = PoolShare(
            self.pool,
            max(1, min(self.settings.mail_db_connections, self.pool.max_size - 1)),
            "the e-mail intake's share of the pool",
        )
        self.reads = ReadPools(self.pool)
        self.rates = RateCache()
        self.search_cache = ResultCache(
            int(self.settings.search_cache_mb * 2**20),
            ttl=self.settings.search_cache_seconds,
        )
        self.mail_parser = ParserPool(
            processes=self.settings.mail_parse_processes,
            timeout=self.settings.mail_parse_timeout,
            max_bytes=self.settings.mail_max_bytes,
            memory_mb=self.settings.mail_parse_memory_mb,
        )

    @property
    def work_pool(self) -> AsyncPool:
        """The pool the queue workers and periodic jobs use."""
        return self.worker_pool or self.pool

    @property
    def embedder(self) -> Embedder:
        """The active model's embedder (it changes when a model migration switches)."""
        return self.spaces.active().embedder


@contextlib.asynccontextmanager
async def open_services(
    settings: Settings,
    database_url: str,
    *,
    embedder: Embedder | None = None,
    embedder_factory: EmbedderFactory | None = None,
    sources: Sources | None = None,
    with_sources: bool = False,
    pool_max: int | None = None,
    worker_pool_max: int | None = None,
    statement_timeout: float = 0.0,
) -> AsyncIterator[Services]:
    """Build a process's services; ``with_sources`` also builds the configured providers
    (raising ``SourcesNotConfigured`` before anything is opened when they are not);
    ``statement_timeout`` bounds every statement of the pool (``serve``: the API's,
    ``SHORTLIST_STATEMENT_TIMEOUT``); ``worker_pool_max``: the workers get a pool of their own
    of that size (``serve``, whose requests and workers share the process).

    The embedder of each model space comes from ``embedder_factory`` (default: the settings'
    kinds, ``make_space_embedder``); ``embedder`` is one embedder for every space (tests)."""
    if embedder_factory is None:
        if embedder is not None:
            fixed = embedder
            embedder_factory = lambda _space: fixed  # noqa: E731
        else:
            check_embedder(settings)  # a configuration that cannot work fails here, first
            embedder_factory = lambda space: make_space_embedder(space, settings)  # noqa: E731
    if sources is None and with_sources:
        check_sources(settings)  # before anything is opened
    max_size = pool_max or settings.db_pool_max
    pool = await open_async_pool(
        database_url,
        min_size=min(settings.db_pool_min, max_size),
        max_size=max_size,
        statement_timeout=statement_timeout,
    )
    worker_pool = None
    if worker_pool_max is not None:
        worker_pool = await open_async_pool(
            database_url,
            min_size=1,
            max_size=worker_pool_max,
            name="shortlist-workers",
            statement_timeout=statement_timeout,
        )
    if sources is None and with_sources:
        sources = shared_sources(settings, worker_pool or pool)
    notifier = Notifier(database_url)
    notifier.start()
    spaces = Spaces(
        pool, embedder_factory, database_url, query_cache_size=settings.query_cache_size
    )
    services = Services(settings, database_url, pool, notifier, spaces, sources, worker_pool)
    stop_watching = asyncio.Event()
    watcher: asyncio.Task[None] | None = None
    upkeep: asyncio.Task[None] | None = None
    cache_watcher = asyncio.create_task(
        services.search_cache.watch(
            notifier.subscribe(channels.LISTINGS), notifier.connected, notifier.disconnected
        ),
        name="shortlist-search-cache",
    )
    # The gazetteer takes a few seconds to index: built off the event loop, beside the model,
    # so no request's brief waits for it.
    gazetteer = asyncio.create_task(
        asyncio.to_thread(places.load, settings.cache_dir), name="shortlist-gazetteer"
    )
    try:
        await spaces.adopt(*configured_model(settings))
        await gazetteer
        watcher = asyncio.create_task(
            spaces.watch(notifier.subscribe(channels.MODELS), stop_watching),
            name="shortlist-embedding-models",
        )
        services.reads = await open_read_pools(
            pool,
            read_urls(settings.database_read_url),
            max_lag=settings.read_max_lag,
            min_size=1,
            max_size=max_size,
        )
        upkeep = asyncio.create_task(
            run_periodic(upkeep_jobs(services), stop_watching), name="shortlist-upkeep"
        )
        yield services
    finally:
        stop_watching.set()
        if upkeep is not None:
            await upkeep
        cache_watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await cache_watcher
        if watcher is not None:
            await watcher
        if not gazetteer.done():
            await asyncio.wait([gazetteer])  # a thread cannot be cancelled: let it finish
        closers = [services.reads.close()]
        if services.sources is not None:
            closers.append(services.sources.aclose())
        closers.append(spaces.aclose())
        for close in closers:
            with contextlib.suppress(Exception):
                await close
        await notifier.stop()
        services.mail_parser.close()
        if worker_pool is not None:
            await worker_pool.close()
        await pool.close()


def upkeep_jobs(services: Services) -> list[Periodic]:
    """The periodic work every process with services does, on the one periodic runner."""
    jobs = [
        # Start-up (the gazetteer, the model) freed more than it kept: hand it back now, and
        # what serving frees from time to time.
        Periodic("heap-trim", HEAP_TRIM_EVERY, lambda: asyncio.to_thread(trim_heap)),
    ]
    if services.reads.replicas:
        # open_read_pools ran the first round of checks.
        jobs.append(
            Periodic(
                "read-replica-check",
                CHECK_INTERVAL,
                services.reads.check,
                first_after=CHECK_INTERVAL,
            )
        )
    return jobs


@contextlib.asynccontextmanager
async def open_command_pool(
    database_url: str, *, max_size: int = 2, name: str = "shortlist-cli"
) -> AsyncIterator[AsyncPool]:
    """A small pool for a one-off command that only reads and writes rows (``privacy forget``,
    ``sources``, ``embeddings``): none of the model, listener or caches :func:`open_services`
    builds for a process that searches or works."""
    pool = await open_async_pool(database_url, min_size=1, max_size=max_size, name=name)
    try:
        yield pool
    finally:
        await pool.close()


def shared_sources(settings: Settings, pool: AsyncPool) -> Sources:
    """The configured providers, their rate limits and 429 pauses shared through ``pool``'s
    database with every other process (``shortlist.talent.vendors.limits``)."""
    return make_sources(settings, limiter=PgRateGate(pool, rate_limits(settings)))


def check_sources(settings: Settings) -> None:
    """Raise ``SourcesNotConfigured`` now if the providers' settings cannot work."""
    make_sources(settings)


def indexer_throttle(services: Services) -> float:
    """The wait after a busy indexer cycle. A remote embedder waits the poll interval after
    every batch, to spread load on a paid, rate-limited provider. The local model has nothing
    to protect: it runs back to back while a backlog lasts, and searches keep their latency
    because queries are embedded by a copy of the model of their own (``LocalEmbedder``)."""
    if isinstance(services.embedder, LocalEmbedder):
        return 0.0
    return services.settings.indexer_poll_interval


def indexer_workers(
    services: Services, corpora: Sequence[Corpus] = CORPORA
) -> list[QueueWorker[ClaimedRow]]:
    """One indexer worker per corpus, sharing the process's pool, embedder and listener."""
    s = services.settings
    config = WorkerConfig(
        batch_size=s.indexer_batch_size,
        # One batch at a time per process and corpus: the model (or the provider's rate limit)
        # is the bottleneck, and more processes scale out through SKIP LOCKED.
        concurrency=1,
        poll_interval=s.indexer_poll_interval,
        throttle=indexer_throttle(services),
        backoff_base=s.indexer_backoff_base,
        backoff_max=s.indexer_backoff_max,
        lease=s.lease_seconds,
        heartbeat=s.heartbeat_interval,
        grace=s.shutdown_grace,
    )
    return [
        QueueWorker(
            EmbeddingQueue(
                services.work_pool,
                services.embedder,
                corpus,
                probe_every=s.indexer_poll_interval,
                spaces=services.spaces,
                duplicate_distance=s.duplicate_distance,
            ),
            config,
            notifier=services.notifier,
            keeper=services.keeper,
        )
        for corpus in corpora
    ]


def interactive_indexer_workers(services: Services) -> list[QueueWorker[ClaimedRow]]:
    """A second job-listings indexer that claims only the interactive lane (listings posted
    through the API or by e-mail): a company's own post is embedded beside a bulk batch in
    flight (on the model's small-call copy, ``LocalEmbedder``), not after it. Candidates have
    one lane; their indexer is enough."""
    s = services.settings
    config = WorkerConfig(
        batch_size=s.indexer_batch_size,
        concurrency=1,
        poll_interval=s.indexer_poll_interval,
        # Interactive posts come one at a time, from companies that wait for them.
        throttle=0.0,
        backoff_base=s.indexer_backoff_base,
        backoff_max=s.indexer_backoff_max,
        lease=s.lease_seconds,
        heartbeat=s.heartbeat_interval,
        grace=s.shutdown_grace,
    )
    queue = EmbeddingQueue(
        services.work_pool,
        services.embedder,
        LISTINGS,
        probe_every=s.indexer_poll_interval,
        spaces=services.spaces,
        interactive_only=True,
        duplicate_distance=s.duplicate_distance,
    )
    return [QueueWorker(queue, config, notifier=services.notifier, keeper=services.keeper)]


def backfill_workers(services: Services) -> list[QueueWorker[Any]]:
    """The tier queue and the candidate queue, woken by NOTIFY on the backfill channel."""
    s = services.settings
    if services.sources is None:
        raise RuntimeError("backfill workers need services built with_sources=True")
    config = WorkerConfig(
        # One item per task: a slow enrichment or a hung discovery call holds back only
        # itself; the provider gate bounds the actual calls.
        batch_size=1,
        concurrency=s.backfill_concurrency,
        poll_interval=BACKFILL_POLL_INTERVAL,
        # Never longer than the providers' own retry delay (tests scale that down with time).
        backoff_base=min(BACKFILL_BACKOFF_BASE, s.retry_delay),
        backoff_max=BACKFILL_BACKOFF_MAX,
        lease=s.lease_seconds,
        heartbeat=s.heartbeat_interval,
        grace=s.shutdown_grace,
    )
    tiers = QueueWorker(
        TierQueue(services.work_pool, s, services.sources, services.spaces),
        config,
        notifier=services.notifier,
        keeper=services.keeper,
    )
    candidates = QueueWorker(
        CandidateQueue(
            services.work_pool,
            services.spaces,
            services.sources,
            min_score=s.internal_min_score,
            privacy_key=s.privacy_key,
        ),
        config,
        notifier=services.notifier,
        keeper=services.keeper,
    )
    return [tiers, candidates]


def mail_workers(services: Services) -> list[QueueWorker[Any]]:
    """The parse queue of inbound e-mail, woken by NOTIFY when a message is committed."""
    s = services.settings
    config = WorkerConfig(
        batch_size=1,
        # One message per parser process at a time; more messages wait their turn in the table.
        concurrency=s.mail_parse_processes,
        poll_interval=BACKFILL_POLL_INTERVAL * 5,
        backoff_base=BACKFILL_BACKOFF_BASE,
        backoff_max=BACKFILL_BACKOFF_MAX,
        lease=s.lease_seconds,
        heartbeat=s.heartbeat_interval,
        grace=s.shutdown_grace,
    )
    queue = MailQueue(services.work_pool, services.mail_parser, s)
    return [QueueWorker(queue, config, notifier=services.notifier, keeper=services.keeper)]


# Sources fall due on the clock (next_crawl_at), which sends no NOTIFY: how often a crawl worker
# looks for one. A new source or `sources crawl` does notify.
CRAWL_POLL_INTERVAL = 10.0


def crawl_workers(services: Services) -> list[QueueWorker[Any]]:
    """The crawl queue of job sources (shortlist.listings.sources.queue)."""
    # Imported here: the crawler alone needs lxml, protego and html_text (30 modules, ~0.25 s
    # of every other process's start).

    s = services.settings
    config = WorkerConfig(
        # One source per task: a slow careers site holds back only itself.
        batch_size=1,
        concurrency=s.crawl_concurrency,
        poll_interval=min(CRAWL_POLL_INTERVAL, s.crawl_interval),
        # What the worker itself backs off on is the database; a source's own trouble backs
        # off that source (next_crawl_at).
        backoff_base=1.0,
        backoff_max=30.0,
        lease=s.lease_seconds,
        heartbeat=s.heartbeat_interval,
        grace=s.shutdown_grace,
    )
    queue = CrawlQueue(services.work_pool, s)
    return [QueueWorker(queue, config, notifier=services.notifier, keeper=services.keeper)]


# Deliveries fall due on the clock (a retry's next_attempt_at), which sends no NOTIFY: how often
# the sender looks for one. A new delivery does notify.
WEBHOOK_POLL_INTERVAL = 5.0


def webhook_workers(services: Services) -> list[QueueWorker[Any]]:
    """The webhook sender (shortlist.webhooks.sender): deliveries POSTed to their endpoints."""
    s = services.settings
    config = WorkerConfig(
        # One delivery per task: a slow endpoint (up to SHORTLIST_WEBHOOK_TIMEOUT) holds back
        # only itself.
        batch_size=1,
        concurrency=s.webhook_concurrency,
        poll_interval=WEBHOOK_POLL_INTERVAL,
        # What the worker itself backs off on is the database; an endpoint's trouble backs off
        # that delivery (its schedule).
        backoff_base=1.0,
        backoff_max=30.0,
        lease=s.lease_seconds,
        heartbeat=s.heartbeat_interval,
        grace=s.shutdown_grace,
    )
    queue = WebhookQueue(services.work_pool, SendPolicy.from_settings(s))
    return [QueueWorker(queue, config, notifier=services.notifier, keeper=services.keeper)]


WEBHOOK_UPKEEP_INTERVAL = 3600.0
"""Seconds between two rounds of the webhooks' upkeep (retention, secrets)."""


def webhook_upkeep_job(services: Services) -> Periodic:
    """Settled deliveries past ``SHORTLIST_WEBHOOK_RETENTION_DAYS`` purged, and secrets stored
    in clear or under a key no longer first encrypted with the first (hourly; the first a
    minute after start)."""
    s = services.settings

    async def upkeep() -> None:
        await seal_secrets(services.work_pool, s.webhook_secret_keys)
        await webhook_store.purge_settled_deliveries(services.work_pool, s.webhook_retention_days)

    return Periodic("webhooks-upkeep", WEBHOOK_UPKEEP_INTERVAL, upkeep, 60.0)


# Alerts: a listing is matched within about a second of its vector (NOTIFY wakes the matcher);
# polling is the fallback, and what makes a daily digest (due on the clock) go on time.
ALERT_POLL_INTERVAL = 5.0
ALERT_MATCH_BATCH = 64
ALERT_MATCH_CONCURRENCY = 2
"""Match batches in flight: one batch's matrix product in the matcher while PostgreSQL writes
the other's matches, so both use a core (bench/README, alerts: listings/s ×1.4 at a million
saved searches, same run)."""


def alert_workers(services: Services) -> list[QueueWorker[Any]]:
    """The alert matcher (shortlist.alerts.matcher) and, with a relay to send through, the
    digest sender (shortlist.alerts.digests)."""
    s = services.settings
    config = WorkerConfig(
        batch_size=ALERT_MATCH_BATCH,
        concurrency=ALERT_MATCH_CONCURRENCY,
        poll_interval=ALERT_POLL_INTERVAL,
        backoff_base=1.0,
        backoff_max=30.0,
        lease=s.lease_seconds,
        heartbeat=s.heartbeat_interval,
        grace=s.shutdown_grace,
    )
    workers: list[QueueWorker[Any]] = [
        QueueWorker(
            MatchQueue(services.pool, services.spaces, min_score=s.alert_min_score),
            config,
            notifier=services.notifier,
            keeper=services.keeper,
        )
    ]
    relay = Relay.from_url(s.smtp_relay_url) if s.smtp_relay_url else None
    if relay is not None and not (s.public_url or "").startswith("https://"):
        log.warning(
            "alerts: SHORTLIST_PUBLIC_URL is not an https:// address: digests go out without "
            "RFC 8058 one-click unsubscribe (mail providers expect it of bulk senders)"
        )
    if relay is not None:
        # One digest per task: a slow relay session holds back only itself.
        sender = WorkerConfig(
            batch_size=1,
            concurrency=4,
            poll_interval=ALERT_POLL_INTERVAL,
            backoff_base=1.0,
            backoff_max=30.0,
            lease=s.lease_seconds,
            heartbeat=s.heartbeat_interval,
            grace=s.shutdown_grace,
        )
        workers.append(
            QueueWorker(
                DigestQueue(services.pool, s, relay),
                sender,
                notifier=services.notifier,
                keeper=services.keeper,
            )
        )
    return workers


def bounce_sink(services: Services) -> Bounces:
    """What the e-mail intake does with mail to an alert digest's VERP address."""
    return Bounces(services.pool, services.settings)


PEOPLE_ALERT_INTERVAL = 60.0
"""Seconds between two looks for new people fitting recruiters' saved people searches."""


def people_alert_job(services: Services) -> Periodic:
    """Recruiters' saved people searches run over the people embedded since they last looked
    (shortlist.alerts.people)."""
    s = services.settings
    relay = Relay.from_url(s.smtp_relay_url) if s.smtp_relay_url else None
    return Periodic(
        "alerts-people",
        PEOPLE_ALERT_INTERVAL,
        lambda: people_alerts.check(services.pool, services.spaces, s, relay),
        5.0,
    )


def alert_purge_job(services: Services) -> Periodic:
    """Saved searches nobody confirmed in time are removed (hourly)."""
    valid_for = services.settings.alert_confirm_hours * 3600.0
    return Periodic(
        "alerts-unconfirmed", 3600.0, lambda: purge_unconfirmed(services.pool, valid_for), 60.0
    )


def build_workers(services: Services, kinds: Collection[str]) -> list[Runner]:
    """The worker coroutines of this process, by kind (:data:`WORKER_KINDS`)."""
    runners: list[Runner] = []
    periodic: list[Periodic] = []
    if "indexer" in kinds:
        runners.extend(w.run for w in indexer_workers(services))
        runners.extend(w.run for w in interactive_indexer_workers(services))
        overrides = index_build_overrides(services.settings)
        periodic.append(
            coordinator_job(services.work_pool, services.database_url, services.spaces, overrides)
        )
        periodic.append(
            retune_job(services.database_url, overrides, services.settings.index_retune_interval)
        )
    if "backfill" in kinds:
        runners.extend(w.run for w in backfill_workers(services))
    if "mail" in kinds:
        runners.extend(w.run for w in mail_workers(services))
    if "crawler" in kinds:
        runners.extend(w.run for w in crawl_workers(services))
    if "webhooks" in kinds:
        runners.extend(w.run for w in webhook_workers(services))
        periodic.append(webhook_upkeep_job(services))
    if "alerts" in kinds:
        runners.extend(w.run for w in alert_workers(services))
        periodic.append(alert_purge_job(services))
        periodic.append(people_alert_job(services))
    if "reaper" in kinds:
        periodic.append(reaper_job(services.work_pool, services.settings))
    if periodic:
        # One runner, one way of waiting, for every periodic job of the process.
        runners.append(lambda stop: run_periodic(periodic, stop))
    return runners


async def load_samples_if_empty(services: Services) -> None:
    """The bundled sample corpora, loaded on the first start of an empty database."""
    async with services.pool.connection() as conn:
        n = await load_sample_listings(conn)
        if n:
            log.info("loaded %d sample job listings", n)
        m = await load_sample_candidates(conn)
        if m:
            log.info("loaded %d sample candidates", m)
        if services.settings.demo_accounts:
            for made in await load_demo_accounts(conn):
                demo = made.account
                # Demo addresses, no one's personal data; the password is random and shown
                # this once.
                log.warning(
                    "demo account: sign in at /signin as %s with password %s (%s of %s)",
                    demo.email,
                    made.password,
                    demo.role.value,
                    demo.organisation,
                )


# -- the bundled simulator ----------------------------------------------------------------------
# The one place a process starts it. The simulator package (FastAPI, Faker, the population's
# tables: ~0.5 s) is imported only here, when it runs: a process talking to real vendors never
# loads it.


def simulator_config(settings: Settings) -> SimulatorConfig:
    """The bundled simulator as the settings describe it."""
    from shortlist.simulator import SimulatorConfig  # see bundled_simulator

    return SimulatorConfig(
        time_scale=settings.simulator_time_scale,
        api_key=settings.simulator_api_key,
        population_size=settings.simulator_population,
    )


def with_simulator(settings: Settings, sim_url: str) -> Settings:
    """``settings`` with the provider URLs (and keys) pointed at the bundled simulator at
    ``sim_url`` when neither is set. Raises ``SourcesNotConfigured`` when only one is."""
    check_half_configured(settings)
    updates: dict[str, object] = {}
    if settings.talent_api_url is None:
        updates["talent_api_url"] = sim_url
        updates["talent_api_key"] = settings.talent_api_key or settings.simulator_api_key
    if settings.serp_api_url is None:
        updates["serp_api_url"] = sim_url
        updates["serp_api_key"] = settings.serp_api_key or settings.simulator_api_key
    if "greenhouse_api_url" not in settings.model_fields_set:
        # Offline like the talent API: job sources reach the simulator's demo Greenhouse board.
        updates["greenhouse_api_url"] = sim_url
    return settings.model_copy(update=updates)


def simulator_app(settings: Settings) -> FastAPI:
    """The simulator's app as the settings describe it, for a server on a socket of the caller's
    (``serve``, beside the API; ``shortlist simulator``, alone)."""
    from shortlist.simulator import create_simulator_app  # see bundled_simulator

    return create_simulator_app(simulator_config(settings))


@contextlib.asynccontextmanager
async def bundled_simulator(
    settings: Settings, *, needed: bool = True, job_boards_only: bool = False
) -> AsyncIterator[Settings]:
    """``settings`` with every unset provider URL pointed at the bundled simulator, started on a
    free loopback port of this process for the block (``worker``, ``search candidates``,
    ``sources crawl``); ``settings`` themselves when every URL is set or the command does not
    call a vendor (``needed`` false). ``job_boards_only``: the demo job boards alone (a crawl
    needs no talent population), for an unset Greenhouse URL."""
    unset = settings.talent_api_url is None or settings.serp_api_url is None
    if needed and not job_boards_only:
        check_half_configured(settings)  # before anything starts: one line, no simulator
    if job_boards_only:
        unset = unset and "greenhouse_api_url" not in settings.model_fields_set
    if not (needed and unset):
        yield settings
        return
    from shortlist.simulator import SimulatorServer

    if job_boards_only:
        from shortlist.simulator.job_boards import create_job_board_app

        server = SimulatorServer(app=create_job_board_app())
    else:
        server = SimulatorServer(simulator_config(settings))
    url = await asyncio.to_thread(server.start)
    try:
        if job_boards_only:
            yield settings.model_copy(update={"greenhouse_api_url": url})
        else:
            log.info("no provider URL set: the backfill uses the bundled simulator at %s", url)
            yield with_simulator(settings, url)
    finally:
        await asyncio.to_thread(server.stop)
