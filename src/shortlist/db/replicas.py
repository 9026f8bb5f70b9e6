"""Read replicas for search: job search and the candidate-corpus search read from a streaming
replica when one is configured (``SHORTLIST_DATABASE_READ_URL``) and healthy; everything that
writes or claims uses the primary pool.

**Health.** Every replica is checked each :data:`CHECK_INTERVAL` seconds (a periodic job of
the process, ``shortlist.bootstrap``). A replica
is ``ok`` when it answers and has replayed the primary's WAL up to where the primary was at
most ``SHORTLIST_READ_MAX_LAG`` seconds ago; ``lagging`` past that; ``down`` when it does not
answer. Lag is measured on WAL positions, not on the replica's last replayed commit time: an
idle primary commits nothing, and a replay timestamp would age while the replica is in fact
up to date. The monitor notes when the primary's WAL first reached each position; a replica's
lag is the time since the primary first wrote past what the replica has replayed.

**Fallback.** A search goes to a healthy replica (round robin), or to the primary when none is.
A replica that fails in the middle of a search (it died since the last check) is marked down
and the search runs again on the primary: searches only read, so running one twice is safe.

**Read-your-writes.** A listing written through the API is on the primary at once and on a
replica once the replica has replayed it (normally well under a second; never later than the
lag bound, past which searches go to the primary). Reads of one record by id stay on the
primary, so a client that needs its own write reads it back by id.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict

from shortlist import metrics
from shortlist.db.pool import open_async_pool, single_statement
from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncPool

log = logging.getLogger(__name__)

QUERIES = load_queries("shortlist.db", "replicas.sql")

T = TypeVar("T")

CHECK_INTERVAL = 1.0
CHECK_TIMEOUT = 2.0
"""How long a health check waits for a connection before calling the replica down."""
HISTORY_LIMIT = 100_000


class ReplicaState(StrEnum):
    ok = "ok"
    lagging = "lagging"
    down = "down"


@dataclass
class Replica:
    name: str
    """Host, port and database: never the credentials."""
    pool: AsyncPool
    state: ReplicaState = ReplicaState.down
    lag_seconds: float | None = None
    error: str | None = None

    def mark_down(self, exc: BaseException) -> None:
        if self.state is not ReplicaState.down:
            log.warning("read replica %s is down (%s); reading from the primary", self.name, exc)
        self.state = ReplicaState.down
        self.error = type(exc).__name__


def replica_name(url: str) -> str:
    """``host:port/dbname`` of a connection string, without user or password."""
    info = conninfo_to_dict(url)
    return f"{info.get('host', 'localhost')}:{info.get('port', 5432)}/{info.get('dbname', '')}"


class ReadPools:
    """Where searches read: a healthy replica, else the primary."""

    def __init__(
        self, primary: AsyncPool, replicas: Sequence[Replica] = (), *, max_lag: float = 5.0
    ) -> None:
        self.primary = primary
        self.replicas = list(replicas)
        self.max_lag = max_lag
        self._turn = itertools.count()
        # (when first seen, primary WAL position), positions increasing.
        self._history: deque[tuple[float, int]] = deque(maxlen=HISTORY_LIMIT)

    @property
    def degraded(self) -> bool:
        """Some configured replica is not serving (searches fall back to the primary)."""
        return any(r.state is not ReplicaState.ok for r in self.replicas)

    def pick(self) -> Replica | None:
        healthy = [r for r in self.replicas if r.state is ReplicaState.ok]
        if not healthy:
            return None
        return healthy[next(self._turn) % len(healthy)]

    async def read(self, search: Callable[[AsyncPool], Awaitable[T]]) -> T:
        """Run ``search`` (read-only) on a healthy replica's pool, else on the primary's."""
        replica = self.pick()
        if replica is None:
            metrics.SEARCH_READS.labels("primary").inc()
            return await search(self.primary)
        try:
            result = await search(replica.pool)
        except psycopg.OperationalError as exc:
            # Connection lost, pool timeout, recovery conflict: the primary answers instead.
            replica.mark_down(exc)
        else:
            metrics.SEARCH_READS.labels("replica").inc()
            return result
        metrics.SEARCH_READS.labels("primary").inc()
        return await search(self.primary)

    def report(self) -> list[dict[str, Any]]:
        return [
            {
                "name": r.name,
                "state": r.state.value,
                "lag_seconds": None if r.lag_seconds is None else round(r.lag_seconds, 3),
                "error": r.error,
            }
            for r in self.replicas
        ]

    # --- health checks -------------------------------------------------------------------

    async def _primary_position(self) -> None:
        try:
            async with single_statement(self.primary) as conn:
                row = await (await conn.execute(QUERIES["primary_position"])).fetchone()
        except psycopg.Error:
            # The primary down says nothing about the replicas: they keep serving searches.
            return
        if row is not None and (not self._history or row["lsn"] > self._history[-1][1]):
            self._history.append((time.monotonic(), int(row["lsn"])))

    def _lag(self, replayed: int) -> float:
        """Seconds since the primary first wrote past ``replayed`` (0: caught up)."""
        for seen_at, position in self._history:
            if position > replayed:
                return time.monotonic() - seen_at
        return 0.0

    async def _check(self, replica: Replica) -> int | None:
        """Update the replica's state; returns the WAL position it has replayed."""
        try:
            async with asyncio.timeout(CHECK_TIMEOUT), single_statement(replica.pool) as conn:
                row = await (await conn.execute(QUERIES["replica_position"])).fetchone()
        except (psycopg.Error, TimeoutError) as exc:
            replica.lag_seconds = None
            replica.mark_down(exc)
            return None
        if row is None:
            return None
        replayed = int(row["lsn"])
        replica.error = None
        replica.lag_seconds = self._lag(replayed) if row["standby"] else 0.0
        state = ReplicaState.ok if replica.lag_seconds <= self.max_lag else ReplicaState.lagging
        if state is not replica.state:
            log.info("read replica %s is %s (lag %.1f s)", replica.name, state, replica.lag_seconds)
        replica.state = state
        return replayed if row["standby"] else None

    async def check(self) -> None:
        """One round of health checks (one every :data:`CHECK_INTERVAL`)."""
        await self._primary_position()
        replayed = await asyncio.gather(*(self._check(r) for r in self.replicas))
        # Positions every replica has replayed are not needed to measure lag any more.
        if replayed and all(p is not None for p in replayed):
            least = min(p for p in replayed if p is not None)
            while len(self._history) > 1 and self._history[0][1] <= least:
                self._history.popleft()

    async def start(self) -> None:
        """A first round of checks, so a healthy replica serves from the first search."""
        if self.replicas:
            await self.check()

    async def close(self) -> None:
        for replica in self.replicas:
            await replica.pool.close()


def read_urls(setting: str | None) -> list[str]:
    return [u.strip() for u in (setting or "").split(",") if u.strip()]


async def open_read_pools(
    primary: AsyncPool, urls: Sequence[str], *, max_lag: float, min_size: int, max_size: int
) -> ReadPools:
    """The primary plus a pool per replica URL; a replica that is down at start-up is not
    waited for (it serves once a check finds it up)."""
    replicas = [
        Replica(
            replica_name(url),
            await open_async_pool(
                url, min_size=min_size, max_size=max_size, name=f"replica-{i}", wait=False
            ),
        )
        for i, url in enumerate(urls, start=1)
    ]
    reads = ReadPools(primary, replicas, max_lag=max_lag)
    await reads.start()
    return reads
