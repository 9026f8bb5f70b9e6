"""crawl: job sources into ``pending``, and a company's own post during a bulk backlog.

``crawl``     postings/s of one crawl of a loopback Greenhouse board (``CRAWL_POSTINGS`` jobs in
              the documented ``/v1/boards/{token}/jobs?content=true`` shape, descriptions as
              escaped HTML): the product's crawl (``service.crawl_now``: polite fetch, parse off
              the loop, the diff, COPY, the source's outcome) vs a bare ``COPY`` of the same
              listings (``copy_listings``) — the floor any producer pays.
``priority``  seconds an API-posted listing waits to be embedded while ``--rows`` (default
              100,000) crawled rows are pending, the product's indexer running (the local model;
              a hash embedder on ``--smoke``): with the claim's lanes (the bulk indexer and the
              interactive lane's own worker, as ``bootstrap`` builds them) vs the same figure
              without them (one indexer, the claim ordered by ``created_at`` alone, as before).
              Without priority the post waits behind every pending row; that wait
              is measured when it ends within ``NO_PRIORITY_WINDOW`` seconds, otherwise
              estimated as the rows ahead of it divided by the indexer's measured rows/s.
"""

from __future__ import annotations

import asyncio
import html
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import psycopg
from psycopg.rows import dict_row

from bench.common import Context, Record, Stat

NAME = "crawl"
CRAWL_POSTINGS = 5000
PRIORITY_TARGET_S = 10.0
NO_PRIORITY_WINDOW = 30.0
BATCH = 128


def _board(n: int) -> bytes:
    from bench.corpus import listing_texts

    jobs = []
    for i, row in enumerate(listing_texts(n, seed=11)):
        jobs.append(
            {
                "id": 500000 + i,
                "internal_job_id": i,
                "title": row["job_title"],
                "updated_at": "2026-11-01T10:00:00-05:00",
                "requisition_id": str(i),
                "location": {"name": row["city_location"]},
                "absolute_url": f"https://boards.greenhouse.io/bench/jobs/{500000 + i}",
                "language": "en",
                "metadata": None,
                "content": html.escape(f"<p>{html.escape(row['description'])}</p>"),
            }
        )
    return json.dumps({"jobs": jobs, "meta": {"total": n}}).encode()


class _Board:
    """Greenhouse's two board endpoints on loopback, one precomputed body."""

    def __init__(self, jobs_body: bytes) -> None:
        board = json.dumps({"name": "Bench Co", "content": ""}).encode()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                pass

            def do_GET(self) -> None:
                body = jobs_body if "/jobs" in self.path else board
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


async def _reset(url: str) -> None:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("TRUNCATE job_listings, job_sources, crawl_pages, crawl_hosts CASCADE")


async def _crawl_once(url: str, board_url: str) -> tuple[float, int]:
    from shortlist.config import Settings
    from shortlist.db.pool import open_async_pool
    from shortlist.listings.sources import service

    settings = Settings(
        database_url=url, greenhouse_api_url=board_url, crawl_host_delay=0, crawl_timeout=120
    )
    pool = await open_async_pool(url, min_size=1, max_size=4, name="bench-crawl")
    try:
        source = await service.add_source(pool, settings, "greenhouse:bench")
        started = time.perf_counter()
        [result] = await service.crawl_now(pool, settings, [source.id])
        elapsed = time.perf_counter() - started
        if result.outcome is None:
            raise RuntimeError(f"crawl failed: {result.error}")
        return elapsed, result.outcome.new
    finally:
        await pool.close()


async def _copy_once(url: str, n: int) -> float:
    from bench.corpus import listing_texts
    from shortlist.listings.models import ListingCreate
    from shortlist.listings.repository import copy_listings

    items = [ListingCreate.model_validate(r) for r in listing_texts(n, seed=11)]
    async with await psycopg.AsyncConnection.connect(url, row_factory=dict_row) as conn:
        started = time.perf_counter()
        await copy_listings(conn, items, source="file")
        await conn.commit()
        return time.perf_counter() - started


