"""indexer: rows/s through the full embedding indexer vs the model alone.

``shortlist``  the product's indexer worker (``EmbeddingQueue`` of ``job_listings`` on
               ``QueueWorker``, configured as ``bootstrap.indexer_workers`` does) with the model
               (``LocalEmbedder``, all-MiniLM-L6-v2 on the CPU) drains N pending listings: claim
               with a lease, embed the batch off the event loop, write vectors + status flip in
               one transaction (HNSW index maintenance included). The throttle is the only
               setting changed: ``SHORTLIST_INDEXER_POLL_INTERVAL`` = 10 ms instead of 30 s (the
               throttle is a deliberate cap of batch/poll-interval rows per second, not a cost).
``baseline``   ``model.encode`` on the very same texts (read back from the database with the
               indexer's own text expression), in the same batches (``SHORTLIST_INDEXER_BATCH_SIZE``
               = 128 rows per call, the embedder's encode batch size inside), nothing else.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

from bench.common import Context, Record, Stat, profile_async
from shortlist.embedding.spaces import Spaces

NAME = "indexer"
BATCH = 128  # SHORTLIST_INDEXER_BATCH_SIZE default


def _insert_listings(url: str, rows: int) -> None:
    from bench.corpus import listing_texts
    from shortlist.db.pool import connect
    from shortlist.listings.models import ListingCreate
    from shortlist.listings.repository import copy_listings

    items = [ListingCreate.model_validate(r) for r in listing_texts(rows)]

    async def load() -> None:
        async with await psycopg.AsyncConnection.connect(url, row_factory=dict_row) as conn:
            await conn.execute("TRUNCATE job_listings CASCADE")
            await copy_listings(conn, items, source="file")
            await conn.commit()

    asyncio.run(load())
    with connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE job_listings")


def _texts(url: str) -> list[str]:
    from shortlist.indexer import LISTINGS

    query = sql.SQL("SELECT {} FROM job_listings ORDER BY created_at, id").format(
        sql.SQL(LISTINGS.text_sql)
    )
    with psycopg.connect(url) as conn:
        rows = conn.execute(query).fetchall()
    return [str(r[0]) for r in rows]


async def run_indexer(url: str, embedder: Any, table: str = "job_listings") -> int:
    """Drain every pending row of ``table`` through the product's indexer; returns rows
    embedded."""
    from shortlist.bootstrap import Services, indexer_workers
    from shortlist.config import Settings
    from shortlist.db.pool import open_async_pool
    from shortlist.indexer import CORPORA, ClaimedRow, EmbeddingQueue
    from shortlist.queue import Notifier, QueueWorker

    stop = asyncio.Event()

    class DrainingQueue(EmbeddingQueue):
        """The product queue; the run ends when a claim comes back empty."""

        async def claim(self, worker_id: str, limit: int, lease: float) -> list[ClaimedRow]:
            rows = await super().claim(worker_id, limit, lease)
            if not rows:
                stop.set()
            return rows

    settings = Settings(indexer_poll_interval=0.01, indexer_batch_size=BATCH)
    pool = await open_async_pool(url, min_size=1, max_size=4, name="bench-indexer")
    try:
        services = Services(settings, url, pool, Notifier(url), Spaces.of_embedder(pool, embedder))
        [corpus] = [c for c in CORPORA if c.table == table]
        queue = DrainingQueue(pool, embedder, corpus)
        [product] = indexer_workers(services, [corpus])
        worker = QueueWorker(queue, product.config, keeper=services.keeper)
        await worker.run(stop)
        return queue.totals.embedded
    finally:
        await pool.close()


def _encode_alone(model: Any, texts: list[str], encode_batch: int) -> None:
    """The model's own ``encode`` (shortlist.embedding.onnx_model), ``encode_batch`` at a time."""
    for start in range(0, len(texts), BATCH):
        batch = texts[start : start + BATCH]
        for i in range(0, len(batch), encode_batch):
            model.encode(batch[i : i + encode_batch])


class StandInModel:
    """Smoke runs only: ``encode`` of the hash embedder (the real model takes 6-10 s to load,
    which a smoke run cannot afford); ``make bench`` always uses all-MiniLM-L6-v2."""

    def encode(self, texts: list[str]) -> Any:
        import numpy as np

        from bench.talent_support import HashEmbedder

        return np.asarray(asyncio.run(HashEmbedder().embed(texts)), dtype=np.float32)


def _embedder_and_model(ctx: Context) -> tuple[Any, Any, int]:
    """The indexer's embedder, the model it calls, and the model's encode batch size."""
    if ctx.smoke:
        from bench.talent_support import HashEmbedder

        return HashEmbedder(), StandInModel(), 32
    from shortlist.embedding.local import LocalEmbedder

    embedder = LocalEmbedder()
    embedder.warm_up()
    return embedder, embedder._model("bulk").model, embedder.bulk_batch_size


def run(ctx: Context) -> list[Record]:
    rows = ctx.size(1024, 16)
    url = ctx.pg.create_database("bench_indexer")
    ctx.log(f"indexer: loading the local model; {rows} listings, batch {BATCH}")
    embedder, model, encode_batch = _embedder_and_model(ctx)
    _insert_listings(url, rows)
    texts = _texts(url)

    # Warm-up: both paths once (model kernels, DB caches, prepared plans).
    warm = min(rows, BATCH)
    _encode_alone(model, texts[:warm], encode_batch)
    asyncio.run(run_indexer(url, embedder))

    indexer_rates: list[float] = []
    encode_rates: list[float] = []
    for rep in range(ctx.repetitions()):
        _insert_listings(url, rows)
        started = time.perf_counter()
        done = asyncio.run(run_indexer(url, embedder))
        elapsed = time.perf_counter() - started
        if done != rows:
            raise RuntimeError(f"indexer embedded {done} of {rows} rows")
        indexer_rates.append(rows / elapsed)
        started = time.perf_counter()
        _encode_alone(model, texts, encode_batch)
        encode_rates.append(rows / (time.perf_counter() - started))
        ctx.log(
            f"indexer: rep {rep + 1}: indexer {indexer_rates[-1]:.1f} rows/s,"
            f" encode alone {encode_rates[-1]:.1f} rows/s"
        )
    record = Record(
        NAME,
        "rows/s through the indexer vs model.encode alone",
        Stat.of(indexer_rates),
        Stat.of(encode_rates),
        target=0.9,
        unit="rows/s",
        baseline_name="encode",
        note=f"{rows} listings, batch {BATCH}, all-MiniLM-L6-v2 on CPU",
    )
    if ctx.profiles_enabled and (record.met is False):
        _insert_listings(url, rows)
        ctx.log("indexer: target missed; profiling one indexer run")
        asyncio.run(profile_async(ctx, NAME, lambda: run_indexer(url, embedder)))
    return [record]
