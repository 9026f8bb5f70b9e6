"""The streaming backfill end to end: the API, both backfill queues and the simulator (at 1/100
of the seed's latencies) on a real PostgreSQL, with the FakeEmbedder.

Covers: a niche brief streams backfilled results while a broad one is served from the corpus
alone; dedup across tiers racing on the same people; a lost claim never appends; concurrent
appends keep ranks contiguous; a discovery that times out twice fails only its tier; a hung
enrichment holds back only itself; missing e-mail and the candidate retry; ranks stable and
``after`` paging exact with two sets of workers.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import httpx
import pytest

from shortlist.bootstrap import Services, open_services
from shortlist.config import Settings
from shortlist.db.types import AsyncPool
from shortlist.queue import run_batch
from shortlist.simulator import SimulatorServer
from shortlist.talent import repository as repo
from shortlist.talent.candidates import CandidateQueue
from shortlist.talent.models import Tier
from shortlist.talent.reaper import reap_once
from tests.backfill_support import (
    BACKFILL,
    ON_SIMULATOR,
    ScriptedSources,
    assert_contiguous,
    auth,
    fast_settings,
    get_results,
    python_backend_people,
    running_workers,
    seed_corpus,
    set_behaviour,
    sim_stats,
    stub_rows,
    wait_complete,
)
from tests.backfill_support import recruiter as recruiter  # the fixture
from tests.backfill_support import simulator as simulator  # the fixture
from tests.backfill_support import start_search as start
from tests.fakes import FakeEmbedder, hash_embed
from tests.helpers import wait_for

NICHE = {
    "query": "Rust embedded firmware for battery-powered sensors",
    "role": "Rust Embedded Firmware Engineer",
}


pytestmark = pytest.mark.settings(BACKFILL, **ON_SIMULATOR)


def strict_people(sim: SimulatorServer, role: str, *, with_email: bool = True) -> list[str]:
    """Usernames the strict tier's first discovery page returns for ``role``."""
    people = sim.app.state.index.search(role=role)[:10]
    return [p.username for p in people if p.email or not with_email]


# --- the tiers' queries (pure) ------------------------------------------------------------------


# --- streaming vs. corpus ---------------------------------------------------------------------


async def test_niche_query_is_backfilled_and_results_stream(
    client: httpx.AsyncClient,
    services: Services,
    embedder: FakeEmbedder,
    recruiter: str,
) -> None:
    await seed_corpus(services.pool, embedder, python_backend_people(30))
    search_id = await start(client, recruiter, NICHE)
    first = await get_results(client, recruiter, search_id)
    assert first["status"] == "running" and first["isRunning"] is True
    internal = first["resultCount"]
    assert internal < services.settings.backfill_min_results

    counts_while_running: list[int] = []
    seen: dict[int, str] = {}  # rank -> candidate id, across every poll
    async with running_workers(services):
        deadline = time.monotonic() + 30
        while True:
            body = await get_results(client, recruiter, search_id, limit=500)
            assert_contiguous(body["results"], body["resultCount"])
            for row in body["results"]:
                assert (
                    seen.setdefault(row["rank"], row["candidate"]["id"]) == row["candidate"]["id"]
                )
            if body["status"] != "running":
                break
            counts_while_running.append(body["resultCount"])
            assert time.monotonic() < deadline, "backfill did not finish"
            await asyncio.sleep(0.01)  # the client's poll interval, scaled

    assert body["status"] == "complete" and body["isRunning"] is False
    backfilled = [r for r in body["results"] if r["tier"] != "internal"]
    assert backfilled, "the backfill appended nobody"
    assert {r["tier"] for r in backfilled} <= {"strict", "broad", "serp"}
    assert all(0.0 <= r["score"] <= 1.0 and r["status"] == "succeeded" for r in backfilled)
    # Streamed: the count was seen growing over at least three polls while the search ran.
    growth = sorted(set(counts_while_running) - {internal})
    assert len(growth) >= 3, counts_while_running
    assert counts_while_running == sorted(counts_while_running)
    assert body["candidates"]["queued"] == body["candidates"]["running"] == 0


