"""Vendor rate limits and credit balances shared through PostgreSQL.

A vendor limits requests per API key and per endpoint, not per process: four worker processes
each keeping their own count would send four times the limit. So each endpoint is one *gate*
(``pdl:search``, ``pdl:enrich``, ``serpapi``), a ``provider_limits`` row (migrations 0009,
0017) with its own window length, its count in the current window and its pause after a 429;
every call takes its place there first (:meth:`PgRateGate.acquire`). Windows are fixed slices
of the clock, as the vendors count them (PDL "Usage Limits": per key, per endpoint, a fixed
60-second window; SerpApi "Account API": ``account_rate_limit_per_hour``). Their length is a
setting, so a test runs a window in seconds instead of waiting for the clock.

A full window is waited out (also when the vendor's headers said its window is spent) by the
callers of an enrichment gate, or when the wait is short; a search gate's caller is a tier page,
which holds a claim and one of its worker's slots: it is refused instead (``ProviderPaused``, the
wait as ``retry_after``) and the tier is deferred to the window's end, so the slot goes to other
work (another provider's tier, a candidate) rather than sleeping through the window
(``GateLimit.defer``). A 429 pause is never waited out: the call fails at once with
``ProviderPaused``, so no request reaches the vendor during a pause and the caller (a tier, a
candidate) defers its work instead of holding it.

The last balance each vendor reported (PDL's ``x-totallimit-remaining``, SerpApi's
``total_searches_left``) is kept here too, so every process knows when an account is about to
run dry before it answers 402.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Protocol

from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncPool
from shortlist.talent.vendors.base import ProviderPaused

log = logging.getLogger(__name__)

QUERIES = load_queries("shortlist.talent.vendors", "limits.sql")

BALANCE_TRUST_SECONDS = 60.0
"""How long a reported balance is believed. A search refuses to start a call its account cannot
pay for, but only on recent news: after an operator tops the account up, searches resume
within this long (the next call reads the new balance from the vendor's answer)."""
# Never sleep less than this between two takes of a full window (the window math is exact to
# the microsecond; this only stops a tight loop on a clock edge).
_MIN_WAIT = 0.02
SHORT_WAIT = 1.0
"""Seconds a caller of a deferring gate still waits for a place (the end of a window, a clock
edge) rather than handing its work back: a deferral costs a claim and a poll interval."""


@dataclass(frozen=True)
class GateLimit:
    """A gate's configured limit: ``per_window`` requests every ``window_seconds``."""

    per_window: int
    window_seconds: float
    defer: bool = False
    """A caller finding the window full for longer than ``SHORT_WAIT`` is refused
    (``ProviderPaused``) instead of waiting: set for the search endpoints, whose callers (tier
    pages) can be deferred to the window's end and free their worker slot meanwhile."""


class RateGate(Protocol):
    """Where the vendors' limits and balances are kept (shared by every process)."""

    async def acquire(self, gate: str) -> None:
        """Wait for a place in the gate's window; raise ``ProviderPaused`` while paused."""
        ...

    async def pause(self, gate: str, seconds: float) -> None:
        """A 429: refuse calls through ``gate`` for ``seconds``."""
        ...

    async def spent(self, gate: str, seconds: float) -> None:
        """The vendor's window is spent: calls wait ``seconds`` for it to reset."""
        ...

    async def seed(self, gate: str, used: int) -> None:
        """The vendor counts ``used`` requests of this key in its current window already
        (SerpApi's Account API, ``this_hour_searches``): ours counts at least as many."""
        ...

    async def tighten(self, gate: str, per_window: int) -> None:
        """The vendor's own limit per window, from its headers."""
        ...

    async def record_balance(self, vendor: str, credit_type: str, remaining: int) -> None: ...

    async def spend_balance(self, vendor: str, credit_type: str, credits: int) -> None: ...

    async def balance(self, vendor: str, credit_type: str) -> int | None: ...


class PgRateGate:
    """:class:`RateGate` over ``provider_limits`` and ``provider_balances``. ``limits`` maps
    each gate to its configured limit; a gate not in it (or with 0 requests) is not limited,
    but its balances are still kept."""

    def __init__(self, pool: AsyncPool, limits: dict[str, GateLimit]) -> None:
        self.pool = pool
        self.limits = {name: limit for name, limit in limits.items() if limit.per_window > 0}
        self._ready: set[str] = set()

    async def _ensure(self, gate: str) -> None:
        if gate in self._ready:
            return
        limit = self.limits[gate]
        async with self.pool.connection() as conn:
            await conn.execute(
                QUERIES["ensure_gate"],
                {
                    "gate": gate,
                    "per_window": limit.per_window,
                    "window_seconds": limit.window_seconds,
                },
            )
        self._ready.add(gate)

    async def acquire(self, gate: str) -> None:
        if gate not in self.limits:
            return
        await self._ensure(gate)
        while True:
            async with self.pool.connection() as conn:
                cur = await conn.execute(QUERIES["take_gate_slot"], {"gate": gate})
                if await cur.fetchone() is not None:
                    return
                cur = await conn.execute(QUERIES["gate_wait"], {"gate": gate})
                row = await cur.fetchone()
            paused_s = float(row["paused_s"]) if row else 0.0
            if paused_s > 0:
                exc = ProviderPaused(
                    f"{gate}: paused after a 429 for another {paused_s:.2f}s (shared)",
                    retry_after=paused_s,
                )
                exc.provider = gate
                raise exc
            window_s = float(row["window_s"]) if row else _MIN_WAIT
            limit = self.limits[gate]
            if limit.defer and SHORT_WAIT < window_s <= limit.window_seconds:
                exc = ProviderPaused(
                    f"{gate}: the window is full for another {window_s:.2f}s (shared)",
                    retry_after=window_s,
                )
                exc.provider = gate
                raise exc
            if window_s > limit.window_seconds:
                # Longer than one of our windows: the vendor's day or month is spent (PDL Usage
                # Limits). Nobody waits that out holding work: the caller defers it.
                exc = ProviderPaused(
                    f"{gate}: the vendor's window is spent for another {window_s:.0f}s (shared)",
                    retry_after=window_s,
                )
                exc.provider = gate
                raise exc
            log.debug("%s: window full, waiting %.2fs", gate, window_s)
            await asyncio.sleep(max(window_s, _MIN_WAIT))

    async def pause(self, gate: str, seconds: float) -> None:
        if gate not in self.limits:
            return
        await self._ensure(gate)
        async with self.pool.connection() as conn:
            await conn.execute(QUERIES["pause_gate"], {"gate": gate, "seconds": seconds})
        log.warning("%s paused for %.2fs for every process", gate, seconds)

    async def spent(self, gate: str, seconds: float) -> None:
        if gate not in self.limits or seconds <= 0:
            return
        await self._ensure(gate)
        async with self.pool.connection() as conn:
            await conn.execute(QUERIES["gate_spent"], {"gate": gate, "seconds": seconds})

    async def seed(self, gate: str, used: int) -> None:
        if gate not in self.limits or used <= 0:
            return
        await self._ensure(gate)
        async with self.pool.connection() as conn:
            await conn.execute(QUERIES["seed_gate"], {"gate": gate, "used": used})

    async def tighten(self, gate: str, per_window: int) -> None:
        if gate not in self.limits or per_window <= 0:
            return
        await self._ensure(gate)
        async with self.pool.connection() as conn:
            await conn.execute(QUERIES["tighten_gate"], {"gate": gate, "per_window": per_window})

    async def record_balance(self, vendor: str, credit_type: str, remaining: int) -> None:
        async with self.pool.connection() as conn:
            await conn.execute(
                QUERIES["record_balance"],
                {"vendor": vendor, "credit_type": credit_type, "remaining": max(remaining, 0)},
            )

    async def spend_balance(self, vendor: str, credit_type: str, credits: int) -> None:
        if credits <= 0:
            return
        async with self.pool.connection() as conn:
            await conn.execute(
                QUERIES["spend_balance"],
                {"vendor": vendor, "credit_type": credit_type, "credits": credits},
            )

    async def balance(self, vendor: str, credit_type: str) -> int | None:
        async with self.pool.connection() as conn:
            cur = await conn.execute(
                QUERIES["balance"],
                {"vendor": vendor, "credit_type": credit_type, "max_age": BALANCE_TRUST_SECONDS},
            )
            row = await cur.fetchone()
        return None if row is None else int(row["remaining"])
