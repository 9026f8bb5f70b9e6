"""Job search: relevance and scores with the FakeEmbedder, filters that still fill a page,
pending listings found by full text, paging, the rerank log, rate limiting and bad input."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import numpy as np
import psycopg
import pytest
from prometheus_client import REGISTRY
from psycopg import sql

from shortlist.api.app import create_app
from shortlist.bootstrap import Services
from shortlist.config import Settings
from shortlist.db.pool import open_async_pool
from shortlist.db.sql import like_pattern
from shortlist.db.types import AsyncConn, AsyncPool
from shortlist.db.vector_index import (
    HNSW,
    IVFFLAT,
    SEARCH_INDEXES,
    BuildOverrides,
    ensure_vector_indexes,
)
from shortlist.embedding.model_space import first_space
from shortlist.embedding.spaces import Spaces
from shortlist.errors import BadInput
from shortlist.listings.models import ListingCreate
from shortlist.listings.repository import copy_listings
from shortlist.listings.sample import iter_sample_listings
from shortlist.listings.search import (
    BROAD_WINDOW,
    candidates_statement,
    query_words,
    search_jobs,
)
from shortlist.queue.notify import Notifier
from tests.fakes import FakeEmbedder

# The statement in the first model space, the one these tests' vectors are in, with a location
# filter (candidate_params').
CANDIDATES = candidates_statement(first_space(384), filters=["location"])

EmbedPending = Callable[[], Awaitable[int]]


def listing(title: str, company: str, city: str, description: str, **kw: Any) -> ListingCreate:
    return ListingCreate(
        job_title=title, company_name=company, city_location=city, description=description, **kw
    )


CORPUS = [
    listing(
        "Backend Engineer",
        "Cedar Labs",
        "Berlin",
        "Python services on PostgreSQL; build APIs with FastAPI and Kafka.",
        salary_min_ks=70,
        salary_max_ks=90,
        currency_code="EUR",
    ),
    listing(
        "Registered Nurse",
        "Harbor Health",
        "Boston, MA",
        "Care for patients in our intensive care unit; medication and triage.",
        salary_min_ks=90,
    ),
    listing(
        "Account Executive",
        "Summit Software",
        "London",
        "Own a sales territory, prospect new customers and close contracts.",
        salary_max_ks=120,
        currency_code="GBP",
    ),
    listing(
        "Mathematics Teacher",
        "Maple Academy",
        "Toronto",
        "Plan and teach algebra and geometry lessons to secondary students.",
    ),
    listing(
        "Data Engineer",
        "Copper Analytics",
        "Berlin",
        "Build batch pipelines in Python and SQL with Airflow and dbt.",
        salary_min_ks=65,
        salary_max_ks=85,
        currency_code="EUR",
    ),
]


async def insert(pool: AsyncPool, items: list[ListingCreate]) -> None:
    async with pool.connection() as conn, conn.transaction():
        await copy_listings(conn, items, source="file")


# --- pure parts ---------------------------------------------------------------------------------


# --- search against the database ----------------------------------------------------------------


async def test_relevant_listing_first_with_scores_in_range_and_descending(
    pool: AsyncPool, embedder: FakeEmbedder, embed_pending: EmbedPending
) -> None:
    await insert(pool, CORPUS)
    assert await embed_pending() == len(CORPUS)
    result = await search_jobs(pool, embedder, "  python backend engineer postgresql  ", size=5)
    assert result.query == "python backend engineer postgresql"
    assert result.took_ms >= 0
    titles = [h.listing.job_title for h in result.hits]
    assert titles[0] == "Backend Engineer"
    assert titles[1] == "Data Engineer"  # shares "python" and "engineer"
    scores = [h.score for h in result.hits]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert scores[0] > scores[-1]

    nurse = await search_jobs(pool, embedder, "nurse intensive care patients", size=3)
    assert nurse.hits[0].listing.company_name == "Harbor Health"


async def test_pending_listings_are_found_by_full_text(
    pool: AsyncPool, embedder: FakeEmbedder, embed_pending: EmbedPending
) -> None:
    await insert(pool, CORPUS)
    await embed_pending()
    await insert(
        pool,
        [
            listing(
                "Firmware Engineer",
                "Basalt Robotics",
                "Munich",
                "Write embedded C for motor controllers on ARM Cortex-M.",
            )
        ],
    )
    result = await search_jobs(pool, embedder, "firmware motor controllers", size=5)
    assert result.hits, "a listing pending its embedding must still be found"
    top = result.hits[0]
    assert top.listing.job_title == "Firmware Engineer"
    assert top.listing.embedding_status == "pending"
    assert 0.0 <= top.score <= 1.0


@pytest.mark.parametrize(
    ("query", "title"),
    [
        ("chief technology officer", "CTO"),
        ("search engine optimization specialist", "SEO Manager"),
    ],
)
async def test_a_spelled_out_query_finds_an_abbreviated_title_by_full_text(
    pool: AsyncPool, embedder: FakeEmbedder, query: str, title: str
) -> None:
    # All pending, so only the full-text list finds them, and no word of the listing's title or
    # description is one of the query's: the abbreviation normalise_query appends is what
    # matches. (Its rank among the corpus's engineers, whose stem "engine" shares, is the
    # cosine's to decide, which pending listings lack.)
    mark = listing(title, "Quartz Works", "Lisbon", "Grow the team, the roadmap and the traffic.")
    await insert(pool, [*CORPUS, mark])
    result = await search_jobs(pool, embedder, query, size=10)
    assert (title, "words") in [(h.listing.job_title, h.why.via) for h in result.hits]


@pytest.mark.parametrize(
    ("query", "role", "others"),
    [
        # "search" is in "research", "specialist" in every specialist: one way, both titles
        # held more of the query's trigrams than "SEO Specialist" did.
        (
            "search engine optimization specialist",
            "SEO Specialist",
            ["Intelligence Research Specialist", "Information Specialist"],
        ),
        # A role plus what the work builds: "Pipeline Engineer" holds "engineer" and most of
        # "pipelines", as many of the query's trigrams as "Data Engineer".
        ("data engineer building ETL pipelines", "Data Engineer", ["Pipeline Engineer"]),
    ],
)
async def test_a_title_with_words_the_query_lacks_resembles_it_less_than_the_role_asked_for(
    pool: AsyncPool, embedder: FakeEmbedder, query: str, role: str, others: list[str]
) -> None:
    # All pending (no cosine), so each is scored on its title's similarity to the query alone;
    # one description for all, so the full-text list finds each by its title.
    await insert(
        pool,
        [
            listing(t, "Quartz Works", "Lisbon", "Build pipeline and search engine development.")
            for t in [*others, role]
        ],
    )
    result = await search_jobs(pool, embedder, query, size=10)
    titles = [h.listing.job_title for h in result.hits]
    assert titles[0] == role, titles
    assert set(titles) == {role, *others}


async def test_filters_location_and_salary(
    pool: AsyncPool, embedder: FakeEmbedder, embed_pending: EmbedPending
) -> None:
    await insert(pool, CORPUS)
    await embed_pending()
    berlin = await search_jobs(pool, embedder, "engineer", size=10, location="  bErLiN ")
    assert {h.listing.city_location for h in berlin.hits} == {"Berlin"}
    assert len(berlin.hits) == 2
    # Compared with the top figure (max, or min when only a minimum is advertised); listings
    # without a salary never pass a salary filter.
    paid = await search_jobs(pool, embedder, "work", size=10, salary_min=90)
    assert {h.listing.company_name for h in paid.hits} == {
        "Cedar Labs",  # 70-90
        "Harbor Health",  # from 90
        "Summit Software",  # up to 120
    }
    paid = await search_jobs(pool, embedder, "work", size=10, salary_min=91)
    assert {h.listing.company_name for h in paid.hits} == {"Summit Software"}
    # Wildcards and the escape character are literal.
    for wildcard in ("%", "_", "B_rlin", "\\", "Berl\\in"):
        found = await search_jobs(pool, embedder, "engineer", size=10, location=wildcard)
        assert found.hits == [], wildcard


RARE = "Nowhere Springs"
NO_WORDS = "zebra xylophone quasar"  # words no listing contains: every hit is a vector hit


async def rare_town_corpus(
    pool: AsyncPool, embed_pending: EmbedPending, index: Callable[[], None] | None = None
) -> None:
    """2,000 embedded listings, 1 % of them in :data:`RARE`; then ``index`` (a vector index
    build), and the exact scans forbidden. At 2,000 rows the planner rightly prefers an exact
    scan (of the table, or of the town's rows through the trigram index); forbidding both makes
    a test cover the index scan that a large table and a broad filter take. The settings apply
    to connections opened from then on."""
    items = [
        item.model_copy(update={"city_location": RARE}) if i % 100 == 0 else item
        for i, item in enumerate(iter_sample_listings(2000))
    ]
    await insert(pool, items)
    assert await embed_pending() == 2000
    async with pool.connection() as conn:
        await conn.execute("ANALYZE job_listings")
        await conn.commit()
    if index is not None:
        await asyncio.to_thread(index)
    async with pool.connection() as conn:
        for setting in ("enable_seqscan", "enable_bitmapscan"):
            await conn.execute(f"ALTER DATABASE {conn.info.dbname} SET {setting} = off")
        await conn.commit()


async def search_the_rare_town(
    db_url: str, embedder: FakeEmbedder, method: str
) -> tuple[Any, str, int]:
    """``search_jobs`` for :data:`NO_WORDS` in :data:`RARE` on a pool opened now (the session
    settings as patched), the vector list's plan, and how many rows the same statement's vector
    list brings without ``method``'s iterative scan (the control)."""
    index_pool = await open_async_pool(db_url, min_size=1, max_size=2)
    try:
        result = await search_jobs(index_pool, embedder, NO_WORDS, size=10, location=RARE)
        async with index_pool.connection() as conn:
            qvec = np.asarray((await embedder.embed([NO_WORDS]))[0], dtype=np.float32)
            plan = await explain_vector_candidates(conn, qvec, RARE)
            await conn.execute(f"SET {method}.iterative_scan = off")
            cur = await conn.execute(CANDIDATES, candidate_params(NO_WORDS, qvec, RARE))
            without_iterative = sum(r["list"] == "vector" for r in await cur.fetchall())
    finally:
        await index_pool.close()
    return result, plan, without_iterative


@pytest.mark.parametrize("method", ["hnsw", "ivfflat"])
@pytest.mark.slow
async def test_filtered_search_still_fills_the_page(
    db_url: str,
    pool: AsyncPool,
    embedder: FakeEmbedder,
    embed_pending: EmbedPending,
    monkeypatch: pytest.MonkeyPatch,
    method: str,
) -> None:
    """2,000 embedded listings, 1% in one town, size 10 → 10 hits, whichever vector index the
    table has. HNSW alone returns its ef_search nearest rows and the filter then keeps ~1% of
    them; IVFFlat (a table past 500k rows) with 20 lists and 1 probe reads one list, which
    holds ~1 of the town's rows. pgvector's iterative scan (set on every pooled connection)
    keeps walking the graph, or reading lists, until the page is full."""
    listings = SEARCH_INDEXES[0]

    def build_ivfflat() -> None:
        lists_20 = BuildOverrides(method=IVFFLAT, ivfflat_lists=20)
        with psycopg.connect(db_url, autocommit=True) as conn:
            ensure_vector_indexes(conn, [listings], lists_20, retune=True)

    await rare_town_corpus(pool, embed_pending, build_ivfflat if method == IVFFLAT else None)
    # The product's candidate list (1000 rows; 50 of ~1,000-row lists) is half of this table
    # or all of it; at the sizes it is meant for it is a sliver of the table, as these are.
    monkeypatch.setattr("shortlist.db.pool.HNSW_EF_SEARCH", 100)
    monkeypatch.setattr("shortlist.db.pool.IVFFLAT_PROBES", 1)
    monkeypatch.setattr("shortlist.db.pool.IVFFLAT_MAX_PROBES", 20)
    result, plan, without_iterative = await search_the_rare_town(db_url, embedder, method)
    assert listings.name_for(IVFFLAT if method == IVFFLAT else HNSW) in plan, plan
    assert without_iterative < 10
    assert len(result.hits) == 10
    assert {h.listing.city_location for h in result.hits} == {RARE}
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True)


