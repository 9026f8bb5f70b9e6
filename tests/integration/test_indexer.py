"""The embedding indexer (seed 000) on a real PostgreSQL: exactly-once under concurrency, the
re-embed trigger, atomic commit, the error matrix, both corpora; and status / reindex."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from typing import Any
from uuid import UUID

import pytest
from pgvector import Vector
from prometheus_client import REGISTRY
from typer.testing import CliRunner

from shortlist.bootstrap import Services, indexer_workers
from shortlist.config import Settings
from shortlist.db.channels import EMBED as EMBED_CHANNEL
from shortlist.db.pool import open_async_pool
from shortlist.db.types import AsyncConn, AsyncPool
from shortlist.embedding.base import EmbeddingPermanentError
from shortlist.embedding.spaces import Spaces
from shortlist.errors import BadInput, TransientError
from shortlist.indexer import (
    CANDIDATES,
    LISTINGS,
    BatchResult,
    Corpus,
    EmbeddingQueue,
)
from shortlist.queue import Notifier, QueueWorker, WorkerConfig, run_batch
from shortlist.reindex import reindex
from shortlist.status import collect_status
from tests.fake_openai import FakeOpenAI, Reply
from tests.fake_openai import fake_openai as fake_openai  # the fixture
from tests.fakes import FakeEmbedder, hash_embed
from tests.helpers import wait_for

FAST = WorkerConfig(batch_size=50, poll_interval=0.05, backoff_base=0.05, backoff_max=0.2)


# --- helpers -----------------------------------------------------------------------------------


async def add_listings(
    pool: AsyncPool, n: int, *, description: str = "Build things with Python and PostgreSQL."
) -> list[UUID]:
    """``n`` listings with distinct texts; their ids in creation order."""
    async with pool.connection() as conn:
        cur = await conn.execute(
            """
            INSERT INTO job_listings (company_name, job_title, city_location, description,
                                      salary_min_ks, salary_max_ks, detail_page_slug, created_at)
            SELECT 'Company ' || i, 'Engineer ' || i, 'Berlin', %(description)s || ' #' || i,
                   100, 150, 'slug-' || i || '-' || gen_random_uuid(),
                   now() + i * interval '1 millisecond'
              FROM generate_series(1, %(n)s) AS i
            RETURNING id, created_at
            """,
            {"n": n, "description": description},
        )
        return [r["id"] for r in sorted(await cur.fetchall(), key=lambda r: r["created_at"])]


async def add_candidate(pool: AsyncPool, **fields: Any) -> UUID:
    values = {
        "full_name": "Ada Example",
        "headline": "Backend engineer",
        "role_title": "Software Engineer",
        "location": "Berlin",
        "skills": ["python", "postgresql"],
        "summary": "Ten years of building APIs.",
        "email": "ada@example.com",
    } | fields
    async with pool.connection() as conn:
        cur = await conn.execute(
            "INSERT INTO candidates (full_name, headline, role_title, location, skills, summary,"
            " email) VALUES (%(full_name)s, %(headline)s, %(role_title)s, %(location)s,"
            " %(skills)s, %(summary)s, %(email)s) RETURNING id",
            values,
        )
        row = await cur.fetchone()
        assert row is not None
        return UUID(str(row["id"]))


async def fetch(pool: AsyncPool, table: str, row_id: UUID) -> dict[str, Any]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            f"SELECT *, embedding_status::text AS status FROM {table} WHERE id = %s", (row_id,)
        )
        row = await cur.fetchone()
        assert row is not None
        return row


async def scalar(pool: AsyncPool, query: str, *params: Any) -> Any:
    async with pool.connection() as conn:
        cur = await conn.execute(query, params)
        row = await cur.fetchone()
        assert row is not None
        return next(iter(row.values()))


async def execute(pool: AsyncPool, query: str, *params: Any) -> None:
    async with pool.connection() as conn:
        await conn.execute(query, params)


async def drain(queue: EmbeddingQueue, worker_id: str = "test-worker") -> BatchResult:
    """Run claim → index_batch cycles by hand until nothing is claimable."""
    total = BatchResult()
    while rows := await queue.claim(worker_id, 50, 30.0):
        total.add(await queue.index_batch(worker_id, rows))
    return total


async def texts_by_id(pool: AsyncPool, target: Corpus) -> dict[str, UUID]:
    """The text the indexer embeds for each row, computed by the indexer's own expression."""
    async with pool.connection() as conn:
        cur = await conn.execute(f"SELECT id, {target.text_sql} AS text FROM {target.table}")
        return {r["text"]: r["id"] for r in await cur.fetchall()}


