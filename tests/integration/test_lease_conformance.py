"""The in-memory fake of the unit tests (``tests.memory_queue``) behaves as the real lease
table: the same releases give back the same rows."""

from __future__ import annotations

from shortlist.db.types import AsyncPool
from shortlist.queue import LeaseTable
from tests.memory_queue import MemoryLeases, Row

# (id, status, locked_by) before the releases
START = [(1, "running", "a"), (2, "running", "a"), (3, "running", "b"), (4, "queued", None)]
RELEASES = [("a", [1, 3, 4]), ("a", [1, 2]), ("b", [3]), ("b", [3])]


async def test_memory_leases_release_as_the_lease_table_does(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        await conn.execute(
            "CREATE TABLE conformance (id bigint PRIMARY KEY, status text NOT NULL,"
            " locked_by text, locked_until timestamptz, updated_at timestamptz)"
        )
        for key, status, owner in START:
            await conn.execute(
                "INSERT INTO conformance VALUES (%s, %s, %s, now() + interval '1 minute', now())",
                (key, status, owner),
            )
        await conn.commit()
    real = LeaseTable("conformance", requeue=True)
    fake = MemoryLeases({key: Row(status, owner) for key, status, owner in START})

    real_counts = [await real.release(pool, worker, keys) for worker, keys in RELEASES]
    fake_counts = [await fake.release(None, worker, keys) for worker, keys in RELEASES]

    assert real_counts == fake_counts == [1, 1, 1, 0]
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT id, status, locked_by FROM conformance ORDER BY id")
        rows = [(r["id"], r["status"], r["locked_by"]) for r in await cur.fetchall()]
    assert rows == [(k, r.status, r.locked_by) for k, r in sorted(fake.rows.items())]
