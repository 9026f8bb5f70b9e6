"""An in-memory queue for the worker loop's unit tests: rows with lease columns in a dict.

:class:`MemoryLeases` implements the part of ``shortlist.queue.LeaseTable`` the worker uses
(``release``); ``tests/integration/test_lease_conformance.py`` holds it to the real table's
behaviour. :class:`NoKeeper` stands in for the lease keeper (leases here never run out).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from shortlist.errors import TransientError
from shortlist.queue import DONE, GIVE_BACK, Batch
from shortlist.queue.outcome import Outcomes

Hook = Callable[[str, list["Job"]], Awaitable[None]]


@dataclass(frozen=True)
class Job:
    id: int


@dataclass
class Row:
    status: str = "queued"
    locked_by: str | None = None
    handled_by: list[str] = field(default_factory=list)


class MemoryLeases:
    """``LeaseTable.settle`` over :class:`MemoryQueue` rows (outcome part ``REQUEUE``)."""

    records: frozenset[str] = frozenset()

    def __init__(self, rows: dict[int, Row]) -> None:
        self.rows = rows
        self.released: list[int] = []
        """Rows given back, per settle that gave any back."""

    async def settle(self, conn: Any, worker_id: str, outcomes: Outcomes) -> set[Hashable]:
        held: set[Hashable] = set()
        for key, outcome in outcomes.items():
            if outcome.kind not in ("done", "give_back"):
                raise ValueError(f"memory records no {outcome.kind} outcome")
            row = self.rows.get(int(str(key)))
            if row is None or row.locked_by != worker_id:
                continue
            row.locked_by = None
            if outcome.kind == "give_back" and row.status == "running":
                row.status = "queued"
            held.add(key)
        if any(o.kind == "give_back" for o in outcomes.values()):
            self.released.append(sum(1 for k in held if outcomes[k].kind == "give_back"))
        return held

    async def settle_now(self, pool: Any, worker_id: str, outcomes: Outcomes) -> int:
        return len(await self.settle(None, worker_id, outcomes)) if outcomes else 0

    async def release(self, pool: Any, worker_id: str, keys: Iterable[Hashable]) -> int:
        return await self.settle_now(pool, worker_id, dict.fromkeys(keys, GIVE_BACK))


class NoKeeper:
    """The lease keeper's interface, renewing nothing (memory leases do not expire)."""

    def __init__(self) -> None:
        self.registered: list[str] = []

    @contextlib.asynccontextmanager
    async def renewing(
        self, table: Any, lease: float, worker_id: str, held: Callable[[], Sequence[Hashable]]
    ) -> AsyncIterator[None]:
        self.registered.append(worker_id)
        yield


class MemoryQueue:
    """A queue of ``n`` jobs; ``hook`` runs inside ``handle`` before the job is marked done."""

    name = "memory"
    channel: str | None = None
    pool: Any = None

    def __init__(self, n: int, *, hook: Hook | None = None) -> None:
        self.rows = {i: Row() for i in range(1, n + 1)}
        self.leases = MemoryLeases(self.rows)
        self.hook = hook
        self.claims = 0

    async def claim(self, worker_id: str, limit: int, lease: float) -> list[Job]:
        self.claims += 1
        await asyncio.sleep(0)  # a claim is a round trip
        taken = [i for i, r in sorted(self.rows.items()) if r.status == "queued"][:limit]
        for i in taken:
            self.rows[i].status, self.rows[i].locked_by = "running", worker_id
        return [Job(i) for i in taken]

    async def handle(self, batch: Batch[Job]) -> Outcomes:
        if self.hook is not None:
            await self.hook(batch.worker_id, batch.items)
        for job in batch.items:
            row = self.rows[job.id]
            if row.locked_by == batch.worker_id:
                row.status = "done"
                row.handled_by.append(batch.worker_id)
        return dict.fromkeys((job.id for job in batch.items), DONE)

    def count(self, status: str) -> int:
        return sum(1 for r in self.rows.values() if r.status == status)


class Flaky:
    """A hook failing transiently the first ``times`` calls (optionally with Retry-After)."""

    def __init__(self, times: int, retry_after: float | None = None) -> None:
        self.times = times
        self.retry_after = retry_after
        self.calls: list[float] = []

    async def __call__(self, worker_id: str, items: list[Job]) -> None:
        self.calls.append(asyncio.get_running_loop().time())
        if len(self.calls) <= self.times:
            raise TransientError("provider down", retry_after=self.retry_after)