def backoffs(queue: EmbeddingQueue) -> float:
    return REGISTRY.get_sample_value("shortlist_queue_backoffs_total", {"queue": queue.name}) or 0


# --- exactly once under concurrency -------------------------------------------------------------


@pytest.fixture
async def pools(db_url: str) -> AsyncIterator[list[AsyncPool]]:
    """Four pools: four workers that share nothing but the database, as four processes would."""
    opened = [await open_async_pool(db_url, min_size=1, max_size=2) for _ in range(4)]
    try:
        yield opened
    finally:
        for p in opened:
            await p.close()


async def test_concurrent_workers_embed_every_row_exactly_once(
    pool: AsyncPool, pools: list[AsyncPool]
) -> None:
    n = 2000
    await add_listings(pool, n)
    embedders = [FakeEmbedder(delay=0.005) for _ in pools]
    queues = [EmbeddingQueue(p, e, LISTINGS) for p, e in zip(pools, embedders, strict=True)]
    workers = [QueueWorker(q, FAST) for q in queues]
    stop = asyncio.Event()
    tasks = [asyncio.create_task(w.run(stop)) for w in workers]

    async def all_embedded() -> bool:
        return bool(
            await scalar(
                pool,
                "SELECT count(*) = %s FROM job_listings WHERE embedding_status ="
                " 'embedded' AND locked_by IS NULL",
                n,
            )
        )

    try:
        await wait_for(all_embedded, timeout=60)
    finally:
        stop.set()
        await asyncio.gather(*tasks)

    by_text = await texts_by_id(pool, LISTINGS)
    inputs = Counter(t for e in embedders for batch in e.batches for t in batch)
    assert len(by_text) == n
    assert {by_text[t] for t in inputs} == set(by_text.values())
    assert set(inputs.values()) == {1}, "a listing was sent to the model twice"
    assert sum(q.totals.embedded for q in queues) == n
    assert sum(1 for q in queues if q.totals.embedded) >= 2, "the workers did not share the work"
    assert (
        await scalar(
            pool,
            "SELECT count(*) FROM job_listings WHERE embedding IS NOT NULL"
            " AND embedded_hash = content_hash AND embedded_at >= updated_at",
        )
        == n
    )


# --- the re-embed trigger ----------------------------------------------------------------------


async def test_reembed_only_when_the_embedded_text_changes(pool: AsyncPool) -> None:
    (listing,) = await add_listings(pool, 1)
    fake = FakeEmbedder()
    queue = EmbeddingQueue(pool, fake, LISTINGS)
    assert (await drain(queue)).embedded == 1
    first = await fetch(pool, "job_listings", listing)
    assert first["status"] == "embedded"
    assert fake.calls == 1

    # The description is part of the embedded text: the model runs again, the vector moves.
    await execute(
        pool,
        "UPDATE job_listings SET description = 'Nurse on a night shift' WHERE id = %s",
        listing,
    )
    assert (await drain(queue)).embedded == 1
    second = await fetch(pool, "job_listings", listing)
    assert fake.calls == 2
    assert "Nurse on a night shift" in fake.batches[-1][0]
    assert list(second["embedding"].to_list()) != list(first["embedding"].to_list())
    assert second["embedded_at"] >= second["updated_at"]

    # The salary is not: the row is claimed (updated_at moved) but the model is not called.
    await execute(pool, "UPDATE job_listings SET salary_max_ks = 180 WHERE id = %s", listing)
    edited = await fetch(pool, "job_listings", listing)
    assert edited["updated_at"] > edited["embedded_at"]
    result = await drain(queue)
    assert (result.embedded, result.unchanged) == (0, 1)
    third = await fetch(pool, "job_listings", listing)
    assert fake.calls == 2
    assert third["status"] == "embedded"
    assert third["embedded_at"] >= third["updated_at"]
    assert third["embedding"].to_list() == second["embedding"].to_list()
    assert third["locked_by"] is None
    assert await queue.claim("test-worker", 10, 30.0) == []


# --- atomicity -----------------------------------------------------------------------------------


class Boom(Exception):
    pass


