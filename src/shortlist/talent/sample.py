"""The bundled internal candidate corpus, loaded on the first start of an empty database.

It is drawn from the simulator's synthetic population generator with a different seed and
size than the simulated external world, so the internal corpus and the external talent API
are different people, with the same role taxonomy: broad searches fill from the corpus, niche
ones (rare titles appear only a handful of times here) need the backfill.
"""

from __future__ import annotations

import asyncio

from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn

SAMPLE_SEED = 7
SAMPLE_SIZE = 1500
QUERIES = load_queries("shortlist.talent")


async def load_sample_candidates(conn: AsyncConn) -> int:
    """Insert the sample corpus if the candidates table is empty; returns rows inserted."""
    from shortlist.simulator.population import build_population

    async with conn.transaction():
        await conn.execute(QUERIES["lock_sample_load"])
        cur = await conn.execute(QUERIES["any_candidate"])
        row = await cur.fetchone()
        if row is not None and row["present"]:
            return 0
        # ~2 s of CPU on a first call (GeoNames' places are read too): off the event loop, which
        # every other request of the process shares (a raced second load timed out waiting
        # for a pool connection while this one held the loop).
        people = await asyncio.to_thread(build_population, seed=SAMPLE_SEED, size=SAMPLE_SIZE)
        async with conn.cursor() as ins:
            await ins.executemany(
                QUERIES["insert_sample_candidate"],
                [
                    {
                        "full_name": p.full_name,
                        "headline": p.headline,
                        "role_title": p.role_title,
                        "role_family": p.role_family,
                        "skills": list(p.skills),
                        "years_experience": p.years_experience,
                        "location": p.location,
                        "email": p.email,
                        "summary": p.summary,
                    }
                    for p in people
                ],
            )
    return len(people)
