"""Shared by the backfill and load benchmarks: the briefs, time-scaled settings, a model-free
embedder for smoke runs, backfill workers in-process, and reading a search's timeline."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import math
import re
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from shortlist.config import Settings
from shortlist.simulator import SimulatorConfig

DEFAULT_TIME_SCALE = 0.1
"""Simulator latencies ×0.1: enrichment ~0.8 s, discovery ~0.15 s, a hang 9 s. The client's
timeouts and retry delay are scaled alike, so the behaviour is the seed's, ten times faster."""
BACKFILL_TIME_SCALE = 0.2
"""The backfill benchmark's default: its figures are latencies, and real CPU work (embedding a
profile, commits) is not scaled, so every 10 ms of it reads as 10 ms ÷ scale of simulated time;
0.2 halves that distortion compared with 0.1 at twice the run time."""
SMOKE_TIME_SCALE = 0.01
NO_INTERNAL_HITS = 1.01
"""A corpus floor above any possible score, for starting a search (``start_backfill_search``):
the internal corpus (which grows with every backfilled profile) never answers, so every search
is a full backfill, as on an empty corpus. The workers keep the product's floor."""

_WORD = re.compile(r"\w+")


class HashEmbedder:
    """A model-free ``Embedder`` (bag of hashed words, normalised) for smoke runs: instant and
    deterministic, so smoke runs do not pay the model's seconds of loading."""

    name = "hash"
    dim = 384

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            v = [0.0] * self.dim
            for token in _WORD.findall(text.lower()) or [text]:
                digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
                v[int.from_bytes(digest, "big") % self.dim] += 1.0
            norm = math.sqrt(sum(x * x for x in v)) or 1.0
            out.append([x / norm for x in v])
        return out

    def warm_up(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


def briefs(n: int) -> list[dict[str, Any]]:
    """``n`` distinct recruiter briefs, each the title and city of someone in the simulator's
    world (so each is one somebody can answer, as a recruiter's brief usually is) — distinct,
    so each search's discovery calls are first attempts, which hang at the simulator's 41 %.
    Every third brief asks for 3, every third for 5 years, when that person has them."""
    from shortlist.simulator import SimulatorConfig, population_of

    # The default simulator's people, as its app holds them (loaded once per process).
    people = population_of(SimulatorConfig())
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    step = 7919  # a prime: walks the whole population without a pattern
    i = 0
    while len(out) < n and i < len(people):
        person = people[(i * step) % len(people)]
        i += 1
        title = person.role_title
        city = person.location.split(",")[0].strip()
        if (title, city) in seen:
            continue
        seen.add((title, city))
        wanted = (None, 3, 5)[len(out) % 3]
        min_years = wanted if wanted is not None and person.years_experience >= wanted else None
        out.append(
            {
                "query": f"{title} in {city}",
                "role": title,
                "location": city,
                "min_years_experience": min_years,
            }
        )
    return out


def simulator_config(scale: float) -> SimulatorConfig:
    """The simulator at ``scale``: its latencies and its vendors' rate windows scaled alike (PDL's
    minute, SerpApi's hour), so a limit per window means what it means in production."""
    defaults = SimulatorConfig()
    return SimulatorConfig(
        time_scale=scale,
        rate_window_s=defaults.rate_window_s * scale,
        serpapi_window_s=defaults.serpapi_window_s * scale,
    )


def backfill_settings(
    url: str, sim_url: str, scale: float, *, deployments: int = 1, **overrides: Any
) -> Settings:
    """The product defaults, with every external-call timing and rate window scaled like the
    simulator. ``deployments`` isolated deployments share one vendor key, as processes of one
    deployment would: each gets its share of every per-window limit."""
    defaults = Settings()
    share = max(1, deployments)
    values: dict[str, Any] = {
        "database_url": url,
        "load_sample_data": False,
        "search_rate_limit": 0,
        "talent_api_url": sim_url,
        "serp_api_url": sim_url,
        "talent_api_key": defaults.simulator_api_key,
        "serp_api_key": defaults.simulator_api_key,
        "discovery_timeout": defaults.discovery_timeout * scale,
        "enrichment_timeout": defaults.enrichment_timeout * scale,
        "retry_delay": defaults.retry_delay * scale,
        "pdl_window_seconds": defaults.pdl_window_seconds * scale,
        "serpapi_window_seconds": defaults.serpapi_window_seconds * scale,
        "pdl_search_rate_limit": max(1, defaults.pdl_search_rate_limit // share),
        "pdl_enrich_rate_limit": max(1, defaults.pdl_enrich_rate_limit // share),
        "serpapi_rate_limit": max(1, defaults.serpapi_rate_limit // share),
        "log_level": "WARNING",
        # One recruiter runs every search of a benchmark: the daily caps would stop it.
        "recruiter_daily_searches": 0,
        "recruiter_daily_credits": 0,
    }
    return Settings(**(values | overrides))


async def start_backfill_search(services: Any, principal: Any, brief: dict[str, Any]) -> Any:
    """``start_search`` with the internal corpus out of play (``NO_INTERNAL_HITS``): a full
    backfill, whose people the workers hold to the product's floor."""
    from shortlist.talent.models import SearchCreate
    from shortlist.talent.service import start_search

    settings = services.settings.model_copy(update={"internal_min_score": NO_INTERNAL_HITS})
    return await start_search(
        dataclasses.replace(services, settings=settings),
        principal,
        SearchCreate.model_validate(brief),
    )


def settings_env(settings: Settings) -> dict[str, str]:
    """``SHORTLIST_*`` variables reproducing ``settings`` in another process."""
    env: dict[str, str] = {}
    for name, value in settings.model_dump().items():
        if value is None:
            continue
        env[f"SHORTLIST_{name.upper()}"] = (
            str(value).lower() if isinstance(value, bool) else str(value)
        )
    return env


@contextlib.asynccontextmanager
async def running_backfill_workers(services: Any) -> AsyncIterator[list[Any]]:
    """This process's backfill workers (tier queue, candidate queue), stopped on exit."""
    from shortlist.bootstrap import backfill_workers, shared_sources

    stop = asyncio.Event()
    own_sources = services.sources is None
    if own_sources:
        services.sources = shared_sources(services.settings, services.pool)
    workers = backfill_workers(services)
    tasks = [asyncio.create_task(w.run(stop)) for w in workers]
    # The listener LISTENs on the channels subscribed when it connects; restart it after the
    # workers subscribed, so the first NOTIFYs of the first search are not missed.
    await asyncio.sleep(0)
    await services.notifier.stop()
    services.notifier.connected.clear()
    services.notifier.start()
    await asyncio.wait_for(services.notifier.connected.wait(), 10)
    try:
        yield workers
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        if own_sources and services.sources is not None:
            await services.sources.aclose()
            services.sources = None


async def recruiter(pool: Any) -> Any:
    from shortlist.auth import Role, create_token_async

    async with pool.connection() as conn:
        principal, _token = await create_token_async(
            conn, f"bench-{uuid.uuid4().hex[:8]}", Role.recruiter
        )
        await conn.commit()
    return principal


@dataclass
class Timeline:
    """One search: when (seconds after it was started) each backfilled result appeared."""

    search_id: uuid.UUID | None
    started: float
    """Wall clock (epoch seconds) just before the search was started."""
    appended: list[float] = field(default_factory=list)
    status: str = ""
    enrichments: int = 0
    """Enrichment calls made for the search (the provider_calls ledger)."""
    credits: int = 0

    @property
    def first(self) -> float | None:
        return self.appended[0] if self.appended else None

    def time_to(self, n: int) -> float | None:
        return self.appended[n - 1] if len(self.appended) >= n else None

    def count_at(self, t: float) -> int:
        return sum(1 for a in self.appended if a <= t)


async def search_state(pool: Any, search_id: uuid.UUID) -> tuple[str, int]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT status::text AS status, result_count FROM searches WHERE id = %s",
            (search_id,),
        )
        row = await cur.fetchone()
    assert row is not None
    return str(row["status"]), int(row["result_count"])


async def read_timeline(pool: Any, timeline: Timeline, floor: float = 0.0) -> None:
    """Fill ``timeline.appended`` from the commit timestamps (the append transaction's
    ``now()``, taken after the enrichment returned) of the backfilled results scoring at least
    ``floor``, and its enrichments and credits from the ledger."""
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT extract(epoch FROM created_at)::float8 AS at FROM search_results"
            " WHERE search_id = %s AND tier <> 'internal' AND score >= %s::real ORDER BY rank",
            (timeline.search_id, floor),
        )
        rows = await cur.fetchall()
        cur = await conn.execute(
            "SELECT count(*) FILTER (WHERE kind = 'enrich') AS enrichments,"
            " coalesce(sum(credits), 0) AS credits FROM provider_calls WHERE search_id = %s",
            (timeline.search_id,),
        )
        cost = await cur.fetchone()
    timeline.appended = [float(r["at"]) - timeline.started for r in rows]
    if cost is not None:
        timeline.enrichments, timeline.credits = int(cost["enrichments"]), int(cost["credits"])


async def wait_until(predicate: Any, within: float, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + within
    while True:
        if await predicate():
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(interval)