class FailingAfterVectors(EmbeddingQueue):
    async def _after_vectors_written(self, conn: AsyncConn, ids: list[UUID]) -> None:
        # Vectors and status flips are written (visible in this transaction) when it fails.
        cur = await conn.execute(
            "SELECT count(*) AS n FROM job_listings WHERE id = ANY(%s) AND embedding IS NOT NULL"
            " AND embedded_hash = content_hash AND embedding_status = 'embedded'",
            (ids,),
        )
        row = await cur.fetchone()
        assert row is not None and row["n"] == len(ids) > 0
        raise Boom("crash after the vector write, before the commit")


async def test_vector_and_status_commit_together_or_not_at_all(pool: AsyncPool) -> None:
    # Two cases in one batch: a new listing, and an embedded one whose text was edited.
    (embedded,) = await add_listings(pool, 1)
    await drain(EmbeddingQueue(pool, FakeEmbedder(), LISTINGS))
    before = await fetch(pool, "job_listings", embedded)
    (fresh,) = await add_listings(pool, 1)
    await execute(pool, "UPDATE job_listings SET description = 'Rewritten' WHERE id = %s", embedded)

    failing = FailingAfterVectors(pool, FakeEmbedder(), LISTINGS)
    rows = await failing.claim("w1", 10, 30.0)
    assert {r.id for r in rows} == {fresh, embedded}
    with pytest.raises(Boom):
        await run_batch(failing, "w1", rows)  # gives the rows back, as the QueueWorker does

    new = await fetch(pool, "job_listings", fresh)
    assert (new["status"], new["embedding"], new["embedded_hash"]) == ("pending", None, None)
    old = await fetch(pool, "job_listings", embedded)
    assert old["status"] == "embedded"  # still due for a re-embed, with its previous vector
    assert old["embedded_hash"] == before["embedded_hash"] != old["content_hash"]
    assert old["embedding"].to_list() == before["embedding"].to_list()
    assert old["embedded_at"] == before["embedded_at"] < old["updated_at"]

    assert (await drain(EmbeddingQueue(pool, FakeEmbedder(), LISTINGS))).embedded == 2


# --- permanent failures ---------------------------------------------------------------------------


def poisoned(text: str) -> bool:
    return "poison" in text


async def test_permanent_failure_fails_only_that_row(pool: AsyncPool) -> None:
    ids = await add_listings(pool, 10)
    bad = ids[4]
    await execute(pool, "UPDATE job_listings SET description = 'poison pill' WHERE id = %s", bad)
    queue = EmbeddingQueue(pool, FakeEmbedder(fail_permanent_on=poisoned), LISTINGS)
    result = await drain(queue)
    assert (result.embedded, result.failed) == (9, 1)

    row = await fetch(pool, "job_listings", bad)
    assert row["status"] == "failed"
    assert "rejects input" in row["embedding_error"]
    assert row["embedding_attempts"] == 1
    assert row["embedding_failed_at"] is not None
    assert row["locked_by"] is None and row["embedding"] is None
    assert (
        await scalar(
            pool,
            "SELECT count(*) FROM job_listings WHERE embedding_status = 'embedded' AND id <> %s",
            bad,
        )
        == 9
    )


async def test_failed_row_never_loops_until_edited_or_reindexed(pool: AsyncPool) -> None:
    edited, retried = await add_listings(pool, 2, description="poison")
    fake = FakeEmbedder(fail_permanent_on=poisoned)
    queue = EmbeddingQueue(pool, fake, LISTINGS)
    assert (await drain(queue)).failed == 2
    calls = fake.calls

    # Cycle after cycle: nothing is claimable, the model is not called again.
    for _ in range(3):
        assert await queue.claim("test-worker", 50, 30.0) == []
    assert fake.calls == calls

    # "a later update of the listing … retries it"
    await execute(pool, "UPDATE job_listings SET description = 'Fixed text' WHERE id = %s", edited)
    row = await fetch(pool, "job_listings", edited)
    assert (row["status"], row["embedding_error"], row["embedding_attempts"]) == (
        "pending",
        None,
        0,
    )
    assert (await drain(queue)).embedded == 1
    assert (await fetch(pool, "job_listings", edited))["status"] == "embedded"

    # "… or reindex --failed retries it"
    fake.fail_permanent_on = None
    async with pool.connection() as conn:
        assert await reindex(conn, failed=True) == 1
    row = await fetch(pool, "job_listings", retried)
    assert (row["status"], row["embedding_error"], row["embedding_attempts"]) == (
        "pending",
        None,
        0,
    )
    assert (await drain(queue)).embedded == 1
    assert (await fetch(pool, "job_listings", retried))["status"] == "embedded"