async def test_broad_query_filled_by_the_corpus_starts_no_backfill(
    client: httpx.AsyncClient,
    services: Services,
    embedder: FakeEmbedder,
    recruiter: str,
    simulator: SimulatorServer,
) -> None:
    await seed_corpus(services.pool, embedder, python_backend_people(30))
    search_id = await start(
        client, recruiter, {"query": "python backend developer", "skills": ["Django"]}
    )
    body = await get_results(client, recruiter, search_id, limit=500)
    assert body["status"] == "complete"
    assert body["resultCount"] == 30
    assert {r["tier"] for r in body["results"]} == {"internal"}
    assert_contiguous(body["results"], 30)
    summary = (await client.get(f"/api/searches/{search_id}", headers=auth(recruiter))).json()
    assert summary["tiers"] == [] and summary["backfillStarted"] is False
    # Even with workers running, nothing is asked of the external world.
    async with running_workers(services):
        await get_results(client, recruiter, search_id)
    stats = await sim_stats(simulator)
    assert all(stats["calls"][e]["total"] == 0 for e in ("search", "enrich", "serp"))


# --- dedup and races --------------------------------------------------------------------------


async def test_same_person_found_by_all_three_tiers_appears_once(
    client: httpx.AsyncClient, services: Services, recruiter: str
) -> None:
    # Every tier returns the same five people. The strict and serp tiers run side by side (no
    # call returns before both are in flight: each loaded its known set while it was still
    # empty, so only the database's unique (search_id, external_id) stands between them and
    # double work); the broad tier follows strict's first page and skips whom it knows.
    people = [f"same.person{i}" for i in range(5)]
    scripted = ScriptedSources(people, gate_size=2)
    services.sources = scripted.as_sources()
    search_id = await start(client, recruiter, NICHE)
    async with running_workers(services):
        body = await wait_complete(client, recruiter, search_id)

    assert all(n == 3 for n in scripted.discovered.values()), scripted.discovered
    assert scripted.enriched == {u: 1 for u in people}
    stubs = await stub_rows(services.pool, search_id)
    assert sorted(s["external_id"] for s in stubs) == sorted(f"talent:{u}" for u in people)
    backfilled = [r for r in body["results"] if r["tier"] != "internal"]
    assert len(backfilled) == 5
    assert_contiguous(body["results"], body["resultCount"])


async def test_a_worker_that_lost_its_claim_never_appends(
    client: httpx.AsyncClient, services: Services, recruiter: str
) -> None:
    scripted = ScriptedSources(["ada.racer"])
    sources = scripted.as_sources()
    search_id = await start(client, recruiter, NICHE)
    async with services.pool.connection() as conn:
        await conn.execute(
            "INSERT INTO search_candidates (search_id, external_id, tier)"
            " VALUES (%s, 'talent:ada.racer', 'strict')",
            (search_id,),
        )
        await conn.commit()
    queue_a = CandidateQueue(services.pool, services.spaces, sources)
    queue_b = CandidateQueue(services.pool, services.spaces, sources)

    # Two workers claim at the same moment: SKIP LOCKED hands the stub to exactly one.
    got_a, got_b = await asyncio.gather(
        queue_a.claim("worker-a", 5, 60.0), queue_b.claim("worker-b", 5, 60.0)
    )
    assert len(got_a) + len(got_b) == 1
    holder, [stale_claim] = ("worker-a", got_a) if got_a else ("worker-b", got_b)

    # The holder freezes past its lease; the reaper hands the stub back to the queue, and
    # another worker processes it.
    async with services.pool.connection() as conn:
        await conn.execute(
            "UPDATE search_candidates SET locked_until = now() - interval '1 second'"
        )
        await conn.commit()
    assert (await reap_once(services.pool, services.settings)).requeued_candidates == 1
    [stub] = await stub_rows(services.pool, search_id)
    assert stub["status"] == "queued"
    [fresh_claim] = await queue_b.claim("worker-c", 5, 60.0)
    await run_batch(queue_b, "worker-c", [fresh_claim])
    before = await get_results(client, recruiter, search_id)

    # The frozen worker wakes up and completes its enrichment: its commit finds the claim
    # gone and writes nothing.
    await run_batch(queue_a, holder, [stale_claim])
    after = await get_results(client, recruiter, search_id)
    assert after["resultCount"] == before["resultCount"]
    assert after["results"] == before["results"]
    assert [r["tier"] for r in after["results"]].count("strict") == 1
    [stub] = await stub_rows(services.pool, search_id)
    assert stub["status"] == "succeeded" and stub["locked_by"] is None


