"""The bundled internal candidate corpus, loaded on the first start of an empty database.

It is drawn from the simulator's synthetic population generator with a different seed and
size than the simulated external world, so the internal corpus and the external talent API
are different people, with the same role taxonomy: broad searches fill from the corpus, niche
ones (rare titles appear only a handful of times here) need the backfill.
"""

from __future__ import annotations

from shortlist.db.types import AsyncConn

SAMPLE_SEED = 7
SAMPLE_SIZE = 1500
# Any constant works; it only serialises concurrent first starts.
_SAMPLE_LOCK_KEY = 0x5A_3D1E_0002

_INSERT = """
INSERT INTO candidates (source, full_name, headline, role_title, role_family, skills,
                        years_experience, location, email, summary, profile_url)
VALUES ('sample', %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
"""


async def load_sample_candidates(conn: AsyncConn) -> int:
    """Insert the sample corpus if the candidates table is empty; returns rows inserted."""
    from shortlist.simulator.population import build_population

    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SAMPLE_LOCK_KEY,))
        cur = await conn.execute("SELECT EXISTS (SELECT 1 FROM candidates) AS any")
        row = await cur.fetchone()
        if row is not None and row["any"]:
            return 0
        people = build_population(seed=SAMPLE_SEED, size=SAMPLE_SIZE)
        async with conn.cursor() as ins:
            await ins.executemany(
                _INSERT,
                [
                    (
                        p.full_name,
                        p.headline,
                        p.role_title,
                        p.role_family,
                        list(p.skills),
                        p.years_experience,
                        p.location,
                        p.email,
                        p.summary,
                        None,  # internal profiles have no public URL
                    )
                    for p in people
                ],
            )
    return len(people)
