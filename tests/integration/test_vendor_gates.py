"""The vendors' gates in PostgreSQL, one per endpoint (PDL "Usage Limits": limits per key and
per endpoint on fixed windows; SerpApi: per hour): windows of seconds here, two gate objects
standing in for two processes. A 429 on Person Search pauses Person Search only; the vendor's
own limit and "window spent" headers tighten only the endpoint that sent them; the last known
balance is shared."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
import pytest

from shortlist.config import Settings
from shortlist.db.types import AsyncPool
from shortlist.talent.vendors.base import DiscoveryQuery, ProviderPaused, ProviderQuotaExhausted
from shortlist.talent.vendors.factory import rate_limits
from shortlist.talent.vendors.limits import SHORT_WAIT, GateLimit, PgRateGate
from shortlist.talent.vendors.pdl import ENRICH_GATE, SEARCH_GATE, PdlTalentAPI
from tests.helpers import wait_for


async def _row(pool: AsyncPool, gate: str) -> dict[str, Any]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT *, window_seconds - mod(extract(epoch FROM clock_timestamp()),"
            " window_seconds::numeric)::float8 AS left_s FROM provider_limits WHERE provider = %s",
            (gate,),
        )
        row = await cur.fetchone()
    assert row is not None
    return dict(row)


async def test_each_endpoint_has_its_own_window(pool: AsyncPool) -> None:
    limits = {SEARCH_GATE: GateLimit(2, 6.0), ENRICH_GATE: GateLimit(3, 6.0)}
    one, two = PgRateGate(pool, limits), PgRateGate(pool, limits)
    await one.acquire(SEARCH_GATE)

    async def window_has_room() -> bool:
        return float((await _row(pool, SEARCH_GATE))["left_s"]) > 3

    # Start in a window with time to spare, so the test cannot straddle its edge.
    await wait_for(window_has_room, timeout=10, interval=0.1, message="a fresh window")
    async with pool.connection() as conn:
        await conn.execute("UPDATE provider_limits SET window_count = 0, window_start = 'epoch'")
    await one.acquire(SEARCH_GATE)
    await two.acquire(SEARCH_GATE)
    # Person Search is full for both "processes" ...
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(two.acquire(SEARCH_GATE), 0.5)
    # ... while Enrichment, counted on its own, still has its three.
    for gate in (one, two, one):
        await asyncio.wait_for(gate.acquire(ENRICH_GATE), 2)
    assert (await _row(pool, SEARCH_GATE))["window_count"] == 2
    assert (await _row(pool, ENRICH_GATE))["window_count"] == 3


async def test_a_window_of_half_a_second_rolls_over_by_the_clock(pool: AsyncPool) -> None:
    gate = PgRateGate(pool, {SEARCH_GATE: GateLimit(1, 0.5)})
    windows = []
    started = time.monotonic()
    for _ in range(4):
        await asyncio.wait_for(gate.acquire(SEARCH_GATE), 5)
        row = await _row(pool, SEARCH_GATE)
        assert row["window_count"] == 1
        windows.append(row["window_start"])
    assert len(set(windows)) == 4  # one request per window, four windows
    assert time.monotonic() - started < 5


async def test_a_429_on_search_pauses_search_only_for_every_process(pool: AsyncPool) -> None:
    limits = {SEARCH_GATE: GateLimit(10, 60.0), ENRICH_GATE: GateLimit(10, 60.0)}
    one, two = PgRateGate(pool, limits), PgRateGate(pool, limits)
    await one.pause(SEARCH_GATE, 30)
    with pytest.raises(ProviderPaused) as paused:
        await two.acquire(SEARCH_GATE)
    assert paused.value.retry_after is not None and 25 < paused.value.retry_after <= 30
    await asyncio.wait_for(two.acquire(ENRICH_GATE), 2)


async def test_a_spent_window_is_waited_out_not_failed(pool: AsyncPool) -> None:
    gate = PgRateGate(pool, {ENRICH_GATE: GateLimit(100, 60.0)})
    await gate.spent(ENRICH_GATE, 0.6)
    started = time.monotonic()
    await asyncio.wait_for(gate.acquire(ENRICH_GATE), 5)
    assert time.monotonic() - started >= 0.5


async def test_a_search_gate_defers_its_caller_past_a_full_window(pool: AsyncPool) -> None:
    # A search's caller is a tier page, which holds a claim and a worker slot: a window full for
    # longer than SHORT_WAIT is a refusal naming the wait (the tier is deferred to the window's
    # end), not a sleep through it. A short wait (a clock edge) is still waited out.
    gate = PgRateGate(pool, {SEARCH_GATE: GateLimit(10, 60.0, defer=True)})
    await gate.spent(SEARCH_GATE, 30.0)
    with pytest.raises(ProviderPaused) as deferred:
        await asyncio.wait_for(gate.acquire(SEARCH_GATE), 5)
    assert deferred.value.retry_after is not None and 25.0 < deferred.value.retry_after <= 30.0
    short = PgRateGate(pool, {ENRICH_GATE: GateLimit(10, 60.0, defer=True)})
    await short.spent(ENRICH_GATE, SHORT_WAIT / 2)
    await asyncio.wait_for(short.acquire(ENRICH_GATE), 5)


async def test_the_vendor_limit_tightens_one_endpoint_and_balances_are_shared(
    pool: AsyncPool,
) -> None:
    limits = rate_limits(Settings())
    assert limits[SEARCH_GATE] == GateLimit(10, 60.0, defer=True)
    assert limits[ENRICH_GATE] == GateLimit(100, 60.0)
    assert limits["serpapi"] == GateLimit(1000, 3600.0, defer=True)
    one, two = PgRateGate(pool, limits), PgRateGate(pool, limits)
    await one.tighten(SEARCH_GATE, 5)
    await two.acquire(ENRICH_GATE)
    assert (await _row(pool, SEARCH_GATE))["vendor_per_window"] == 5
    assert (await _row(pool, ENRICH_GATE))["vendor_per_window"] is None
    assert await two.balance("pdl", "search") is None
    await one.record_balance("pdl", "search", 42)
    await two.spend_balance("pdl", "search", 2)
    assert await one.balance("pdl", "search") == 40
    assert await two.balance("pdl", "enrich") is None


def _record() -> dict[str, Any]:
    return {
        "id": "abc",
        "full_name": "Sean Thorne",
        "linkedin_url": "linkedin.com/in/seanthorne",
        "job_title": "Nurse",
    }


async def test_the_adapters_share_pauses_windows_and_balance_per_endpoint(pool: AsyncPool) -> None:
    settings = Settings(talent_api_key="k", retry_delay=0.01, pdl_window_seconds=30.0)
    reset = datetime.now(UTC) + timedelta(seconds=20)
    sent: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.url.path)
        if request.url.path.endswith("/search"):
            return httpx.Response(
                429,
                json={"status": 429, "error": {"type": "rate_limit_error", "message": "slow"}},
                headers={"x-ratelimit-reset": reset.strftime("%Y-%m-%dT%H:%M:%SZ")},
            )
        return httpx.Response(
            200,
            json={"status": 200, "likelihood": 9, "data": _record()},
            headers={
                "x-ratelimit-limit": "{'minute': 100, 'day': None}",
                "x-totallimit-remaining": "0",
                "x-call-credits-type": "enrich",
            },
        )

    def adapter() -> PdlTalentAPI:
        client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
        return PdlTalentAPI(
            "https://pdl.test", settings, client, limiter=PgRateGate(pool, rate_limits(settings))
        )

    first, second = adapter(), adapter()
    with pytest.raises(Exception, match="rate_limit_error"):
        await first.discover(DiscoveryQuery(role="nurse"), 1, 1)
    # The other process sends nothing to Person Search while it is paused ...
    with pytest.raises(ProviderPaused):
        await second.discover(DiscoveryQuery(role="nurse"), 1, 1)
    assert sent == ["/v5/person/search"]
    # ... and enriches as usual; the balance that answer reported stops the next enrichment.
    await second.enrich("linkedin:seanthorne")
    assert (await _row(pool, ENRICH_GATE))["vendor_per_window"] == 100
    with pytest.raises(ProviderQuotaExhausted, match="PDL balance 0 enrich credits"):
        await first.enrich("linkedin:seanthorne")
    assert sent == ["/v5/person/search", "/v5/person/enrich"]
    await first.aclose()
    await second.aclose()


async def test_a_taker_that_waited_for_the_lock_counts_in_the_window_it_got_it_in(
    pool: AsyncPool, db_url: str
) -> None:
    """A taker that waited on another's row lock across a window's edge reads the clock after
    the lock: it must not count itself into the window that was current when it asked (which
    would also put the row's window back and let the new one count from one again)."""
    limits = {ENRICH_GATE: GateLimit(1, 2.0)}
    gate = PgRateGate(pool, limits)
    await gate.acquire(ENRICH_GATE)  # the gate's row exists

    async def early_in_a_window() -> bool:
        return 1.6 < float((await _row(pool, ENRICH_GATE))["left_s"]) < 1.8

    await wait_for(early_in_a_window, timeout=10, interval=0.02, message="early in a window")
    async with await psycopg.AsyncConnection.connect(db_url) as holder:
        # Another process's taker holds the row (window k) while this one asks ...
        cur = await holder.execute(
            "SELECT to_timestamp(floor(extract(epoch FROM clock_timestamp()) / 2) * 2 + 2) AS next"
            " FROM provider_limits WHERE provider = %s FOR UPDATE",
            (ENRICH_GATE,),
        )
        row = await cur.fetchone()
        assert row is not None
        next_window = row[0]
        waiter = asyncio.create_task(gate.acquire(ENRICH_GATE))

        async def waiting_for_the_lock() -> bool:
            # Before the edge: the old statement read its clock (window k) before this wait.
            async with pool.connection() as conn:
                cur = await conn.execute("SELECT count(*) AS n FROM pg_locks WHERE NOT granted")
                found = await cur.fetchone()
            return bool(found and found["n"])

        await wait_for(waiting_for_the_lock, timeout=1.5, interval=0.01, message="a waiter")
        assert not waiter.done()

        async def in_the_next_window() -> bool:
            cur = await holder.execute("SELECT clock_timestamp() >= %s", (next_window,))
            found = await cur.fetchone()
            return bool(found and found[0])

        await wait_for(in_the_next_window, timeout=5, interval=0.02, message="window k+1")
        # ... and takes window k+1's one place, after the edge.
        await holder.execute(
            "UPDATE provider_limits SET window_start = %s, window_count = 1 WHERE provider = %s",
            (next_window, ENRICH_GATE),
        )
        await holder.commit()
    # Window k+1 is full: the waiter gets its place in k+2, not a second one in k+1.
    await asyncio.wait_for(waiter, 10)
    row2 = await _row(pool, ENRICH_GATE)
    assert row2["window_start"] == next_window + timedelta(seconds=2), row2
    assert row2["window_count"] == 1


async def test_a_vendors_spent_day_is_not_waited_out_holding_work(pool: AsyncPool) -> None:
    # PDL Usage Limits: minute, day and month windows. A spent day is far longer than one of
    # our windows: whoever asks is told to come back (ProviderPaused), nobody sleeps on it.
    gate = PgRateGate(pool, {SEARCH_GATE: GateLimit(10, 60.0)})
    await gate.spent(SEARCH_GATE, 5 * 3600)
    with pytest.raises(ProviderPaused) as paused:
        await asyncio.wait_for(gate.acquire(SEARCH_GATE), 5)
    assert paused.value.retry_after is not None and paused.value.retry_after > 4 * 3600


async def test_the_account_apis_hour_seeds_the_window_after_a_restart(pool: AsyncPool) -> None:
    # SerpApi Account API: this_hour_searches. A process that starts mid-hour counts what the
    # key already sent, so it does not spend the hour's remainder in one burst and a 429.
    limits = {"serpapi": GateLimit(5, 3600.0)}
    gate = PgRateGate(pool, limits)
    await gate.seed("serpapi", 4)
    await asyncio.wait_for(gate.acquire("serpapi"), 2)
    assert (await _row(pool, "serpapi"))["window_count"] == 5
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(gate.acquire("serpapi"), 0.5)
    # A smaller count never lowers ours.
    await gate.seed("serpapi", 2)
    assert (await _row(pool, "serpapi"))["window_count"] == 5
