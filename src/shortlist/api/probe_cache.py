"""What public ``/status`` and ``/metrics`` read from the database, computed at most once per
``SHORTLIST_STATUS_CACHE_SECONDS`` per process: each is ~10 queries, counts over whole tables
among them, and a flood of either must not starve searches of the pool's connections.

Single-flight: requests arriving while a value is being computed wait for that computation
instead of starting their own. A failure is not cached (the next request tries again).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class ProbeCache:
    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._entries: dict[str, tuple[float, Any]] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.computed = 0
        """How many times a value was computed (tests and curiosity)."""

    def _fresh(self, key: str) -> tuple[bool, Any]:
        entry = self._entries.get(key)
        if entry is not None and time.monotonic() - entry[0] < self.ttl:
            return True, entry[1]
        return False, None

    async def get(self, key: str, compute: Callable[[], Awaitable[T]]) -> T:
        if self.ttl <= 0:
            self.computed += 1
            return await compute()
        fresh, value = self._fresh(key)
        if fresh:
            result: T = value
            return result
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            fresh, value = self._fresh(key)
            if fresh:
                result = value
                return result
            self.computed += 1
            result = await compute()
            self._entries[key] = (time.monotonic(), result)
            return result
