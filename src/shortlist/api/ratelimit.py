"""Per-client rate limits for public endpoints: a token bucket per client, in process memory.

In-process is deliberate: it protects one API process from a noisy client without a database
round-trip per request. Behind a load balancer with N API processes the effective limit is N
times the setting; put a shared limiter at the proxy if that matters.

A client is its IPv4 address, or its IPv6 /64: one subscriber or host usually holds a whole
/64, so keying by full address would hand it 2^64 buckets. The buckets live in a bounded LRU
(cachetools): when full, the least recently used client is forgotten (its bucket starts full
again), never everyone's at once.
"""

from __future__ import annotations

import ipaddress
import time
from dataclasses import dataclass

from cachetools import LRUCache

from shortlist.errors import RateLimited

MAX_CLIENTS = 100_000
IPV6_PREFIX = 64


@dataclass
class _Bucket:
    tokens: float
    updated: float


def client_key(ip: str) -> str:
    """The limiter's key of a client address: an IPv6 address's /64, an IPv4 address as is
    (an IPv4-mapped IPv6 address counts as its IPv4 address)."""
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        return ip
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped is not None:
            return str(addr.ipv4_mapped)
        return str(ipaddress.IPv6Network((addr, IPV6_PREFIX), strict=False))
    return str(addr)


class RateLimiter:
    def __init__(self, per_minute: int, *, max_clients: int = MAX_CLIENTS) -> None:
        self.per_minute = per_minute
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.max_clients = max_clients
        self._buckets: LRUCache[str, _Bucket] = LRUCache(maxsize=max_clients)

    def __len__(self) -> int:
        return len(self._buckets)

    def check(self, ip: str) -> None:
        """Take one token for the client at ``ip`` or raise ``RateLimited``."""
        if self.per_minute <= 0:
            return
        key = client_key(ip)
        now = time.monotonic()
        bucket = self._buckets.get(key)  # a hit makes it the most recently used
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(self.capacity, now)
        bucket.tokens = min(self.capacity, bucket.tokens + (now - bucket.updated) * self.rate)
        bucket.updated = now
        if bucket.tokens < 1.0:
            raise RateLimited(
                "too many requests from this client", retry_after=(1.0 - bucket.tokens) / self.rate
            )
        bucket.tokens -= 1.0
