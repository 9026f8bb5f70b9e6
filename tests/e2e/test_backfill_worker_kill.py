"""A backfill worker process killed with SIGKILL mid-enrichment: once its lease runs out the
reaper hands its candidates back, and a healthy worker takes each to an outcome of its own."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from shortlist.bootstrap import Services
from shortlist.simulator import SimulatorServer
from shortlist.talent.reaper import reap_once
from tests.backfill_support import (
    BACKFILL,
    ON_SIMULATOR,
    get_results,
    running_workers,
    set_behaviour,
    start_search,
    stub_rows,
)
from tests.backfill_support import recruiter as recruiter  # the fixture
from tests.backfill_support import simulator as simulator  # the fixture
from tests.helpers import wait_for

NICHE = {"query": "FPGA verification with UVM", "role": "FPGA Verification Engineer"}
REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.settings(BACKFILL, **ON_SIMULATOR)


@pytest.mark.slow
async def test_worker_killed_mid_enrichment_hands_its_candidates_back_after_its_lease(
    client: httpx.AsyncClient,
    services: Services,
    recruiter: str,
    simulator: SimulatorServer,
    db_url: str,
    tmp_path: Path,
) -> None:
    # Enrichment takes ~100 s (scaled): the worker process is surely inside one when killed.
    await set_behaviour(simulator, enrich_mean_s=10_000, enrich_max_s=100_000, enrich_tail_rate=0)
    search_id = await start_search(client, recruiter, NICHE)
    lease = 2.0  # heartbeats every 0.5 s: a loaded machine does not miss a whole lease
    env = {
        **os.environ,
        "SHORTLIST_DATABASE_URL": db_url,
        "SHORTLIST_TALENT_API_URL": simulator.base_url,
        "SHORTLIST_SERP_API_URL": simulator.base_url,
        "SHORTLIST_TALENT_API": "generic",
        "SHORTLIST_SERP_API": "generic",
        "SHORTLIST_LEASE_SECONDS": str(lease),
        "SHORTLIST_HEARTBEAT_INTERVAL": str(lease / 4),
        "SHORTLIST_DISCOVERY_TIMEOUT": "0.8",
        "SHORTLIST_RETRY_DELAY": "0.05",
        "SHORTLIST_ENRICHMENT_TIMEOUT": "600",
        "SHORTLIST_LOG_LEVEL": "WARNING",
    }
    log_path = tmp_path / "worker.log"
    with log_path.open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.backfill_support",
            cwd=REPO_ROOT,
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=log,
        )
    try:

        async def mid_enrichment() -> list[dict[str, Any]]:
            assert proc.returncode is None, log_path.read_text()
            stubs = await stub_rows(services.pool, search_id)
            return [
                s
                for s in stubs
                if s["status"] == "running" and f":{proc.pid}:" in (s["locked_by"] or "")
            ]

        held = await wait_for(mid_enrichment, timeout=30, message="the worker enriching")
        # A live worker heartbeats its leases: the reaper leaves its candidates alone.
        assert (await reap_once(services.pool, services.settings)).requeued_candidates == 0
        proc.send_signal(signal.SIGKILL)
        assert await asyncio.wait_for(proc.wait(), 10) == -signal.SIGKILL
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()

    held_ids = {s["id"] for s in held}

    # Once their lease runs out, the reaper hands them back to the queue: the worker died,
    # nothing was wrong with the candidates.
    async def reaped() -> bool:
        await reap_once(services.pool, services.settings)
        stubs = {s["id"]: s for s in await stub_rows(services.pool, search_id)}
        return all(stubs[i]["status"] == "queued" for i in held_ids)

    await wait_for(reaped, timeout=lease * 10, interval=0.1, message="stubs reaped")
    body = await get_results(client, recruiter, search_id)
    assert body["isRunning"] is True

    # A healthy worker takes every one of them to an outcome, without a retry.
    await set_behaviour(simulator, enrich_mean_s=None, enrich_max_s=None, enrich_tail_rate=None)
    async with running_workers(services):

        async def all_done() -> bool:
            stubs = {s["id"]: s for s in await stub_rows(services.pool, search_id)}
            return all(stubs[i]["status"] not in ("queued", "running") for i in held_ids)

        await wait_for(all_done, timeout=30, message="the lost candidates")
    # Each ended on its own merits (a result, no e-mail, below the floor, not needed once the
    # target was reached), never as a casualty of the dead worker.
    stubs = {s["id"]: s for s in await stub_rows(services.pool, search_id)}
    assert {stubs[i]["status"] for i in held_ids} <= {
        "succeeded",
        "failed_no_email",
        "below_threshold",
        "skipped",
    }
