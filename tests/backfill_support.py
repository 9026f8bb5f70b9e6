"""Shared by the backfill tests (``test_backfill*.py``, ``test_searches_api.py``): settings
scaled to a fast simulator, running backfill workers in-process, seeding the internal corpus,
polling ``/api/results``, scripted sources — and, run as a module, a backfill worker in its own
OS process (for the SIGKILL test)::

    python -m tests.backfill_support      # settings from SHORTLIST_* (as `shortlist worker`)

It runs the backfill workers with the ``FakeEmbedder`` (the product default, the local model,
takes seconds to load) and exits 0 on SIGTERM. Use the fixtures with
``pytest_plugins = ["tests.api_fixtures", "tests.backfill_support"]``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import httpx
import pytest
from pgvector import Vector

from shortlist.auth import Role
from shortlist.bootstrap import Services, backfill_workers, shared_sources
from shortlist.config import Settings
from shortlist.db.types import AsyncPool
from shortlist.places import Place
from shortlist.queue import QueueWorker
from shortlist.simulator import SimulatorConfig, SimulatorServer
from shortlist.talent import repository as repo
from shortlist.talent.repository import CandidateRecord
from shortlist.talent.vendors.base import DiscoveryPage, DiscoveryQuery, Profile, ProfileStub
from shortlist.talent.vendors.factory import Sources
from tests.fakes import FakeEmbedder
from tests.helpers import FromFixture, wait_for

# 1/100 of the seed's latencies: enrichment ~80 ms (tail ≤ 0.4 s), discovery ~15 ms, a first-
# attempt discovery hang 0.9 s, Retry-After 20 ms. Client timeouts and the retry delay are
# scaled alike, so a hang is a timeout and a retry answers, as in production.
TIME_SCALE = 0.01
# SHORTLIST_INTERNAL_MIN_SCORE is calibrated for the real model's cosine scores; the
# FakeEmbedder's bag-of-words vectors score lower for the same overlap (three shared words of a
# short profile ≈ 0.65), so tests use their own floor: above collisions, below real matches.
FAKE_MIN_SCORE = 0.55

# The ``make_token`` fixture of tests.api_fixtures: ``await make_token(name, role)``.
MakeToken = Callable[[str, Role], Awaitable[str]]


BACKFILL: dict[str, Any] = {
    "load_sample_data": False,
    "search_rate_limit": 0,
    # No provider answers here unless a test names one (ON_SIMULATOR).
    "talent_api_url": "http://127.0.0.1:9",
    "serp_api_url": "http://127.0.0.1:9",
    # 60 s x ~1/100 would be 0.6 s; 0.8 s is still under the 0.9 s hang, and a normal
    # answer (~15 ms) from the simulator thread stays under it on a loaded machine (0.3 s
    # was reached with four test processes on two cores).
    "discovery_timeout": 0.8,
    "enrichment_timeout": 1.0,  # above the 0.4 s tail cap
    "retry_delay": 0.05,
    "lease_seconds": 5.0,
    "heartbeat_interval": 1.0,
    "stale_after": 600.0,
    "reaper_interval": 0.1,
    "backfill_concurrency": 4,
    "provider_concurrency": 4,
    "internal_min_score": FAKE_MIN_SCORE,
    # These tests are about the pipeline's mechanics on the generic dialect (the vendor
    # dialects have tests of their own).
    "talent_api": "generic",
    "serp_api": "generic",
    "search_credit_budget": 0,
    # One recruiter runs many searches here; the daily caps have tests of their own.
    "recruiter_daily_searches": 0,
    "recruiter_daily_credits": 0,
}
"""The backfill pipeline's settings scaled to the simulator's ``TIME_SCALE`` (a profile of the
``settings`` fixture: ``pytest.mark.settings(BACKFILL, **ON_SIMULATOR)``)."""

ON_SIMULATOR: dict[str, Any] = {
    "talent_api_url": FromFixture("simulator", lambda sim: sim.base_url),
    "serp_api_url": FromFixture("simulator", lambda sim: sim.base_url),
}
"""Both providers are the test's ``simulator`` fixture."""


def fast_settings(db_url: str, sim_url: str | None, **overrides: Any) -> Settings:
    values = BACKFILL | {"database_url": db_url}
    if sim_url is not None:
        values |= {"talent_api_url": sim_url, "serp_api_url": sim_url}
    return Settings(**(values | overrides))


