"""Provider rate limits shared through PostgreSQL.

A vendor limits requests per API key, not per process: four worker processes each keeping
their own count would send four times the limit. So the count of the current minute and the
pause after a 429 live in one ``provider_limits`` row per provider (migration 0009), and every
call takes its place there first (:meth:`PgRateGate.acquire`). Windows are calendar minutes,
as the vendors count them (PDL: "fixed-window rate limiting").

A full window is waited out (at most until the next minute); a 429 pause is not: the call
fails at once with ``ProviderPaused``, so no request reaches the vendor during a pause and the
caller (a tier, a candidate) defers its work instead of holding it.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncPool
from shortlist.sources.base import ProviderPaused

log = logging.getLogger(__name__)

QUERIES = load_queries("shortlist.sources", "limits.sql")

# Never sleep less than this between two takes of a full window (the window math is exact to
# the microsecond; this only stops a tight loop on a clock edge).
_MIN_WAIT = 0.02


class RateGate(Protocol):
    """Where a provider's rate limit is kept (shared by every process that calls it)."""

    async def acquire(self, provider: str) -> None:
        """Wait for a place in the provider's window; raise ``ProviderPaused`` while paused."""
        ...

    async def pause(self, provider: str, seconds: float) -> None: ...

    async def tighten(self, provider: str, per_minute: int) -> None: ...


class PgRateGate:
    """:class:`RateGate` over the ``provider_limits`` table. ``limits`` maps each provider to
    its configured requests per minute; a provider not in it is not limited."""

    def __init__(self, pool: AsyncPool, limits: dict[str, int]) -> None:
        self.pool = pool
        self.limits = {name: n for name, n in limits.items() if n > 0}
        self._ready: set[str] = set()

    async def _ensure(self, provider: str) -> None:
        if provider in self._ready:
            return
        async with self.pool.connection() as conn:
            await conn.execute(
                QUERIES["ensure_provider"],
                {"provider": provider, "per_minute": self.limits[provider]},
            )
        self._ready.add(provider)

    async def acquire(self, provider: str) -> None:
        if provider not in self.limits:
            return
        await self._ensure(provider)
        while True:
            async with self.pool.connection() as conn:
                cur = await conn.execute(QUERIES["take_provider_slot"], {"provider": provider})
                if await cur.fetchone() is not None:
                    return
                cur = await conn.execute(QUERIES["provider_wait"], {"provider": provider})
                row = await cur.fetchone()
            paused_s = float(row["paused_s"]) if row else 0.0
            if paused_s > 0:
                exc = ProviderPaused(
                    f"{provider}: paused after a 429 for another {paused_s:.2f}s (shared)",
                    retry_after=paused_s,
                )
                exc.provider = provider
                raise exc
            window_s = float(row["window_s"]) if row else _MIN_WAIT
            await asyncio.sleep(max(window_s, _MIN_WAIT))

    async def pause(self, provider: str, seconds: float) -> None:
        if provider not in self.limits:
            return
        await self._ensure(provider)
        async with self.pool.connection() as conn:
            await conn.execute(
                QUERIES["pause_provider"], {"provider": provider, "seconds": seconds}
            )
        log.warning("%s paused for %.2fs for every process", provider, seconds)

    async def tighten(self, provider: str, per_minute: int) -> None:
        if provider not in self.limits or per_minute <= 0:
            return
        await self._ensure(provider)
        async with self.pool.connection() as conn:
            await conn.execute(
                QUERIES["tighten_provider"], {"provider": provider, "per_minute": per_minute}
            )
