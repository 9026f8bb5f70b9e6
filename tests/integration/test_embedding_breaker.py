"""The indexer's circuit breaker: an embedder that fails like a configuration error pauses the
corpus's queue (in PostgreSQL, for every process) instead of failing rows; a bad row still fails
alone; the queue resumes on a successful probe or on ``shortlist reindex --resume``."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any
from uuid import UUID

import httpx
import pytest
from typer.testing import CliRunner

from shortlist.api.app import create_app
from shortlist.auth import Role, create_token_async
from shortlist.bootstrap import Services
from shortlist.config import Settings
from shortlist.db.channels import EMBED as EMBED_CHANNEL
from shortlist.db.pool import open_async_pool
from shortlist.db.types import AsyncPool
from shortlist.embedding.base import EmbeddingPermanentError
from shortlist.embedding.spaces import Spaces
from shortlist.indexer import LISTINGS, BatchResult, EmbeddingQueue
from shortlist.queue import Notifier, QueueWorker, WorkerConfig
from shortlist.reindex import resume_paused
from shortlist.status import collect_status
from tests.fake_openai import FakeOpenAI, Reply
from tests.fake_openai import fake_openai as fake_openai  # the fixture
from tests.fakes import FakeEmbedder
from tests.helpers import wait_for

HTML_PAGE = Reply(body=b"<html><body><h1>Welcome to the corporate proxy</h1></body></html>")


async def add_listings(pool: AsyncPool, n: int, *, poisoned: int | None = None) -> list[UUID]:
    """``n`` listings in creation order; the one at index ``poisoned`` mentions "poison"."""
    async with pool.connection() as conn:
        cur = await conn.execute(
            """
            INSERT INTO job_listings (company_name, job_title, city_location, description,
                                      detail_page_slug, created_at)
            SELECT 'Company ' || i, 'Engineer ' || i, 'Berlin',
                   CASE WHEN i - 1 = %(poisoned)s THEN 'poison' ELSE 'Python work' END || ' #' || i,
                   'slug-' || i || '-' || gen_random_uuid(),
                   now() + i * interval '1 millisecond'
              FROM generate_series(1, %(n)s) AS i
            RETURNING id, created_at
            """,
            {"n": n, "poisoned": poisoned},
        )
        return [r["id"] for r in sorted(await cur.fetchall(), key=lambda r: r["created_at"])]


async def statuses(pool: AsyncPool) -> dict[str, int]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT embedding_status::text AS s, count(*) AS n FROM job_listings"
            " WHERE locked_by IS NULL GROUP BY 1"
        )
        return {r["s"]: int(r["n"]) for r in await cur.fetchall()}


async def paused_reason(pool: AsyncPool) -> str | None:
    async with pool.connection() as conn:
        report = await collect_status(conn)
    reason: str | None = report["corpora"]["job_listings"]["paused_reason"]
    assert report["corpora"]["candidates"]["paused_reason"] is None
    return reason


async def drain(queue: EmbeddingQueue) -> BatchResult:
    total = BatchResult()
    while rows := await queue.claim("test-worker", 50, 30.0):
        total.add(await queue.index_batch("test-worker", rows))
    return total


class UnnamedRejection(FakeEmbedder):
    """Rejects poisoned inputs without saying which one, as many providers do."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        try:
            return await super().embed(texts)
        except EmbeddingPermanentError as exc:
            raise EmbeddingPermanentError(f"bad request: {exc}") from None


@pytest.fixture
async def other_process_pool(db_url: str) -> AsyncIterator[AsyncPool]:
    """A second pool: another process's view of the same database."""
    pool = await open_async_pool(db_url, min_size=1, max_size=2)
    try:
        yield pool
    finally:
        await pool.close()


# --- configuration errors pause, failing nothing --------------------------------------------