async def test_concurrent_appends_keep_ranks_contiguous_and_people_unique(
    services: Services, recruiter: str, client: httpx.AsyncClient
) -> None:
    search_id = uuid.UUID(await start(client, recruiter, NICHE))
    pool: AsyncPool = services.pool
    async with pool.connection() as conn:
        cur = await conn.execute(
            "INSERT INTO candidates (full_name, embedding, embedding_status, embedded_at)"
            " SELECT 'Person ' || i, %s, 'embedded', now() FROM generate_series(1, 30) AS i"
            " RETURNING id",
            (hash_embed("firmware"),),
        )
        ids = [r["id"] for r in await cur.fetchall()]
        await conn.commit()

    async def append(candidate_id: uuid.UUID) -> repo.Appended | None:
        async with pool.connection() as conn, conn.transaction():
            return await repo.append_result(
                conn,
                search_id=search_id,
                candidate_id=candidate_id,
                search_candidate_id=None,
                tier=Tier.broad,
                score=0.9,
            )

    # Every person twice, all at once over the pool's connections.
    outcomes = await asyncio.gather(*(append(c) for c in ids + ids))
    ranks = sorted(o.rank for o in outcomes if o is not None)
    first_rank = ranks[0]
    assert ranks == list(range(first_rank, first_rank + 30))
    assert sum(o is None for o in outcomes) == 30
    body = await get_results(client, recruiter, str(search_id), limit=500)
    assert body["resultCount"] == first_rank + 29
    assert_contiguous(body["results"], body["resultCount"])


# --- failures ---------------------------------------------------------------------------------


@pytest.mark.slow
async def test_discovery_timing_out_twice_fails_its_tier_and_the_others_go_on(
    client: httpx.AsyncClient,
    services: Services,
    recruiter: str,
    simulator: SimulatorServer,
    db_url: str,
) -> None:
    # The forced talent hangs never answer, so any timeout catches them; the serp tier's
    # answers (which never hang) must not time out on 2 busy cores (0.3 s and 0.7 s both did).
    # A target the serp tier cannot fill alone: the search completes only when every tier has
    # ended, so the failed tiers are seen failed (not left queued by a search already done).
    services.settings = fast_settings(
        db_url, simulator.base_url, discovery_timeout=2.0, backfill_min_results=500
    )
    # Talent discovery never answers. No 429s: an enrichment's 429 pauses the talent provider
    # for every caller, and a pause that falls between a hung first attempt and its retry
    # defers the tier (a pause is not the tier's failure), which then asks its page again with
    # a retry of its own: a fifth hang, correct behaviour, but not the one counted here.
    await set_behaviour(simulator, force_search="hang", rate_limit_rate=0)
    search_id = await start(client, recruiter, NICHE)
    async with running_workers(services):
        body = await wait_complete(client, recruiter, search_id)

    summary = (await client.get(f"/api/searches/{search_id}", headers=auth(recruiter))).json()
    tiers = {t["tier"]: t for t in summary["tiers"]}
    for name in ("strict", "broad"):
        assert tiers[name]["status"] == "failed"
        assert "no answer within" in tiers[name]["lastError"]
    assert tiers["serp"]["status"] != "failed"
    assert body["resultCount"] > 0
    assert {r["tier"] for r in body["results"]} <= {"internal", "serp"}
    # Each failed tier: the first attempt and exactly one retry.
    stats = await sim_stats(simulator)
    assert stats["calls"]["search"]["hang"] == 4