def candidate_params(query: str, qvec: Any, location: str) -> dict[str, Any]:
    return {
        "terms": query,
        "vector": qvec,
        "location": like_pattern(location),
        "salary_min": None,
        "work_mode": None,
        "posted_within_days": None,
        "k": 10,
        "broad_window": BROAD_WINDOW,
        # These tests read the vector list: no full-text words.
        "narrow": None,
        "broad": None,
    }


async def explain_vector_candidates(conn: AsyncConn, qvec: Any, location: str) -> str:
    cur = await conn.execute(
        sql.SQL("EXPLAIN ") + CANDIDATES, candidate_params("zebra", qvec, location), prepare=False
    )
    return "\n".join(str(next(iter(r.values()))) for r in await cur.fetchall())


async def test_paging_is_consistent(
    pool: AsyncPool, embedder: FakeEmbedder, embed_pending: EmbedPending
) -> None:
    await insert(pool, list(iter_sample_listings(300)))
    await embed_pending()
    q = "senior engineer python"
    # Across fusion windows (40, 80): same order whatever the page size, no repeats.
    whole = await search_jobs(pool, embedder, q, size=50)
    offsets = range(0, 50, 10)
    pages = [await search_jobs(pool, embedder, q, size=10, offset=o) for o in offsets]
    paged = [h.listing.id for p in pages for h in p.hits]
    assert paged == [h.listing.id for h in whole.hits]
    assert len(paged) == len(set(paged)) == 50
    odd = [await search_jobs(pool, embedder, q, size=7, offset=o) for o in range(0, 49, 7)]
    assert [h.listing.id for p in odd for h in p.hits] == paged[:49]
    # Deep pages: a window (320) past the session's HNSW candidate list widens it for the
    # request's own transaction; the same positions whatever the page size there too.
    deep = await search_jobs(pool, embedder, q, size=50, offset=240)
    deep_pages = [await search_jobs(pool, embedder, q, size=10, offset=o) for o in (240, 250)]
    assert len(deep.hits) == 50
    assert [h.listing.id for p in deep_pages for h in p.hits] == [
        h.listing.id for h in deep.hits[:20]
    ]


