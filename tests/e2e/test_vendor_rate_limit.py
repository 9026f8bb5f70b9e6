"""Vendor rate limits shared in PostgreSQL: four `shortlist worker`-like processes against a
simulated PDL limit per window. The contract is per minute; here the window is WINDOW seconds on
both sides (the simulator's ``rate_window_s`` and ``SHORTLIST_PDL_WINDOW_SECONDS``), so the test
crosses many windows in seconds instead of waiting for the calendar minute. The simulator counts
what it receives per window and any request that arrives while it has told a client to wait
(429). Per-endpoint gates in isolation: tests/integration/test_vendor_gates.py."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from shortlist.auth import Role
from shortlist.bootstrap import Services
from shortlist.simulator import SimulatorConfig, SimulatorServer
from shortlist.talent.vendors.base import ProviderPaused
from shortlist.talent.vendors.limits import SHORT_WAIT, GateLimit, PgRateGate
from tests.backfill_support import BACKFILL, ON_SIMULATOR, MakeToken, auth, get_results
from tests.helpers import wait_for

REPO_ROOT = Path(__file__).resolve().parents[2]
LIMIT = 3
WINDOW = 5.0
PROCESSES = 4
KEY = "simulator-key"


@pytest.fixture
def simulator() -> Any:
    # Enrichment fast (the limit, not latency, is what is measured); a rare random 429 whose
    # pause lasts five seconds, so pauses happen and can be watched.
    config = SimulatorConfig(
        time_scale=0.01,
        vendor_rate_limit=LIMIT,
        rate_window_s=WINDOW,
        serpapi_window_s=WINDOW,
        discovery_hang_rate=0,
        error_5xx_rate=0,
        rate_limit_rate=0.02,
        retry_after_s=500.0,
        enrich_mean_s=20.0,
        enrich_max_s=40.0,
    )
    with SimulatorServer(config) as sim:
        yield sim


pytestmark = pytest.mark.settings(
    BACKFILL,
    ON_SIMULATOR,
    talent_api="pdl",
    serp_api="serpapi",
    talent_api_key=KEY,
    serp_api_key=KEY,
    # Small searches: the calls of a few of them already need several windows' LIMIT.
    backfill_min_results=5,
)


async def test_the_gate_shares_one_window_and_one_pause(services: Services) -> None:
    # A search gate (``defer``): a full window refuses at once (ProviderPaused, retry_after the
    # window's end) instead of sleeping, so nothing here is timed. Hour-long windows, entered
    # with a minute to spare (a condition on the database's clock, not a race with it).
    limits = {"pdl:search": GateLimit(3, 3600.0, defer=True)}
    gate = PgRateGate(services.pool, limits)
    other = PgRateGate(services.pool, limits)  # another process's gate, same table

    async def minutes_left_in_the_hour() -> bool:
        async with services.pool.connection() as conn:
            cur = await conn.execute(
                "SELECT 3600 - mod(extract(epoch FROM clock_timestamp()), 3600)::float8 AS s"
            )
            row = await cur.fetchone()
        return row is not None and float(row["s"]) > 60

    await wait_for(minutes_left_in_the_hour, timeout=90, interval=0.5, message="an hour to use")
    for g in (gate, other, gate):
        await g.acquire("pdl:search")
    # The window is full for both: the next take is told to come back when it ends.
    with pytest.raises(ProviderPaused) as full:
        await other.acquire("pdl:search")
    assert full.value.retry_after is not None and full.value.retry_after > SHORT_WAIT
    assert "window is full" in str(full.value)
    await gate.pause("pdl:search", 30)
    with pytest.raises(ProviderPaused) as paused:
        await other.acquire("pdl:search")
    # The other process sees the pause the first one set (what is left of it).
    assert paused.value.retry_after is not None and 0 < paused.value.retry_after <= 30
    assert "paused after a 429" in str(paused.value)
    await other.tighten("pdl:search", 1)
    async with services.pool.connection() as conn:
        cur = await conn.execute("SELECT vendor_per_window FROM provider_limits")
        assert await cur.fetchone() == {"vendor_per_window": 1}


async def test_four_worker_processes_stay_under_the_vendor_limit(
    client: httpx.AsyncClient,
    services: Services,
    make_token: MakeToken,
    simulator: SimulatorServer,
    db_url: str,
    tmp_path: Path,
) -> None:
    token = await make_token("recruiter", Role.recruiter)
    searches = []
    # Enough searches that their calls need more than one window's LIMIT.
    roles = ("python developer", "data engineer", "frontend engineer", "react developer")
    for query in [f"{role} in Berlin" for role in roles]:
        response = await client.post("/api/searches", json={"query": query}, headers=auth(token))
        assert response.status_code == 202, response.text
        searches.append(response.json()["searchId"])
    env = {
        **os.environ,
        "SHORTLIST_DATABASE_URL": db_url,
        "SHORTLIST_TALENT_API_URL": simulator.base_url,
        "SHORTLIST_SERP_API_URL": simulator.base_url,
        "SHORTLIST_TALENT_API_KEY": KEY,
        "SHORTLIST_SERP_API_KEY": KEY,
        # Every endpoint at the simulator's limit (``vendor_rate_limit`` sets each endpoint's).
        "SHORTLIST_PDL_SEARCH_RATE_LIMIT": str(LIMIT),
        "SHORTLIST_PDL_ENRICH_RATE_LIMIT": str(LIMIT),
        "SHORTLIST_SERPAPI_RATE_LIMIT": str(LIMIT),
        "SHORTLIST_PDL_WINDOW_SECONDS": str(WINDOW),
        "SHORTLIST_SERPAPI_WINDOW_SECONDS": str(WINDOW),
        # The workers' floor is the one for backfilled people only (the searches were started
        # above): every enriched person counts toward the target.
        "SHORTLIST_INTERNAL_MIN_SCORE": "0",
        "SHORTLIST_DISCOVERY_TIMEOUT": "5",
        "SHORTLIST_ENRICHMENT_TIMEOUT": "5",
        "SHORTLIST_RETRY_DELAY": "0.05",
        "SHORTLIST_LOG_LEVEL": "WARNING",
    }
    procs = []
    logs = []
    for i in range(PROCESSES):
        log_path = tmp_path / f"worker{i}.log"
        logs.append(log_path)
        with log_path.open("wb") as log:
            procs.append(
                await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "tests.backfill_support",
                    cwd=REPO_ROOT,
                    env=env,
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=log,
                )
            )
    try:

        async def all_complete() -> bool:
            for p, log in zip(procs, logs, strict=True):
                assert p.returncode is None, log.read_text()
            bodies = [await get_results(client, token, s, limit=1) for s in searches]
            return all(b["status"] == "complete" for b in bodies)

        try:
            await wait_for(all_complete, timeout=200, interval=0.5, message="every search complete")
        except AssertionError:
            raise AssertionError(await _diagnosis(services, logs)) from None
    finally:
        for p in procs:
            if p.returncode is None:
                p.send_signal(signal.SIGTERM)
        for p in procs:
            await asyncio.wait_for(p.wait(), 30)
    async with httpx.AsyncClient(timeout=10) as http:
        report = (await http.get(f"{simulator.base_url}/v1/admin/vendors")).json()
    endpoints = report["endpoints"]
    # The limit was actually in play: some endpoint needed more than one window's LIMIT.
    assert max(sum(e["per_window"].values()) for e in endpoints.values()) > LIMIT, endpoints
    for name, e in endpoints.items():
        assert e["max_per_window"] <= LIMIT, (name, e["per_window"])
    assert report["during_block"].get("pdl", 0) == 0, report


async def _diagnosis(services: Services, logs: list[Path]) -> str:
    """What the searches, their tiers and candidates were doing, and the workers' last words."""
    async with services.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT s.query, s.status::text, s.result_count,"
            " (SELECT string_agg(t.tier || '=' || t.status::text || '/' || t.attempts"
            "   || coalesce(' ' || t.last_error, ''), '; ') FROM search_tiers t"
            "   WHERE t.search_id = s.id) AS tiers,"
            " (SELECT string_agg(c.status::text || ':' || c.n, ',') FROM"
            "   (SELECT status, count(*) AS n FROM search_candidates"
            "     WHERE search_id = s.id GROUP BY status) c) AS candidates"
            " FROM searches s ORDER BY s.created_at"
        )
        rows = await cur.fetchall()
    lines = ["searches not all complete:", *(str(r) for r in rows)]
    for log in logs:
        lines.append(f"--- {log.name} (last 1500 chars) ---")
        lines.append(log.read_text(errors="replace")[-1500:])
    return "\n".join(lines)