@pytest.fixture
def simulator() -> Iterator[SimulatorServer]:
    sim = SimulatorServer(SimulatorConfig(time_scale=TIME_SCALE))
    sim.start()
    try:
        yield sim
    finally:
        sim.stop()


@contextlib.asynccontextmanager
async def running_workers(services: Services) -> AsyncIterator[list[QueueWorker[Any]]]:
    """The backfill workers of ``services`` (tier queue, candidate queue), woken by its
    notifier; stopped and drained on exit."""
    stop = asyncio.Event()
    own_sources = services.sources is None
    if own_sources:
        services.sources = shared_sources(services.settings, services.pool)
    workers = backfill_workers(services)
    tasks = [asyncio.create_task(w.run(stop)) for w in workers]
    # (Re)started after the workers' tasks, which subscribe first thing: the listener LISTENs
    # on every subscribed channel as it connects. A listener that is already running picks up
    # a new channel only on its next wake-up (up to a second), and the first NOTIFYs — the first
    # stubs of a search that takes a second in all — would be missed.
    await asyncio.sleep(0)  # let the worker tasks subscribe
    await services.notifier.stop()
    services.notifier.connected.clear()
    services.notifier.start()
    await asyncio.wait_for(services.notifier.connected.wait(), 10)
    try:
        yield workers
    finally:
        stop.set()
        await asyncio.gather(*tasks)
        await services.notifier.stop()
        if own_sources and services.sources is not None:
            await services.sources.aclose()
            services.sources = None


async def set_behaviour(sim: SimulatorServer, **patch: Any) -> None:
    # The admin call is a blocking HTTP request to the simulator's own thread.
    await asyncio.to_thread(sim.set_behaviour, **patch)


async def sim_stats(sim: SimulatorServer) -> dict[str, Any]:
    return await asyncio.to_thread(sim.stats)


# --- the internal corpus ---------------------------------------------------------------------


@dataclass(frozen=True)
class Person:
    full_name: str
    role_title: str
    skills: tuple[str, ...]
    location: str = "Berlin, Germany"
    years: int = 6
    headline: str = ""
    summary: str = ""


async def seed_corpus(pool: AsyncPool, embedder: FakeEmbedder, people: Sequence[Person]) -> None:
    """Insert internal candidates embedded as the indexer would embed them."""
    async with pool.connection() as conn:
        for p in people:
            record = CandidateRecord(
                external_id="",
                source="import",
                full_name=p.full_name,
                headline=p.headline or p.role_title,
                role_title=p.role_title,
                role_family="",
                skills=list(p.skills),
                years_experience=p.years,
                location=p.location,
                email=f"{p.full_name.split()[0].lower()}@example.com",
                summary=p.summary,
                profile_url=None,
            )
            [vector] = await embedder.embed([await repo.candidate_text(pool, record)])
            await conn.execute(
                "INSERT INTO candidates (source, full_name, headline, role_title, skills,"
                " years_experience, location, email, summary, embedding, embedding_status,"
                " embedded_at, embedded_hash)"
                " VALUES ('import', %(full_name)s, %(headline)s, %(role_title)s, %(skills)s,"
                " %(years)s, %(location)s, %(email)s, %(summary)s, %(embedding)s, 'embedded',"
                " clock_timestamp(), NULL)",
                {
                    "full_name": record.full_name,
                    "headline": record.headline,
                    "role_title": record.role_title,
                    "skills": record.skills,
                    "years": record.years_experience,
                    "location": record.location,
                    "email": record.email,
                    "summary": record.summary,
                    "embedding": Vector(vector),
                },
            )
            await conn.execute(
                "UPDATE candidates SET embedded_hash = content_hash WHERE embedded_hash IS NULL"
            )
        await conn.commit()


def python_backend_people(n: int) -> list[Person]:
    """A corpus a broad "python backend" brief fills, and a Rust firmware brief does not touch."""
    return [
        Person(
            full_name=f"Backend Person{i}",
            role_title="Python Backend Developer",
            skills=("Python", "Django", "PostgreSQL"),
            summary="Builds python backend services and APIs with Django and PostgreSQL.",
        )
        for i in range(n)
    ]


# --- polling the API -------------------------------------------------------------------------


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
async def recruiter(make_token: MakeToken) -> str:
    """A recruiter's token (``make_token``: the API fixtures')."""
    return await make_token("recruiter", Role.recruiter)


async def start_search(client: httpx.AsyncClient, token: str, body: dict[str, Any]) -> str:
    """``POST /api/searches``: a backfilled search started; its id."""
    response = await client.post("/api/searches", json=body, headers=auth(token))
    assert response.status_code == 202, response.text
    search_id: str = response.json()["searchId"]
    return search_id


