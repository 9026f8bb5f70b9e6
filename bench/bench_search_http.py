"""search-http: job searches per second through the HTTP API at 100k listings, p50 / p99, against
the model's own encode-only rate and against the same searches with precomputed vectors; the API
process's RSS and the hit rates of its answer cache and query-embedding cache.

The server is the product's app (``create_app``, uvicorn, one process) over the search
benchmark's corpus, started by :mod:`bench.http_server` in its own process, in two variants:

``model``        the product default: every search embeds its query with all-MiniLM-L6-v2 on the
                 CPU (the process's query and answer caches included: a repeated search is
                 answered from the answer cache, shortlist.listings.result_cache, as long as no
                 listing changes, which none does here).
``precomputed``  the same query texts, whose vectors the model computed beforehand: the HTTP
                 layer, validation, the candidate statements, fusion and JSON, without the model.

Two query mixes, over plain job-seeker phrases (role × modifier × place, thousands of them):

``distinct``  every request a query never asked before (cold caches: every search encodes and
              reads PostgreSQL);
``repeated``  a query log with a job board's repetition: phrases drawn from a Zipf-like
              distribution (the k-th most popular asked ∝ 1/k^ZIPF_S) over ZIPF_VOCABULARY
              phrases.

The anchor is the same model encoding the same distinct queries alone, in batches of
``CONCURRENCY`` (the server's own model code, ``LocalEmbedder._encode``, in this process). The
client (this process, :class:`bench.http_load.LeanClient`: keep-alive connections, httptools'
parser) keeps ``CONCURRENCY`` requests in flight until ``N`` are done. Client, server and
PostgreSQL share the machine, as they would on one small box; each figure's note gives the load
average it was measured at and the CPU per search of the API process and of the client.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import os
import random
import socket
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psutil

from bench.bench_search import SearchFixture, ensure_fixture
from bench.common import Context, Record, Stat, percentile
from bench.http_load import LeanClient
from bench.http_server import text_key

NAME = "search-http"
REPO_ROOT = Path(__file__).resolve().parent.parent
CONCURRENCY = 8
ZIPF_S = 1.07
ZIPF_VOCABULARY = 2_000
TARGET_DISTINCT = 0.5
"""HTTP searches/s with distinct queries ≥ half the encode-only rate (issue 25)."""
TARGET_REPEATED = 1.0
TARGET_VS_INDEX_FIRST = 0.5
"""Distinct HTTP searches/s with the model ≥ half the index-first RRF's SQL-only rate (issue 40)."""
TARGET_P99 = 4.0
"""p99 ≤ 4 × p50."""
RSS_TARGET_MB = 300.0

ROLES = (
    "software engineer", "python developer", "frontend developer", "data engineer",
    "data scientist", "machine learning engineer", "devops engineer", "site reliability engineer",
    "product manager", "product designer", "ux researcher", "qa engineer", "security analyst",
    "mobile developer", "ios developer", "android developer", "backend engineer",
    "embedded engineer", "firmware engineer", "cloud architect", "database administrator",
    "technical writer", "support engineer", "sales engineer", "account manager",
    "marketing manager", "content writer", "graphic designer", "registered nurse",
    "nurse practitioner", "pharmacist", "physiotherapist", "teacher", "accountant",
    "financial analyst", "hr manager", "recruiter", "project manager", "electrician",
    "mechanical engineer", "civil engineer", "warehouse worker", "truck driver", "chef",
    "barista", "customer service", "office manager", "paralegal", "lawyer", "dentist",
)  # fmt: skip
MODIFIERS = (
    "", "senior", "junior", "lead", "remote", "part time", "contract", "entry level",
    "principal", "staff",
)  # fmt: skip
PLACES = (
    "", "berlin", "london", "new york", "remote", "austin", "toronto", "paris", "amsterdam",
    "munich", "chicago",
)  # fmt: skip


def phrases() -> list[str]:
    """Every role × modifier × place phrase (5,500), in a fixed shuffled order."""
    out = [
        " ".join(w for w in (mod, role, f"in {place}" if place else "") if w)
        for role, mod, place in itertools.product(ROLES, MODIFIERS, PLACES)
    ]
    random.Random(25).shuffle(out)
    return out


