"""What keeping leases alive costs: one heartbeat statement per worker process.

Each worker process holds 8 candidates in enrichment (``SHORTLIST_BACKFILL_CONCURRENCY``) and
one tier page; its :class:`~shortlist.queue.LeaseKeeper` renews all of them in ONE statement
every ``SHORTLIST_HEARTBEAT_INTERVAL``. Measured here with N = 1, 2, 4 worker processes (each a
keeper of its own on its own connection, beating concurrently):

``shortlist``  the keeper's beat (one statement renewing 8 candidates + 1 tier per process)
``baseline``   a bare ``SELECT 1`` round trip on the same pool: the floor of any statement

Reported: the beat's latency per process (ratio to the floor), and the database time the
heartbeats of all N processes take per second of wall clock at the default interval.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from bench.common import Context, Record, Stat, report

CANDIDATES_PER_PROCESS = 8
BEATS = 200


async def _setup(url: str, processes: int) -> list[tuple[str, list[int], list[int]]]:
    """One running search; per process: a worker id holding 8 candidates and 1 tier."""
    import psycopg

    held: list[tuple[str, list[int], list[int]]] = []
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        token = await (
            await conn.execute(
                "INSERT INTO api_tokens (name, role, token_hash) VALUES"
                " ('bench', 'recruiter', %s) RETURNING id",
                (uuid.uuid4().bytes,),
            )
        ).fetchone()
        assert token is not None
        for p in range(processes):
            worker = f"bench-host:{p}:backfill:{uuid.uuid4().hex[:8]}"
            row = await (
                await conn.execute(
                    "INSERT INTO searches (owner_token_id, query, query_embedding, target_count)"
                    " VALUES (%s, 'heartbeat bench', array_fill(0.1, ARRAY[384])::vector, 15)"
                    " RETURNING id",
                    (token[0],),
                )
            ).fetchone()
            assert row is not None
            search_id = row[0]
            stubs = await (
                await conn.execute(
                    "INSERT INTO search_candidates (search_id, external_id, tier, status,"
                    " locked_by, locked_until)"
                    " SELECT %s, 'talent:p' || g, 'strict', 'running', %s,"
                    " now() + interval '30 seconds' FROM generate_series(1, %s) AS g"
                    " RETURNING id",
                    (search_id, worker, CANDIDATES_PER_PROCESS),
                )
            ).fetchall()
            tiers = await (
                await conn.execute(
                    "INSERT INTO search_tiers (search_id, tier, status, locked_by, locked_until)"
                    " VALUES (%s, 'strict', 'running', %s, now() + interval '30 seconds')"
                    " RETURNING id",
                    (search_id, worker),
                )
            ).fetchall()
            held.append((worker, [r[0] for r in stubs], [r[0] for r in tiers]))
    return held


async def _measure(url: str, processes: int) -> tuple[list[float], list[float]]:
    from shortlist.db.pool import open_async_pool, single_statement
    from shortlist.queue import REQUEUE, LeaseKeeper, LeaseTable

    held = await _setup(url, processes)
    candidates = LeaseTable("search_candidates", outcome=REQUEUE)
    tiers = LeaseTable("search_tiers", outcome=REQUEUE)
    pools = [await open_async_pool(url, min_size=1, max_size=1) for _ in range(processes)]
    beats: list[float] = []
    floor: list[float] = []
    try:

        async def one_process(i: int) -> None:
            worker, stub_ids, tier_ids = held[i]
            keeper = LeaseKeeper(pools[i], every=3600.0)
            async with (
                keeper.renewing(candidates, 30.0, worker, lambda: stub_ids),
                keeper.renewing(tiers, 30.0, worker, lambda: tier_ids),
            ):
                for _ in range(BEATS):
                    began = time.perf_counter()
                    renewed = await keeper.beat()
                    beats.append(time.perf_counter() - began)
                    assert renewed == len(stub_ids) + len(tier_ids)
                    began = time.perf_counter()
                    async with single_statement(pools[i]) as conn:
                        await conn.execute("SELECT 1")
                    floor.append(time.perf_counter() - began)

        await asyncio.gather(*(one_process(i) for i in range(processes)))
    finally:
        for pool in pools:
            await pool.close()
    return beats, floor


def run(ctx: Context) -> list[Record]:
    from shortlist.config import Settings

    interval = Settings().heartbeat_interval
    records: list[Record] = []
    for processes in (1, 2) if ctx.smoke else (1, 2, 4):
        url = ctx.pg.create_database(f"bench_heartbeat_{processes}")
        beats, floor = asyncio.run(_measure(url, processes))
        beat_ms = [b * 1000 for b in beats]
        floor_ms = [f * 1000 for f in floor]
        ctx.log(f"heartbeat: {processes} processes, beat median {Stat.of(beat_ms).median:.2f} ms")
        records.append(
            Record(
                "heartbeat",
                f"beat latency, {processes} process(es) × {CANDIDATES_PER_PROCESS} candidates",
                Stat.of(beat_ms),
                Stat.of(floor_ms),
                better="lower",
                unit="ms",
                baseline_name="SELECT 1",
            )
        )
        load = processes * Stat.of(beat_ms).median / (interval * 1000)
        records.append(
            report(
                "heartbeat",
                f"database time per second on heartbeats, {processes} process(es)",
                load * 1000,
                unit="ms/s",
                note=f"one beat per process every {interval:g} s",
            )
        )
    return records