async def get_results(
    client: httpx.AsyncClient, token: str, search_id: str, **params: Any
) -> dict[str, Any]:
    response = await client.get(
        "/api/results",
        params={"searchId": search_id, **params},
        headers=auth(token),
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def wait_complete(
    client: httpx.AsyncClient, token: str, search_id: str, within: float = 30.0
) -> dict[str, Any]:
    """The results of ``search_id`` once it is complete (a final state: the page cannot change
    after it). Polled with a page of one: a page of 500 is ranks, people, why and an audit
    entry per person shown, on every poll."""

    async def done() -> bool:
        body = await get_results(client, token, search_id, limit=1)
        return body["status"] == "complete"

    await wait_for(done, timeout=within, message=f"search {search_id} complete")
    return await get_results(client, token, search_id, limit=500)


async def stub_rows(pool: AsyncPool, search_id: str | UUID) -> list[dict[str, Any]]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT id, external_id, tier, status::text AS status, last_error, attempts,"
            " locked_by, candidate_id FROM search_candidates WHERE search_id = %s ORDER BY id",
            (search_id,),
        )
        return await cur.fetchall()


def assert_contiguous(results: list[dict[str, Any]], count: int) -> None:
    ranks = [r["rank"] for r in results]
    assert ranks == list(range(1, count + 1)), ranks
    ids = [r["candidate"]["id"] for r in results]
    assert len(set(ids)) == len(ids), "a person appears twice"


# --- scripted sources ------------------------------------------------------------------------


def profile(username: str, *, role: str = "Firmware Engineer") -> Profile:
    return Profile(
        external_id=f"talent:{username}",
        username=username,
        full_name=username.replace(".", " ").title(),
        headline=f"{role} at Example",
        role_title=role,
        role_family="embedded",
        skills=["Rust", "Firmware"],
        years_experience=7,
        location="Berlin, Germany",
        email=f"{username}@example.com",
        summary=f"{role} working on rust firmware.",
    )


@dataclass
class ScriptedSources:
    """Sources whose tiers all return the same people (page 1 only). ``gate``: the first
    ``gate_size`` discovery calls wait until all of them are in flight, so those tiers race on
    the same people with known sets loaded before any of them wrote a stub; later calls pass."""

    people: list[str]
    gate_size: int = 1
    discovered: Counter[str] = field(default_factory=Counter)
    enriched: Counter[str] = field(default_factory=Counter)
    _barrier: asyncio.Barrier | None = None
    _gated: int = 0

    def __post_init__(self) -> None:
        self._barrier = asyncio.Barrier(self.gate_size)

    async def _page(self, page: int) -> DiscoveryPage:
        assert self._barrier is not None
        if self._gated < self.gate_size:
            self._gated += 1
            async with asyncio.timeout(10):
                await self._barrier.wait()
        if page > 1:
            return DiscoveryPage([], has_more=False)
        stubs = [ProfileStub(f"talent:{u}", u, u) for u in self.people]
        self.discovered.update(s.external_id for s in stubs)
        return DiscoveryPage(stubs, has_more=False)

    async def discover(
        self, query: DiscoveryQuery, page: int, per_page: int, cursor: str | None = None
    ) -> DiscoveryPage:
        return await self._page(page)

    async def search(self, text: str, page: int, place: Place | None = None) -> DiscoveryPage:
        return await self._page(page)

    async def enrich(self, external_id: str) -> Profile:
        username = external_id.removeprefix("talent:")
        self.enriched[username] += 1
        return profile(username)

    async def aclose(self) -> None:
        pass

    def as_sources(self) -> Sources:
        return Sources(talent=self, serp=self)


# --- a worker process --------------------------------------------------------------------------


async def _worker_main() -> None:
    from shortlist.bootstrap import open_services
    from shortlist.runtime import install_stop_signals, run_until_stopped

    settings = Settings()
    assert settings.database_url, "SHORTLIST_DATABASE_URL must be set"
    stop = asyncio.Event()
    install_stop_signals(stop)
    async with open_services(
        settings, settings.database_url, embedder=FakeEmbedder(), with_sources=True
    ) as services:
        # The process's sources as `shortlist worker` builds them (shared rate gate included).
        workers = backfill_workers(services)
        await run_until_stopped([w.run for w in workers], stop, grace=5.0)


if __name__ == "__main__":
    asyncio.run(_worker_main())