# --- the error matrix through the OpenAI-compatible client ------------------------------------


TRANSIENT_REPLIES = {
    "429": Reply.error(429, retry_after=0),
    "500": Reply.error(500),
    "503": Reply.error(503),
    "401": Reply.error(401),
    "403": Reply.error(403),
    "timeout": Reply.slow(3.0),
    "empty-body": Reply.empty(),
    "empty-data": Reply.empty_data(),
}


@pytest.mark.parametrize("reply", TRANSIENT_REPLIES.values(), ids=TRANSIENT_REPLIES.keys())
async def test_transient_provider_errors_keep_rows_pending_and_back_off(
    pool: AsyncPool, fake_openai: FakeOpenAI, reply: Reply
) -> None:
    ids = await add_listings(pool, 3)
    fake_openai.set_default(reply)
    embedder = fake_openai.embedder(timeout=0.5)
    queue = EmbeddingQueue(pool, embedder, LISTINGS)

    # The handler's verdict: transient, nothing written.
    rows = await queue.claim("w1", 10, 30.0)
    with pytest.raises(TransientError):
        await run_batch(queue, "w1", rows)

    # In the worker loop: the batch is released and the worker backs off (base 30 s, as the
    # seed) instead of hammering the provider every poll interval (50 ms here).
    before, requests = backoffs(queue), fake_openai.requests
    stop = asyncio.Event()
    seed_backoff = WorkerConfig(batch_size=10, poll_interval=0.05)  # 30 s × 2^attempt
    task = asyncio.create_task(QueueWorker(queue, seed_backoff).run(stop))

    async def backed_off() -> bool:
        return backoffs(queue) > before and not await scalar(
            pool, "SELECT count(*) FROM job_listings WHERE locked_by IS NOT NULL"
        )

    async def retried() -> bool:
        return fake_openai.requests > requests + 1

    try:
        await wait_for(backed_off, timeout=10)
        with pytest.raises(AssertionError, match="timed out"):
            await wait_for(retried, timeout=0.5)
    finally:
        stop.set()
        async with asyncio.timeout(5):  # the back-off wait ends at once on stop
            await task
    assert fake_openai.requests == requests + 1
    for listing in ids:
        row = await fetch(pool, "job_listings", listing)
        assert (row["status"], row["embedding_error"], row["embedding_attempts"]) == (
            "pending",
            None,
            0,
        )
        assert row["locked_by"] is None
    await embedder.aclose()


async def test_a_one_off_malformed_response_fails_no_row(
    pool: AsyncPool, fake_openai: FakeOpenAI
) -> None:
    """Malformed, then fine: the breaker's probe succeeds, so the batch is bisected (and every
    part embeds). A malformed body on every call pauses the queue instead (see
    tests/integration/test_embedding_breaker.py)."""
    ids = await add_listings(pool, 3)
    fake_openai.script([Reply.malformed()])
    embedder = fake_openai.embedder()
    result = await drain(EmbeddingQueue(pool, embedder, LISTINGS))
    assert (result.embedded, result.failed, result.held_back) == (3, 0, 0)
    for listing in ids:
        assert (await fetch(pool, "job_listings", listing))["status"] == "embedded"
    await embedder.aclose()


async def test_input_the_provider_rejects_fails_alone(
    pool: AsyncPool, fake_openai: FakeOpenAI
) -> None:
    ids = await add_listings(pool, 6)
    await execute(pool, "UPDATE job_listings SET description = 'poison' WHERE id = %s", ids[2])
    fake_openai.set_default(Reply.ok(reject=poisoned))
    embedder = fake_openai.embedder()
    result = await drain(EmbeddingQueue(pool, embedder, LISTINGS))
    assert (result.embedded, result.failed) == (5, 1)
    row = await fetch(pool, "job_listings", ids[2])
    assert row["status"] == "failed" and "HTTP 400" in row["embedding_error"]
    # The stored vectors are the provider's (scaled, unnormalised on the wire), normalised.
    texts = {row_id: text for text, row_id in (await texts_by_id(pool, LISTINGS)).items()}
    other = await fetch(pool, "job_listings", ids[0])
    assert other["embedding"].to_list() == pytest.approx(hash_embed(texts[ids[0]]), abs=1e-6)
    await embedder.aclose()


