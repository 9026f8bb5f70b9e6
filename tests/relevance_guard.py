"""The relevance guard of ``make test``: does job search still rank real postings as well as
the figures recorded in the repository say?

A slice of the relevance development set (bench/bench_relevance.py: real USAJOBS postings, each
labelled by its agency with an occupational series) and the **held-out** half of its job
queries (``bench/relevance/job_queries.csv``; the tune half is what ranking is fitted on).
The slice (``tests/data/relevance_guard/listings.csv``) holds, for each held-out query, what a
search of the whole set would have to choose among: the top 20 of the vector list, of BM25 and
of the product's ranking over all ~9,000 postings, and up to 10 of its relevant postings; plus
200 postings drawn at random. Its listings go in through the product's own ingest
(``ingest_listings``); their vectors, all-MiniLM-L6-v2's through the product's indexer, are kept
in ``vectors.npy`` (half precision, as the vector index reads them) under the key of the model's
weights and the slice: with another model or slice the indexer embeds them again in the test
(slow: tens of seconds) instead of reading vectors another model made. Each query is asked
through ``search_jobs`` with the real local model (the ONNX graph the product uses).

Precision@10 and nDCG@10 (binary gains, bench/bench_relevance.py's definitions) must stay
within :data:`TOLERANCE` of ``figures.json``, below and above: a change that moves ranking
records its figures (``python -m tests.relevance_guard record``) in the same commit, with the
relevance bench before and after (``python -m bench --only relevance``).

``python -m tests.relevance_guard build URL`` chooses the slice again from a database that
holds the whole development set, embedded (the relevance bench's ``bench_relevance_jobs``).
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import json
import random
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from bench.bench_relevance import HERE as QUERY_DIR
from bench.bench_relevance import ndcg_at, precision_at, split_halves
from pgvector.psycopg import register_vector

DATA = Path(__file__).resolve().parent / "data" / "relevance_guard"
LISTINGS = DATA / "listings.csv"
VECTORS = DATA / "vectors.npy"
VECTORS_KEY = DATA / "vectors.key"
FIGURES = DATA / "figures.json"
QUERIES = QUERY_DIR / "job_queries.csv"
TOLERANCE = 0.01
"""How far below (or above) the recorded figures a run may land (a hit and a half of the 260
that the held-out queries' top tens hold, in precision): a run of the same code lands on them
(listing ids are fixed, so ties fall the same way); the margin absorbs float rounding of
another CPU's ONNX Runtime."""
DEPTH = 10
PER_LIST = 20
RELEVANT_PER_QUERY = 10
RANDOM_LISTINGS = 200
CITY = "United States"


@dataclass(frozen=True)
class GuardQuery:
    text: str
    series: frozenset[str]


@dataclass(frozen=True)
class GuardListing:
    title: str
    agency: str
    department: str
    series: str


def held_out_queries() -> list[GuardQuery]:
    with QUERIES.open(encoding="utf-8", newline="") as f:
        specs = list(csv.DictReader(f))
    halves = split_halves([s["group"] for s in specs])
    return [
        GuardQuery(s["query"], frozenset(s["relevant_series"].split()))
        for s, half in zip(specs, halves, strict=True)
        if half == "held-out"
    ]


def listings() -> list[GuardListing]:
    with LISTINGS.open(encoding="utf-8", newline="") as f:
        return [
            GuardListing(r["title"], r["agency"], r["department"], r["series"])
            for r in csv.DictReader(f)
        ]


def vectors_key(model_digest: str) -> str:
    """The model's weights digest and the slice's bytes: what the kept vectors are made of."""
    return f"{model_digest}:{hashlib.sha256(LISTINGS.read_bytes()).hexdigest()[:16]}"


# --- the scorer ------------------------------------------------------------------------------


def figures(
    queries: Sequence[GuardQuery],
    rankings: Sequence[Sequence[str]],
    series_of: dict[str, str],
) -> dict[str, float]:
    """Mean precision@10 and nDCG@10 of ``rankings`` (listing ids, best first, one list per
    query) over ``queries``; a listing is relevant when its series is among the query's."""
    counts: dict[str, int] = {}
    for s in series_of.values():
        counts[s] = counts.get(s, 0) + 1
    p, n = [], []
    for q, ranked in zip(queries, rankings, strict=True):
        rel = [series_of.get(key) in q.series for key in ranked]
        p.append(precision_at(rel, DEPTH))
        n.append(ndcg_at(rel, DEPTH, sum(counts.get(s, 0) for s in q.series)))
    return {"P@10": round(sum(p) / len(p), 4), "nDCG@10": round(sum(n) / len(n), 4)}


def departures(measured: dict[str, float], recorded: dict[str, float]) -> list[str]:
    """What is wrong with ``measured`` against ``recorded`` (empty: the guard passes): a figure
    more than :data:`TOLERANCE` below its record is a regression; more than that above, a
    ranking change whose figures were not recorded."""
    out = []
    for metric in ("P@10", "nDCG@10"):
        got, want = measured[metric], recorded[metric]
        if got < want - TOLERANCE:
            out.append(f"{metric} fell to {got:.4f} from the recorded {want:.4f}")
        elif got > want + TOLERANCE:
            out.append(
                f"{metric} rose to {got:.4f} from the recorded {want:.4f}: record it"
                " (python -m tests.relevance_guard record) with the relevance bench"
            )
    return out


def recorded() -> dict[str, float]:
    data: dict[str, float] = json.loads(FIGURES.read_text(encoding="utf-8"))["figures"]
    return data


# --- loading the slice -----------------------------------------------------------------------


async def load(url: str) -> dict[str, str]:
    """Ingest the slice into the database at ``url`` and give every listing its vector (the
    kept ones when their key matches the installed model, else the indexer's); returns each
    listing id's series."""
    from bench.bench_indexer import run_indexer
    from psycopg.rows import dict_row

    from shortlist.embedding.local import LocalEmbedder
    from shortlist.embedding.onnx_model import default_model_path, weights_digest
    from shortlist.listings.ingest import ListingFileReader, ingest_listings

    rows = listings()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "slice.csv"
        with path.open("w", encoding="utf-8", newline="") as f:
            out = csv.writer(f)
            out.writerow(["company", "title", "city", "description"])
            for r in rows:
                out.writerow([r.agency, r.title, CITY, r.department])
        conn = await psycopg.AsyncConnection.connect(url, row_factory=dict_row, autocommit=True)
        try:
            with ListingFileReader(path).open() as reader:
                await ingest_listings(conn, reader)
            # Ids of the listing's own words, not random ones: ties in a ranking go by id, and
            # the same code should measure the same figures on every run.
            await conn.execute(
                "UPDATE job_listings SET id = md5(job_title || '|' || company_name)::uuid"
            )
            cur = await conn.execute("SELECT id, job_title, company_name FROM job_listings")
            ids = {(r["job_title"], r["company_name"]): str(r["id"]) for r in await cur.fetchall()}
        finally:
            await conn.close()
    order = [ids[(r.title, r.agency)] for r in rows]
    key = vectors_key(weights_digest(default_model_path()))
    if VECTORS_KEY.exists() and VECTORS_KEY.read_text().strip() == key:
        kept = np.load(VECTORS).astype(np.float32)
        with psycopg.connect(url, autocommit=True) as sync:
            register_vector(sync)
            with sync.cursor() as cur:
                cur.executemany(
                    "UPDATE job_listings SET embedding = %s, embedded_hash = content_hash,"
                    " embedding_status = 'embedded', embedded_at = greatest(now(), updated_at)"
                    " WHERE id = %s",
                    list(zip(kept, order, strict=True)),
                )
    else:
        embedder = LocalEmbedder()
        await run_indexer(url, embedder, "job_listings")
    with psycopg.connect(url, autocommit=True) as sync:
        sync.execute("ANALYZE job_listings")
    return {i: r.series for i, r in zip(order, rows, strict=True)}


async def rankings(
    url: str, queries: Sequence[GuardQuery], embedder: Any = None
) -> list[list[str]]:
    """Each query's top :data:`DEPTH` through ``search_jobs`` and the real local model (or
    ``embedder``)."""
    from shortlist.db.pool import open_async_pool
    from shortlist.embedding.local import LocalEmbedder
    from shortlist.listings.search import search_jobs

    embedder = embedder or LocalEmbedder()
    pool = await open_async_pool(url, min_size=1, max_size=2, name="relevance-guard")
    try:
        out = []
        for q in queries:
            result = await search_jobs(pool, embedder, q.text, size=DEPTH, with_facets=False)
            out.append([str(h.listing.id) for h in result.hits])
        return out
    finally:
        await pool.close()


# --- building the slice and recording the figures --------------------------------------------


def build(url: str) -> None:
    """Choose the slice from the whole development set at ``url`` (see the module docstring)
    and embed it through the indexer into ``vectors.npy``."""
    from bench.bench_relevance import load_corpus, query_terms

    from shortlist.embedding.local import LocalEmbedder

    source = Path("/work/shared/relevance/usajobs_2024_2025.csv")
    series_of: dict[tuple[str, str], tuple[str, str]] = {}
    with source.open(encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            key = (r["position_title"].strip(), r["agency"].strip())
            series_of.setdefault(key, (r["occupation_series"][:4], r["department"]))
    with psycopg.connect(url) as conn:
        by_id = {
            str(i): (t, c)
            for i, t, c in conn.execute("SELECT id, job_title, company_name FROM job_listings")
        }
    queries = held_out_queries()
    corpus = load_corpus(url, "job_listings")
    embedder = LocalEmbedder()
    vectors = asyncio.run(embedder.embed([q.text for q in queries]))
    terms = query_terms(url, [q.text for q in queries])
    product = asyncio.run(_product_top(url, queries))
    chosen: dict[str, None] = {}
    for q, vector, words, top in zip(queries, vectors, terms, product, strict=True):
        for key in (*corpus.nearest(vector, PER_LIST), *corpus.bm25(words, PER_LIST), *top):
            chosen[key] = None
        relevant = sorted(k for k, tc in by_id.items() if series_of[tc][0] in q.series)
        for key in random.Random(q.text).sample(relevant, min(RELEVANT_PER_QUERY, len(relevant))):
            chosen[key] = None
    rest = sorted(k for k in by_id if k not in chosen)
    for key in random.Random(40).sample(rest, RANDOM_LISTINGS):
        chosen[key] = None
    DATA.mkdir(parents=True, exist_ok=True)
    with LISTINGS.open("w", encoding="utf-8", newline="") as f:
        out = csv.writer(f)
        out.writerow(["title", "agency", "department", "series"])
        for key in sorted(chosen, key=lambda k: by_id[k]):
            title, agency = by_id[key]
            series, department = series_of[(title, agency)]
            out.writerow([title, agency, department, series])
    print(f"relevance guard: {len(chosen)} listings chosen", file=sys.stderr)
    # Their vectors as the indexer stored them there (the same model, the same text).
    with psycopg.connect(url) as conn:
        register_vector(conn)
        stored = {
            (t, c): v
            for t, c, v in conn.execute(
                "SELECT job_title, company_name, embedding FROM job_listings"
            )
        }
    _keep_vectors(stored)


async def _product_top(url: str, queries: Sequence[GuardQuery]) -> list[list[str]]:
    return [r[:PER_LIST] for r in await _rankings_at(url, queries, PER_LIST)]


async def _rankings_at(url: str, queries: Sequence[GuardQuery], size: int) -> list[list[str]]:
    from shortlist.db.pool import open_async_pool
    from shortlist.embedding.local import LocalEmbedder
    from shortlist.listings.search import search_jobs

    embedder = LocalEmbedder()
    pool = await open_async_pool(url, min_size=1, max_size=2, name="relevance-guard")
    try:
        return [
            [str(h.listing.id) for h in (await search_jobs(pool, embedder, q.text, size=size)).hits]
            for q in queries
        ]
    finally:
        await pool.close()


def _scratch_database() -> Any:
    """A context manager: the URL of a migrated database on an embedded server of its own."""
    import contextlib

    from shortlist.db.embedded import EmbeddedServer
    from shortlist.db.migrate import migrate

    @contextlib.contextmanager
    def scratch() -> Any:
        with tempfile.TemporaryDirectory(prefix="relevance-guard-") as tmp:
            server = EmbeddedServer(Path(tmp), delete_on_close=True)
            try:
                with psycopg.connect(server.url(), autocommit=True) as conn:
                    conn.execute("CREATE DATABASE guard")
                url = server.url("guard")
                migrate(url)
                yield url
            finally:
                server.close()

    return scratch()


def _keep_vectors(stored: dict[tuple[str, str], Any]) -> None:
    """The slice's vectors (by title and agency), kept with their key."""
    from shortlist.embedding.onnx_model import default_model_path, weights_digest

    kept = np.asarray([stored[(r.title, r.agency)].to_numpy() for r in listings()], np.float16)
    np.save(VECTORS, kept)
    VECTORS_KEY.write_text(vectors_key(weights_digest(default_model_path())) + "\n")


def record() -> dict[str, float]:
    """Run the guard on a scratch database and write its figures to ``figures.json``."""
    with _scratch_database() as url:
        series_of = asyncio.run(load(url))
        queries = held_out_queries()
        measured = figures(queries, asyncio.run(rankings(url, queries)), series_of)
    FIGURES.write_text(
        json.dumps(
            {
                "figures": measured,
                "queries": len(queries),
                "listings": len(series_of),
                "how": "python -m tests.relevance_guard record",
            },
            indent=1,
        )
        + "\n",
        encoding="utf-8",
    )
    return measured


def main(argv: Sequence[str]) -> int:
    if len(argv) == 2 and argv[0] == "build":
        build(argv[1])
        print(json.dumps(record()))
        return 0
    if argv == ["record"]:
        print(json.dumps(record()))
        return 0
    print("usage: python -m tests.relevance_guard build URL | record", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
