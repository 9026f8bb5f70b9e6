"""The query-embedding cache: bounded LRU by model and normalised text, counted in the metrics."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from prometheus_client import REGISTRY

from shortlist.embedding.base import EmbeddingTransientError
from shortlist.embedding.model_space import first_space
from shortlist.embedding.query_cache import QueryCache, normalised_text
from tests.fakes import FakeEmbedder

LOCAL = replace(first_space(384), kind="local", model="all-MiniLM-L6-v2")
OTHER = replace(first_space(384), id=2, kind="openai", model="text-embedding-3-small")


def _lookups(result: str) -> float:
    return REGISTRY.get_sample_value("shortlist_query_cache_lookups_total", {"result": result}) or 0


async def test_a_repeated_query_is_embedded_once_and_counted_as_a_hit() -> None:
    embedder = FakeEmbedder()
    cache = QueryCache(16)
    hits, misses = _lookups("hit"), _lookups("miss")
    first = await cache.embed(LOCAL, embedder, "Software   Engineer ")
    again = await cache.embed(LOCAL, embedder, "software engineer")
    assert embedder.texts_embedded == 1
    # What was embedded is the key's text: the cached vector is the one a fresh call returns.
    np.testing.assert_array_equal(first, again)
    np.testing.assert_allclose(first, (await embedder.embed(["software engineer"]))[0], atol=1e-6)
    assert (cache.hits, cache.misses, cache.hit_ratio) == (1, 1, 0.5)
    assert _lookups("hit") == hits + 1 and _lookups("miss") == misses + 1
    assert REGISTRY.get_sample_value("shortlist_query_cache_hit_ratio") == 0.5
    with pytest.raises(ValueError):
        first[0] = 1.0  # shared between searches: read-only


async def test_the_key_is_the_model_and_case_folds_only_for_the_uncased_local_model() -> None:
    assert normalised_text(LOCAL, "  Nurse\tNights ") == "nurse nights"
    assert normalised_text(OTHER, "  Nurse\tNights ") == "Nurse Nights"
    embedder = FakeEmbedder()
    cache = QueryCache(16)
    await cache.embed(LOCAL, embedder, "nurse")
    await cache.embed(OTHER, embedder, "nurse")  # another model: its own entry
    await cache.embed(OTHER, embedder, "Nurse")  # a cased model: case matters
    assert embedder.texts_embedded == 3 and len(cache) == 3


async def test_least_recently_used_goes_first_and_size_zero_keeps_nothing() -> None:
    embedder = FakeEmbedder()
    cache = QueryCache(2)
    for text in ("a", "b", "a", "c"):  # "b" is the least recently used when "c" arrives
        await cache.embed(OTHER, embedder, text)
    assert embedder.texts_embedded == 3
    await cache.embed(OTHER, embedder, "a")
    assert embedder.texts_embedded == 3
    await cache.embed(OTHER, embedder, "b")
    assert embedder.texts_embedded == 4 and len(cache) == 2
    cache.clear()
    assert len(cache) == 0

    off = QueryCache(0)
    await off.embed(OTHER, embedder, "a")
    await off.embed(OTHER, embedder, "a")
    assert embedder.texts_embedded == 6 and len(off) == 0


async def test_a_failed_embedding_is_not_cached() -> None:
    embedder = FakeEmbedder(fail_transient_times=1)
    cache = QueryCache(4)
    with pytest.raises(EmbeddingTransientError):
        await cache.embed(OTHER, embedder, "remote")
    await cache.embed(OTHER, embedder, "remote")
    assert len(cache) == 1 and cache.misses == 1 and embedder.calls == 2
