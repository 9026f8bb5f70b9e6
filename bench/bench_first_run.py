"""first-run: what a new user of ``make serve`` sees in the first minute.

``shortlist serve`` starts on a fresh data dir (its own embedded PostgreSQL, the bundled sample
corpora loaded on first start, the local model, workers in-process), exactly as ``make serve``
does. From the moment ``/readyz`` answers 200 the clock runs until ``/metrics`` reports an
empty indexer backlog for both corpora (``shortlist_indexer_backlog``). Meanwhile a job seeker
searches (one search every ``SEARCH_EVERY`` seconds); once the backlog is gone the same number
of searches runs against the idle server.

Figures:

``readyz → both corpora embedded``  vs ``model.encode`` of the same texts alone (the model's
    own pace on this CPU, no database, no HTTP): how close the indexer runs to the model.
    Targets: the ratio at most 1.5; in absolute terms, within 90 s on the 2-core machine.
``job search p50 while indexing``   vs the same searches idle (report; the absolute target is
    a p50 under 300 ms while the indexer works back to back).

Smoke mode points the server at a database of the run's PostgreSQL holding a few listings
instead of the full first start.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psycopg
from psycopg.rows import dict_row

from bench.common import Context, Record, Stat, percentile, report

NAME = "first-run"
SEARCH_EVERY = 0.25
STARTUP_TIMEOUT = 600.0
INDEXING_TIMEOUT = 900.0
QUERIES = (
    "senior python developer remote",
    "machine learning platform lead",
    "frontend react typescript",
    "data pipeline airflow spark",
    "site reliability kubernetes",
    "product designer figma",
    "security analyst",
    "devops terraform aws",
)
SMOKE_LISTINGS = 24


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def _backlog(client: httpx.Client) -> float | None:
    """Rows both corpora still wait for, from /metrics (None: not reported yet)."""
    try:
        text = client.get("/metrics").text
    except httpx.HTTPError:
        return None
    values = [
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("shortlist_indexer_backlog{")
    ]
    return sum(values) if len(values) == 2 else None


def _search(client: httpx.Client, query: str) -> float:
    started = time.perf_counter()
    response = client.get("/api/jobs/search", params={"q": query, "size": 10})
    response.raise_for_status()
    return time.perf_counter() - started


def _searches_until(client: httpx.Client, done: threading.Event, out: list[float]) -> None:
    i = 0
    while not done.is_set():
        out.append(_search(client, QUERIES[i % len(QUERIES)]))
        i += 1
        done.wait(SEARCH_EVERY)


def _smoke_database(ctx: Context) -> str:
    url = ctx.pg.create_database("first_run_smoke")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            """
            INSERT INTO job_listings (company_name, job_title, city_location, description,
                                      detail_page_slug)
            SELECT 'Company ' || i, 'Engineer ' || i, 'Berlin', 'Python services #' || i,
                   'first-run-' || i
              FROM generate_series(1, %s) AS i
            """,
            (SMOKE_LISTINGS,),
        )
    return url


def _corpus_texts(url: str) -> list[str]:
    """The texts the indexer embedded, by the indexer's own text expressions."""
    from shortlist.indexer import CORPORA

    texts: list[str] = []
    with psycopg.connect(url, row_factory=dict_row) as conn:
        for corpus in CORPORA:
            rows = conn.execute(f"SELECT {corpus.text_sql} AS text FROM {corpus.table}")
            texts.extend(r["text"] for r in rows)
    return texts


def _sample_database(ctx: Context) -> str:
    """The sample corpora in a database of the run's PostgreSQL (for the texts alone)."""
    import asyncio

    from shortlist.listings.sample import load_sample_listings
    from shortlist.talent.sample import load_sample_candidates

    url = ctx.pg.create_database("first_run_texts")

    async def load() -> None:
        async with await psycopg.AsyncConnection.connect(url, row_factory=dict_row) as conn:
            await load_sample_listings(conn)
            await load_sample_candidates(conn)
            await conn.commit()

    asyncio.run(load())
    return url