# --- concurrent edits --------------------------------------------------------------------------


async def test_text_edit_during_an_inflight_embed_is_not_lost(pool: AsyncPool) -> None:
    text_edit, salary_edit = await add_listings(pool, 2)
    edited = False

    async def edit_mid_flight(batch: list[str]) -> None:
        nonlocal edited
        if not edited:
            edited = True
            await execute(
                pool,
                "UPDATE job_listings SET description = 'Changed meanwhile' WHERE id = %s",
                text_edit,
            )
            await execute(
                pool, "UPDATE job_listings SET salary_min_ks = 120 WHERE id = %s", salary_edit
            )

    fake = FakeEmbedder(before_return=edit_mid_flight)
    queue = EmbeddingQueue(pool, fake, LISTINGS)
    rows = await queue.claim("w1", 10, 30.0)
    first = await queue.index_batch("w1", rows)
    assert (first.embedded, first.superseded) == (1, 1)

    # The salary edit did not touch the embedded text: the new vector stands, nothing is due.
    salary_row = await fetch(pool, "job_listings", salary_edit)
    assert salary_row["status"] == "embedded"
    assert salary_row["embedded_at"] >= salary_row["updated_at"]
    # The text edit: the stale vector was not stored, the row was handed back at once.
    text_row = await fetch(pool, "job_listings", text_edit)
    assert text_row["status"] == "pending" and text_row["embedding"] is None
    assert text_row["locked_by"] is None

    again = await queue.claim("w2", 10, 30.0)
    assert [r.id for r in again] == [text_edit]
    assert "Changed meanwhile" in again[0].text
    assert (await queue.index_batch("w2", again)).embedded == 1
    text_row = await fetch(pool, "job_listings", text_edit)
    assert text_row["status"] == "embedded"
    assert text_row["embedded_hash"] == text_row["content_hash"]
    assert text_row["embedding"].to_list() == pytest.approx(hash_embed(again[0].text), abs=1e-6)


async def test_lost_lease_means_the_late_writer_is_ignored(pool: AsyncPool) -> None:
    (listing,) = await add_listings(pool, 1)
    queue = EmbeddingQueue(pool, FakeEmbedder(), LISTINGS)
    stale = await queue.claim("slow-worker", 10, 30.0)
    # Its lease ran out (no heartbeat) and another worker took over and finished the row.
    await execute(
        pool,
        "UPDATE job_listings SET locked_until = now() - interval '1 second' WHERE id = %s",
        listing,
    )
    assert (await drain(queue, "new-worker")).embedded == 1
    embedded_at = (await fetch(pool, "job_listings", listing))["embedded_at"]
    late = await queue.index_batch("slow-worker", stale)
    assert (late.embedded, late.superseded) == (0, 1)
    assert (await fetch(pool, "job_listings", listing))["embedded_at"] == embedded_at


# --- candidates and the production wiring ----------------------------------------------------


async def test_candidates_are_indexed_without_their_email(pool: AsyncPool) -> None:
    candidate = await add_candidate(pool, skills=["rust", "kafka"])
    fake = FakeEmbedder()
    result = await drain(EmbeddingQueue(pool, fake, CANDIDATES))
    assert result.embedded == 1
    (text,) = fake.batches[0]
    assert "Ada Example" in text and "Skills: rust, kafka" in text and "Berlin" in text
    assert "@" not in text
    row = await fetch(pool, "candidates", candidate)
    assert row["status"] == "embedded" and row["embedded_hash"] == row["content_hash"]

    # Same re-embed rule as listings: a new e-mail address is not embedded text.
    await execute(pool, "UPDATE candidates SET email = 'new@example.com' WHERE id = %s", candidate)
    assert (await drain(EmbeddingQueue(pool, fake, CANDIDATES))).unchanged == 1
    await execute(pool, "UPDATE candidates SET skills = '{go}' WHERE id = %s", candidate)
    assert (await drain(EmbeddingQueue(pool, fake, CANDIDATES))).embedded == 1
    assert fake.calls == 2