@pytest.mark.parametrize(
    ("reply", "reason"),
    [(HTML_PAGE, "invalid JSON"), (Reply.wrong_dim(16), "16 dimensions")],
    ids=["html-200", "wrong-dimension"],
)
async def test_misconfigured_embedder_pauses_the_queue_and_fails_no_row(
    pool: AsyncPool,
    other_process_pool: AsyncPool,
    fake_openai: FakeOpenAI,
    reply: Reply,
    reason: str,
) -> None:
    await add_listings(pool, 40)
    fake_openai.set_default(reply)
    embedder = fake_openai.embedder()
    queue = EmbeddingQueue(pool, embedder, LISTINGS, probe_every=3600)

    result = await drain(queue)
    assert (result.embedded, result.failed, result.held_back) == (0, 0, 40)
    # The batch call and one probe, no bisect (which would take 2n - 1 calls).
    assert fake_openai.requests == 2
    assert await statuses(pool) == {"pending": 40}
    paused = await paused_reason(pool)
    assert paused is not None and reason in paused

    # Every process's claim sees the pause; no probe is due yet, so no call is made.
    other = EmbeddingQueue(other_process_pool, embedder, LISTINGS, probe_every=3600)
    assert await other.claim("other-worker", 50, 30.0) == []
    assert await queue.claim("test-worker", 50, 30.0) == []
    assert fake_openai.requests == 2
    await embedder.aclose()


async def test_vectors_of_the_wrong_dimension_pause_without_a_provider_error(
    pool: AsyncPool,
) -> None:
    """A local model of the wrong size answers happily; the column's dimension decides."""
    await add_listings(pool, 5)
    queue = EmbeddingQueue(pool, FakeEmbedder(dim=16), LISTINGS, probe_every=3600)
    result = await drain(queue)
    assert (result.embedded, result.failed, result.held_back) == (0, 0, 5)
    paused = await paused_reason(pool)
    assert paused is not None and "16-dimensional" in paused and "holds 384" in paused


async def test_the_pause_is_logged_once_while_workers_keep_running(
    pool: AsyncPool,
    other_process_pool: AsyncPool,
    fake_openai: FakeOpenAI,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await add_listings(pool, 10)
    fake_openai.set_default(HTML_PAGE)
    embedder = fake_openai.embedder()
    config = WorkerConfig(batch_size=5, poll_interval=0.05, backoff_base=0.05, backoff_max=0.1)
    queues = [
        EmbeddingQueue(p, embedder, LISTINGS, probe_every=0.2) for p in (pool, other_process_pool)
    ]
    stop = asyncio.Event()
    caplog.set_level(logging.INFO, logger="shortlist")
    tasks = [asyncio.create_task(QueueWorker(q, config).run(stop)) for q in queues]
    try:
        await wait_for(lambda: paused_reason(pool), timeout=10, message="the pause")
        # Probes keep failing (several intervals pass): still paused, nothing failed.
        probes = fake_openai.requests
        await wait_for(
            _async(lambda: fake_openai.requests >= probes + 3), timeout=10, message="probes"
        )
    finally:
        stop.set()
        await asyncio.gather(*tasks)
    assert await statuses(pool) == {"pending": 10}
    assert await paused_reason(pool) is not None
    pauses = [r for r in caplog.records if "embedding paused" in r.getMessage()]
    assert len(pauses) == 1, [r.getMessage() for r in pauses]
    await embedder.aclose()


def _async(predicate: Any) -> Any:
    async def check() -> bool:
        return bool(predicate())

    return check


# --- a bad row still fails alone ------------------------------------------------------------------


async def test_one_poisoned_row_among_good_ones_fails_alone(pool: AsyncPool) -> None:
    ids = await add_listings(pool, 12, poisoned=7)
    embedder = UnnamedRejection(fail_permanent_on=lambda text: "poison" in text)
    result = await drain(EmbeddingQueue(pool, embedder, LISTINGS, probe_every=3600))
    assert (result.embedded, result.failed, result.held_back) == (11, 1, 0)
    assert await paused_reason(pool) is None
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT id FROM job_listings WHERE embedding_status = 'failed'", ()
        )
        assert [r["id"] for r in await cur.fetchall()] == [ids[7]]


async def test_a_row_the_provider_names_fails_alone_without_a_probe(
    pool: AsyncPool, fake_openai: FakeOpenAI
) -> None:
    await add_listings(pool, 6, poisoned=2)
    fake_openai.set_default(Reply.ok(reject=lambda text: "poison" in text))
    embedder = fake_openai.embedder()
    result = await drain(EmbeddingQueue(pool, embedder, LISTINGS, probe_every=3600))
    assert (result.embedded, result.failed) == (5, 1)
    assert await paused_reason(pool) is None
    # Batch, the rows before the named one, the rows after: no probe call.
    assert fake_openai.requests == 3
    await embedder.aclose()


# --- resuming ------------------------------------------------------------------------------------