@pytest.mark.slow
async def test_a_hung_enrichment_holds_back_only_itself(
    client: httpx.AsyncClient,
    services: Services,
    recruiter: str,
    simulator: SimulatorServer,
    db_url: str,
) -> None:
    services.settings = fast_settings(db_url, simulator.base_url, enrichment_timeout=30.0)
    hung = strict_people(simulator, NICHE["role"])[0]
    await set_behaviour(simulator, discovery_hang_rate=0, force_enrich={hung: "hang"})
    search_id = await start(client, recruiter, NICHE)
    async with running_workers(services):

        async def others_done_while_hung() -> list[dict[str, Any]] | None:
            stubs = await stub_rows(services.pool, search_id)
            by_id = {s["external_id"]: s for s in stubs}
            succeeded = [s for s in stubs if s["status"] == "succeeded"]
            if by_id.get(f"talent:{hung}", {}).get("status") == "running" and len(succeeded) >= 8:
                return stubs
            return None

        await wait_for(others_done_while_hung, timeout=20, message="others succeed past the hang")
        # Release the hang: the adapter's retry then answers and the straggler completes too.
        await set_behaviour(simulator, force_enrich={hung: None})
        body = await wait_complete(client, recruiter, search_id)
    stubs = {s["external_id"]: s for s in await stub_rows(services.pool, search_id)}
    assert stubs[f"talent:{hung}"]["status"] == "succeeded"
    assert_contiguous(body["results"], body["resultCount"])


async def test_missing_email_fails_the_candidate_and_a_retry_succeeds(
    client: httpx.AsyncClient, services: Services, recruiter: str, simulator: SimulatorServer
) -> None:
    person = strict_people(simulator, NICHE["role"])[0]
    await set_behaviour(simulator, discovery_hang_rate=0, force_enrich={person: "no_email"})
    search_id = await start(client, recruiter, NICHE)
    async with running_workers(services):
        body = await wait_complete(client, recruiter, search_id)
        [attempt] = [a for a in body["attempts"] if a["externalId"] == f"talent:{person}"]
        assert attempt["status"] == "failed_no_email"
        assert attempt["lastError"] == "profile has no e-mail address"
        assert body["candidates"]["failed_no_email"] >= 1
        assert all(r["candidate"]["email"] for r in body["results"])
        # The profile is in the corpus anyway, without an address.
        async with services.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT email, embedding_status::text AS es FROM candidates WHERE external_id = %s",
                (f"talent:{person}",),
            )
            assert await cur.fetchone() == {"email": None, "es": "embedded"}

        # Retried from the UI once the provider has the address: it joins the results.
        await set_behaviour(simulator, force_enrich={person: None})
        path = f"/api/searches/{search_id}/candidates/{attempt['candidateId']}/retry"
        retried = await client.post(path, headers=auth(recruiter))
        assert retried.status_code == 200, retried.text
        assert retried.json()["status"] == "queued"
        assert retried.json()["searchStatus"] == "running"
        final = await wait_complete(client, recruiter, search_id)

    stubs = {s["id"]: s for s in await stub_rows(services.pool, search_id)}
    candidate_id = str(stubs[attempt["candidateId"]]["candidate_id"])
    [row] = [r for r in final["results"] if r["candidate"]["id"] == candidate_id]
    assert row["rank"] == final["resultCount"] == body["resultCount"] + 1
    assert row["status"] == "succeeded"
    assert all(a["candidateId"] != attempt["candidateId"] for a in final["attempts"])
    # A succeeded candidate cannot be retried.
    again = await client.post(path, headers=auth(recruiter))
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "conflict"


