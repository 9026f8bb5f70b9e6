"""search: recall@10 and server-side latency of ``search_jobs`` at 100k listings (``--rows
1000000`` for the million-listing figures).

The corpus is generated, not embedded (see :mod:`bench.corpus`): 100k clustered unit vectors
loaded with a binary COPY, then the product's vector index is built as ``shortlist migrate``
builds it (``shortlist.db.vector_index.build_index``: half precision, CONCURRENTLY, HNSW or
IVFFlat and their settings sized from the table); its build time, size and peak build memory
are reported. Queries are fresh draws from the same distribution. A query embedder stands in
for the model: it maps the query text (``"qv17x"``) to the 17th query vector, and that text
matches no listing's full text, so the fused order is the vector order and recall measures
retrieval.

Three cases: no filter, a location filter matching 10 % of listings and one matching 1 %.

* recall@10: ``search_jobs`` hits vs the exact top 10 (numpy brute force over the same rows,
  filter applied); the bare statement's recall is reported next to it.
* latency: wall time of one ``search_jobs`` call (everything the API handler awaits: pool
  checkout, the vector and full-text candidate queries, fusion, fetching the page's listings)
  vs the bare pgvector statement ``SELECT id … ORDER BY <index expression> <=> q LIMIT 10`` (the
  product's filter predicate verbatim, so the planner has the same indexes to choose from —
  the vector index or, for a selective town, the trigram index and an exact scan; the product's
  ``hnsw.ef_search``, ``ivfflat.probes`` and iterative scans, ``shortlist.db.vector_search``)
  on one connection.
  Median over repetitions of the per-repetition p50; calls alternate between the two.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psutil
import psycopg
from pgvector.psycopg import register_vector

from bench.common import Context, Record, Stat, percentile, profile_async, report
from bench.corpus import SELECTIVE_1, SELECTIVE_10, VectorCorpus, exact_top_k, vector_corpus
from shortlist.db.vector_index import BuildReport

NAME = "search"
K = 10
BUILD_BUDGET_SECONDS = 600.0
"""The target: an index build of the corpus finishes within 10 minutes on this machine."""
CASES: tuple[tuple[str, str | None], ...] = (
    ("unfiltered", None),
    ("10% filter", SELECTIVE_10),
    ("1% filter", SELECTIVE_1),
)

# Binary COPY types of the columns below (an enum column takes the label's text bytes).
COPY_TYPES = [
    "uuid",
    "text",
    "text",
    "text",
    "text",
    "int4",
    "int4",
    "text",
    "text",
    "text",
    "text",
    "vector",
    "timestamptz",
]
# The product's filter predicate, verbatim (search.sql), so both run on the same indexes.
# The bare statement orders by the index's own expression (shortlist.db.vector_index).
BARE_SQL = {
    False: "SELECT id FROM job_listings"
    " ORDER BY embedding::halfvec(384) <=> %(q)s::halfvec LIMIT %(k)s",
    True: "SELECT id FROM job_listings WHERE city_location ILIKE %(loc)s"
    " ORDER BY embedding::halfvec(384) <=> %(q)s::halfvec LIMIT %(k)s",
}


class LookupEmbedder:
    """An ``Embedder`` for generated corpora: ``"qv{i}x"`` → the i-th query vector."""

    name = "lookup"
    dim = 384

    def __init__(self, queries: np.ndarray[Any, Any]) -> None:
        self.queries = queries

    @staticmethod
    def text(i: int) -> str:
        return f"qv{i}x"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        # The first word names the vector; any words after it are for the full-text list.
        return [self.queries[int(t.split()[0][2:-1])].tolist() for t in texts]

    def warm_up(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


@dataclass
class SearchFixture:
    url: str
    corpus: VectorCorpus
    load_seconds: float
    build: BuildReport
    build_memory: float
    build_load: float
    """The machine's 5-minute load average when the build ended (2 cores: above 2, the build
    shared them with other work)."""

    @property
    def rows(self) -> int:
        return len(self.corpus.ids)


def corpus_rows(ctx: Context) -> int:
    return ctx.rows or ctx.size(100_000, 2_000)


def query_count(ctx: Context) -> int:
    return ctx.size(200, 20)


def ensure_fixture(ctx: Context) -> SearchFixture:
    """The listing corpus of this run (built once, shared with search-http)."""
    fixture = ctx.cache.get("search_fixture")
    if isinstance(fixture, SearchFixture):
        return fixture
    n = corpus_rows(ctx)
    ctx.log(f"search: generating {n:,} vectors")
    corpus = vector_corpus(n, query_count(ctx))
    url = ctx.pg.create_database("bench_search")
    load_seconds, build, build_memory = load_corpus(url, corpus)
    build_load = os.getloadavg()[1]
    ctx.log(
        f"search: COPY {load_seconds:.1f}s, {build.plan.method} build {build.seconds:.1f}s"
        f" ({build.plan.describe()}), index {build.index_bytes / 2**20:.0f} MB,"
        f" build memory {build_memory / 2**20:.0f} MB, load average {build_load:.1f}"
    )
    fixture = SearchFixture(url, corpus, load_seconds, build, build_memory, build_load)
    ctx.cache["search_fixture"] = fixture
    return fixture


def load_corpus(url: str, corpus: VectorCorpus) -> tuple[float, BuildReport, float]:
    """COPY the corpus (binary) without the vector index, then build it as ``shortlist migrate``
    does (CONCURRENTLY, settings sized from the table, ``SHORTLIST_HNSW_*`` /
    ``SHORTLIST_VECTOR_INDEX`` / ``SHORTLIST_IVFFLAT_LISTS`` overrides); returns
    the load time, the build and its peak server memory (proportional set size, bytes)."""
    from shortlist.config import index_build_overrides, load_settings
    from shortlist.db.vector_index import SEARCH_INDEXES, build_index, drop_index

    index = SEARCH_INDEXES[0]
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        for name in index.physical_names():
            drop_index(conn, name)
        started = time.perf_counter()
        with conn.transaction(), conn.cursor() as cur:
            embedded_at = datetime.now(UTC)
            columns = (
                "id, company_name, job_title, city_location, description, salary_min_ks,"
                " salary_max_ks, currency_code, detail_page_slug, source, embedding_status,"
                " embedding, embedded_at"
            )
            with cur.copy(f"COPY job_listings ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(COPY_TYPES)
                for i, (listing_id, vec, city) in enumerate(
                    zip(corpus.ids, corpus.vectors, corpus.cities, strict=True)
                ):
                    copy.write_row(
                        (
                            listing_id,
                            f"Company {i % 997}",
                            f"Engineer {i % 89}",
                            city,
                            f"Generated listing {i}.",
                            80,
                            120,
                            "USD",
                            f"bench-{listing_id}",
                            "file",
                            "embedded",
                            vec,
                            embedded_at,
                        )
                    )
        # embedded_at must not be older than updated_at, or the indexer would re-embed.
        conn.execute(
            "UPDATE job_listings SET embedded_at = updated_at WHERE embedded_at < updated_at"
        )
        conn.execute("VACUUM ANALYZE job_listings")
        load_seconds = time.perf_counter() - started
        with ServerMemory(conn) as memory:
            report = build_index(conn, index, index_build_overrides(load_settings()))
        if report is None:
            raise RuntimeError(f"the indexes of {index.name} were not dropped before the build")
    return load_seconds, report, memory.peak


class ServerMemory:
    """Peak memory of the PostgreSQL server's processes while the block runs: the sum of their
    proportional set sizes (shared memory, such as a parallel build's graph, counted once),
    sampled every 0.5 s, minus what they held before."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        parent = psutil.Process(int(row[0]) if row else 0).parent()
        if parent is None:
            raise RuntimeError("no postmaster above this backend")
        self.postmaster = parent
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def total(self) -> float:
        total = 0.0
        for proc in [self.postmaster, *self.postmaster.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                total += proc.memory_full_info().pss
        return total

    def _sample(self) -> None:
        while not self._stop.wait(0.5):
            self.peak = max(self.peak, self.total() - self.baseline)

    def __enter__(self) -> ServerMemory:
        self.baseline = self.total()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def relation_bytes(url: str, index_name: str) -> tuple[int, int]:
    """Bytes of the listings table (heap and TOAST) and of its vector index."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT pg_table_size('job_listings'), pg_relation_size(to_regclass(%s))",
            (index_name,),
        ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


# Facet cost: search p50 with facets vs without, on the same queries. "words" adds text that
# matches: "17" ~1% of the generated titles, "engineer" all of them (a broad word: its newest
# matches only, shortlist.listings.search.BROAD_WINDOW), so the facets count real full-text
# matches as well as the vector candidates.
FACET_CASES: tuple[tuple[str, str], ...] = (
    ("vector only", ""),
    ("words, ~1% match", " or engineer 17"),
)
FACET_TARGET = 1.2


@dataclass
class CaseResult:
    recall: float
    bare_recall: float
    p50: list[float]
    bare_p50: list[float]
    p99: list[float]
    bare_p99: list[float]
    load: float = 0.0
    """The machine's 1-minute load average after the case's timed repetitions."""


def search_settings(method: str, rows: int) -> str:
    """The product's search setting for a table of ``rows`` under ``method``."""
    from shortlist.db.vector_search import IVFFLAT_PROBES, ef_search_for

    if method == "ivfflat":
        return f"ivfflat.probes {IVFFLAT_PROBES}"
    return f"hnsw.ef_search {ef_search_for(rows)}"


def recall_at_k(got: Sequence[Sequence[int]], truth: Sequence[Sequence[int]]) -> float:
    hits = sum(len(set(g[:K]) & set(t[:K])) for g, t in zip(got, truth, strict=True))
    return hits / sum(min(K, len(t)) for t in truth)


async def open_bare(url: str) -> psycopg.AsyncConnection[Any]:
    from shortlist.db.pool import configure_session

    # prepare_threshold=None: custom plans, as the product's queries (prepare=False). The
    # product's own search settings (HNSW candidate list, IVFFlat probes, iterative scans):
    # both statements have the same recall,
    # so the ratio is the cost of everything around the vector scan.
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True, prepare_threshold=None)
    await configure_session(conn)
    return conn


async def bare_search(
    conn: psycopg.AsyncConnection[Any], q: np.ndarray[Any, Any], location: str | None
) -> list[Any]:
    from shortlist.db.sql import like_pattern

    loc = like_pattern(location) if location is not None else None
    cur = await conn.execute(BARE_SQL[location is not None], {"q": q, "loc": loc, "k": K})
    return [r[0] for r in await cur.fetchall()]


async def _measure(ctx: Context, fixture: SearchFixture) -> dict[str, CaseResult]:
    from shortlist.db.pool import open_async_pool
    from shortlist.listings.search import search_jobs

    corpus = fixture.corpus
    embedder = LookupEmbedder(corpus.queries)
    position = {listing_id: i for i, listing_id in enumerate(corpus.ids)}
    cities = np.array(corpus.cities)
    pool = await open_async_pool(fixture.url, min_size=1, max_size=2, name="bench-search")
    bare = await open_bare(fixture.url)
    results: dict[str, CaseResult] = {}
    try:
        for case, location in CASES:
            mask = None if location is None else cities == location
            truth = exact_top_k(corpus.vectors, corpus.queries, K, mask)
            queries = range(len(corpus.queries))

            async def product(i: int, location: str | None = location) -> list[int]:
                result = await search_jobs(
                    pool, embedder, LookupEmbedder.text(i), size=K, location=location
                )
                return [position[h.listing.id] for h in result.hits]

            async def baseline(i: int, location: str | None = location) -> list[int]:
                ids = await bare_search(bare, corpus.queries[i], location)
                return [position[x] for x in ids]

            # Warm-up pass (also the recall pass: results do not depend on timing).
            got = [await product(i) for i in queries]
            got_bare = [await baseline(i) for i in queries]
            res = CaseResult(recall_at_k(got, truth), recall_at_k(got_bare, truth), [], [], [], [])
            for rep in range(ctx.repetitions()):
                lat: list[float] = []
                lat_bare: list[float] = []
                for i in queries:
                    pair = (product, lat), (baseline, lat_bare)
                    for fn, sink in pair if (i + rep) % 2 == 0 else pair[::-1]:
                        t0 = time.perf_counter()
                        await fn(i)
                        sink.append((time.perf_counter() - t0) * 1000)
                res.p50.append(percentile(lat, 50))
                res.bare_p50.append(percentile(lat_bare, 50))
                res.p99.append(percentile(lat, 99))
                res.bare_p99.append(percentile(lat_bare, 99))
            res.load = os.getloadavg()[0]
            ctx.log(
                f"search: {case}: recall {res.recall:.4f} (bare SQL {res.bare_recall:.4f}),"
                f" p50 {Stat.of(res.p50).median:.2f} ms vs bare {Stat.of(res.bare_p50).median:.2f}"
            )
            results[case] = res
    finally:
        await bare.close()
        await pool.close()
    return results


async def _measure_facets(ctx: Context, fixture: SearchFixture) -> dict[str, tuple[Stat, Stat]]:
    from shortlist.db.pool import open_async_pool
    from shortlist.listings.search import search_jobs

    embedder = LookupEmbedder(fixture.corpus.queries)
    pool = await open_async_pool(fixture.url, min_size=1, max_size=2, name="bench-facets")
    out: dict[str, tuple[Stat, Stat]] = {}
    try:
        for case, words in FACET_CASES:
            p50_with: list[float] = []
            p50_without: list[float] = []
            queries = range(len(fixture.corpus.queries))
            for rep in range(ctx.repetitions() + 1):  # the first pass warms up
                lat: dict[bool, list[float]] = {True: [], False: []}
                for i in queries:
                    order = (True, False) if (i + rep) % 2 == 0 else (False, True)
                    for facets in order:
                        t0 = time.perf_counter()
                        await search_jobs(
                            pool, embedder, LookupEmbedder.text(i) + words, size=K,
                            with_facets=facets,
                        )  # fmt: skip
                        lat[facets].append((time.perf_counter() - t0) * 1000)
                if rep:
                    p50_with.append(percentile(lat[True], 50))
                    p50_without.append(percentile(lat[False], 50))
            out[case] = (Stat.of(p50_with), Stat.of(p50_without))
            ctx.log(
                f"search: facets, {case}: p50 {out[case][0].median:.2f} ms"
                f" vs {out[case][1].median:.2f} without"
            )
    finally:
        await pool.close()
    return out


async def _profile_case(fixture: SearchFixture, location: str | None) -> None:
    from shortlist.db.pool import open_async_pool
    from shortlist.listings.search import search_jobs

    embedder = LookupEmbedder(fixture.corpus.queries)
    pool = await open_async_pool(fixture.url, min_size=1, max_size=2, name="bench-profile")
    try:
        for _ in range(3):
            for i in range(len(fixture.corpus.queries)):
                await search_jobs(pool, embedder, LookupEmbedder.text(i), size=K, location=location)
    finally:
        await pool.close()


def run(ctx: Context) -> list[Record]:
    fixture = ensure_fixture(ctx)
    results = asyncio.run(_measure(ctx, fixture))
    note = f"{fixture.rows:,} listings, {len(fixture.corpus.queries)} queries"
    records: list[Record] = []
    for case, _ in CASES:
        res = results[case]
        records.append(
            Record(
                NAME,
                f"recall@10, {case}",
                Stat.one(res.recall),
                Stat.one(1.0),
                target=0.98,
                unit="%",
                baseline_name="exact",
                note=f"{note}; {search_settings(fixture.build.plan.method, fixture.rows)};"
                f" bare SQL {res.bare_recall:.2%}",
            )
        )
    for case, _ in CASES:
        res = results[case]
        records.append(
            Record(
                NAME,
                f"p50 latency, {case}",
                Stat.of(res.p50),
                Stat.of(res.bare_p50),
                target=2.0,
                better="lower",
                unit="ms",
                baseline_name="bare SQL",
                note=f"p99 {Stat.of(res.p99).median:.2f} vs {Stat.of(res.bare_p99).median:.2f} ms;"
                f" load average {res.load:.1f}",
            )
        )
    facets = asyncio.run(_measure_facets(ctx, fixture))
    for case, (with_facets, without) in facets.items():
        records.append(
            Record(
                NAME,
                f"p50 latency with facets, {case}",
                with_facets,
                without,
                target=FACET_TARGET,
                better="lower",
                unit="ms",
                baseline_name="without facets",
                note=note,
            )
        )
    build = fixture.build
    table_bytes, index_bytes = relation_bytes(fixture.url, build.name)
    records.append(
        Record(
            NAME,
            "vector index build (CONCURRENTLY)",
            Stat.one(build.seconds),
            Stat.one(BUILD_BUDGET_SECONDS),
            target=1.0,
            better="lower",
            unit="s",
            baseline_name="10-minute budget",
            note=f"{note}, {os.cpu_count()} cores, load average {fixture.build_load:.1f};"
            f" {build.plan.describe()}",
        )
    )
    records.append(
        report(NAME, "binary COPY + VACUUM ANALYZE of the corpus", fixture.load_seconds, unit="s")
    )
    per = fixture.rows
    records.append(
        report(
            NAME,
            "vector index bytes per listing",
            index_bytes / per,
            unit="B",
            note=f"{index_bytes / 2**20:.0f} MB in all",
        )
    )
    records.append(
        report(
            NAME,
            "table bytes per listing",
            table_bytes / per,
            unit="B",
            note=f"heap + TOAST, {table_bytes / 2**20:.0f} MB in all",
        )
    )
    records.append(
        report(
            NAME,
            "build memory (peak server PSS) per listing",
            fixture.build_memory / per,
            unit="B",
            note=f"{fixture.build_memory / 2**20:.0f} MB in all",
        )
    )

    missed = [r for r in records if r.met is False and r.metric.startswith("p50 latency, ")]
    if ctx.profiles_enabled and (missed):
        worst = max(missed, key=lambda r: r.ratio or 0.0)
        location = dict(CASES)[worst.metric.split(", ", 1)[1]]
        ctx.log(f"search: latency target missed ({worst.metric}); profiling search_jobs")
        asyncio.run(profile_async(ctx, NAME, lambda: _profile_case(fixture, location)))
    return records
