"""Leases: how a claimed row stays claimed while its worker lives, and stops being claimed when
it dies.

A queue table has a key column plus ``locked_by text`` and ``locked_until timestamptz``. Claims
are pipeline-specific (each pipeline's named SQL says *what* is claimable), but they all follow
one shape: a CTE selects rows ``FOR UPDATE SKIP LOCKED`` and an ``UPDATE … RETURNING`` stamps
the lease, so the planner locks only what it claims. Renewing and ending a lease is the same
for every table, so it lives here:

* :class:`LeaseTable` declares a queue table and ends leases on it, each row with its outcome
  (:mod:`shortlist.queue.outcome`), in one guarded statement (``settle``): no other statement
  clears ``locked_by``, and no handler ends a lease except through it;
* :class:`LeaseKeeper` renews every lease a process holds, across all its workers and tables,
  in ONE statement per beat (``SHORTLIST_HEARTBEAT_INTERVAL``). A lease
  (``SHORTLIST_LEASE_SECONDS``) therefore only runs out when the process is gone or hung,
  and a crash is noticed within one lease, however long the work itself takes.

Who takes over a row whose lease ran out is stated once per table, in
``shortlist.talent.reaper`` (the reaper's rules) and in the embedding indexer's claim.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, LiteralString

from psycopg import sql

from shortlist.db.pool import single_statement
from shortlist.db.sql import compose, load_queries
from shortlist.db.types import AsyncConn, AsyncPool
from shortlist.queue.outcome import GIVE_BACK, Outcomes

log = logging.getLogger(__name__)

QUERIES = load_queries("shortlist.queue", "lease.sql")


LEASE_ENDED = sql.SQL(QUERIES["lease_ended"])
"""``{lease_ended}`` of a statement that takes rows over from whoever held them (lease.sql)."""
REQUEUE: LiteralString = QUERIES["requeue"]
"""The outcome part of a table whose claim moves rows ``queued -> running`` (lease.sql)."""


@dataclass(frozen=True)
class LeaseTable:
    table: LiteralString
    key: LiteralString = "id"
    key_type: LiteralString = "bigint"
    outcome: LiteralString = ""
    """What an outcome writes on a row besides its lease: ``SET`` assignments that read the
    row as ``t`` and its outcome as ``o`` (``kind``, ``reason``, ``delay``); stated in the
    queue's own ``.sql`` file (or :data:`REQUEUE`). Empty: an outcome only ends the lease."""
    records: frozenset[str] = frozenset()
    """The outcomes besides done and give back that :attr:`outcome` records (``retry``,
    ``failed``); another one is a programming error, refused before anything is written."""

    def _format(self, statement: LiteralString, **extra: sql.Composable) -> sql.Composed:
        return compose(
            statement,
            table=sql.Identifier(self.table),
            key=sql.Identifier(self.key),
            key_type=sql.SQL(self.key_type),
            **extra,
        )

    def _settle_params(self, worker_id: str, outcomes: Outcomes) -> dict[str, Any]:
        for outcome in outcomes.values():
            if outcome.kind not in ("done", "give_back") and outcome.kind not in self.records:
                raise ValueError(f"{self.table} records no {outcome.kind} outcome")
        return {
            "worker_id": worker_id,
            "keys": list(outcomes),
            "kinds": [o.kind for o in outcomes.values()],
            "reasons": [getattr(o, "reason", None) for o in outcomes.values()],
            "delays": [getattr(o, "after", None) for o in outcomes.values()],
        }

    async def settle(self, conn: AsyncConn, worker_id: str, outcomes: Outcomes) -> set[Hashable]:
        """End the leases ``worker_id`` still holds on these rows, each with its outcome, on
        ``conn`` (inside the caller's transaction when it has one); returns the keys it still
        held. The rows stay locked until that transaction ends."""
        if not outcomes:
            return set()
        outcome = (
            compose(QUERIES["and_outcome"], outcome=sql.SQL(self.outcome))
            if self.outcome
            else sql.SQL("")
        )
        query = self._format(QUERIES["settle"], outcome=outcome)
        cur = await conn.execute(query, self._settle_params(worker_id, outcomes))
        return {row["key"] for row in await cur.fetchall()}

    async def settle_now(self, pool: AsyncPool, worker_id: str, outcomes: Outcomes) -> int:
        """:meth:`settle` as a statement of its own; returns how many leases it ended."""
        if not outcomes:
            return 0
        async with single_statement(pool) as conn:
            return len(await self.settle(conn, worker_id, outcomes))

    async def release(self, pool: AsyncPool, worker_id: str, keys: Iterable[Hashable]) -> int:
        """Give rows back (after a transient error, on shutdown, when a result is dropped)."""
        return await self.settle_now(pool, worker_id, dict.fromkeys(keys, GIVE_BACK))