def _crawl_records(ctx: Context, url: str) -> list[Record]:
    n = ctx.size(CRAWL_POSTINGS, 100)
    board = _Board(_board(n))
    crawl_rates: list[float] = []
    copy_rates: list[float] = []
    try:
        for rep in range(ctx.repetitions()):
            asyncio.run(_reset(url))
            elapsed, new = asyncio.run(_crawl_once(url, board.url))
            if new != n:
                raise RuntimeError(f"crawl inserted {new} of {n} postings")
            crawl_rates.append(n / elapsed)
            asyncio.run(_reset(url))
            copy_rates.append(n / asyncio.run(_copy_once(url, n)))
            ctx.log(
                f"crawl: rep {rep + 1}: crawl {crawl_rates[-1]:.0f} postings/s,"
                f" bare COPY {copy_rates[-1]:.0f} rows/s"
            )
    finally:
        board.close()
    return [
        Record(
            NAME,
            "postings/s through the crawler into pending vs a bare COPY",
            Stat.of(crawl_rates),
            Stat.of(copy_rates),
            target=0.2,
            unit="rows/s",
            baseline_name="COPY",
            note=f"one Greenhouse board of {n} postings on loopback (fetch, parse, diff, COPY)",
        )
    ]


async def _backlog(url: str, rows: int) -> None:
    """``rows`` crawled postings pending, as a crawl writes them (bulk lane, in crawl order)."""
    from bench.corpus import listing_texts
    from shortlist.listings.slug import make_detail_page_slug

    texts = listing_texts(min(rows, 20_000), seed=3)
    async with await psycopg.AsyncConnection.connect(url) as conn:
        await conn.execute("TRUNCATE job_listings, job_sources CASCADE")
        async with conn.cursor().copy(
            "COPY job_listings (id, company_name, job_title, city_location, description,"
            " detail_page_slug, source, external_id, claim_seq) FROM STDIN"
        ) as copy:
            for i in range(rows):
                t = texts[i % len(texts)]
                listing_id = uuid.uuid4()
                slug = make_detail_page_slug(
                    t["company_name"], t["job_title"], t["city_location"], listing_id
                )
                await copy.write_row(
                    (
                        listing_id,
                        t["company_name"],
                        t["job_title"],
                        t["city_location"],
                        t["description"],
                        slug,
                        "greenhouse:backlog",
                        str(i),
                        i + 1,
                    )
                )
        await conn.commit()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("VACUUM ANALYZE job_listings")


def _queue_class(priority: bool) -> Any:
    from psycopg import sql as pgsql

    from shortlist.indexer import EmbeddingQueue
    from shortlist.indexer.queue import QUERIES

    if priority:
        return EmbeddingQueue
    unordered = dict(QUERIES)
    unordered["claim"] = (
        QUERIES["claim"]
        .replace("ORDER BY claim_lane, claim_seq, created_at", "ORDER BY created_at")
        .replace("AND claimable.claim_lane = (SELECT min(claim_lane) FROM claimable)", "")
    )
    assert unordered["claim"] != QUERIES["claim"]

    class CreatedAtOrder(EmbeddingQueue):
        """The claim as it was before the lanes: oldest first, whoever wrote the row."""

        def _sql(
            self, name: str, active: Any, building: Any = None, *, wanted: str | None = None
        ) -> pgsql.Composed:
            import shortlist.indexer.queue as q

            saved = q.QUERIES
            q.QUERIES = unordered  # type: ignore[misc]
            try:
                self._composed.clear()
                return super()._sql(name, active, building, wanted=wanted)
            finally:
                q.QUERIES = saved  # type: ignore[misc]

    return CreatedAtOrder


