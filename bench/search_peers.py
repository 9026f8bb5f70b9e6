"""The peers of search-http: plain hybrid searches written in SQL alone, measured on the same
corpus, with the same query vectors (precomputed by the model), the same concurrency and the
product's session settings (``hnsw.ef_search``, iterative scans: ``shortlist.db.pool``).

``hybrid_search``  Supabase's published function, verbatim but for the names of this schema
                   (``documents`` → ``job_listings``, ``fts`` → ``search_tsv``, ``vector(512)`` →
                   ``vector(384)``): "Hybrid search", supabase.com/docs/guides/ai/hybrid-search
                   (apps/docs/content/guides/ai/hybrid-search.mdx in supabase/supabase).
                   Each list numbered with ``row_number() over (order by …)`` and then limited:
                   as published, the semantic list is a window over the whole table, which no
                   vector index serves.
``index-first``    the same reciprocal-rank fusion (k 50, weights 1, ``websearch_to_tsquery``,
                   ``ts_rank_cd``, 20 from each list, 10 answered), each list written as an
                   index can serve it: ``ORDER BY <index expression> LIMIT 20`` for the vector
                   list (the product's HNSW index on half-precision vectors) and ``ORDER BY
                   ts_rank_cd(…) DESC LIMIT 20`` over the GIN index's matches.
``vector top-10``  the bare nearest 10 through the same HNSW index.

Each answers ids only (what the product then fetches as listings is not part of its work).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import psutil

from bench.common import percentile

# Supabase's function (see the module docstring), with this schema's names.
HYBRID_SEARCH_FUNCTION = """
create or replace function hybrid_search(
  query_text text,
  query_embedding vector(384),
  match_count int,
  full_text_weight float = 1,
  semantic_weight float = 1,
  rrf_k int = 50
)
returns setof job_listings
language sql
as $$
with full_text as (
  select
    id,
    -- Note: ts_rank_cd is not indexable but will only rank matches of the where clause
    -- which shouldn't be too big
    row_number() over(order by ts_rank_cd(search_tsv, websearch_to_tsquery(query_text)) desc)
      as rank_ix
  from
    job_listings
  where
    search_tsv @@ websearch_to_tsquery(query_text)
  order by rank_ix
  limit least(match_count, 30) * 2
),
semantic as (
  select
    id,
    row_number() over (order by embedding <#> query_embedding) as rank_ix
  from
    job_listings
  order by rank_ix
  limit least(match_count, 30) * 2
)
select
  job_listings.*
from
  full_text
  full outer join semantic
    on full_text.id = semantic.id
  join job_listings
    on coalesce(full_text.id, semantic.id) = job_listings.id
order by
  coalesce(1.0 / (rrf_k + full_text.rank_ix), 0.0) * full_text_weight +
  coalesce(1.0 / (rrf_k + semantic.rank_ix), 0.0) * semantic_weight
  desc
limit
  least(match_count, 30)
$$
"""

HYBRID_SEARCH = "SELECT id FROM hybrid_search(%(q)s, %(v)s::vector(384), 10)"

INDEX_FIRST = """
WITH full_text AS (
  SELECT id, row_number() OVER () AS rank_ix
    FROM (SELECT id
            FROM job_listings, websearch_to_tsquery('english', %(q)s) AS query
           WHERE search_tsv @@ query
           ORDER BY ts_rank_cd(search_tsv, query) DESC
           LIMIT 20) AS t
),
semantic AS (
  SELECT id, row_number() OVER () AS rank_ix
    FROM (SELECT id
            FROM job_listings
           ORDER BY embedding::halfvec(384) <=> %(v)s::vector::halfvec
           LIMIT 20) AS s
)
SELECT coalesce(f.id, s.id) AS id
  FROM full_text AS f FULL OUTER JOIN semantic AS s ON f.id = s.id
 ORDER BY coalesce(1.0 / (50 + f.rank_ix), 0.0) + coalesce(1.0 / (50 + s.rank_ix), 0.0) DESC
 LIMIT 10
"""

VECTOR_TOP_10 = (
    "SELECT id FROM job_listings ORDER BY embedding::halfvec(384) <=> %(v)s::vector::halfvec"
    " LIMIT 10"
)

PEERS = {
    "Supabase hybrid_search": HYBRID_SEARCH,
    "index-first RRF": INDEX_FIRST,
    "vector top-10": VECTOR_TOP_10,
}


def create(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(HYBRID_SEARCH_FUNCTION)


async def measure(
    url: str,
    statement: str,
    texts: Sequence[str],
    vectors: np.ndarray[Any, Any],
    concurrency: int,
) -> tuple[float, list[float], float]:
    """``statement`` once per (text, vector), ``concurrency`` at once on the product's pool
    (its session settings); returns (statements per second, latencies in ms, CPU seconds of
    the PostgreSQL backends that ran them)."""
    from shortlist.db.pool import open_async_pool

    pool = await open_async_pool(
        url, min_size=concurrency, max_size=concurrency, name="bench-peers"
    )
    try:
        await pool.wait()
        latencies: list[float] = []
        counter = iter(range(len(texts)))
        backends: list[psutil.Process] = []
        started_cpu: list[float] = []
        ended_cpu: list[float] = []

        async def lane() -> None:
            async with pool.connection() as conn:
                await conn.set_autocommit(True)
                backend = psutil.Process(conn.info.backend_pid)
                backends.append(backend)
                started_cpu.append(_cpu(backend))
                for i in counter:
                    t0 = time.perf_counter()
                    cur = await conn.execute(
                        statement, {"q": texts[i], "v": vectors[i]}, prepare=False
                    )
                    await cur.fetchall()
                    latencies.append((time.perf_counter() - t0) * 1000)
                ended_cpu.append(_cpu(backend))

        started = time.perf_counter()
        await asyncio.gather(*(lane() for _ in range(concurrency)))
        rate = len(texts) / (time.perf_counter() - started)
        return rate, latencies, sum(ended_cpu) - sum(started_cpu)
    finally:
        await pool.close()


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def summary(rate: float, latencies: Sequence[float]) -> dict[str, float]:
    return {
        "rate": rate,
        "p50": percentile(latencies, 50),
        "p99": percentile(latencies, 99),
    }
