"""The backfill on the vendor dialects, end to end: the simulator speaking PDL and SerpApi at
its root, the real adapters, the API and both queues on a real PostgreSQL (FakeEmbedder).
Covers: the simulator refuses a request without the key as each vendor does; a free-text brief
is understood and sent 1:1 by tier 1; one identity per person across PDL and SerpApi; no
enrichment past the target (leftovers skipped); the relevance floor; the credit ledger, the
budget and the API fields; an account out of credit ends a tier quota_exhausted."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from shortlist.bootstrap import Services
from shortlist.config import Settings
from shortlist.simulator import SimulatorServer
from shortlist.talent.why import EMAIL_ON_FILE
from tests.backfill_support import (
    BACKFILL,
    ON_SIMULATOR,
    auth,
    fast_settings,
    running_workers,
    set_behaviour,
    sim_stats,
    stub_rows,
    wait_complete,
)
from tests.backfill_support import recruiter as recruiter  # the fixture
from tests.backfill_support import simulator as simulator  # the fixture
from tests.backfill_support import start_search as start

KEY = "simulator-key"
# Vendors that never hang, fail or throttle: these tests are about what a page holds and what
# the floor and the credits do with it, not about riding out errors (test_backfill, chaos).
RELIABLE: dict[str, Any] = {
    "discovery_hang_rate": 0,
    "error_5xx_rate": 0,
    "rate_limit_rate": 0,
    "serp_error_5xx_rate": 0,
    "serp_rate_limit_rate": 0,
}


VENDOR: dict[str, Any] = {
    "talent_api": "pdl",
    "serp_api": "serpapi",
    "talent_api_key": KEY,
    "serp_api_key": KEY,
    # Nothing here hangs (RELIABLE): timeouts only a loaded machine would reach, whose
    # retries would make pages answered twice that no vendor behaviour caused.
    "discovery_timeout": 5.0,
    "enrichment_timeout": 10.0,
    # Not what these tests are about (tests/integration/test_vendor_gates.py is).
    "pdl_search_rate_limit": 0,
    "pdl_enrich_rate_limit": 0,
    "serpapi_rate_limit": 0,
}
"""The vendor dialects (PDL, SerpApi) on the simulator (a profile of the ``settings`` fixture)."""


def vendor_settings(db_url: str, sim_url: str, **overrides: Any) -> Settings:
    return fast_settings(db_url, sim_url, **(VENDOR | overrides))


pytestmark = pytest.mark.settings(BACKFILL, VENDOR, **ON_SIMULATOR)


async def detail(client: httpx.AsyncClient, token: str, search_id: str) -> dict[str, Any]:
    response = await client.get(f"/api/searches/{search_id}", headers=auth(token))
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_a_free_text_brief_backfills_through_both_vendors_and_stops_at_the_target(
    client: httpx.AsyncClient, services: Services, recruiter: str, simulator: SimulatorServer
) -> None:
    await set_behaviour(simulator, **RELIABLE)
    search_id = await start(client, recruiter, {"query": "Senior backend engineer in Berlin"})
    async with running_workers(services):
        body = await wait_complete(client, recruiter, search_id)
    summary = await detail(client, recruiter, search_id)
    assert summary["brief"] == {
        "role": "Backend Engineer",
        "location": "Berlin",
        "minYearsExperience": 5,
        "skills": [],
    }
    strict = next(t for t in summary["tiers"] if t["tier"] == "strict")
    assert strict["calls"] >= 1
    assert body["resultCount"] == 15
    stubs = await stub_rows(services.pool, search_id)
    # Nobody is enriched past the target: what was not needed ends skipped.
    assert {s["status"] for s in stubs} <= {
        "succeeded",
        "below_threshold",
        "skipped",
        "failed_no_email",
        "failed_transient",
        "failed_permanent",
    }
    assert all(s["external_id"].startswith(("linkedin:", "pdl:")) for s in stubs)
    # PDL search hits carry the full record: the only enrichments are of SERP hits.
    serp_enriched = sum(1 for s in stubs if s["tier"] == "serp" and s["status"] != "skipped")
    assert summary["enrichments"] <= serp_enriched
    assert summary["credits"]["total"] == sum(summary["credits"]["byProvider"].values()) > 0
    # Issue 38: per search, the credits spent on people who became results (a record's, an
    # enrichment's), within what the search spent.
    assert 0 < summary["credits"]["onResults"] <= summary["credits"]["total"]
    assert summary["budget"] == {"credits": None, "reached": False}
    stats = await sim_stats(simulator)
    assert sum(stats["enrich_by_username"].values()) == summary["enrichments"]


async def test_a_free_plan_key_completes_its_searches_with_people_in_proper_case(
    client: httpx.AsyncClient, services: Services, recruiter: str, simulator: SimulatorServer
) -> None:
    # PDL Free and trial plans answer contact fields as true/false ("exists, not shown"):
    # never a failed page; such a person is a result, reachable through the provider.
    await set_behaviour(simulator, **RELIABLE, pdl_plan="free")
    search_id = await start(client, recruiter, {"query": "nurse in Toronto"})
    async with running_workers(services):
        body = await wait_complete(client, recruiter, search_id)
    summary = await detail(client, recruiter, search_id)
    assert not [t for t in summary["tiers"] if t["status"] in ("failed", "quota_exhausted")]
    backfilled = [r for r in body["results"] if r["tier"] != "internal"]
    assert len(backfilled) == body["resultCount"] == 15
    for result in backfilled:
        person = result["candidate"]
        assert person["email"] is None and result["why"]["contact"] == EMAIL_ON_FILE
        # titlecase=true on every call: what recruiters read is not PDL's lowercase.
        assert person["roleTitle"] != person["roleTitle"].lower(), person
        assert person["location"].split(",")[0] == "Toronto" or "Ontario" in person["location"]


async def test_a_brief_nobody_matches_ends_with_no_strangers(
    client: httpx.AsyncClient, services: Services, recruiter: str, simulator: SimulatorServer
) -> None:
    await set_behaviour(simulator, **RELIABLE)
    search_id = await start(client, recruiter, {"query": "underwater basket weaving sommelier"})
    async with running_workers(services):
        body = await wait_complete(client, recruiter, search_id)
    assert body["resultCount"] == 0 and body["status"] == "complete"
    summary = await detail(client, recruiter, search_id)
    assert summary["brief"]["role"] == "Basket Weaving Sommelier"
    assert {t["status"] for t in summary["tiers"]} == {"exhausted"}


async def test_backfilled_people_below_the_floor_are_not_results(
    client: httpx.AsyncClient,
    services: Services,
    recruiter: str,
    simulator: SimulatorServer,
    db_url: str,
) -> None:
    services.settings = vendor_settings(db_url, simulator.base_url, internal_min_score=1.01)
    await set_behaviour(simulator, **RELIABLE)
    # A niche brief: its tiers have a few pages each, not the world's thousands of developers.
    search_id = await start(client, recruiter, {"query": "FPGA verification engineer in Munich"})
    async with running_workers(services):
        body = await wait_complete(client, recruiter, search_id, within=60)
    assert body["resultCount"] == 0
    assert body["candidates"]["below_threshold"] > 0
    below = [a for a in body["attempts"] if a["status"] == "below_threshold"]
    assert below and "relevance floor" in below[0]["lastError"]
    # Nobody passes, so every tier pages to its end, later pages a few people at a time: the
    # rest of each page waits on the tier, and no page is asked for (and billed) twice.
    tiers = (await detail(client, recruiter, search_id))["tiers"]
    assert {t["tier"]: (t["status"], t["held"]) for t in tiers} == {
        "strict": ("exhausted", 0),
        "broad": ("exhausted", 0),
        "serp": ("exhausted", 0),
    }
    async with httpx.AsyncClient() as http:
        report = (await http.get(f"{simulator.base_url}/v1/admin/vendors")).json()
    assert report["pages_answered_again"] == {"pdl": 0, "serpapi": 0}


async def test_out_of_credit_ends_the_pdl_tiers_quota_exhausted_and_the_budget_stops_it(
    client: httpx.AsyncClient,
    services: Services,
    recruiter: str,
    simulator: SimulatorServer,
    db_url: str,
) -> None:
    await set_behaviour(simulator, **RELIABLE, pdl_credit_limit=1)
    search_id = await start(client, recruiter, {"query": "python developer"})
    async with running_workers(services):
        await wait_complete(client, recruiter, search_id, within=60)
    summary = await detail(client, recruiter, search_id)
    statuses = {t["tier"]: t for t in summary["tiers"]}
    assert statuses["strict"]["status"] == "quota_exhausted"
    assert "payment_required" in statuses["strict"]["lastError"]

    services.settings = vendor_settings(db_url, simulator.base_url, search_credit_budget=3)
    await set_behaviour(simulator, pdl_credit_limit=0)  # the account topped up ...
    async with services.pool.connection() as conn:
        # ... and an hour gone by: the empty balance last seen is no longer believed.
        await conn.execute(
            "UPDATE provider_balances SET observed_at = observed_at - interval '1 hour'"
        )
    budgeted = await start(client, recruiter, {"query": "data engineer"})
    async with running_workers(services):
        await wait_complete(client, recruiter, budgeted, within=60)
    summary = await detail(client, recruiter, budgeted)
    assert summary["budget"]["credits"] == 3 and summary["budget"]["reached"] is True
