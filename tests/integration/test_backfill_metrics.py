"""The backfill's headline numbers in /metrics: searches backfilled, searches reaching their
target (hit rate = the ratio) and the time to the first backfilled result."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from shortlist.auth import Role
from shortlist.bootstrap import Services
from tests.backfill_support import (
    BACKFILL,
    ON_SIMULATOR,
    MakeToken,
    auth,
    python_backend_people,
    running_workers,
    seed_corpus,
    wait_complete,
)
from tests.backfill_support import simulator as simulator  # the fixture
from tests.fakes import FakeEmbedder

NICHE = {
    "query": "Rust embedded firmware for battery-powered sensors",
    "role": "Rust Embedded Firmware Engineer",
}
BROAD = {"query": "python backend developer", "skills": ["Django"]}


pytestmark = pytest.mark.settings(BACKFILL, **ON_SIMULATOR)


def sample(text: str, name: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def scrape(client: httpx.AsyncClient) -> dict[str, float]:
    text = (await client.get("/metrics")).text
    names = (
        "shortlist_backfill_searches_total",
        "shortlist_backfill_reached_target_total",
        "shortlist_backfill_time_to_first_result_seconds_count",
        "shortlist_backfill_time_to_first_result_seconds_sum",
    )
    return {name: sample(text, name) for name in names}


async def start(client: httpx.AsyncClient, token: str, body: dict[str, Any]) -> str:
    response = await client.post("/api/searches", json=body, headers=auth(token))
    assert response.status_code == 202, response.text
    search_id: str = response.json()["searchId"]
    return search_id


@pytest.mark.slow
async def test_a_backfilled_search_is_counted_timed_and_scored_against_its_target(
    client: httpx.AsyncClient,
    services: Services,
    embedder: FakeEmbedder,
    make_token: MakeToken,
) -> None:
    token = await make_token("recruiter", Role.recruiter)
    await seed_corpus(services.pool, embedder, python_backend_people(30))
    before = await scrape(client)

    # Served by the corpus alone: no backfill, nothing counted.
    await start(client, token, BROAD)
    assert await scrape(client) == before

    started = time.monotonic()
    search_id = await start(client, token, NICHE)
    async with running_workers(services):
        body = await wait_complete(client, token, search_id)
    elapsed = time.monotonic() - started
    after = await scrape(client)

    def delta(name: str) -> float:
        return after[name] - before[name]

    assert delta("shortlist_backfill_searches_total") == 1
    assert any(r["tier"] != "internal" for r in body["results"])
    assert delta("shortlist_backfill_time_to_first_result_seconds_count") == 1
    assert 0 < delta("shortlist_backfill_time_to_first_result_seconds_sum") <= elapsed
    reached = body["resultCount"] >= services.settings.backfill_min_results
    assert delta("shortlist_backfill_reached_target_total") == (1 if reached else 0)
