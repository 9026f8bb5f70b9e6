"""Recovery: the reaper and the retries. A search that goes silent and is resumed, lost tier
claims, searches whose last worker died before it could mark them complete (a worker process
killed with SIGKILL mid-enrichment is end-to-end: tests/e2e/test_backfill_worker_kill.py)."""

from __future__ import annotations

from typing import Any, cast

import httpx
import psycopg
import pytest

from shortlist.bootstrap import Services
from shortlist.db.types import AsyncPool
from shortlist.simulator import SimulatorServer
from shortlist.talent import repository as repo
from shortlist.talent.reaper import MAX_LOST_WORKERS, Reaper, reap_once
from tests.backfill_support import (
    BACKFILL,
    ON_SIMULATOR,
    auth,
    fast_settings,
    get_results,
    running_workers,
    start_search,
    wait_complete,
)
from tests.backfill_support import recruiter as recruiter  # the fixture
from tests.backfill_support import simulator as simulator  # the fixture
from tests.helpers import wait_for

NICHE = {"query": "FPGA verification with UVM", "role": "FPGA Verification Engineer"}
# Tiers only reach exhausted/failed from running (migration 0005's state machine).
CLAIM_TIERS = (
    "UPDATE search_tiers SET status = 'running', locked_by = 'test',"
    " locked_until = now() + interval '1 minute' WHERE search_id = %s"
)


pytestmark = pytest.mark.settings(BACKFILL, **ON_SIMULATOR)


async def start(client: httpx.AsyncClient, token: str) -> str:
    return await start_search(client, token, NICHE)


async def execute(services: Services, query: str, *params: Any) -> None:
    async with services.pool.connection() as conn:
        await conn.execute(query, params)
        await conn.commit()


async def test_reaper_fails_a_candidate_forward_after_repeated_lost_workers(
    client: httpx.AsyncClient, services: Services, recruiter: str
) -> None:
    search_id = await start(client, recruiter)
    async with services.pool.connection() as conn:
        cur = await conn.execute(
            "INSERT INTO search_candidates (search_id, external_id, tier)"
            " VALUES (%s, 'talent:lost.soul', 'strict') RETURNING id",
            (search_id,),
        )
        row = await cur.fetchone()
        await conn.commit()
    assert row is not None
    stub_id = row["id"]
    lose = (
        "UPDATE search_candidates SET status = 'running', locked_by = 'gone',"
        " locked_until = now() - interval '1 second' WHERE id = %s"
    )
    for loss in range(1, MAX_LOST_WORKERS + 1):
        await execute(services, lose, stub_id)
        report = await reap_once(services.pool, services.settings)
        if loss < MAX_LOST_WORKERS:
            assert (report.requeued_candidates, report.failed_candidates) == (1, 0)
        else:
            assert (report.requeued_candidates, report.failed_candidates) == (0, 1)
    body = await get_results(client, recruiter, search_id)
    [attempt] = [a for a in body["attempts"] if a["candidateId"] == stub_id]
    assert attempt["status"] == "failed_transient"
    assert attempt["lastError"] == f"worker lost {MAX_LOST_WORKERS} times (lease expired)"
    # A recruiter's retry starts the count again.
    retried = await client.post(
        f"/api/searches/{search_id}/candidates/{stub_id}/retry", headers=auth(recruiter)
    )
    assert retried.status_code == 200, retried.text
    await execute(services, lose, stub_id)
    assert (await reap_once(services.pool, services.settings)).requeued_candidates == 1


@pytest.mark.slow
async def test_a_silent_search_goes_stale_and_a_retry_resumes_it_to_complete(
    client: httpx.AsyncClient,
    services: Services,
    recruiter: str,
    simulator: SimulatorServer,
    db_url: str,
) -> None:
    services.settings = fast_settings(
        db_url, simulator.base_url, stale_after=0.3, lease_seconds=0.25, heartbeat_interval=0.1
    )
    search_id = await start(client, recruiter)  # no worker is running: nothing happens

    async def stale() -> bool:
        report = await reap_once(services.pool, services.settings)
        return report.stale == 1

    await wait_for(stale, timeout=10, interval=0.1, message="search marked stale")
    body = await get_results(client, recruiter, search_id)
    assert body["status"] == "stale" and body["isRunning"] is False
    # Workers leave a stale search alone: neither its tiers nor its candidates are claimable.
    assert await repo.claim_tiers(services.pool, "w", 10, 5.0) == []
    async with running_workers(services):
        # Until the recruiter resumes it.
        resumed = await client.post(f"/api/searches/{search_id}/retry", headers=auth(recruiter))
        assert resumed.status_code == 200, resumed.text
        assert resumed.json()["status"] == "running"
        again = await client.post(f"/api/searches/{search_id}/retry", headers=auth(recruiter))
        assert again.status_code == 409  # running: nothing to resume
        body = await wait_complete(client, recruiter, search_id)
    assert body["resultCount"] > 0