@pytest.mark.slow
async def test_a_profile_enriched_before_the_embedder_throttled_is_not_enriched_again(
    client: httpx.AsyncClient,
    services: Services,
    recruiter: str,
    simulator: SimulatorServer,
    embedder: FakeEmbedder,
) -> None:
    """The embedder throttles three candidate embeddings: those stubs go back to the queue with
    their enriched profile, and the next claim ingests it without calling the provider again
    (an enrichment is ~8 s of the provider's rate limit)."""
    await set_behaviour(
        simulator, discovery_hang_rate=0, error_5xx_rate=0, rate_limit_rate=0, enrich_tail_rate=0
    )
    # Nothing hangs here: an enrichment timeout would only be a loaded machine's, and its
    # retry a second (correct) enrichment that this test would count as the bug it looks for.
    services.settings = services.settings.model_copy(
        update={"enrichment_timeout": 10.0, "discovery_timeout": 10.0}
    )
    search_id = await start(client, recruiter, NICHE)
    embedder.fail_transient_times = 3  # after the query embedding of the search's start
    async with running_workers(services):
        body = await wait_complete(client, recruiter, search_id)
    assert embedder.fail_transient_times == 0
    enriched = (await sim_stats(simulator))["enrich_by_username"]
    assert enriched and set(enriched.values()) == {1}, enriched
    stubs = await stub_rows(services.pool, search_id)
    # Three claims ended throttled and were claimed again, none enriched twice.
    assert sum(max(s["attempts"] - 1, 0) for s in stubs) == 3
    finished = [s for s in stubs if s["status"] not in ("queued", "running")]
    # Stubs beyond the target are never enriched: they end skipped.
    assert {s["status"] for s in finished} <= {
        "succeeded",
        "below_threshold",
        "failed_no_email",
        "skipped",
    }
    assert body["resultCount"] > 0
    async with services.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM search_candidates"
            " WHERE search_id = %s AND enriched_profile IS NOT NULL",
            (search_id,),
        )
        row = await cur.fetchone()
    assert row is not None and row["n"] == 0  # cleared once the stub is finished


# --- ranks and paging with two workers ---------------------------------------------------------


@pytest.mark.slow
async def test_ranks_contiguous_and_stable_and_after_paging_exact_with_two_workers(
    client: httpx.AsyncClient,
    services: Services,
    recruiter: str,
    settings: Settings,
    db_url: str,
) -> None:
    search_id = await start(client, recruiter, NICHE)
    seen: dict[int, str] = {}
    paged: list[dict[str, Any]] = []
    cursor = 0
    # A second worker process, as far as the database can tell: its own pool, listener and
    # provider clients.
    async with (
        open_services(settings, db_url, embedder=FakeEmbedder(), pool_max=4) as other,
        running_workers(services) as mine,
        running_workers(other) as theirs,
    ):
        deadline = time.monotonic() + 30
        while True:
            page = await get_results(client, recruiter, search_id, after=cursor, limit=3)
            ranks = [r["rank"] for r in page["results"]]
            assert ranks == list(range(cursor + 1, cursor + 1 + len(ranks)))
            paged.extend(page["results"])
            cursor = page["nextAfter"]
            full = await get_results(client, recruiter, search_id, limit=500)
            assert_contiguous(full["results"], full["resultCount"])
            for row in full["results"]:
                assert (
                    seen.setdefault(row["rank"], row["candidate"]["id"]) == row["candidate"]["id"]
                )
            if full["status"] == "complete" and cursor == full["resultCount"]:
                break
            assert time.monotonic() < deadline, "backfill did not finish"
            await asyncio.sleep(0.005)

    assert [r["rank"] for r in paged] == list(range(1, cursor + 1))
    assert paged == full["results"]
    # Both workers' candidate queues did part of the work.
    assert mine[1].handled_batches > 0 and theirs[1].handled_batches > 0
    # Past the end: nothing, and the cursor stays put.
    tail = await get_results(client, recruiter, search_id, after=cursor)
    assert tail["results"] == [] and tail["nextAfter"] == cursor


async def test_claims_are_fair_across_searches(
    client: httpx.AsyncClient, services: Services, recruiter: str
) -> None:
    # An older search with results and a long queue, and a search that just started: the new
    # one's first candidate is claimed next, not after the older one's whole backfill.
    older = await start(client, recruiter, NICHE)
    newer = await start(client, recruiter, {**NICHE, "query": "another firmware brief"})
    async with services.pool.connection() as conn:
        for search_id, n in ((older, 6), (newer, 2)):
            await conn.execute(
                "INSERT INTO search_candidates (search_id, external_id, tier)"
                " SELECT %s, 'talent:p' || i, 'strict' FROM generate_series(1, %s) AS i",
                (search_id, n),
            )
        await conn.commit()
    pool: AsyncPool = services.pool
    claimed = [(await repo.claim_candidates(pool, "w", 1, 60.0))[0].search_id for _ in range(4)]
    # Alternating by load (results + running): older, newer, older, newer.
    assert [str(s) for s in claimed] == [older, newer, older, newer]
