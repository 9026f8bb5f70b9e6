"""backfill: time to first backfilled result, time to 15 results and hit rate of the streaming
backfill, against the floor and a naive monolithic pipeline, on the same simulator.

The simulator runs its default behaviour (enrichment ~8 s with a long tail, first discovery
attempts hanging 41 % of the time, 5xx and 429) at a time scale (default 0.2); the product's
client timeouts and retry delay are scaled alike. Figures are reported in *simulator seconds*
(measured ÷ time scale), i.e. what production would see.

``shortlist``   ``start_search`` then the product's backfill workers (``backfill_workers``,
                in this process, product defaults: the PDL and SerpApi adapters against the
                simulator's vendor dialects, 4 slots per provider, 8 candidates in flight),
                one search at a time, the internal corpus out of play (every search is a full
                backfill). A result's time is its append transaction's timestamp.
``floor``       the simulator's discovery latency + one enrichment latency (1.5 s + 8 s): no
                pipeline can show a backfilled result sooner (on average).
``monolithic``  the seed's first version: one discovery call (the brief mapped onto the filters,
                15 per page, no retry), enrich all (same 4 slots), then ingest all (embed +
                insert), score all, append all and bump the count in one transaction.

Hit rate: the share of searches that got at least one backfilled result scoring at least the
relevance floor (``SHORTLIST_INTERNAL_MIN_SCORE``). Cost: enrichment calls and credits per
search, from the ``provider_calls`` ledger. Free-text briefs: ten recruiter sentences (eight
that people in the simulator's population match, two that nobody does), each a search on the
same path; a table of the brief as parsed, the strict tier's calls and the results above the
floor is logged and saved (``backfill-briefs.json``).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.common import Context, Record, Stat, profile_async, report
from bench.talent_support import (
    BACKFILL_TIME_SCALE,
    SMOKE_TIME_SCALE,
    HashEmbedder,
    Timeline,
    backfill_settings,
    briefs,
    read_timeline,
    recruiter,
    running_backfill_workers,
    simulator_config,
    start_backfill_search,
    wait_until,
)

NAME = "backfill"
TARGET = 15
PARALLEL = 4
"""Isolated deployments running searches side by side (each one search at a time)."""
FREE_TEXT_BRIEFS = (
    "FPGA verification engineer",
    "Senior backend engineer in Berlin",
    "Registered nurse in London",
    "Data scientist, 3+ years",
    "Rust embedded firmware engineer in Munich",
    "Corporate lawyer in New York",
    "iOS developer in Tokyo",
    "Technical recruiter in Singapore",
    # Nobody in the world (the simulator's occupations) does these.
    "underwater basket weaving sommelier",
    "dragon tamer for a medieval castle",
)
MATCHED_BY_NOBODY = FREE_TEXT_BRIEFS[-2:]

MONO_SCHEMA = """
CREATE TABLE IF NOT EXISTS bench_mono_candidates (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    search    integer NOT NULL,
    username  text NOT NULL,
    profile   jsonb NOT NULL,
    embedding vector(384) NOT NULL
);
CREATE TABLE IF NOT EXISTS bench_mono_results (
    search     integer NOT NULL,
    rank       integer NOT NULL,
    candidate  bigint NOT NULL REFERENCES bench_mono_candidates (id),
    score      real NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (search, rank)
);
CREATE TABLE IF NOT EXISTS bench_mono_searches (
    search       integer PRIMARY KEY,
    result_count integer NOT NULL DEFAULT 0
);
"""


@dataclass
class BackfillRun:
    product: list[Timeline]
    monolithic: list[Timeline]
    floor: float
    """Seconds (scaled) of discovery + one enrichment."""
    slots: int
    scale: float
    free_text: list[dict[str, Any]] = field(default_factory=list)
    """One row per free-text brief (``free_text_table``)."""


def _time_scale(ctx: Context) -> float:
    raw = ctx.options.get("time_scale")
    return float(raw) if raw else (SMOKE_TIME_SCALE if ctx.smoke else BACKFILL_TIME_SCALE)


def _embedder(ctx: Context) -> Any:
    if ctx.smoke:
        return HashEmbedder()
    from shortlist.embedding.local import LocalEmbedder

    embedder = LocalEmbedder()
    embedder.warm_up()
    return embedder


# --- this project --------------------------------------------------------------------------------


async def product_search(
    services: Any, principal: Any, brief: dict[str, Any], deadline: float, watch: Any
) -> Timeline:
    """Start one search and wait until it is no longer running. ``watch`` is the benchmark's own
    connection (polling through the product's pool would compete with the workers for it)."""
    timeline = Timeline(None, time.time())
    started = await start_backfill_search(services, principal, brief)
    timeline.search_id = started.search_id

    async def status() -> str:
        cur = await watch.execute(
            "SELECT status::text FROM searches WHERE id = %s", (started.search_id,)
        )
        row = await cur.fetchone()
        return str(row[0]) if row else "missing"

    async def finished() -> bool:
        return await status() != "running"

    await wait_until(finished, deadline, interval=0.05)
    timeline.status = await status()
    await read_timeline(services.pool, timeline, services.settings.internal_min_score)
    return timeline


async def _settle(watch: Any, within: float) -> None:
    """Wait until no candidate is being enriched, so the next search starts on idle slots."""

    async def idle() -> bool:
        cur = await watch.execute("SELECT count(*) FROM search_candidates WHERE status = 'running'")
        row = await cur.fetchone()
        return bool(row and row[0] == 0)

    await wait_until(idle, within, interval=0.05)


async def _deployment(
    ctx: Context,
    url: str,
    sim_url: str,
    scale: float,
    embedder: Any,
    share: list[tuple[int, dict[str, Any]]],
    *,
    deployments: int = 1,
) -> list[tuple[int, Timeline]]:
    """One isolated deployment (own database, pool, listener, provider gates and workers)
    running its share of the searches one after another."""
    import psycopg

    from shortlist.bootstrap import open_services

    settings = backfill_settings(url, sim_url, scale, deployments=deployments)
    deadline = 300.0 * scale  # five simulator minutes per search
    out: list[tuple[int, Timeline]] = []
    async with (
        open_services(settings, url, embedder=embedder) as services,
        await psycopg.AsyncConnection.connect(url, autocommit=True) as watch,
    ):
        principal = await recruiter(services.pool)
        async with running_backfill_workers(services):
            for number, brief in share:
                timeline = await product_search(services, principal, brief, deadline, watch)
                out.append((number, timeline))
                await _settle(watch, deadline)
                done = ctx.cache.get("backfill_done", 0) + 1
                ctx.cache["backfill_done"] = done
                if done % 10 == 0:
                    ctx.log(f"backfill: shortlist {done} searches")
    return out


def _shares(items: list[dict[str, Any]], k: int) -> list[list[tuple[int, dict[str, Any]]]]:
    return [[(i, b) for i, b in enumerate(items) if i % k == j] for j in range(k)]


async def run_product(
    ctx: Context, urls: list[str], sim_url: str, scale: float, embedder: Any, n: int
) -> list[Timeline]:
    if not ctx.smoke:
        # Warm-up search (untimed), in the first deployment: model, connections, plans.
        await _deployment(ctx, urls[0], sim_url, scale, embedder, [(-1, briefs(n + 1)[-1])])
    ctx.cache["backfill_done"] = 0
    shares = _shares(briefs(n), len(urls))
    parts = await asyncio.gather(
        *(
            _deployment(ctx, url, sim_url, scale, embedder, share, deployments=len(urls))
            for url, share in zip(urls, shares, strict=True)
        )
    )
    return [t for _, t in sorted((p for part in parts for p in part), key=lambda p: p[0])]


async def free_text_table(
    ctx: Context, url: str, sim_url: str, scale: float, embedder: Any
) -> list[dict[str, Any]]:
    """The free-text briefs on the product's path: each one's brief as parsed, its strict
    tier's calls and its results at or above the floor (a smoke run: one matched, one not)."""
    import psycopg

    queries = (FREE_TEXT_BRIEFS[0], MATCHED_BY_NOBODY[0]) if ctx.smoke else FREE_TEXT_BRIEFS
    share = [(i, {"query": q}) for i, q in enumerate(queries)]
    done = await _deployment(ctx, url, sim_url, scale, embedder, share)
    floor = backfill_settings(url, sim_url, scale).internal_min_score
    rows = []
    async with await psycopg.AsyncConnection.connect(url) as conn:
        for (i, timeline), query in zip(done, queries, strict=True):
            cur = await conn.execute(
                "SELECT s.brief, t.calls, (SELECT count(*) FROM search_results r"
                "  WHERE r.search_id = s.id AND r.score >= %s::real) AS above"
                " FROM searches s JOIN search_tiers t ON t.search_id = s.id AND t.tier = 'strict'"
                " WHERE s.id = %s",
                (floor, timeline.search_id),
            )
            found = await cur.fetchone()
            assert found is not None, f"free-text brief {i} left no search"
            brief, calls, above = found
            row = {"query": query, "brief": brief, "strict_calls": calls, "above_floor": above}
            row |= {"enrichments": timeline.enrichments, "credits": timeline.credits}
            rows.append(row)
            ctx.log(
                f"backfill: {query!r} -> {json.dumps(brief)}; strict calls {calls};"
                f" results >= {floor:g}: {above}; enrichments {timeline.enrichments}"
            )
    return rows


# --- the monolithic baseline ---------------------------------------------------------------------


async def monolithic_search(
    http: httpx.AsyncClient,
    pool: Any,
    embedder: Any,
    settings: Any,
    sim_url: str,
    number: int,
    brief: dict[str, Any],
) -> Timeline:
    """The seed's naive pipeline: discover → enrich all → ingest all → score → append all."""
    from pgvector import Vector

    timeline = Timeline(None, time.time())
    params: dict[str, Any] = {"page": 1, "per_page": TARGET}
    for key, name in (("role", "role"), ("location", "location")):
        if brief.get(key):
            params[name] = brief[key]
    if brief.get("min_years_experience") is not None:
        params["min_years"] = brief["min_years_experience"]
    try:
        response = await http.get(
            f"{sim_url}/v1/people/search", params=params, timeout=settings.discovery_timeout
        )
    except httpx.TimeoutException:
        timeline.status = "discovery timed out"
        return timeline
    if response.status_code != 200:
        timeline.status = f"discovery HTTP {response.status_code}"
        return timeline
    usernames = [r["username"] for r in response.json()["results"]]
    slots = asyncio.Semaphore(settings.provider_concurrency)

    async def enrich(username: str) -> dict[str, Any] | None:
        async with slots:
            try:
                r = await http.get(
                    f"{sim_url}/v1/people/{username}/enrich", timeout=settings.enrichment_timeout
                )
            except httpx.TimeoutException:
                return None
        if r.status_code != 200:
            return None
        profile: dict[str, Any] = r.json()
        return profile

    profiles = [p for p in await asyncio.gather(*(enrich(u) for u in usernames)) if p]
    profiles = [p for p in profiles if p.get("email")]
    if not profiles:
        timeline.status = "no profiles"
        return timeline
    texts = [
        "\n".join([p["full_name"], p.get("headline") or "", ", ".join(p.get("skills") or [])])
        for p in profiles
    ]
    vectors = await embedder.embed([*texts, brief["query"]])
    query_vector = vectors[-1]
    async with pool.connection() as conn, conn.transaction():
        ids = []
        for profile, vector in zip(profiles, vectors, strict=False):
            cur = await conn.execute(
                "INSERT INTO bench_mono_candidates (search, username, profile, embedding)"
                " VALUES (%s, %s, %s::jsonb, %s) RETURNING id",
                (number, profile["username"], _json(profile), Vector(vector)),
            )
            row = await cur.fetchone()
            assert row is not None
            ids.append(row["id"])
        await conn.execute(
            "INSERT INTO bench_mono_results (search, rank, candidate, score)"
            " SELECT %(search)s, row_number() OVER (ORDER BY d), id, 1 - d / 2 FROM ("
            "   SELECT id, embedding <=> %(q)s AS d FROM bench_mono_candidates"
            "    WHERE id = ANY(%(ids)s)) AS scored",
            {"search": number, "q": Vector(query_vector), "ids": ids},
        )
        await conn.execute(
            "INSERT INTO bench_mono_searches (search, result_count) VALUES (%s, %s)",
            (number, len(ids)),
        )
    elapsed = time.time() - timeline.started
    timeline.appended = [elapsed] * len(ids)
    timeline.status = "complete"
    return timeline


def _json(value: Any) -> str:
    return json.dumps(value)


async def run_monolithic(
    ctx: Context, url: str, sim_url: str, scale: float, embedder: Any, n: int, parallel: int
) -> list[Timeline]:
    from shortlist.db.pool import open_async_pool

    settings = backfill_settings(url, sim_url, scale)
    pool = await open_async_pool(url, min_size=1, max_size=parallel + 1, name="bench-mono")
    try:
        async with pool.connection() as conn:
            await conn.execute(MONO_SCHEMA)

        async def lane(share: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, Timeline]]:
            # Its own client and slots: an isolated pipeline, like one deployment.
            limits = httpx.Limits(max_connections=settings.provider_concurrency + 2)
            out = []
            async with httpx.AsyncClient(limits=limits) as http:
                for number, brief in share:
                    timeline = await monolithic_search(
                        http, pool, embedder, settings, sim_url, number, brief
                    )
                    out.append((number, timeline))
            return out

        if not ctx.smoke:
            await lane([(-1, briefs(n + 1)[-1])])  # warm-up search (untimed)
        parts = await asyncio.gather(*(lane(share) for share in _shares(briefs(n), parallel)))
        ctx.log(f"backfill: monolithic {n} searches")
    finally:
        await pool.close()
    return [t for _, t in sorted((p for part in parts for p in part), key=lambda p: p[0])]