async def test_a_first_page_in_one_statement_is_the_fused_page(
    pool: AsyncPool,
    embedder: FakeEmbedder,
    embed_pending: EmbedPending,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """search.sql's first_page scores and orders in SQL what fuse does in Python: the same
    hits, scores, why and facets as the two statements (which search_jobs runs when the debug
    log is on), with and without filters, past the last hit, and with a listing pending."""
    await insert(pool, list(iter_sample_listings(200)))
    await embed_pending()
    await insert(pool, [CORPUS[0]])  # pending its embedding: scored on its words
    asks: list[tuple[str, dict[str, Any]]] = [
        ("senior engineer python", {}),
        ("nurse", {"size": 7, "offset": 5}),
        ("backend engineer", {"work_mode": "remote", "salary_min": 50}),
        ("data scientist in berlin", {"location": "a", "posted_within_days": 30}),
        ("designer", {"offset": 39, "size": 1}),
        ("zzzz qqqq", {"offset": 20}),
        ("nurse", {"location": "Nowhere at all"}),
        ("engineer", {"currency": "EUR", "salary_min": 40, "remote_country": "DE"}),
    ]
    for q, kw in asks:
        one = await search_jobs(pool, embedder, q, **kw)
        with caplog.at_level(logging.DEBUG, logger="shortlist.listings.search"):
            two = await search_jobs(pool, embedder, q, **kw)
        assert one.model_dump(exclude={"took_ms"}) == two.model_dump(exclude={"took_ms"}), q
    assert (await search_jobs(pool, embedder, "engineer", with_facets=False)).hits


async def test_a_first_page_without_filters_runs_on_one_generic_plan(
    db_url: str, pool: AsyncPool, embedder: FakeEmbedder, embed_pending: EmbedPending
) -> None:
    """A first page without filters is planned once per connection (a generic plan, whatever
    the words: narrow, broad, none); with a filter it is planned for its values each time,
    unprepared. The setting that asks for the generic plan ends with that statement."""
    await insert(pool, list(iter_sample_listings(200)))
    await embed_pending()
    one = await open_async_pool(db_url, min_size=1, max_size=1)
    try:
        for q in ("senior engineer python", "nurse", "zzzz qqqq", "engineer"):
            await search_jobs(one, embedder, q)
        await search_jobs(one, embedder, "nurse", work_mode="remote")
        async with one.connection() as conn:
            cur = await conn.execute(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
                " WHERE statement LIKE 'WITH query AS MATERIALIZED%'"
            )
            assert await cur.fetchall() == [{"generic_plans": 4, "custom_plans": 0}]
            cur = await conn.execute("SELECT current_setting('plan_cache_mode') AS mode")
            assert await cur.fetchall() == [{"mode": "auto"}]
    finally:
        await one.close()


async def test_search_degrades_to_full_text_when_the_embedder_fails(
    pool: AsyncPool, embed_pending: EmbedPending
) -> None:
    await insert(pool, CORPUS)
    await embed_pending()
    flaky = FakeEmbedder(fail_transient_times=1)
    result = await search_jobs(pool, flaky, "algebra lessons", size=5)
    assert [h.listing.company_name for h in result.hits] == ["Maple Academy"]


async def test_vector_top_and_final_order_are_logged_at_debug(
    pool: AsyncPool,
    embedder: FakeEmbedder,
    embed_pending: EmbedPending,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await insert(pool, CORPUS)
    await embed_pending()
    with caplog.at_level(logging.DEBUG, logger="shortlist.listings.search"):
        await search_jobs(pool, embedder, "python backend", size=3)
    messages = [r.getMessage() for r in caplog.records if r.name == "shortlist.listings.search"]
    vector_line = next(m for m in messages if "vector top" in m)
    assert "1. Cedar Labs | Backend Engineer | id=" in vector_line
    assert " | distance=0." in vector_line and " ; 2. " in vector_line
    final_line = next(m for m in messages if "final order" in m)
    assert "1. Cedar Labs | Backend Engineer | id=" in final_line


# --- HTTP ---------------------------------------------------------------------------------------


async def test_search_endpoint_shape(
    client: httpx.AsyncClient, pool: AsyncPool, embed_pending: EmbedPending
) -> None:
    await insert(pool, CORPUS)
    await embed_pending()
    observed = REGISTRY.get_sample_value("shortlist_search_seconds_count", {"kind": "jobs"}) or 0
    resp = await client.get(
        "/api/jobs/search", params={"q": "data pipelines", "size": 2, "salary_min": ""}
    )
    assert resp.status_code == 200, resp.text
    assert REGISTRY.get_sample_value("shortlist_search_seconds_count", {"kind": "jobs"}) == (
        observed + 1
    )
    body = resp.json()
    assert set(body) == {"query", "took_ms", "hits", "facets"}
    assert len(body["hits"]) == 2
    hit = body["hits"][0]
    assert set(hit) == {"listing", "score", "why"}
    assert hit["listing"]["job_title"] == "Data Engineer"
    assert hit["listing"]["salary_range"] == "$65K - $85K EUR"
    assert hit["listing"]["detail_page_slug"].endswith(hit["listing"]["id"])


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({}, 422),
        ({"q": ""}, 400),
        ({"q": "   "}, 400),
        ({"q": "x" * 501}, 422),
        ({"q": "python", "size": 51}, 422),
        ({"q": "python", "size": 10**12}, 422),
        ({"q": "python", "size": 0}, 422),
        ({"q": "python", "size": "ten"}, 422),
        ({"q": "python", "offset": -1}, 422),
        ({"q": "python", "offset": 1001}, 422),
        ({"q": "python", "salary_min": -1}, 422),
        ({"q": "python", "salary_min": "lots"}, 422),
        ({"q": "python", "location": "x" * 201}, 422),
        ({"q": "nul\x00byte"}, 400),
    ],
)
async def test_bad_search_parameters_are_4xx_json(
    client: httpx.AsyncClient, params: dict[str, Any], status: int
) -> None:
    resp = await client.get("/api/jobs/search", params=params)
    assert resp.status_code == status, resp.text
    assert resp.json()["error"]["message"]