class QuotingRejecter(FakeEmbedder):
    """A provider that rejects an input and quotes it back in its error message."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        for i, text in enumerate(texts):
            if "reach me" in text:
                raise EmbeddingPermanentError(f"input[{i}] rejected: {text!r}", bad_index=i)
        return await super().embed(texts)


async def test_failure_messages_never_carry_email_addresses(
    pool: AsyncPool, caplog: pytest.LogCaptureFixture
) -> None:
    candidate = await add_candidate(pool, summary="Python developer, reach me at ada@example.com")
    result = await drain(EmbeddingQueue(pool, QuotingRejecter(), CANDIDATES))
    assert result.failed == 1
    row = await fetch(pool, "candidates", candidate)
    assert row["status"] == "failed"
    assert "reach me at [e-mail]" in row["embedding_error"]
    assert "@" not in row["embedding_error"]
    assert "embedding failed" in caplog.text and "ada@example.com" not in caplog.text
    async with pool.connection() as conn:
        report = await collect_status(conn)
    (failure,) = report["corpora"]["candidates"]["failures"]
    assert failure["label"] == "Software Engineer" and "@" not in json.dumps(failure)


async def test_production_workers_wake_on_notify_for_both_corpora(
    db_url: str, pool: AsyncPool
) -> None:
    settings = Settings(indexer_poll_interval=30.0, indexer_batch_size=16, lease_seconds=60.0)
    notifier = Notifier(db_url)
    notifier.start()
    fake = FakeEmbedder()
    services = Services(settings, db_url, pool, notifier, Spaces.of_embedder(pool, fake))
    workers = indexer_workers(services)
    queues = [w.queue for w in workers]
    assert [q.target.table for q in queues if isinstance(q, EmbeddingQueue)] == [
        "job_listings",
        "candidates",
    ]
    cfg = workers[0].config
    assert (cfg.batch_size, cfg.concurrency, cfg.poll_interval, cfg.throttle, cfg.lease) == (
        16,
        1,
        30.0,
        30.0,
        60.0,
    )
    assert (cfg.backoff_base, cfg.backoff_max) == (30.0, 120.0)

    stop = asyncio.Event()
    tasks = [asyncio.create_task(w.run(stop)) for w in workers]
    try:
        await _listening(pool, notifier)
        (listing,) = await add_listings(pool, 1)
        candidate = await add_candidate(pool)

        async def both_embedded() -> bool:
            a = await fetch(pool, "job_listings", listing)
            b = await fetch(pool, "candidates", candidate)
            return a["status"] == b["status"] == "embedded"

        # Within seconds although the poll interval is 30 s: the triggers' NOTIFY woke them.
        await wait_for(both_embedded, timeout=5.0)
    finally:
        stop.set()
        async with asyncio.timeout(10):
            await asyncio.gather(*tasks)
        await notifier.stop()


async def _listening(pool: AsyncPool, notifier: Notifier) -> None:
    probe = notifier.subscribe(EMBED_CHANNEL)

    async def heard() -> bool:
        await execute(pool, "SELECT pg_notify(%s, 'probe')", EMBED_CHANNEL)
        try:
            async with asyncio.timeout(0.2):
                await probe.wait()
        except TimeoutError:
            return False
        return True

    try:
        await wait_for(heard, timeout=10, message="LISTEN shortlist_embed")
    finally:
        notifier.unsubscribe(EMBED_CHANNEL, probe)


# --- status and reindex --------------------------------------------------------------------------


async def test_collect_status_reports_queues_failures_and_searches(pool: AsyncPool) -> None:
    ids = await add_listings(pool, 5)
    await execute(pool, "UPDATE job_listings SET description = 'poison' WHERE id = %s", ids[0])
    await drain(EmbeddingQueue(pool, FakeEmbedder(fail_permanent_on=poisoned), LISTINGS))
    await add_listings(pool, 2)  # pending
    queue = EmbeddingQueue(pool, FakeEmbedder(), LISTINGS)
    await queue.claim("w1", 1, 30.0)  # one claimed right now
    await add_candidate(pool)
    async with pool.connection() as conn:
        cur = await conn.execute(
            "INSERT INTO api_tokens (name, role, token_hash) VALUES ('r', 'recruiter', '\\x01')"
            " RETURNING id"
        )
        token = (await cur.fetchone() or {})["id"]
        await conn.execute(
            "INSERT INTO searches (owner_token_id, query, target_count, result_count, status,"
            "                      finished_at, query_embedding)"
            " VALUES (%(t)s, 'rust engineers like bob@example.org', 15, 3, 'running', NULL, %(v)s),"
            "        (%(t)s, 'done already', 15, 15, 'complete', now(), %(v)s)",
            {"t": token, "v": Vector(hash_embed("q"))},
        )

    async with pool.connection() as conn:
        report = await collect_status(conn)
    json.dumps(report)  # JSON-ready as it is

    jobs = report["corpora"]["job_listings"]
    assert jobs["by_status"] == {"pending": 2, "embedded": 4, "failed": 1}
    assert (jobs["total"], jobs["claimed"], jobs["reembed_due"]) == (7, 1, 0)
    (failure,) = jobs["failures"]
    assert failure["id"] == str(ids[0])
    assert "rejects input" in failure["error"] and failure["attempts"] == 1
    assert failure["label"] == "Engineer 1 at Company 1"
    cands = report["corpora"]["candidates"]
    assert cands["by_status"] == {"pending": 1, "embedded": 0, "failed": 0}
    assert cands["failures"] == []
    assert report["searches"] == {"running": 1, "complete": 1, "stale": 0}
    assert set(report["search_candidates"]) >= {"queued", "running", "succeeded"}
    assert sum(report["search_candidates"].values()) == 0
    (running,) = report["running_searches"]
    assert running["query"] == "rust engineers like [e-mail]"
    assert (running["result_count"], running["target_count"]) == (3, 15)
    assert "@" not in json.dumps(report)


async def test_reindex_modes(pool: AsyncPool) -> None:
    ids = await add_listings(pool, 3)
    candidate = await add_candidate(pool)
    fake = FakeEmbedder()
    await drain(EmbeddingQueue(pool, fake, LISTINGS))
    await drain(EmbeddingQueue(pool, fake, CANDIDATES))

    async with pool.connection() as conn:
        # Nothing is stale, failed or unknown yet.
        assert await reindex(conn) == 0
        assert await reindex(conn, failed=True) == 0
        with pytest.raises(BadInput):
            await reindex(conn, table="users")
        # A vector that does not belong to the row's text (written by other means).
        await conn.execute(
            "UPDATE job_listings SET embedded_hash = '\\x00' WHERE id = %s", (ids[0],)
        )
        assert await reindex(conn) == 1
    assert (await fetch(pool, "job_listings", ids[0]))["status"] == "pending"
    calls = fake.calls
    assert (await drain(EmbeddingQueue(pool, fake, LISTINGS))).embedded == 1
    assert fake.calls == calls + 1

    # --all re-runs the model for every row of the chosen corpus, even unchanged text.
    async with pool.connection() as conn:
        assert await reindex(conn, all_rows=True, table="job_listings") == 3
        assert await reindex(conn, all_rows=True, table="job_listings") == 0  # already marked
    assert (await fetch(pool, "candidates", candidate))["status"] == "embedded"
    result = await drain(EmbeddingQueue(pool, fake, LISTINGS))
    assert (result.embedded, result.unchanged) == (3, 0)
    async with pool.connection() as conn:
        assert await reindex(conn, all_rows=True) == 4


@pytest.mark.usefixtures("cli_env")
async def test_status_and_reindex_commands(pool: AsyncPool) -> None:

    from shortlist.cli import build_app

    app = build_app()
    ids = await add_listings(pool, 2, description="poison")
    await drain(EmbeddingQueue(pool, FakeEmbedder(fail_permanent_on=poisoned), LISTINGS))
    runner = CliRunner()

    def invoke(*args: str) -> str:
        result = runner.invoke(app, list(args))
        assert result.exit_code == 0, result.output
        return result.output

    report = json.loads(await asyncio.to_thread(invoke, "status", "--json"))
    assert report["corpora"]["job_listings"]["by_status"]["failed"] == 2
    assert {(i["table"], i["method"], i["fits"]) for i in report["vector_indexes"]} == {
        ("job_listings", "hnsw", True),
        ("candidates", "hnsw", True),
    }
    table = await asyncio.to_thread(invoke, "status")
    assert "Embedding queues" in table and "Latest embedding failures" in table
    assert "Vector indexes" in table
    out = await asyncio.to_thread(invoke, "migrate", "--retune")
    assert "vector indexes checked against their tables" in out

    out = await asyncio.to_thread(invoke, "reindex", "--failed", "--corpus", "candidates")
    assert "marked 0 failed rows (candidates)" in out
    out = await asyncio.to_thread(invoke, "reindex", "--failed", "--corpus", "jobs")
    assert "marked 2 failed rows (jobs)" in out
    assert {(await fetch(pool, "job_listings", i))["status"] for i in ids} == {"pending"}
