"""load: 50 concurrent candidate searches on 2 backfill worker processes; how full the
providers' concurrency slots are kept, and whether any search is starved.

Two ``shortlist worker --only backfill`` processes (product defaults: 4 slots per provider per
process, 8 candidates in flight per process) work 50 searches started at once against one
simulator (default behaviour, time scale 0.1). The talent provider (discovery + enrichment, one
gate per process) is the bottleneck, so its slots are the baseline: 2 × 4 = 8.

* slot utilisation: calls in flight at the simulator's talent endpoints, sampled every 20 ms,
  averaged over the samples where the backlog (queued + running candidates) was at least the
  slot count, ÷ slots available. Below the backlog the slots cannot all be busy, whatever the
  pipeline does.
* starvation: a search is starved when it has no backfilled result yet by the time half of the
  searches have reached their 15 results.

``--smoke`` runs the two workers in-process (model-free embedder, tiny sizes).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import sys
import time
from asyncio.subprocess import Process
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import Context, Record, Stat, percentile, report
from bench.talent_support import (
    DEFAULT_TIME_SCALE,
    SMOKE_TIME_SCALE,
    HashEmbedder,
    Timeline,
    backfill_settings,
    briefs,
    read_timeline,
    recruiter,
    running_backfill_workers,
    settings_env,
    simulator_config,
    start_backfill_search,
    wait_until,
)

NAME = "load"
TARGET = 15
PROCESSES = 2
SAMPLE_EVERY = 0.02
TALENT_ENDPOINTS = ("search", "enrich")


@dataclass
class Sample:
    at: float
    talent_in_flight: int
    backlog: int = -1


@dataclass
class LoadRun:
    timelines: list[Timeline]
    samples: list[Sample] = field(default_factory=list)
    slots: int = 0
    scale: float = 1.0


@contextlib.asynccontextmanager
async def worker_processes(settings: Any, n: int) -> AsyncIterator[list[Process]]:
    """``n`` × ``shortlist worker --only backfill``, configured by environment, as in production."""
    env = {**os.environ, **settings_env(settings), "SHORTLIST_LOG_LEVEL": "ERROR"}
    exe = Path(sys.executable).with_name("shortlist")
    procs = [
        await asyncio.create_subprocess_exec(
            str(exe),
            "worker",
            "--only",
            "backfill",
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        for _ in range(n)
    ]
    try:
        yield procs
    finally:
        for p in procs:
            if p.returncode is None:
                p.terminate()
        for p in procs:
            try:
                await asyncio.wait_for(p.wait(), 30)
            except TimeoutError:
                p.kill()
                await p.wait()


@contextlib.asynccontextmanager
async def in_process_workers(settings: Any, url: str, n: int) -> AsyncIterator[None]:
    """Smoke mode: ``n`` independent worker sets (own pool, listener, provider gates)."""
    from shortlist.bootstrap import open_services

    async with contextlib.AsyncExitStack() as stack:
        for _ in range(n):
            services = await stack.enter_async_context(
                open_services(settings, url, embedder=HashEmbedder(), pool_max=4)
            )
            await stack.enter_async_context(running_backfill_workers(services))
        yield


async def _backlog(pool: Any) -> int:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM search_candidates WHERE status IN ('queued', 'running')"
        )
        row = await cur.fetchone()
    return int(row["n"]) if row else 0


async def _running_searches(pool: Any, ids: list[Any]) -> int:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM searches WHERE id = ANY(%s) AND status = 'running'", (ids,)
        )
        row = await cur.fetchone()
    return int(row["n"]) if row else 0


async def _drive(
    ctx: Context, services: Any, sim: Any, n: int, deadline: float, run: LoadRun
) -> None:
    """Start ``n`` searches at once, sample until all are done (or the deadline)."""
    principal = await recruiter(services.pool)
    state = sim.state
    stop = asyncio.Event()
    backlog = 0

    async def sampler() -> None:
        nonlocal backlog
        t0 = time.time()
        last_db = 0.0
        while not stop.is_set():
            now = time.time()
            if now - last_db >= 0.1:
                backlog = await _backlog(services.pool)
                last_db = now
            in_flight = sum(state.in_flight[e] for e in TALENT_ENDPOINTS)
            run.samples.append(Sample(now - t0, in_flight, backlog))
            await asyncio.sleep(SAMPLE_EVERY)

    sampling = asyncio.create_task(sampler())
    started = time.time()

    async def one(brief: dict[str, Any]) -> Timeline:
        timeline = Timeline(None, time.time())
        result = await start_backfill_search(services, principal, brief)
        timeline.search_id = result.search_id
        return timeline

    run.timelines = list(await asyncio.gather(*(one(b) for b in briefs(n))))
    ids = [t.search_id for t in run.timelines]

    async def all_done() -> bool:
        return await _running_searches(services.pool, ids) == 0

    await wait_until(all_done, deadline, interval=0.2)
    stop.set()
    await sampling
    for timeline in run.timelines:
        await read_timeline(services.pool, timeline)
    ctx.log(f"load: {n} searches done in {time.time() - started:.1f}s")


async def _warm_up(services: Any, sim: Any, deadline: float) -> None:
    """Four searches through both processes: model load, connections, plans."""
    principal = await recruiter(services.pool)
    warm = [{"query": f"warm-up {b['query']}", "role": b["role"]} for b in briefs(60)[-4:]]
    ids = [(await start_backfill_search(services, principal, b)).search_id for b in warm]

    async def done() -> bool:
        return await _running_searches(services.pool, ids) == 0

    await wait_until(done, deadline, interval=0.2)

    async def idle() -> bool:
        return await _backlog(services.pool) == 0

    await wait_until(idle, deadline, interval=0.2)
    await asyncio.to_thread(sim.reset)


async def _run(ctx: Context, url: str, sim: Any, scale: float, n: int) -> LoadRun:
    from shortlist.bootstrap import open_services

    # Slot utilisation is measured on the generic dialect, whose every result is an enrichment
    # (a PDL search hit needs none): the figure the slots were sized on.
    settings = backfill_settings(url, sim.base_url, scale, talent_api="generic", serp_api="generic")
    run = LoadRun([], slots=settings.provider_concurrency * PROCESSES, scale=scale)
    # A smoke run checks that the benchmark runs, not that its searches finish.
    deadline = (600.0 if ctx.smoke else 3000.0) * scale
    embedder = HashEmbedder() if ctx.smoke else None
    workers: contextlib.AbstractAsyncContextManager[Any] = (
        in_process_workers(settings, url, PROCESSES)
        if ctx.smoke
        else worker_processes(settings, PROCESSES)
    )
    async with open_services(settings, url, embedder=embedder) as services, workers:
        if not ctx.smoke:
            await _warm_up(services, sim, deadline)
        await _drive(ctx, services, sim, n, deadline, run)
    return run


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def records(run: LoadRun, n: int) -> list[Record]:
    scale = run.scale
    saturated = [s for s in run.samples if s.backlog >= run.slots]
    busy = [s.talent_in_flight for s in saturated]
    in_use = statistics.fmean(busy) if busy else float("nan")
    active = [s for s in run.samples if s.backlog > 0]
    overall = statistics.fmean(s.talent_in_flight for s in active) if active else float("nan")
    never = float("inf")
    done_at = sorted(_or(t.time_to(TARGET), never) for t in run.timelines)
    half = done_at[(len(done_at) - 1) // 2]
    starved = [t for t in run.timelines if _or(t.first, never) > half]
    firsts = [_or(t.first, never) / scale for t in run.timelines if t.first is not None]
    fifteens = [x / scale for x in done_at if x != float("inf")]
    note = f"{n} searches, {PROCESSES} worker processes, time scale {scale:g}"
    out = [
        Record(
            NAME,
            "talent slots in use while the backlog >= slots",
            Stat.one(in_use),
            Stat.one(float(run.slots)),
            target=0.9,
            unit="slots",
            baseline_name="available",
            note=f"{note}; {len(saturated)} of {len(run.samples)} samples saturated",
        ),
        Record(
            NAME,
            "searches not starved",
            Stat.one(float(n - len(starved))),
            Stat.one(float(n)),
            target=1.0,
            unit="searches",
            baseline_name="all",
            note="starved: no result before half the searches had 15",
        ),
        report(NAME, "talent slots in use, whole run (backlog > 0)", overall, unit="slots"),
    ]
    if firsts:
        out.append(
            report(
                NAME,
                "time to first backfilled result, median / max",
                Stat(statistics.median(firsts), min(firsts), max(firsts), len(firsts)),
                unit="s",
                note="simulator seconds, min-max over searches",
            )
        )
    if fifteens:
        out.append(
            report(
                NAME,
                f"time to {TARGET} results, median (p90 in note)",
                Stat(statistics.median(fifteens), min(fifteens), max(fifteens), len(fifteens)),
                unit="s",
                note=f"p90 {percentile(fifteens, 90):.1f} s; reached: {len(fifteens)}/{n}",
            )
        )
    return out


def run(ctx: Context) -> list[Record]:
    from shortlist.simulator import SimulatorServer

    n = 3 if ctx.smoke else int(ctx.options.get("searches") or 50)
    raw = ctx.options.get("time_scale")
    scale = float(raw) if raw else (SMOKE_TIME_SCALE if ctx.smoke else DEFAULT_TIME_SCALE)
    url = ctx.pg.create_database("bench_load")
    ctx.log(f"load: {n} concurrent searches, {PROCESSES} worker processes, time scale {scale:g}")
    with SimulatorServer(simulator_config(scale)) as sim:
        result = asyncio.run(_run(ctx, url, sim, scale, n))
    return records(result, n)