def _encode_seconds(texts: list[str]) -> float:
    from shortlist.embedding.local import LocalEmbedder, _default_model_path, _load

    model = _load(_default_model_path(), "bulk").model
    size = LocalEmbedder().bulk_batch_size
    model.encode(texts[:size])  # warm-up
    started = time.perf_counter()
    for i in range(0, len(texts), size):
        model.encode(texts[i : i + size])
    return time.perf_counter() - started


def run(ctx: Context) -> list[Record]:
    port = _free_port()
    env = dict(os.environ)
    env.update(SHORTLIST_SEARCH_RATE_LIMIT="0", SHORTLIST_LOG_LEVEL="WARNING")
    env.pop("SHORTLIST_DATABASE_URL", None)
    with tempfile.TemporaryDirectory(prefix="shortlist-first-run-") as data_dir:
        if ctx.smoke:
            # A few listings, and a small simulator population (50,000 people take ~10 s of
            # CPU to build; this benchmark never asks the simulator anything).
            env.update(
                SHORTLIST_DATABASE_URL=_smoke_database(ctx),
                SHORTLIST_LOAD_SAMPLE_DATA="0",
                SHORTLIST_SIMULATOR_POPULATION="500",
            )
        else:
            env.update(SHORTLIST_DATA_DIR=data_dir, SHORTLIST_LOAD_SAMPLE_DATA="1")
        command = [str(Path(sys.executable).parent / "shortlist"), "serve", "--port", str(port)]
        ctx.log(
            f"{NAME}: starting shortlist serve on a fresh {'database' if ctx.smoke else 'data dir'}"
        )
        log = Path(data_dir) / "serve.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
                deadline = time.monotonic() + STARTUP_TIMEOUT
                while True:
                    if proc.poll() is not None:
                        raise RuntimeError(f"shortlist serve exited: {log.read_text()[-2000:]}")
                    try:
                        if client.get("/readyz").status_code == 200:
                            break
                    except httpx.HTTPError:
                        pass
                    if time.monotonic() > deadline:
                        raise RuntimeError("shortlist serve never became ready")
                    time.sleep(0.05)
                ready = time.perf_counter()
                busy: list[float] = []
                done = threading.Event()
                searcher = threading.Thread(target=_searches_until, args=(client, done, busy))
                searcher.start()
                try:
                    deadline = time.monotonic() + INDEXING_TIMEOUT
                    while _backlog(client) != 0:
                        if time.monotonic() > deadline:
                            raise RuntimeError("the sample corpora were never fully embedded")
                        time.sleep(0.1)
                    embedded_after = time.perf_counter() - ready
                finally:
                    done.set()
                    searcher.join()
                ctx.log(f"{NAME}: both corpora embedded {embedded_after:.1f}s after /readyz")
                idle = [_search(client, QUERIES[i % len(QUERIES)]) for i in range(len(busy))]
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    texts = _corpus_texts(env["SHORTLIST_DATABASE_URL"] if ctx.smoke else _sample_database(ctx))
    encode = _encode_seconds(texts)
    ctx.log(f"{NAME}: model.encode of the same {len(texts)} texts: {encode:.1f}s")
    p50_busy, p50_idle = percentile(busy, 50), percentile(idle, 50)
    return [
        Record(
            NAME,
            "readyz → both sample corpora embedded vs model.encode alone",
            Stat.one(embedded_after),
            Stat.one(encode),
            target=1.5,
            better="lower",
            unit="s",
            baseline_name="model.encode",
            note=f"{len(texts)} texts; absolute target 90 s",
        ),
        Record(
            NAME,
            "job search p50 while indexing vs idle",
            Stat.one(p50_busy * 1000),
            Stat.one(p50_idle * 1000),
            better="lower",
            unit="ms",
            baseline_name="idle",
            note=f"{len(busy)} searches each; absolute target < 300 ms",
        ),
        report(NAME, "job search p99 while indexing", percentile(busy, 99) * 1000, unit="ms"),
    ]
