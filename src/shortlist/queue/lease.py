"""Lease bookkeeping shared by every queue table.

A queue table has a key column plus ``locked_by text`` and ``locked_until timestamptz``.
Claims are pipeline-specific (each pipeline's named SQL says *what* is claimable), but they
all follow one shape, as River and Oban do: a CTE selects candidates ``FOR UPDATE SKIP
LOCKED`` and an ``UPDATE … RETURNING`` stamps the lease, so the planner locks only what it
claims and a crashed worker's rows become claimable again when ``locked_until`` passes.
Extending and releasing a lease is the same for every table, so it lives here.

Claims, heartbeats and releases are single statements and run on
:func:`shortlist.db.pool.single_statement` (autocommit): one round trip each, not three.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from psycopg import sql

from shortlist.db.pool import single_statement
from shortlist.db.types import AsyncPool


@dataclass(frozen=True)
class LeaseTable:
    table: str
    key: str = "id"

    async def heartbeat(
        self, pool: AsyncPool, worker_id: str, keys: Sequence[object], lease: float
    ) -> int:
        """Push ``locked_until`` forward for rows this worker still holds."""
        if not keys:
            return 0
        query = sql.SQL(
            "UPDATE {table} SET locked_until = now() + make_interval(secs => %s)"
            " WHERE {key} = ANY(%s) AND locked_by = %s"
        ).format(table=sql.Identifier(self.table), key=sql.Identifier(self.key))
        async with single_statement(pool) as conn:
            cur = await conn.execute(query, (lease, list(keys), worker_id))
            return cur.rowcount

    async def release(self, pool: AsyncPool, worker_id: str, keys: Sequence[object]) -> int:
        """Give rows back unchanged (after a transient error or on shutdown)."""
        if not keys:
            return 0
        query = sql.SQL(
            "UPDATE {table} SET locked_by = NULL, locked_until = NULL"
            " WHERE {key} = ANY(%s) AND locked_by = %s"
        ).format(table=sql.Identifier(self.table), key=sql.Identifier(self.key))
        async with single_statement(pool) as conn:
            cur = await conn.execute(query, (list(keys), worker_id))
            return cur.rowcount