@dataclass
class _Holder:
    table: LeaseTable
    lease: float
    worker_id: str
    held: Callable[[], Sequence[Hashable]]


class LeaseKeeper:
    """Renews the leases a process holds: one statement per beat for all its workers.

    A worker registers for as long as it runs (:meth:`renewing`); the beat task runs while
    anyone is registered. A failed beat is logged and tried again at the next one: a lease is
    several beats long, so one lost beat costs nothing."""

    def __init__(self, pool: AsyncPool, *, every: float) -> None:
        self.pool = pool
        self.every = every
        self.beats = 0
        """Heartbeat statements sent (benchmarks and tests read it)."""
        self._holders: list[_Holder] = []
        self._task: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def renewing(
        self,
        table: LeaseTable,
        lease: float,
        worker_id: str,
        held: Callable[[], Sequence[Hashable]],
    ) -> AsyncIterator[None]:
        holder = _Holder(table, lease, worker_id, held)
        self._holders.append(holder)
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="shortlist-lease-keeper")
        try:
            yield
        finally:
            self._holders.remove(holder)
            if not self._holders and self._task is not None:
                self._task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._task
                self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            try:
                await self.beat()
            except Exception as exc:
                log.warning("lease heartbeat failed (next in %.1fs): %s", self.every, exc)

    def _statement(self) -> tuple[sql.Composed, dict[str, Any]] | None:
        groups: dict[tuple[LeaseTable, float], tuple[set[str], list[Hashable]]] = {}
        for holder in self._holders:
            keys = holder.held()
            if keys:
                workers, all_keys = groups.setdefault((holder.table, holder.lease), (set(), []))
                workers.add(holder.worker_id)
                all_keys.extend(keys)
        if not groups:
            return None
        ctes: list[sql.Composable] = []
        counts: list[sql.Composable] = []
        params: dict[str, Any] = {}
        for n, ((table, lease), (workers, keys)) in enumerate(groups.items()):
            cte = sql.Identifier(f"renewed_{n}")
            ctes.append(
                table._format(
                    QUERIES["renew"],
                    cte=cte,
                    lease=sql.Placeholder(f"lease_{n}"),
                    keys=sql.Placeholder(f"keys_{n}"),
                    workers=sql.Placeholder(f"workers_{n}"),
                )
            )
            counts.append(compose(QUERIES["renewed_count"], cte=cte))
            params |= {f"lease_{n}": lease, f"keys_{n}": keys, f"workers_{n}": sorted(workers)}
        query = compose(
            QUERIES["heartbeat"], renew=sql.SQL(", ").join(ctes), counts=sql.SQL(" + ").join(counts)
        )
        return query, params

    async def beat(self) -> int:
        """Renew now; returns the number of rows whose lease moved on."""
        statement = self._statement()
        if statement is None:
            return 0
        query, params = statement
        async with single_statement(self.pool) as conn:
            cur = await conn.execute(query, params)
            row = await cur.fetchone()
        self.beats += 1
        return int(row["renewed"]) if row else 0
