"""search-http: job searches per second through the HTTP API at 100k listings, p50 / p99, next to
the same count of bare SQL queries (report only).

The server is the product's app (``create_app``, uvicorn, one process) over the search
benchmark's corpus, started by :mod:`bench.http_server` in its own process, in two variants:

``local model``  the product default: every search embeds its query with all-MiniLM-L6-v2 on
                 the CPU (queries are plain job-seeker phrases).
``no model``     a lookup embedder (``"qv17x"`` → a generated query vector): the HTTP layer,
                 validation, the two candidate queries, fusion and JSON, without the model.

The client (this process, httpx) keeps ``CONCURRENCY`` requests in flight until ``N`` are done;
the baseline runs the same ``N`` bare ``ORDER BY embedding <=> q LIMIT 10`` statements with the
same concurrency on as many connections. Client, server and PostgreSQL share the 2 cores, as
they would on one small machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from bench.bench_search import LookupEmbedder, SearchFixture, bare_search, ensure_fixture, open_bare
from bench.common import Context, Record, Stat, percentile

NAME = "search-http"
REPO_ROOT = Path(__file__).resolve().parent.parent
CONCURRENCY = 8
TEXT_QUERIES = (
    "senior python developer remote",
    "machine learning platform lead",
    "frontend react typescript",
    "data pipeline airflow spark",
    "site reliability kubernetes on-call",
    "embedded firmware c rtos",
    "product designer figma",
    "security analyst soc",
    "mobile ios swift developer",
    "devops terraform aws",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@contextlib.asynccontextmanager
async def api_server(url: str, embedder: str, queries: Path) -> AsyncIterator[str]:
    port = _free_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.http_server",
        "--url",
        url,
        "--port",
        str(port),
        "--embedder",
        embedder,
        "--queries",
        str(queries),
        cwd=str(REPO_ROOT),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient() as client:
            deadline = time.monotonic() + 120
            while True:
                if proc.returncode is not None:
                    err = await proc.stderr.read() if proc.stderr else b""
                    raise RuntimeError(f"API server exited: {err.decode()[-2000:]}")
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(f"{base}/healthz")).status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError("API server did not start within 120 s")
                await asyncio.sleep(0.1)
        yield base
    finally:
        if proc.returncode is None:
            proc.terminate()
            try:
                await asyncio.wait_for(proc.wait(), 30)
            except TimeoutError:
                proc.kill()
                await proc.wait()


async def closed_loop(
    n: int, concurrency: int, call: Callable[[int], Awaitable[None]]
) -> tuple[float, list[float]]:
    """``n`` calls, ``concurrency`` in flight; returns (calls per second, latencies in ms)."""
    latencies: list[float] = []
    counter = iter(range(n))

    async def lane() -> None:
        for i in counter:
            t0 = time.perf_counter()
            await call(i)
            latencies.append((time.perf_counter() - t0) * 1000)

    started = time.perf_counter()
    await asyncio.gather(*(lane() for _ in range(concurrency)))
    return n / (time.perf_counter() - started), latencies


async def _measure(
    ctx: Context, fixture: SearchFixture, embedder: str, queries: Path, n: int
) -> dict[str, list[float]]:
    corpus = fixture.corpus
    nq = len(corpus.queries)
    out: dict[str, list[float]] = {k: [] for k in ("rate", "p50", "p99", "b_rate", "b50", "b99")}
    limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
    async with (
        api_server(fixture.url, embedder, queries) as base,
        httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as client,
    ):
        bare = [await open_bare(fixture.url) for _ in range(CONCURRENCY)]
        free: asyncio.Queue[Any] = asyncio.Queue()
        for conn in bare:
            free.put_nowait(conn)

        async def http_call(i: int) -> None:
            q = LookupEmbedder.text(i % nq) if embedder == "lookup" else TEXT_QUERIES[i % 10]
            r = await client.get("/api/jobs/search", params={"q": q, "size": 10})
            if r.status_code != 200:
                raise RuntimeError(f"search answered {r.status_code}: {r.text[:300]}")

        async def bare_call(i: int) -> None:
            conn = await free.get()
            try:
                await bare_search(conn, corpus.queries[i % nq], None)
            finally:
                free.put_nowait(conn)

        try:
            # Warm-up: the model, both paths' connections, the index pages.
            await closed_loop(min(n, 100), CONCURRENCY, http_call)
            await closed_loop(min(n, 100), CONCURRENCY, bare_call)
            for rep in range(ctx.repetitions()):
                rate, lat = await closed_loop(n, CONCURRENCY, http_call)
                b_rate, b_lat = await closed_loop(n, CONCURRENCY, bare_call)
                out["rate"].append(rate)
                out["p50"].append(percentile(lat, 50))
                out["p99"].append(percentile(lat, 99))
                out["b_rate"].append(b_rate)
                out["b50"].append(percentile(b_lat, 50))
                out["b99"].append(percentile(b_lat, 99))
                ctx.log(
                    f"search-http ({embedder}): rep {rep + 1}: {rate:.0f} searches/s"
                    f" (p50 {out['p50'][-1]:.1f} ms) vs bare {b_rate:.0f}/s"
                )
        finally:
            for conn in bare:
                await conn.close()
    return out


def run(ctx: Context) -> list[Record]:
    fixture = ensure_fixture(ctx)
    n = ctx.size(1000, 40)
    variants: tuple[tuple[str, str], ...] = (
        (("lookup", "no model"),)
        if ctx.smoke
        else (("local", "local model"), ("lookup", "no model"))
    )
    records: list[Record] = []
    with tempfile.TemporaryDirectory(prefix="bench-http-") as tmp:
        queries = Path(tmp) / "queries.npy"
        np.save(queries, fixture.corpus.queries)
        for embedder, label in variants:
            got = asyncio.run(_measure(ctx, fixture, embedder, queries, n))
            note = f"{fixture.rows:,} listings, {n} requests, {CONCURRENCY} in flight"
            records += [
                Record(
                    NAME,
                    f"searches/s via HTTP, {label}",
                    Stat.of(got["rate"]),
                    Stat.of(got["b_rate"]),
                    unit="/s",
                    baseline_name="bare SQL",
                    note=note,
                ),
                Record(
                    NAME,
                    f"p50 latency via HTTP, {label}",
                    Stat.of(got["p50"]),
                    Stat.of(got["b50"]),
                    better="lower",
                    unit="ms",
                    baseline_name="bare SQL",
                    note="client-side, under the closed loop",
                ),
                Record(
                    NAME,
                    f"p99 latency via HTTP, {label}",
                    Stat.of(got["p99"]),
                    Stat.of(got["b99"]),
                    better="lower",
                    unit="ms",
                    baseline_name="bare SQL",
                ),
            ]
    return records