async def test_a_successful_probe_resumes_the_queue(
    pool: AsyncPool, fake_openai: FakeOpenAI
) -> None:
    await add_listings(pool, 8)
    fake_openai.set_default(HTML_PAGE)
    embedder = fake_openai.embedder()
    queue = EmbeddingQueue(pool, embedder, LISTINGS, probe_every=0)
    assert (await drain(queue)).held_back == 8
    assert await queue.claim("test-worker", 50, 30.0) == []  # probed: still an HTML page
    assert await paused_reason(pool) is not None

    fake_openai.set_default(Reply.ok())  # the proxy is fixed
    assert await queue.claim("test-worker", 50, 30.0) == []  # this idle claim's probe resumes
    assert await paused_reason(pool) is None
    assert (await drain(queue)).embedded == 8
    assert await statuses(pool) == {"embedded": 8}
    await embedder.aclose()


@pytest.mark.usefixtures("cli_env")
async def test_reindex_resume_command_resumes_and_status_json_shows_the_reason(
    pool: AsyncPool,
) -> None:
    from shortlist.cli import build_app

    await add_listings(pool, 3)
    queue = EmbeddingQueue(pool, FakeEmbedder(dim=16), LISTINGS, probe_every=3600)
    assert (await drain(queue)).held_back == 3
    runner = CliRunner()

    def invoke(*args: str) -> str:
        result = runner.invoke(build_app(), list(args))
        assert result.exit_code == 0, result.output
        return result.output

    report = json.loads(await asyncio.to_thread(invoke, "status", "--json"))
    assert "16-dimensional" in report["corpora"]["job_listings"]["paused_reason"]
    assert report["corpora"]["candidates"]["paused_reason"] is None

    out = await asyncio.to_thread(invoke, "reindex", "--resume")
    assert "resumed job_listings" in out
    assert await paused_reason(pool) is None
    out = await asyncio.to_thread(invoke, "reindex", "--resume")
    assert "no embedding queue was paused" in out

    fixed = EmbeddingQueue(pool, FakeEmbedder(), LISTINGS, probe_every=3600)
    assert (await drain(fixed)).embedded == 3


async def test_resume_wakes_idle_indexers(pool: AsyncPool, db_url: str) -> None:
    await add_listings(pool, 1)
    assert (await drain(EmbeddingQueue(pool, FakeEmbedder(dim=16), LISTINGS))).held_back == 1
    notifier = Notifier(db_url)
    notifier.start()
    heard = notifier.payloads(EMBED_CHANNEL)

    async def listening() -> bool:
        async with pool.connection() as conn:
            await conn.execute("SELECT pg_notify(%s, 'probe')", (EMBED_CHANNEL,))
        return not heard.empty()

    try:
        await wait_for(listening, timeout=10, interval=0.2, message="LISTEN")
        async with pool.connection() as conn:
            assert await resume_paused(conn, table="job_listings") == ["job_listings"]
        async with asyncio.timeout(10):
            while await heard.get() != "job_listings":
                pass
    finally:
        await notifier.stop()


# --- /status and /metrics -------------------------------------------------------------------------


async def test_status_page_and_metrics_show_the_pause(pool: AsyncPool, db_url: str) -> None:
    await add_listings(pool, 4)
    assert (await drain(EmbeddingQueue(pool, FakeEmbedder(dim=16), LISTINGS))).held_back == 4
    settings = Settings(database_url=db_url, load_sample_data=False, search_rate_limit=0)
    services = Services(
        settings, db_url, pool, Notifier(db_url), Spaces.of_embedder(pool, FakeEmbedder())
    )
    transport = httpx.ASGITransport(app=create_app(services), client=("127.0.0.1", 50000))
    async with pool.connection() as conn:
        _admin, admin_token = await create_token_async(conn, "ops", Role.admin)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        page = await client.get("/status")
        as_admin = await client.get("/status", headers={"Authorization": f"Bearer {admin_token}"})
        metrics = (await client.get("/metrics")).text
    assert page.status_code == 200
    # Public: that it is paused; the embedder's own words are for admins.
    assert 'data-paused="job_listings"' in page.text and "16-dimensional" not in page.text
    assert 'data-paused="job_listings"' in as_admin.text and "16-dimensional" in as_admin.text
    assert 'data-paused="candidates"' not in page.text
    assert 'shortlist_indexer_paused{corpus="job_listings"} 1.0' in metrics
    assert 'shortlist_indexer_paused{corpus="candidates"} 0.0' in metrics
    assert 'shortlist_indexer_backlog{corpus="job_listings"} 4.0' in metrics