# --- figures and the picture ---------------------------------------------------------------------


def _median(values: Sequence[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return statistics.median(got) if got else None


def _stat(values: Sequence[float | None], scale: float) -> Stat | None:
    got = [v / scale for v in values if v is not None]
    return Stat.of(got) if got else None


def floor_curve(floor: float, enrich: float, slots: int, t: float) -> int:
    """The ideal resultCount at ``t``: nothing before discovery + one enrichment, then every
    provider slot delivering one result per enrichment latency."""
    if t < floor:
        return 0
    rounds = 1 + int((t - floor) // enrich)
    return min(TARGET, rounds * slots)


def draw(run: BackfillRun, path: Path) -> None:
    """resultCount over time: the mean over the searches for this pipeline and the monolithic
    baseline (a search without results counts as 0), and the floor; one line each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    scale = run.scale
    done = [t.time_to(TARGET) for t in run.product]
    horizon = max([x for x in done if x is not None] + [t.first or 0.0 for t in run.monolithic])
    horizon = min(max(horizon * 1.05, run.floor * 4), 150 * scale)
    xs = np.linspace(0.0, horizon, 800)
    sim_x = xs / scale

    def mean_count(timelines: Sequence[Timeline]) -> Any:
        return np.array([[min(TARGET, t.count_at(x)) for x in xs] for t in timelines]).mean(axis=0)

    blue, red, green = "#1f77b4", "#d62728", "#2ca02c"
    hits = sum(1 for t in run.product if t.first is not None) / len(run.product)
    mono_hits = sum(1 for t in run.monolithic if t.first is not None) / len(run.monolithic)
    fig, ax = plt.subplots(figsize=(10, 5.6), dpi=120)
    ax.plot(
        sim_x,
        mean_count(run.product),
        color=blue,
        lw=2.4,
        label=f"shortlist: streaming, one commit per candidate ({hits:.0%} get results)",
    )
    ax.plot(
        sim_x,
        mean_count(run.monolithic),
        color=red,
        lw=2.4,
        label=(
            "monolithic baseline: one discovery call, enrich all → ingest → score → append"
            f" ({mono_hits:.0%} get results)"
        ),
    )
    floor_y = [floor_curve(run.floor, 8.0 * scale, run.slots, x) for x in xs]
    ax.step(
        sim_x,
        floor_y,
        where="post",
        color=green,
        lw=2.0,
        ls="--",
        label=(
            f"floor: discovery + one enrichment ({run.floor / scale:.1f} s), then"
            f" {run.slots} provider slots each adding a result per enrichment"
        ),
    )
    ttfr = _median([t.first for t in run.product])
    if ttfr is not None:
        x = ttfr / scale
        ax.plot([x], [0.25], marker="v", color=blue, ms=9, zorder=5)
        ax.annotate(
            f"median first result: {x:.1f} s\n= {x / (run.floor / scale):.2f} × the floor",
            xy=(x, 0.3),
            xytext=(0.01 * horizon / scale, 9.2),
            fontsize=9.5,
            color=blue,
            bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": blue, "lw": 0.8},
            arrowprops={"arrowstyle": "->", "color": blue, "lw": 1.0},
        )
    t15 = _median(done)
    if t15 is not None:
        x = t15 / scale
        ax.annotate(
            f"median time to {TARGET}: {x:.0f} s",
            xy=(x, TARGET),
            xytext=(x + 0.04 * horizon / scale, TARGET - 2.2),
            fontsize=9.5,
            color=blue,
            bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": blue, "lw": 0.8},
            arrowprops={"arrowstyle": "->", "color": blue, "lw": 1.0},
        )
    ax.set_xlim(0, horizon / scale)
    ax.set_ylim(0, TARGET + 1.5)
    ax.set_xlabel(
        f"seconds since the search started (simulator seconds; measured at time scale {scale:g})"
    )
    ax.set_ylabel("resultCount (backfilled results), mean over searches")
    ax.set_title(
        f"Backfill: resultCount over time, {len(run.product)} searches each,"
        " simulator default behaviour",
        fontsize=11.5,
    )
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", bbox_to_anchor=(1.0, 0.08), fontsize=8.6, framealpha=0.95)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def save_timelines(run: BackfillRun, path: Path) -> None:
    """The raw timelines (seconds after start, at the run's time scale), to redraw without a
    re-run: ``python -m bench.bench_backfill bench/results/backfill-timelines.json``."""
    data = {
        "scale": run.scale,
        "floor": run.floor,
        "slots": run.slots,
        "product": [t.appended for t in run.product],
        "monolithic": [t.appended for t in run.monolithic],
    }
    path.write_text(json.dumps(data) + "\n", encoding="utf-8")


def load_timelines(path: Path) -> BackfillRun:
    data = json.loads(path.read_text("utf-8"))

    def timelines(rows: list[list[float]]) -> list[Timeline]:
        return [Timeline(None, 0.0, appended=list(r)) for r in rows]

    return BackfillRun(
        timelines(data["product"]),
        timelines(data["monolithic"]),
        float(data["floor"]),
        int(data["slots"]),
        float(data["scale"]),
    )


def records(run: BackfillRun, n: int) -> list[Record]:
    scale = run.scale
    floor = Stat.one(run.floor / scale)
    note = f"{n} searches, time scale {scale:g}, simulator seconds"
    ttfr = _stat([t.first for t in run.product], scale)
    mono_ttfr = _stat([t.first for t in run.monolithic], scale)
    t15 = _stat([t.time_to(TARGET) for t in run.product], scale)
    mono_t15 = _stat([t.time_to(TARGET) for t in run.monolithic], scale)
    hits = sum(1 for t in run.product if t.first is not None) / len(run.product)
    mono_hits = sum(1 for t in run.monolithic if t.first is not None) / len(run.monolithic)
    reached = sum(1 for t in run.product if t.time_to(TARGET) is not None)
    mono_reached = sum(1 for t in run.monolithic if t.time_to(TARGET) is not None)
    enrichments = [t.enrichments for t in run.product]
    credits = [float(t.credits) for t in run.product]
    nan = Stat.one(float("nan"))
    out = [
        Record(
            NAME,
            "time to first backfilled result vs floor",
            ttfr or nan,
            floor,
            target=1.15,
            better="lower",
            unit="s",
            baseline_name="floor",
            note=note + " (median over searches with a result)",
        ),
        Record(
            NAME,
            "time to first backfilled result vs monolithic",
            ttfr or nan,
            mono_ttfr,
            better="lower",
            unit="s",
            baseline_name="monolithic",
            note=f"monolithic: searches with a result only ({mono_hits:.0%})",
        ),
        Record(
            NAME,
            f"time to {TARGET} results vs monolithic",
            t15 or nan,
            mono_t15,
            better="lower",
            unit="s",
            baseline_name="monolithic",
            note=f"reached {TARGET}: shortlist {reached}/{n}, monolithic {mono_reached}/{n}",
        ),
        Record(
            NAME,
            f"hit rate over {n} searches",
            Stat.one(hits),
            Stat.one(1.0),
            target=0.99,
            unit="%",
            baseline_name="all",
            note="share of searches with >= 1 backfilled result at or above the relevance floor",
        ),
        report(NAME, f"hit rate over {n} searches, monolithic baseline", mono_hits, unit="%"),
        Record(
            NAME,
            "enrichment calls per backfilled search vs target",
            Stat.one(statistics.fmean(enrichments)),
            Stat.one(TARGET),
            target=1.2,
            better="lower",
            unit="calls",
            baseline_name=f"target ({TARGET})",
            note=f"mean over {n} searches (min {min(enrichments)}, max {max(enrichments)})",
        ),
        report(
            NAME,
            "credits per backfilled search",
            Stat.of(credits),
            unit="credits",
            note="median (min-max) over searches, from the provider_calls ledger",
        ),
    ]
    if run.free_text:
        matched = [r for r in run.free_text if r["query"] not in MATCHED_BY_NOBODY]
        strangers = [r for r in run.free_text if r["query"] in MATCHED_BY_NOBODY]
        out.append(
            report(
                NAME,
                f"free-text briefs with results above the floor, of {len(matched)} matchable",
                sum(1 for r in matched if r["above_floor"] > 0),
                note=", ".join(f"{r['query']}: {r['above_floor']}" for r in matched),
            )
        )
        out.append(
            report(
                NAME,
                "results above the floor for briefs nobody matches",
                sum(r["above_floor"] for r in strangers),
                note=", ".join(f"{r['query']}: {r['above_floor']}" for r in strangers),
            )
        )
    return out


def run(ctx: Context) -> list[Record]:
    from shortlist.simulator import SimulatorServer

    n = int(ctx.options.get("searches") or ctx.size(100, 2))
    parallel = int(ctx.options.get("parallel") or ctx.size(PARALLEL, 1))
    scale = _time_scale(ctx)
    embedder = _embedder(ctx)
    urls = [ctx.pg.create_database(f"bench_backfill_{k}") for k in range(parallel)]
    config = simulator_config(scale)
    ctx.log(
        f"backfill: {n} searches in {parallel} isolated deployment(s), time scale {scale:g}"
        f" (enrichment ~{8 * scale:.2f}s)"
    )
    with SimulatorServer(config) as sim:
        product = asyncio.run(run_product(ctx, urls, sim.base_url, scale, embedder, n))
        monolithic = asyncio.run(
            run_monolithic(ctx, urls[0], sim.base_url, scale, embedder, n, parallel)
        )
        free_text = asyncio.run(
            free_text_table(
                ctx, ctx.pg.create_database("bench_backfill_briefs"), sim.base_url, scale, embedder
            )
        )
        (ctx.results_dir / "backfill-briefs.json").write_text(
            json.dumps(free_text, indent=1) + "\n", encoding="utf-8"
        )
        settings = backfill_settings(urls[0], sim.base_url, scale)
        floor = (config.discovery_latency_s + config.enrich_mean_s) * scale
        result = BackfillRun(
            product, monolithic, floor, settings.provider_concurrency, scale, free_text
        )
        out = records(result, n)
        picture = ctx.results_dir / "backfill.png"
        save_timelines(result, ctx.results_dir / "backfill-timelines.json")
        draw(result, picture)
        ctx.log(f"backfill: picture saved: {picture}")
        if ctx.profiles_enabled and any(r.met is False for r in out):
            ctx.log("backfill: a target was missed; profiling 5 searches of this pipeline")
            profile_url = ctx.pg.create_database("bench_backfill_profile")
            asyncio.run(
                profile_async(
                    ctx,
                    NAME,
                    lambda: run_product(ctx, [profile_url], sim.base_url, scale, embedder, 5),
                )
            )
    return out


if __name__ == "__main__":
    # Redraw the picture from saved timelines: python -m bench.bench_backfill [TIMELINES.json]
    source = (
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else Path(__file__).parent / "results" / ("backfill-timelines.json")
    )
    draw(load_timelines(source), source.with_name("backfill.png"))