@pytest.fixture
async def limited_client(
    db_url: str, pool: AsyncPool, embedder: FakeEmbedder
) -> AsyncIterator[Callable[[tuple[str, int]], httpx.AsyncClient]]:
    """Clients of one app allowing 3 searches a minute per IP, with 10.0.0.1 as the only
    trusted proxy; the factory picks the socket peer."""
    settings = Settings(
        database_url=db_url, load_sample_data=False, search_rate_limit=3, trusted_proxies="10.0.0.1"
    )
    services = Services(
        settings, db_url, pool, Notifier(db_url), Spaces.of_embedder(pool, embedder)
    )
    app = create_app(services)
    opened: list[httpx.AsyncClient] = []

    def make(peer: tuple[str, int]) -> httpx.AsyncClient:
        c = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, client=peer), base_url="http://test"
        )
        opened.append(c)
        return c

    yield make
    for c in opened:
        await c.aclose()


async def test_rate_limit_per_client_ip_ignores_forwarded_for_from_untrusted_peers(
    limited_client: Callable[[tuple[str, int]], httpx.AsyncClient],
) -> None:
    direct = limited_client(("192.0.2.7", 4000))
    for i in range(3):
        # A spoofed X-Forwarded-For from an untrusted peer must not buy a fresh bucket.
        resp = await direct.get(
            "/api/jobs/search",
            params={"q": "python"},
            headers={"X-Forwarded-For": f"198.51.100.{i}"},
        )
        assert resp.status_code == 200
    resp = await direct.get(
        "/api/jobs/search", params={"q": "python"}, headers={"X-Forwarded-For": "198.51.100.99"}
    )
    assert resp.status_code == 429
    assert resp.json()["error"]["code"] == "rate_limited"
    assert int(resp.headers["retry-after"]) >= 1
    # Counted before validation: bad requests do not get past the limit either.
    assert (await direct.get("/api/jobs/search", params={"q": ""})).status_code == 429
    # Another IP has its own bucket.
    other = limited_client(("192.0.2.8", 4000))
    assert (await other.get("/api/jobs/search", params={"q": "python"})).status_code == 200


