"""Query embeddings kept in memory: job boards repeat queries ("software engineer", "remote",
"nurse"), and a repeated query need not be encoded again.

One :class:`QueryCache` per process (``Spaces.query_cache``), bounded, least recently used out
first (``cachetools.LRUCache``), keyed by the model space (its :meth:`ModelSpace.model_key`) and
the query's normalised text: surrounding and repeated white space dropped, and for the local
model, whose tokenizer lowercases every text (``tokenizer.json``: BertNormalizer, lowercase),
the case folded as well. The text that is embedded is that key's text, so a cached vector is
exactly the one a fresh call would return. Cleared when the active model switches
(``Spaces.refresh``): the retired model's queries would never be asked for again.

Hits and misses are counted in ``/metrics`` (``shortlist_query_cache_lookups_total`` by result,
and ``shortlist_query_cache_hit_ratio`` since the process started).
"""

from __future__ import annotations

import threading

import numpy as np
import numpy.typing as npt
from cachetools import LRUCache

from shortlist import metrics
from shortlist.embedding.base import Embedder, embed_queries
from shortlist.embedding.model_space import ModelSpace

Vector = npt.NDArray[np.float32]


def normalised_text(space: ModelSpace, text: str) -> str:
    """The text a query is cached under, and embedded as."""
    collapsed = " ".join(text.split())
    return collapsed.lower() if space.kind == "local" else collapsed


class QueryCache:
    """Bounded LRU of query vectors by (model, normalised text); ``maxsize`` 0 keeps nothing."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._vectors: LRUCache[tuple[object, ...], Vector] = LRUCache(maxsize=max(1, maxsize))
        # LRUCache reorders itself on every read: guard it for callers in other threads.
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._vectors)

    @property
    def hit_ratio(self) -> float:
        lookups = self.hits + self.misses
        return self.hits / lookups if lookups else 0.0

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()

    async def embed(self, space: ModelSpace, embedder: Embedder, text: str) -> Vector:
        """The vector of ``text`` in ``space``: from the cache, or embedded (and kept).

        Raises what ``embedder.embed_query`` (else ``embed``) raises (``EmbeddingError``); a
        failure is not cached. The local model's query vectors are its int8 copy's
        (``shortlist.embedding.base.embed_queries``).
        """
        query = normalised_text(space, text)
        key = (space.model_key(), query)
        if self.maxsize:
            with self._lock:
                cached = self._vectors.get(key)
            if cached is not None:
                self._count(hit=True)
                return cached
        [vector] = await embed_queries(embedder, [query])
        array = np.asarray(vector, dtype=np.float32)
        array.flags.writeable = False  # shared by every search that asks for it
        self._count(hit=False)
        if self.maxsize:
            with self._lock:
                self._vectors[key] = array
        return array

    def _count(self, *, hit: bool) -> None:
        if hit:
            self.hits += 1
        else:
            self.misses += 1
        metrics.QUERY_CACHE_LOOKUPS.labels(result="hit" if hit else "miss").inc()
        metrics.QUERY_CACHE_HIT_RATIO.set(self.hit_ratio)
