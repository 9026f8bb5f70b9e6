"""Recall@10 and latency of vector search settings on a kept search corpus, without rebuilding.

Loading and indexing a million-listing corpus takes minutes (half an hour with an HNSW
index); the search settings (``hnsw.ef_search``, ``ivfflat.probes``, iterative scans,
over-fetching for an exact re-rank) need no rebuild. So: keep the database of one run, then
try settings on it::

    python -m bench --only search --rows 1000000 --keep-db /tmp/search-1m
    python -m bench.search_settings /tmp/search-1m --probes 30,40,50,60 --tuning
    python -m bench.search_settings /tmp/search-1m --ef 200,400,800 --fetch 10,40  # HNSW

``--tuning`` measures on 400 other queries from the same mixture, not the 200 the benchmark
reports: settings are chosen on those, and the benchmark's figures stay held-out.

Each line printed is one setting and case: recall@10 against the exact top 10 (numpy brute
force over the same generated corpus: same seed, same rows), p50 / p99 of the statement, the
plan's scan and the machine's load average. The statement is the bare one of
``bench.bench_search`` (the product's filter predicate verbatim), or, with ``fetch`` > 10, the
``fetch`` nearest by the index's half-precision order re-ranked by the exact float4 distance.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from bench.bench_search import CASES, K
from bench.corpus import exact_top_k, vector_corpus
from shortlist.db.embedded import EmbeddedServer
from shortlist.db.sql import like_pattern

DATABASE = "bench_search"
ORDER = "ORDER BY embedding::halfvec(384) <=> %(q)s::halfvec"
FILTER = " WHERE city_location ILIKE %(loc)s"


def statement(filtered: bool, fetch: int) -> str:
    where = FILTER if filtered else ""
    if fetch <= K:
        return f"SELECT id FROM job_listings{where} {ORDER} LIMIT {K}"
    return (
        f"WITH c AS MATERIALIZED (SELECT id, embedding <=> %(q)s AS d FROM job_listings{where}"
        f" {ORDER} LIMIT {fetch}) SELECT id FROM c ORDER BY d LIMIT {K}"
    )


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.search_settings")
    parser.add_argument("dir", type=Path, help="the --keep-db directory of a search run")
    parser.add_argument("--ef", type=ints, default=[200], help="hnsw.ef_search values")
    parser.add_argument("--probes", type=ints, default=[50], help="ivfflat.probes values")
    parser.add_argument(
        "--tuning", action="store_true", help="400 tuning queries, not the benchmark's 200"
    )
    parser.add_argument("--fetch", type=ints, default=[K], help="rows re-ranked (10: none)")
    parser.add_argument("--max-scan-tuples", type=ints, default=[20_000])
    parser.add_argument("--iterative", default="relaxed_order")
    parser.add_argument(
        "--mem-multiplier", type=float, default=1.0, help="hnsw.scan_mem_multiplier"
    )
    parser.add_argument("--cases", default=",".join(c for c, _ in CASES))
    parser.add_argument("--queries", type=int, default=None, help="default: all of them")
    args = parser.parse_args(argv)

    server = EmbeddedServer(args.dir)
    url = server.url(DATABASE)
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM job_listings").fetchone()
    rows = int(row[0]) if row else 0
    # The run's corpus: same seed, same size (the query count changes the queries only).
    corpus = vector_corpus(rows, 400 if args.tuning else 200)
    queries = corpus.queries[: args.queries or len(corpus.queries)]
    position = {listing_id: i for i, listing_id in enumerate(corpus.ids)}
    cities = np.array(corpus.cities)
    wanted = set(args.cases.split(","))
    try:
        with psycopg.connect(url, autocommit=True, prepare_threshold=None) as conn:
            register_vector(conn)
            conn.execute("SET hnsw.iterative_scan = " + args.iterative)
            conn.execute("SET ivfflat.iterative_scan = " + args.iterative)
            conn.execute(f"SET hnsw.scan_mem_multiplier = {args.mem_multiplier}")
            for case, location in CASES:
                if case not in wanted:
                    continue
                mask = None if location is None else cities == location
                truth = exact_top_k(corpus.vectors, queries, K, mask)
                loc = None if location is None else like_pattern(location)
                grid = [
                    (ef, probes, fetch, tuples)
                    for ef in args.ef
                    for probes in args.probes
                    for fetch in args.fetch
                    for tuples in args.max_scan_tuples
                ]
                for ef, probes, fetch, tuples in grid:
                    conn.execute(f"SET hnsw.ef_search = {ef}")
                    conn.execute(f"SET hnsw.max_scan_tuples = {tuples}")
                    conn.execute(f"SET ivfflat.probes = {probes}")
                    sql = statement(loc is not None, fetch)
                    result = measure(conn, sql, queries, loc, truth, position)
                    setting = {"case": case, "ef": ef, "probes": probes, "fetch": fetch}
                    print(json.dumps(setting | {"mst": tuples} | result), flush=True)
    finally:
        server.close()


def measure(
    conn: psycopg.Connection[Any],
    sql: str,
    queries: np.ndarray[Any, Any],
    loc: str | None,
    truth: list[list[int]],
    position: dict[Any, int],
) -> dict[str, Any]:
    """One pass for recall (it also warms up), one timed pass."""
    hits = 0
    latencies: list[float] = []
    for timed in (False, True):
        for i, q in enumerate(queries):
            started = time.perf_counter()
            got = [position[r[0]] for r in conn.execute(sql, {"q": q, "loc": loc}).fetchall()]
            if timed:
                latencies.append((time.perf_counter() - started) * 1000)
            else:
                hits += len(set(got) & set(truth[i]))
    plan = conn.execute("EXPLAIN " + sql, {"q": queries[0], "loc": loc}).fetchall()
    scans = [r[0].strip() for r in plan if "Scan" in r[0]]
    return {
        "recall": round(hits / sum(len(t) for t in truth), 4),
        "p50": round(statistics.median(latencies), 2),
        "p99": round(float(np.percentile(latencies, 99)), 2),
        "load": round(os.getloadavg()[0], 1),
        "scan": scans[0] if scans else "",
    }


if __name__ == "__main__":
    main()