async def test_reaper_requeues_a_lost_tier_then_fails_it_after_repeated_losses(
    client: httpx.AsyncClient, services: Services, recruiter: str
) -> None:
    search_id = await start(client, recruiter)
    lost_tier = (
        "UPDATE search_tiers SET status = 'running', attempts = %s, locked_by = 'gone',"
        " locked_until = now() - interval '1 second' WHERE search_id = %s AND tier = 'strict'"
    )
    await execute(services, lost_tier, 1, search_id)
    report = await reap_once(services.pool, services.settings)
    assert (report.requeued_tiers, report.failed_tiers) == (1, 0)
    await execute(services, lost_tier, MAX_LOST_WORKERS, search_id)
    report = await reap_once(services.pool, services.settings)
    assert (report.requeued_tiers, report.failed_tiers) == (0, 1)
    summary = (await client.get(f"/api/searches/{search_id}", headers=auth(recruiter))).json()
    tiers = {t["tier"]: t for t in summary["tiers"]}
    assert tiers["strict"]["status"] == "failed"
    assert tiers["strict"]["lastError"] == f"worker lost: lease expired {MAX_LOST_WORKERS} times"
    assert tiers["broad"]["status"] == tiers["serp"]["status"] == "queued"


async def test_reaper_completes_a_search_whose_work_is_all_done(
    client: httpx.AsyncClient, services: Services, recruiter: str
) -> None:
    search_id = await start(client, recruiter)
    # As if the last worker died between its commit and the completion check.
    await execute(services, CLAIM_TIERS, search_id)
    await execute(
        services,
        "UPDATE search_tiers SET status = 'exhausted', locked_by = NULL, locked_until = NULL"
        " WHERE search_id = %s",
        search_id,
    )
    assert (await get_results(client, recruiter, search_id))["status"] == "running"
    report = await reap_once(services.pool, services.settings)
    assert report.completed == 1 and report.stale == 0
    body = await get_results(client, recruiter, search_id)
    assert body["status"] == "complete"
    # Complete with nothing failed: a retry has nothing to do.
    retried = await client.post(f"/api/searches/{search_id}/retry", headers=auth(recruiter))
    assert retried.status_code == 409


async def test_search_retry_requeues_failed_tiers_and_transient_failures(
    client: httpx.AsyncClient, services: Services, recruiter: str
) -> None:
    search_id = await start(client, recruiter)
    await execute(services, CLAIM_TIERS, search_id)
    await execute(
        services,
        "UPDATE search_tiers SET status = 'failed', last_error = 'boom', locked_by = NULL,"
        " locked_until = NULL WHERE search_id = %s",
        search_id,
    )
    await execute(
        services,
        "INSERT INTO search_candidates (search_id, external_id, tier, status, last_error)"
        " VALUES (%s, 'talent:a', 'strict', 'failed_transient', 'timeout'),"
        " (%s, 'talent:b', 'strict', 'failed_permanent', 'HTTP 404')",
        search_id,
        search_id,
    )
    await reap_once(services.pool, services.settings)
    assert (await get_results(client, recruiter, search_id))["status"] == "complete"
    retried = await client.post(f"/api/searches/{search_id}/retry", headers=auth(recruiter))
    assert retried.status_code == 200, retried.text
    assert retried.json()["status"] == "running"
    summary = (await client.get(f"/api/searches/{search_id}", headers=auth(recruiter))).json()
    assert {t["status"] for t in summary["tiers"]} == {"queued"}
    assert summary["candidates"]["queued"] == 1  # the transient one; 404 stays failed
    assert summary["candidates"]["failed_permanent"] == 1


class _DatabaseDown:
    """A pool whose database is restarting: every connection is refused."""

    def connection(self) -> Any:
        raise psycopg.OperationalError("the database system is starting up")


async def test_a_lease_run_out_in_a_database_outage_is_not_a_lost_worker(
    client: httpx.AsyncClient, services: Services, recruiter: str
) -> None:
    # Every lease held across an outage runs out, its worker alive: the reaper puts the work
    # back without counting a lost worker, until one lease after the database answers again.
    search_id = await start(client, recruiter)
    lost_tier = (
        "UPDATE search_tiers SET status = 'running', attempts = %s, locked_by = 'alive',"
        " locked_until = now() - interval '1 second' WHERE search_id = %s AND tier = 'strict'"
    )
    await execute(services, lost_tier, MAX_LOST_WORKERS, search_id)
    reaper = Reaper(cast(AsyncPool, _DatabaseDown()), services.settings)
    with pytest.raises(psycopg.OperationalError):
        await reaper.round()
    reaper.pool = services.pool
    report = await reaper.round()
    assert (report.requeued_tiers, report.failed_tiers) == (1, 0)
    await execute(services, lost_tier, MAX_LOST_WORKERS, search_id)
    report = await reaper.round()  # within that lease
    assert (report.requeued_tiers, report.failed_tiers) == (1, 0)
    reaper.forgive_until = 0.0  # the lease has passed: a lease that runs out now is a loss
    await execute(services, lost_tier, MAX_LOST_WORKERS, search_id)
    report = await reaper.round()
    assert (report.requeued_tiers, report.failed_tiers) == (0, 1)
