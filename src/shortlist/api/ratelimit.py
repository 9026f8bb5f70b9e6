"""Per-client-IP rate limit for public endpoints: a token bucket per IP, in process memory.

In-process is deliberate: it protects one API process from a noisy client without a database
round-trip per request. Behind a load balancer with N API processes the effective limit is N
times the setting; put a shared limiter at the proxy if that matters.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from shortlist.errors import RateLimited


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    def __init__(self, per_minute: int, *, max_clients: int = 100_000) -> None:
        self.per_minute = per_minute
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.max_clients = max_clients
        self._buckets: dict[str, _Bucket] = {}

    def check(self, key: str) -> None:
        """Take one token for ``key`` or raise ``RateLimited``."""
        if self.per_minute <= 0:
            return
        now = time.monotonic()
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self.max_clients:
                self._evict(now)
            bucket = self._buckets[key] = _Bucket(self.capacity, now)
        bucket.tokens = min(self.capacity, bucket.tokens + (now - bucket.updated) * self.rate)
        bucket.updated = now
        if bucket.tokens < 1.0:
            raise RateLimited(
                "too many requests from this client", retry_after=(1.0 - bucket.tokens) / self.rate
            )
        bucket.tokens -= 1.0

    def _evict(self, now: float) -> None:
        full = [k for k, b in self._buckets.items() if now - b.updated > 60.0]
        for k in full:
            del self._buckets[k]
        if len(self._buckets) >= self.max_clients:
            self._buckets.clear()