async def _api_wait(
    url: str, embedder: Any, priority: bool, window: float, settle: float
) -> tuple[float, str]:
    """Seconds from an API post to its embedding while the backlog is pending, and how the
    figure was had: ``measured``; ``estimated`` (past ``window``: the rows ahead of it over the
    indexer's rows/s); ``lower bound`` (not one batch finished in the window: ``window``)."""
    from shortlist.config import Settings
    from shortlist.db.pool import open_async_pool
    from shortlist.embedding.spaces import Spaces
    from shortlist.indexer import LISTINGS, EmbeddingQueue
    from shortlist.listings import service
    from shortlist.listings.models import ListingCreate
    from shortlist.queue import LeaseKeeper, QueueWorker, WorkerConfig

    settings = Settings(database_url=url, indexer_batch_size=BATCH)
    pool = await open_async_pool(url, min_size=1, max_size=4, name="bench-priority")
    stop = asyncio.Event()
    tasks: list[asyncio.Task[None]] = []
    try:
        keeper = LeaseKeeper(pool, every=5.0)
        config = WorkerConfig(
            batch_size=settings.indexer_batch_size, poll_interval=0.2, throttle=0.0, grace=0.0
        )
        spaces = Spaces.of_embedder(pool, embedder)
        queue = _queue_class(priority)(pool, embedder, LISTINGS, spaces=spaces)
        queues = [queue]
        if priority:
            # As bootstrap builds them: the bulk indexer, and the interactive lane's own.
            queues.append(
                EmbeddingQueue(pool, embedder, LISTINGS, spaces=spaces, interactive_only=True)
            )
        tasks = [
            asyncio.create_task(QueueWorker(q, config, keeper=keeper).run(stop)) for q in queues
        ]
        worker_started = time.perf_counter()
        await asyncio.sleep(settle)  # the bulk worker is busy with the backlog, mid-batch
        async with pool.connection() as conn:
            posted = await service.create_listing(
                conn,
                ListingCreate(
                    company_name="Own Company",
                    job_title="Staff Platform Engineer",
                    city_location="Amsterdam",
                    description="Posted through the API while a crawl's backlog waits.",
                ),
                source="api",
            )
        started = time.perf_counter()
        deadline = started + window
        while time.perf_counter() < deadline:
            async with pool.connection() as conn:
                cur = await conn.execute(
                    "SELECT embedded_at IS NOT NULL AS done FROM job_listings WHERE id = %s",
                    (posted.id,),
                )
                row = await cur.fetchone()
            if row and row["done"]:
                return time.perf_counter() - started, "measured"
            await asyncio.sleep(0.05)
        rate = queue.totals.embedded / (time.perf_counter() - worker_started)
        async with pool.connection() as conn:
            cur = await conn.execute(
                "SELECT count(*) AS n FROM job_listings WHERE embedding_status = 'pending'"
                " AND created_at < (SELECT created_at FROM job_listings WHERE id = %s)",
                (posted.id,),
            )
            ahead = await cur.fetchone()
        if rate == 0:
            return window, "lower bound"
        return window + (int(ahead["n"]) if ahead else 0) / rate, "estimated"
    finally:
        stop.set()
        if tasks:
            await asyncio.wait(tasks, timeout=180)
        await pool.close()


def _priority_records(ctx: Context, url: str) -> list[Record]:
    rows = ctx.rows or ctx.size(100_000, 600)
    settle = ctx.size(3.0, 0.5)
    if ctx.smoke:
        from bench.talent_support import HashEmbedder

        embedder: Any = HashEmbedder()
    else:
        from shortlist.embedding.local import LocalEmbedder

        embedder = LocalEmbedder()
        embedder.warm_up()
    ctx.log(f"crawl: {rows} crawled rows pending; an API post with and without lanes")
    asyncio.run(_backlog(url, rows))
    with_lanes, _ = asyncio.run(_api_wait(url, embedder, True, 120.0, settle))
    ctx.log(f"crawl: with lanes the API post was embedded after {with_lanes:.2f}s")
    asyncio.run(_backlog(url, rows))
    without, how = asyncio.run(
        _api_wait(url, embedder, False, ctx.size(NO_PRIORITY_WINDOW, 5.0), settle)
    )
    ctx.log(f"crawl: without lanes {without:.1f}s ({how})")
    return [
        Record(
            NAME,
            "seconds an API post waits to be embedded during the bulk backlog (target 10 s)",
            Stat.one(with_lanes),
            Stat.one(without),
            target=PRIORITY_TARGET_S / max(without, 1e-9),
            better="lower",
            unit="s",
            baseline_name="no lanes",
            note=f"{rows} crawled rows pending; without lanes {how}",
        )
    ]


def run(ctx: Context) -> list[Record]:
    url = ctx.pg.create_database("bench_crawl")
    return _crawl_records(ctx, url) + _priority_records(ctx, url)