def zipf_log(vocabulary: Sequence[str], n: int, seed: int) -> list[str]:
    """``n`` queries drawn from ``vocabulary`` with P(k-th) ∝ 1/k^ZIPF_S."""
    weights = [1.0 / (k**ZIPF_S) for k in range(1, len(vocabulary) + 1)]
    return random.Random(seed).choices(list(vocabulary), weights=weights, k=n)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@contextlib.asynccontextmanager
async def api_server(
    url: str, embedder: str, queries: Path, profile: Path | None = None
) -> AsyncIterator[tuple[str, int]]:
    """The API on a free port; yields its base URL and process id. With ``profile``, the server
    samples itself with pyinstrument and writes the report there when it stops."""
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
        *(["--profile", str(profile)] if profile else []),
        cwd=str(REPO_ROOT),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        async with httpx.AsyncClient() as client:
            deadline = time.monotonic() + 180
            while True:
                if proc.returncode is not None:
                    err = await proc.stderr.read() if proc.stderr else b""
                    raise RuntimeError(f"API server exited: {err.decode()[-2000:]}")
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(f"{base}/healthz")).status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError("API server did not start within 180 s")
                await asyncio.sleep(0.1)
        yield base, proc.pid
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


def cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def postmaster(url: str) -> psutil.Process:
    """The PostgreSQL server's main process (a connection's backend's parent)."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT pg_backend_pid()").fetchone()
        # Asked while the backend lives: once the connection closes its pid is gone.
        parent = psutil.Process(int(row[0]) if row else 0).parent()
    if parent is None:
        raise RuntimeError("no postmaster above this backend")
    return parent


def tree_cpu(root: psutil.Process) -> float:
    """CPU seconds of a process and its live children (PostgreSQL: the postmaster, its
    background processes and every backend; the benchmark's connections outlive a run)."""
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += cpu(proc)
    return total


QUERY_CACHE = "shortlist_query_cache_lookups_total"
ANSWER_CACHE = "shortlist_search_cache_lookups_total"


def _cache_lookups(metrics_text: str, metric: str) -> tuple[float, float]:
    """(hits, misses) of a cache's lookups in a /metrics page; (nan, nan) without that cache.
    The answer cache's answers not kept count as misses."""
    found: dict[str, float] = {}
    for line in metrics_text.splitlines():
        if line.startswith(metric + "{"):
            result = line.split('result="', 1)[1].split('"', 1)[0]
            found[result] = float(line.rsplit(" ", 1)[1])
    if not found:
        return math.nan, math.nan
    return found.get("hit", 0.0), found.get("miss", 0.0)


Samples = dict[str, list[float]]


async def _measure(
    ctx: Context,
    fixture: SearchFixture,
    embedder: str,
    vectors: Path,
    distinct: list[str],
    vocabulary: list[str],
    n: int,
    peers: Peers | None = None,
) -> Samples:
    """The product over HTTP, ``ctx.repetitions()`` times: the distinct mix, then the repeated
    log. With ``peers``, each repetition's peers run first, on the same distinct queries."""
    out: Samples = {}

    def add(key: str, value: float) -> None:
        out.setdefault(key, []).append(value)

    async with (
        api_server(fixture.url, embedder, vectors) as (base, pid),
        LeanClient(base, CONCURRENCY) as client,
    ):
        server = psutil.Process(pid)
        me = psutil.Process()
        postgres = postmaster(fixture.url)
        asked: set[str] = set()
        """Every query this server has answered: a repeated one is its answer cache's hit
        (nothing changes listings here), a first one its miss."""

        async def run(queries: list[str], mix: str | None = None) -> tuple[float, list[float]]:
            first: list[bool] = []
            for q in queries:
                first.append(q not in asked)
                asked.add(q)
            by_call: dict[int, float] = {}

            async def call(i: int) -> None:
                t0 = time.perf_counter()
                r = await client.get("/api/jobs/search", params={"q": queries[i], "size": 10})
                if r.status != 200:
                    raise RuntimeError(f"search answered {r.status}: {r.body[:300]!r}")
                by_call[i] = (time.perf_counter() - t0) * 1000

            before = cpu(me), cpu(server), tree_cpu(postgres)
            result = await closed_loop(len(queries), CONCURRENCY, call)
            if mix is not None:  # CPU ms per search: the client's, the API's, PostgreSQL's
                add(f"{mix}_client_cpu", (cpu(me) - before[0]) * 1000 / len(queries))
                add(f"{mix}_server_cpu", (cpu(server) - before[1]) * 1000 / len(queries))
                add(f"{mix}_pg_cpu", (tree_cpu(postgres) - before[2]) * 1000 / len(queries))
                for kind, wanted in (("miss", True), ("hit", False)):
                    lat = [ms for i, ms in by_call.items() if first[i] is wanted]
                    add(f"{mix}_{kind}_count", float(len(lat)))
                    if lat:
                        add(f"{mix}_{kind}_p50", percentile(lat, 50))
                        add(f"{mix}_{kind}_p99", percentile(lat, 99))
            return result

        # Warm-up (index pages, connections, the model): queries no timed run asks.
        warm = distinct[-min(100, n) :]
        await run(warm)
        searches = len(warm)
        for rep in range(ctx.repetitions()):
            if peers is not None:
                await peers.rep(rep)
            load = os.getloadavg()[0]
            mix = distinct[rep * n : (rep + 1) * n]
            rate, lat = await run(mix, "distinct")
            searches += len(mix)
            add("distinct_rate", rate)
            add("distinct_p50", percentile(lat, 50))
            add("distinct_p99", percentile(lat, 99))
            if "rss" not in out and searches >= min(1000, n):
                add("rss", server.memory_info().rss / 2**20)
            page = (await client.get("/metrics")).body.decode()
            before = {m: _cache_lookups(page, m) for m in (QUERY_CACHE, ANSWER_CACHE)}
            rate_r, lat_r = await run(zipf_log(vocabulary, n, seed=rep), "repeated")
            page = (await client.get("/metrics")).body.decode()
            after = {m: _cache_lookups(page, m) for m in (QUERY_CACHE, ANSWER_CACHE)}
            searches += n
            hits, misses = (after[ANSWER_CACHE][i] - before[ANSWER_CACHE][i] for i in (0, 1))
            q_hits, q_misses = (after[QUERY_CACHE][i] - before[QUERY_CACHE][i] for i in (0, 1))
            add("repeated_rate", rate_r)
            add("repeated_p50", percentile(lat_r, 50))
            add("repeated_p99", percentile(lat_r, 99))
            add("hit_rate", hits / (hits + misses) if hits + misses else math.nan)
            add("query_hit_rate", q_hits / (q_hits + q_misses) if q_hits + q_misses else math.nan)
            add("load", (load + os.getloadavg()[0]) / 2)
            ctx.log(
                f"search-http ({embedder}): rep {rep + 1}: distinct {rate:.0f}/s"
                f" (p50 {out['distinct_p50'][-1]:.1f}, p99 {out['distinct_p99'][-1]:.1f} ms),"
                f" repeated {rate_r:.0f}/s (p50 {out['repeated_p50'][-1]:.1f},"
                f" p99 {out['repeated_p99'][-1]:.1f} ms),"
                f" answer cache hits {out['hit_rate'][-1]:.0%},"
                f" query cache hits {out['query_hit_rate'][-1]:.0%},"
                f" load {out['load'][-1]:.1f}; CPU per search: API"
                f" {out['distinct_server_cpu'][-1]:.1f} / {out['repeated_server_cpu'][-1]:.1f} ms,"
                f" PostgreSQL {out['distinct_pg_cpu'][-1]:.1f} /"
                f" {out['repeated_pg_cpu'][-1]:.1f} ms,"
                f" client {out['distinct_client_cpu'][-1]:.2f} /"
                f" {out['repeated_client_cpu'][-1]:.2f} ms"
            )
        add("rss_end", server.memory_info().rss / 2**20)
        add("searches", float(searches))
    return out


def encode_only(ctx: Context, distinct: list[str], n: int) -> Samples:
    """The anchor: the server's model code encoding the distinct queries alone, batches of 8."""
    from shortlist.embedding.local import LocalEmbedder

    embedder = LocalEmbedder()
    embedder.warm_up()
    texts = [text_key(t) for t in distinct]
    embedder._encode(texts[-CONCURRENCY:])  # warm
    out: Samples = {"rate": [], "load": []}
    for rep in range(ctx.repetitions()):
        load = os.getloadavg()[0]
        batch = texts[rep * n : (rep + 1) * n]
        started = time.perf_counter()
        for i in range(0, len(batch), CONCURRENCY):
            embedder._encode(batch[i : i + CONCURRENCY])
        out["rate"].append(len(batch) / (time.perf_counter() - started))
        out["load"].append((load + os.getloadavg()[0]) / 2)
        ctx.log(f"search-http: encode-only rep {rep + 1}: {out['rate'][-1]:.0f} queries/s")
    return out


def precompute(texts: list[str], fixture: SearchFixture, smoke: bool) -> np.ndarray:
    """The vectors of ``texts`` (the model's; in smoke mode the corpus's query vectors)."""
    if smoke:
        queries = fixture.corpus.queries
        return np.asarray([queries[i % len(queries)] for i in range(len(texts))])
    from shortlist.embedding.local import LocalEmbedder

    embedder = LocalEmbedder()
    vectors = [v for i in range(0, len(texts), 64) for v in embedder._encode(texts[i : i + 64])]
    return np.asarray(vectors, dtype=np.float32)


class Peers:
    """The SQL-only peers (bench.search_peers) on the distinct queries with their precomputed
    vectors, :data:`CONCURRENCY` at once. :meth:`rep` measures each peer on a repetition's
    queries; the product's distinct run of the same repetition follows it at once (see
    :func:`_measure`), so that each ratio compares runs made under the same load."""

    def __init__(
        self,
        ctx: Context,
        fixture: SearchFixture,
        distinct: list[str],
        vectors: dict[str, Any],
        n: int,
    ) -> None:
        from bench import search_peers

        search_peers.create(fixture.url)
        self.ctx, self.url, self.distinct, self.vectors, self.n = (
            ctx,
            fixture.url,
            distinct,
            vectors,
            n,
        )
        self.samples: dict[str, Samples] = {name: {} for name in search_peers.PEERS}
        self.warm = False

    def _matrix(self, texts: Sequence[str]) -> np.ndarray:
        from shortlist.relevance import normalise_query

        return np.asarray(
            [self.vectors[text_key(normalise_query(t))] for t in texts], dtype=np.float32
        )

    async def rep(self, rep: int) -> None:
        from bench import search_peers

        texts = self.distinct[rep * self.n : (rep + 1) * self.n]
        matrix = self._matrix(texts)
        me = psutil.Process()
        for name, statement in search_peers.PEERS.items():
            if not self.warm:  # warm-up: index pages, plans
                warm = self.distinct[-min(100, self.n) :]
                await search_peers.measure(
                    self.url, statement, warm, self._matrix(warm), CONCURRENCY
                )
            client = cpu(me)
            rate, lat, pg_cpu = await search_peers.measure(
                self.url, statement, texts, matrix, CONCURRENCY
            )
            samples = self.samples[name]
            for key, value in search_peers.summary(rate, lat).items():
                samples.setdefault(key, []).append(value)
            samples.setdefault("pg_cpu", []).append(pg_cpu * 1000 / self.n)
            samples.setdefault("client_cpu", []).append((cpu(me) - client) * 1000 / self.n)
            self.ctx.log(
                f"search-http: {name} (SQL only) rep {rep + 1}: {rate:.0f}/s"
                f" (p50 {samples['p50'][-1]:.1f}, p99 {samples['p99'][-1]:.1f} ms),"
                f" PostgreSQL CPU {samples['pg_cpu'][-1]:.1f} ms per search,"
                f" client {samples['client_cpu'][-1]:.2f} ms"
            )
        self.warm = True


def _load_note(samples: Samples) -> str:
    loads = samples.get("load") or [math.nan]
    return f"load average {min(loads):.1f}–{max(loads):.1f}"


def run(ctx: Context) -> list[Record]:
    from shortlist.relevance import normalise_query

    fixture = ensure_fixture(ctx)
    n = ctx.size(1000, 40)
    reps = ctx.repetitions()
    every = phrases()
    # The distinct runs from the front, the repeated log's vocabulary from the back: no phrase
    # of the log is cached by a distinct run (they overlap only past 3 repetitions of 1,000).
    distinct = every[: n * reps + min(100, n)]
    vocabulary = every[-ZIPF_VOCABULARY:]
    if len(distinct) < n * reps + min(100, n):
        raise RuntimeError(f"{len(every)} phrases are too few for {reps} × {n} distinct")
    keys = sorted({text_key(normalise_query(q)) for q in [*distinct, *vocabulary]})
    records: list[Record] = []
    with tempfile.TemporaryDirectory(prefix="bench-http-") as tmp:
        vectors = Path(tmp) / "vectors.npz"
        computed = precompute(keys, fixture, ctx.smoke)
        np.savez(vectors, texts=np.asarray(keys), vectors=computed)
        peers = Peers(ctx, fixture, distinct, dict(zip(keys, computed, strict=True)), n)
        # The peers run beside the product's runs with the model (in a smoke run, there are
        # none: beside those with precomputed vectors).
        pre = asyncio.run(
            _measure(
                ctx,
                fixture,
                "precomputed",
                vectors,
                distinct,
                vocabulary,
                n,
                peers if ctx.smoke else None,
            )
        )
        if ctx.smoke:
            model, anchor = pre, {"rate": pre["distinct_rate"], "load": pre["load"]}
        else:
            anchor = encode_only(ctx, distinct, n)
            model = asyncio.run(
                _measure(ctx, fixture, "local", vectors, distinct, vocabulary, n, peers)
            )
    rows = f"{fixture.rows:,} listings, {n} requests per run, {CONCURRENCY} in flight"
    for mix, label, target in (
        ("distinct", "distinct queries", TARGET_DISTINCT),
        ("repeated", f"repeated queries (Zipf s={ZIPF_S})", TARGET_REPEATED),
    ):
        records += [
            Record(
                NAME,
                f"searches/s via HTTP with the model, {label}",
                Stat.of(model[f"{mix}_rate"]),
                Stat.of(anchor["rate"]),
                target=target,
                unit="/s",
                baseline_name="encode-only, batches of 8",
                note=(
                    f"{rows}; {_load_note(model)} (anchor {_load_note(anchor)}); CPU per"
                    f" search: API process {Stat.of(model[f'{mix}_server_cpu']).median:.1f} ms,"
                    f" load client {Stat.of(model[f'{mix}_client_cpu']).median:.2f} ms"
                ),
            ),
            Record(
                NAME,
                f"searches/s via HTTP with the model vs precomputed vectors, {label}",
                Stat.of(model[f"{mix}_rate"]),
                Stat.of(pre[f"{mix}_rate"]),
                unit="/s",
                baseline_name="precomputed vectors",
                note=_load_note(pre),
            ),
            Record(
                NAME,
                f"p99 vs p50 latency via HTTP with the model, {label}",
                Stat.of(model[f"{mix}_p99"]),
                Stat.of(model[f"{mix}_p50"]),
                target=TARGET_P99,
                better="lower",
                unit="ms",
                baseline_name="p50",
                note="client-side, under the closed loop",
            ),
            Record(
                NAME,
                f"p50 latency via HTTP, precomputed vectors, {label}",
                Stat.of(pre[f"{mix}_p50"]),
                None,
                better="lower",
                unit="ms",
                note=f"p99 {Stat.of(pre[f'{mix}_p99']).median:.1f} ms",
            ),
        ]
    for name, samples in peers.samples.items():
        per_rep = ", ".join(
            f"{mine / theirs:.2f}"
            for mine, theirs in zip(model["distinct_rate"], samples["rate"], strict=True)
        )
        records += [
            Record(
                NAME,
                f"searches/s via HTTP with the model, distinct queries vs {name} (SQL only)",
                Stat.of(model["distinct_rate"]),
                Stat.of(samples["rate"]),
                target=TARGET_VS_INDEX_FIRST if name == "index-first RRF" else None,
                unit="/s",
                baseline_name=f"{name}, precomputed vectors",
                note=(
                    f"ratio per repetition (the peer run just before the product's): {per_rep};"
                    f" {name}: p50 {Stat.of(samples['p50']).median:.1f} ms, p99"
                    f" {Stat.of(samples['p99']).median:.1f} ms, PostgreSQL CPU"
                    f" {Stat.of(samples['pg_cpu']).median:.1f} ms per search;"
                    f" shortlist: PostgreSQL CPU"
                    f" {Stat.of(model['distinct_pg_cpu']).median:.1f} ms per search"
                ),
            ),
        ]
    first = peers.samples["index-first RRF"]
    mine = [
        sum(parts)
        for parts in zip(
            model["distinct_server_cpu"],
            model["distinct_pg_cpu"],
            model["distinct_client_cpu"],
            strict=True,
        )
    ]
    theirs = [pg + client for pg, client in zip(first["pg_cpu"], first["client_cpu"], strict=True)]
    records.append(
        Record(
            NAME,
            "CPU per distinct search via HTTP with the model vs index-first RRF (SQL only)",
            Stat.of(mine),
            Stat.of(theirs),
            better="lower",
            unit="ms",
            baseline_name="index-first RRF: PostgreSQL + client",
            note=(
                "shortlist: API process + PostgreSQL + load client; on a machine both saturate"
                " alone, the rate ratio is about the inverse of this one (under other load it"
                " is lower: the API process is one event loop, the peer eight backends)"
            ),
        )
    )
    for kind in ("hit", "miss"):
        if f"repeated_{kind}_p50" in model:
            records.append(
                Record(
                    NAME,
                    f"p50 latency via HTTP with the model, repeated queries, answer cache {kind}",
                    Stat.of(model[f"repeated_{kind}_p50"]),
                    None,
                    better="lower",
                    unit="ms",
                    note=(
                        f"p99 {Stat.of(model[f'repeated_{kind}_p99']).median:.1f} ms;"
                        f" {Stat.of(model[f'repeated_{kind}_count']).median:.0f} of {n} requests"
                        " (a query's first request in the server: a miss; later ones: hits)"
                    ),
                )
            )
    records += [
        Record(
            NAME,
            "PostgreSQL CPU per search via HTTP with the model, distinct queries",
            Stat.of(model["distinct_pg_cpu"]),
            None,
            better="lower",
            unit="ms",
            note=(
                f"API process {Stat.of(model['distinct_server_cpu']).median:.1f} ms; repeated:"
                f" PostgreSQL {Stat.of(model['repeated_pg_cpu']).median:.1f} ms, API"
                f" {Stat.of(model['repeated_server_cpu']).median:.1f} ms"
            ),
        ),
        Record(
            NAME,
            "API process RSS after 1,000 searches, with the model",
            Stat.of(model["rss"]),
            Stat.one(RSS_TARGET_MB),
            target=1.0,
            better="lower",
            unit="MB",
            baseline_name="target",
            note=f"after all {model['searches'][0]:.0f} searches: {model['rss_end'][0]:.0f} MB",
        ),
        Record(
            NAME,
            f"answer cache hit rate, repeated queries (Zipf s={ZIPF_S}, {ZIPF_VOCABULARY} phrases)",
            Stat.of(model["hit_rate"]),
            None,
            unit="%",
            note="from the server's /metrics (shortlist.listings.result_cache); NaN: no cache",
        ),
        Record(
            NAME,
            "query-embedding cache hit rate of the answer cache's misses, repeated queries",
            Stat.of(model["query_hit_rate"]),
            None,
            unit="%",
            note="an answer's miss may still find its query's vector (another page, filter)",
        ),
    ]
    return records
