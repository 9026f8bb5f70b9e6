"""The in-memory fake of the unit tests (``tests.memory_queue``) behaves as the real lease
table: the same outcomes settle the same rows the same way."""

from __future__ import annotations

from shortlist.db.types import AsyncPool
from shortlist.queue import DONE, GIVE_BACK, REQUEUE, LeaseTable
from shortlist.queue.outcome import Outcome
from tests.memory_queue import MemoryLeases, Row

# (id, status, locked_by) before the outcomes
START = [
    (1, "running", "a"),
    (2, "running", "a"),
    (3, "running", "b"),
    (4, "queued", None),
    (5, "running", "a"),
    (6, "done", "a"),
]
SETTLES: list[tuple[str, dict[int, Outcome]]] = [
    ("a", {1: GIVE_BACK, 3: GIVE_BACK, 4: GIVE_BACK}),
    ("a", {1: GIVE_BACK, 2: GIVE_BACK}),
    ("b", {3: DONE}),
    ("b", {3: GIVE_BACK}),
    ("a", {5: DONE, 6: GIVE_BACK}),
]


async def test_memory_leases_settle_as_the_lease_table_does(pool: AsyncPool) -> None:
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
    real = LeaseTable("conformance", outcome=REQUEUE)
    fake = MemoryLeases({key: Row(status, owner) for key, status, owner in START})

    real_counts = [await real.settle_now(pool, worker, dict(o)) for worker, o in SETTLES]
    fake_counts = [await fake.settle_now(None, worker, dict(o)) for worker, o in SETTLES]

    assert real_counts == fake_counts == [1, 1, 1, 0, 2]
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT id, status, locked_by FROM conformance ORDER BY id")
        rows = [(r["id"], r["status"], r["locked_by"]) for r in await cur.fetchall()]
    assert rows == [(k, r.status, r.locked_by) for k, r in sorted(fake.rows.items())]