async def test_rate_limit_uses_forwarded_for_behind_a_trusted_proxy(
    limited_client: Callable[[tuple[str, int]], httpx.AsyncClient],
) -> None:
    proxy = limited_client(("10.0.0.1", 4000))
    for i in range(6):  # twice the limit, but six different clients behind the proxy
        resp = await proxy.get(
            "/api/jobs/search",
            params={"q": "python"},
            headers={"X-Forwarded-For": f"203.0.113.{i}"},
        )
        assert resp.status_code == 200
    for _ in range(3):
        await proxy.get(
            "/api/jobs/search", params={"q": "python"}, headers={"X-Forwarded-For": "203.0.113.50"}
        )
    resp = await proxy.get(
        "/api/jobs/search", params={"q": "python"}, headers={"X-Forwarded-For": "203.0.113.50"}
    )
    assert resp.status_code == 429


def test_cli_search_jobs_prints_a_table(
    db_url: str, monkeypatch: pytest.MonkeyPatch, embedder: FakeEmbedder
) -> None:
    from typer.testing import CliRunner

    from shortlist.cli import build_app
    from shortlist.config import get_settings
    from shortlist.embedding import factory

    async def seed() -> None:
        pool = await open_async_pool(db_url, min_size=1, max_size=1)
        try:
            await insert(pool, CORPUS)
        finally:
            await pool.close()

    asyncio.run(seed())
    monkeypatch.setenv("SHORTLIST_DATABASE_URL", db_url)
    monkeypatch.setenv("COLUMNS", "250")  # rich wraps cells to the terminal width
    monkeypatch.setattr(factory, "make_embedder", lambda settings: embedder)
    get_settings.cache_clear()
    app = build_app()
    runner = CliRunner()
    try:
        result = runner.invoke(
            app, ["search", "jobs", "algebra lessons", "--size", "3", "--location", "toronto"]
        )
        assert result.exit_code == 0, result.output
        assert "1 job for 'algebra lessons'" in result.stdout
        assert "Mathematics Teacher" in result.stdout and "Maple Academy" in result.stdout
        assert "Backend Engineer" not in result.stdout
        empty = runner.invoke(app, ["search", "jobs", "   "])
        assert empty.exit_code == 2
        assert "must not be empty" in empty.stderr
    finally:
        get_settings.cache_clear()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"query": "lone \ud800 surrogate"}, "q"),
        ({"query": " \t "}, "q"),
        ({"query": "ok", "location": "nul\x00"}, "location"),
        ({"query": "ok", "size": 0}, "size"),
        ({"query": "ok", "offset": 1001}, "offset"),
        ({"query": "ok", "salary_min": -1}, "salary_min"),
    ],
)
async def test_search_jobs_refuses_bad_parameters_itself(
    pool: AsyncPool, embedder: FakeEmbedder, kwargs: dict[str, Any], field: str
) -> None:
    """Callers other than the route (web UI, CLI) get the same checks."""
    with pytest.raises(BadInput) as caught:
        await search_jobs(pool, embedder, **kwargs)
    assert caught.value.field == field
    assert embedder.calls == 0


