"""Answers of repeated job searches, kept in memory until a listing changes.

Job boards repeat searches ("software engineer", "nurse in toronto", the same page of the same
filters), and most of a search's cost is PostgreSQL's (the candidate lists, the facets), not
the model's, which the query cache (shortlist.embedding.query_cache) already spares. One
:class:`ResultCache` per process (``Services.search_cache``) keeps whole answers — the page of
hits with their ``why`` and the facets — keyed by everything an answer depends on: the active
model space, the query as asked, the page and every filter.

**Never stale by more than a notification's delay.** Migration 0025 notifies
``shortlist_listings`` (``shortlist.db.channels.LISTINGS``) after every statement that changes
listings as a search reads or shows them, whichever process or producer ran it; every process
listens (``shortlist.queue.notify``) and empties its cache on each notification
(:meth:`ResultCache.watch`). So:

* an answer computed while a notification arrived is not kept (the cache's *generation* moved
  on during the search: the answer may predate the change);
* while the listener is disconnected, notifications may be lost: nothing is read from or kept
  in the cache until it is back (and then it empties the cache: anything may have changed);
* an answer degraded to full text (the embedder failed) is not kept: it would outlive the
  outage;
* an answer read from a read replica is not kept: the notification comes from the primary,
  possibly before the replica has replayed the change, so the replica's answer after it may
  still be the old one (keeping those would need each answer's replay position held against
  the change's: not built);
* every answer expires after ``SHORTLIST_SEARCH_CACHE_SECONDS`` all the same, because it also
  depends on the clock (``posted_within_days``, the freshness facet).

Bounded by the size of the kept answers' JSON (``SHORTLIST_SEARCH_CACHE_MB``; least recently
used out first, ``cachetools.LRUCache``): an answer is kept as its JSON bytes, which is also
the form the API sends, and read back through pydantic's parser. Hits, misses, answers not
kept and searches that joined another's computation of the same answer are counted in
``/metrics`` (``shortlist_search_cache_lookups_total``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from cachetools import LRUCache

from shortlist import metrics
from shortlist.listings.search import SearchResult
from shortlist.queue.worker import wait_any

log = logging.getLogger(__name__)

Key = tuple[object, ...]


@dataclass(frozen=True)
class _Entry:
    body: bytes
    expires: float


class ResultCache:
    """Bounded LRU of job search answers; ``max_bytes`` 0 keeps nothing."""

    def __init__(self, max_bytes: int, ttl: float) -> None:
        self.max_bytes = max_bytes
        self.ttl = ttl
        self._entries: LRUCache[Key, _Entry] = LRUCache(
            maxsize=max(1, max_bytes), getsizeof=lambda e: len(e.body) + 200
        )
        self._lock = threading.Lock()
        self.generation = 0
        """Moves on whenever the cache empties: an answer begun before it moved is not kept."""
        self.listening = False
        """Whether change notifications arrive (:meth:`watch`); the cache is bypassed if not."""
        self._inflight: dict[tuple[Key, int], asyncio.Future[SearchResult]] = {}
        """Answers being computed, by key and the generation they began in."""

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0 and self.listening

    def invalidate(self) -> None:
        with self._lock:
            self.generation += 1
            self._entries.clear()

    def get(self, key: Key) -> SearchResult | None:
        if not self.enabled:
            return None
        now = time.monotonic()
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.expires <= now:
                del self._entries[key]
                entry = None
        if entry is None:
            metrics.SEARCH_CACHE_LOOKUPS.labels(result="miss").inc()
            return None
        metrics.SEARCH_CACHE_LOOKUPS.labels(result="hit").inc()
        return SearchResult.model_validate_json(entry.body)

    def put(self, key: Key, result: SearchResult, generation: int, *, from_replica: bool) -> None:
        """Keep ``result``, computed from generation ``generation`` on, unless it may be stale."""
        if not self.enabled or result.degraded or from_replica:
            return
        body = result.json_bytes()
        with self._lock:
            if generation != self.generation:
                metrics.SEARCH_CACHE_LOOKUPS.labels(result="not_kept").inc()
                return
            if len(body) + 200 > self.max_bytes:
                return  # cachetools would raise: larger than the whole cache
            self._entries[key] = _Entry(body, time.monotonic() + self.ttl)

    async def answer(
        self,
        key: Key,
        compute: Callable[[], Awaitable[tuple[SearchResult, bool]]],
    ) -> SearchResult:
        """The kept answer of ``key``, or ``compute()``'s (result, read from a replica), kept.

        Searches asking for the same missing answer at once wait for the first one's
        computation instead of each running it (when a popular query's answer is not kept, a
        burst of it would otherwise all go to PostgreSQL): only while no listing changed since
        it began, and a computation that fails leaves each waiter to compute its own."""
        started = time.perf_counter()
        cached = self.get(key)
        if cached is not None:
            return cached.timed(_ms_since(started))
        generation = self.generation
        flight = (key, generation)
        running = self._inflight.get(flight) if self.enabled else None
        if running is not None:
            try:
                shared = await asyncio.shield(running)
            except asyncio.CancelledError:
                if not running.cancelled():
                    raise  # this search itself was cancelled, not the one it waited for
            except Exception:  # the waiter computes its own answer below
                pass
            else:
                metrics.SEARCH_CACHE_LOOKUPS.labels(result="joined").inc()
                return shared.timed(_ms_since(started))
            return (await compute())[0]
        future: asyncio.Future[SearchResult] = asyncio.get_running_loop().create_future()
        if self.enabled:
            self._inflight[flight] = future
        try:
            result, from_replica = await compute()
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning without waiters
            raise
        else:
            future.set_result(result)
        finally:
            if self._inflight.get(flight) is future:
                del self._inflight[flight]
        self.put(key, result, generation, from_replica=from_replica)
        return result

    async def watch(
        self, changed: asyncio.Event, connected: asyncio.Event, disconnected: asyncio.Event
    ) -> None:
        """Empty the cache on every notification (``changed``); bypass it while the process's
        listener is down (``connected`` / ``disconnected``). Runs until cancelled."""
        while True:
            if not connected.is_set():
                self.listening = False
                self.invalidate()
                await connected.wait()
                # Emptied again now it listens: no answer begun while it did not is kept.
                self.invalidate()
                self.listening = True
            await wait_any(changed.wait(), disconnected.wait(), timeout=None)
            if changed.is_set():
                changed.clear()
                self.invalidate()


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)
