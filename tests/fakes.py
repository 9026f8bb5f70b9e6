"""Test doubles. ``FakeEmbedder``: deterministic, instant, model-free vectors whose similarity
tracks shared words, so search tests can reason about relevance without the real model."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import math
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from shortlist.embedding.base import (
    EmbeddingPermanentError,
    EmbeddingTransientError,
    check_texts,
)

DIM = 384
_WORD = re.compile(r"\w+")


@lru_cache(maxsize=65536)
def _bucket(token: str, dim: int) -> int:
    # blake2b, not hash(): stable across processes (PYTHONHASHSEED), so vectors are too.
    digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % dim


def hash_embed(text: str, dim: int = DIM) -> list[float]:
    """Bag-of-words hashing: each lower-cased word adds 1 to its bucket, then L2-normalise.

    Cosine similarity is then (roughly) word overlap: texts sharing words score higher, texts
    sharing none score ~0 (up to bucket collisions). Text without any word characters gets a
    bucket of its own so the vector is never zero.
    """
    vector = [0.0] * dim
    tokens = _WORD.findall(text.lower()) or [text]
    for token in tokens:
        vector[_bucket(token, dim)] += 1.0
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (
        math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    )


class FakeEmbedder:
    """Implements ``shortlist.embedding.base.Embedder``.

    Knobs:
      - ``delay``: seconds to ``asyncio.sleep`` at the start of every call (cancellable, so
        shutdown tests can see where a call is interrupted).
      - ``fail_transient_times``: the next N calls raise ``EmbeddingTransientError``.
      - ``fail_permanent_on``: inputs for which it returns true make the call raise
        ``EmbeddingPermanentError`` with ``bad_index`` set to the first such input (as a
        provider naming the input it rejects).
      - ``before_return``: called with the batch (sync or async) just before vectors are
        returned; e.g. to check DB state mid-batch or to block on an event.
    Counters: ``calls`` (every call, failed ones included), ``texts_embedded`` (inputs of
    successful calls), ``batches`` (the inputs of every call).
    """

    def __init__(
        self,
        dim: int = DIM,
        *,
        delay: float = 0.0,
        fail_transient_times: int = 0,
        fail_permanent_on: Callable[[str], bool] | None = None,
        before_return: Callable[[list[str]], Any] | None = None,
    ) -> None:
        self.name = "fake"
        self.dim = dim
        self.delay = delay
        self.fail_transient_times = fail_transient_times
        self.fail_permanent_on = fail_permanent_on
        self.before_return = before_return
        self.calls = 0
        self.texts_embedded = 0
        self.batches: list[list[str]] = []

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        batch = list(texts)
        self.calls += 1
        self.batches.append(batch)
        if self.delay:
            await asyncio.sleep(self.delay)
        if not batch:
            return []
        if self.fail_transient_times > 0:
            self.fail_transient_times -= 1
            raise EmbeddingTransientError("fake transient failure", retry_after=None)
        check_texts(batch)
        if self.fail_permanent_on is not None:
            for i, text in enumerate(batch):
                if self.fail_permanent_on(text):
                    raise EmbeddingPermanentError(f"fake rejects input {i}", bad_index=i)
        vectors = [hash_embed(text, self.dim) for text in batch]
        if self.before_return is not None:
            result = self.before_return(batch)
            if inspect.isawaitable(result):
                await result
        self.texts_embedded += len(batch)
        return vectors

    def warm_up(self) -> None:
        pass

    async def aclose(self) -> None:
        pass