async def test_a_broad_word_ranks_only_its_newest_matches(
    pool: AsyncPool, embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """300 listings say "engineer" (a broad word once more than BROAD_MATCHES listings have
    it, or more than BROAD_SHARE of the table and BROAD_MIN_MATCHES), the 5 oldest say "FPGA"
    too. Every match of the narrow word is ranked; of the broad
    one only the BROAD_WINDOW newest: the facets, counted over what the text list read, show
    how many."""
    items = [
        listing(
            f"{'FPGA ' if i < 5 else ''}Platform Engineer {i}",
            "Cedar Labs",
            "Berlin",
            "Operate our platform.",
            work_mode="remote",
        )
        for i in range(300)
    ]
    await insert(pool, items)
    async with pool.connection() as conn:
        # Listing i is i minutes younger than listing 0: the FPGA ones are the oldest.
        await conn.execute(
            "UPDATE job_listings SET created_at = now() - interval '1 day'"
            " + make_interval(mins => substring(job_title from '[0-9]+$')::int)"
        )
        await conn.execute("ANALYZE job_listings")
        await conn.commit()

    async def remote_count() -> tuple[list[str], int]:
        # The listings are pending: no vector list, every hit comes from full text.
        result = await search_jobs(pool, embedder, "fpga engineer", size=10)
        titles = [h.listing.job_title for h in result.hits]
        return titles, {f.value: f.count for f in result.facets.work_mode}["remote"]

    titles, counted = await remote_count()
    # 300 listings are far below BROAD_MATCHES, and below BROAD_MIN_MATCHES though every one
    # says "engineer": every match is read.
    assert counted == 300
    monkeypatch.setattr("shortlist.listings.search.BROAD_WINDOW", 50)
    fpga = {f"FPGA Platform Engineer {i}" for i in range(5)}
    # Broad by its count (BROAD_MATCHES), then by its share of the table (BROAD_SHARE: all of
    # it, past a minimum of 100 listings).
    for setting, value in (("BROAD_MATCHES", 100), ("BROAD_MIN_MATCHES", 100)):
        with monkeypatch.context() as patched:
            patched.setattr(f"shortlist.listings.search.{setting}", value)
            broad_titles, counted = await remote_count()
        assert counted == 55  # the 5 FPGA listings (narrow word) and the 50 newest of the rest
        # The oldest listings, found for their narrow word; the others among the newest.
        assert fpga <= set(titles) and fpga <= set(broad_titles)
        assert set(broad_titles) - fpga <= {f"Platform Engineer {i}" for i in range(250, 300)}
    monkeypatch.setattr("shortlist.listings.search.BROAD_MIN_MATCHES", 100)
    monkeypatch.setattr("shortlist.listings.search.BROAD_SHARE", 1.0)
    assert (await remote_count())[1] == 300  # not more than the whole table: narrow


async def test_quotes_backslashes_and_operators_in_a_query_are_words(
    pool: AsyncPool, embedder: FakeEmbedder
) -> None:
    await insert(pool, [listing("O'Neil's FPGA Engineer", "Cedar Labs", "Berlin", "Tools.")])
    async with pool.connection() as conn:
        words = await query_words(conn, "o'neil's c:\\tools & | !go 'fpga'")
    assert words["broad"] is None  # an unanalysed table has no broad word
    assert words["narrow"] is not None and "'fpga'" in words["narrow"]
    result = await search_jobs(pool, embedder, "o'neil's c:\\tools & | !go 'fpga'", size=5)
    assert [h.listing.job_title for h in result.hits] == ["O'Neil's FPGA Engineer"]


async def test_a_place_in_the_query_is_no_match_of_every_listing_there(
    pool: AsyncPool, embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """40 Toronto listings of other work and three nurses, one in Toronto. The Toronto
    accountants are no match of "registered nurse in Toronto": the hits and the facets are the
    nurses (and the vector list's nearest), not every job in the city. A query of only a place,
    of a place and words that name no work, or of a place and broad words, matches the place's
    listings."""
    items = [
        listing(f"Accountant {i}", "Ledger & Co", "Toronto, ON", "Bookkeeping.", work_mode="onsite")
        for i in range(40)
    ] + [
        listing(
            "Registered Nurse", "Lakeside Health", "Toronto, ON", "Ward care.", work_mode="remote"
        ),
        listing(
            "Registered Nurse", "Harbor Health", "Boston, MA", "Ward care.", work_mode="remote"
        ),
        listing(
            "Nurse Practitioner", "Prairie Clinic", "Denver, CO", "Clinic.", work_mode="remote"
        ),
    ]
    await insert(pool, items)  # pending: every hit comes from the text list

    def facet(result: Any) -> dict[str, int]:
        return {f.value: f.count for f in result.facets.work_mode}

    nurses = await search_jobs(pool, embedder, "registered nurse in Toronto", size=10)
    assert {h.listing.company_name for h in nurses.hits} == {
        "Lakeside Health",
        "Harbor Health",
        "Prairie Clinic",
    }
    assert facet(nurses) == {"remote": 3}

    city = await search_jobs(pool, embedder, "Toronto", size=50)
    assert len(city.hits) == 41 and facet(city) == {"onsite": 40, "remote": 1}
    # Words that name no work: the place is what is asked for.
    jobs = await search_jobs(pool, embedder, "jobs in Toronto", size=50)
    assert len(jobs.hits) == 41 and facet(jobs) == {"onsite": 40, "remote": 1}

    # Without the place only broad words are left ("account", in 40 listings, is broad once
    # more than 2 have it): the place's listings are matched, the Toronto nurse among them.
    async with pool.connection() as conn:
        await conn.execute("ANALYZE job_listings")
        await conn.commit()
    monkeypatch.setattr("shortlist.listings.search.BROAD_MATCHES", 2)
    # ... and "toronto" too: of broad words only the newest are read, here past the 40 of the
    # fusion window, so the facets count all 41.
    monkeypatch.setattr("shortlist.listings.search.BROAD_WINDOW", 100)
    accountants = await search_jobs(pool, embedder, "accountant in Toronto", size=10)
    assert facet(accountants) == {"onsite": 40, "remote": 1}
