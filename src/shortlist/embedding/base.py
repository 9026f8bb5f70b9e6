"""What every embedder provides, the error split the indexer acts on, and the helper that turns
one bad input in a batch into one failed row instead of a failed batch.

Error classification: network/IO trouble, an empty response and HTTP 401/403/429/≥500 are
transient (roll back, back off, rows stay pending); a malformed response or an input the model
rejects is permanent (that row is marked ``failed``).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, runtime_checkable

from shortlist.errors import PermanentError, ShortlistError, TransientError


@runtime_checkable
class Embedder(Protocol):
    name: str
    """Short identifier, also the ``embedder`` label of the embedding metrics."""
    dim: int

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One L2-normalised vector per input, in input order.

        Raises ``EmbeddingTransientError`` or ``EmbeddingPermanentError``; nothing else is
        expected to escape (an unexpected exception is a bug, and the worker treats it as such).
        """
        ...

    def warm_up(self) -> None:
        """Load what the first call would (a model), so no request pays for it. Blocking."""
        ...

    async def aclose(self) -> None:
        """Release connections and threads."""
        ...


async def embed_queries(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """The vectors of search queries (job search words, a recruiter's brief, a saved search):
    the embedder's ``embed_query`` where it has one (the local model's int8 copy,
    ``shortlist.embedding.local``), else ``embed``. Listings and profiles are ``embed``'s."""
    embed_query: Callable[[Sequence[str]], Awaitable[list[list[float]]]] | None = getattr(
        embedder, "embed_query", None
    )
    if embed_query is None:
        return await embedder.embed(texts)
    return await embed_query(texts)


class EmbeddingError(ShortlistError):
    """Base of the embedding errors; always one of the two subclasses below."""


class EmbeddingTransientError(EmbeddingError, TransientError):
    """The same batch may well succeed later (outage, throttling, auth being rotated...)."""

    def __init__(
        self, message: str, *, retry_after: float | None = None, status: int | None = None
    ) -> None:
        super().__init__(message, retry_after=retry_after)
        self.status = status


class EmbeddingPermanentError(EmbeddingError, PermanentError):
    """Retrying the same input fails the same way.

    ``bad_index`` is the position (in the batch passed to ``embed``) of the one input that was
    rejected, when the embedder can tell; ``None`` means "something in this batch", and
    :func:`embed_isolating_failures` bisects to find out what.
    """

    def __init__(
        self, message: str, *, bad_index: int | None = None, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.bad_index = bad_index
        self.status = status


def classify_http_status(status: int) -> type[EmbeddingError]:
    """Which error an HTTP error status is: transient or permanent.

    401/403 count as transient on purpose: they mean the key is wrong or being rotated, which is
    an operator problem; failing every row permanently would need a manual ``reindex`` after the
    fix, while keeping them pending heals by itself.
    """
    if status in (401, 403, 429) or status >= 500:
        return EmbeddingTransientError
    return EmbeddingPermanentError


def check_texts(texts: Sequence[str]) -> None:
    """Reject blank inputs up front, identically for every embedder.

    Providers disagree here (OpenAI answers 400, a local model happily embeds ""), and a vector
    of nothing would match every query a little; so a blank text is a permanent error for it.
    """
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise EmbeddingPermanentError(
                f"input {i} is {type(text).__name__}, not str", bad_index=i
            )
        if not text.strip():
            raise EmbeddingPermanentError(f"input {i} is empty", bad_index=i)


def l2_normalize(vector: Sequence[float], *, index: int | None = None) -> list[float]:
    """Unit-length copy of ``vector``; a zero or non-finite vector is a permanent error (it has
    no direction, and cosine distance against it is undefined)."""
    values = [float(x) for x in vector]
    if not all(math.isfinite(x) for x in values):
        raise EmbeddingPermanentError("embedding contains NaN or infinity", bad_index=index)
    norm = math.sqrt(math.fsum(x * x for x in values))
    if norm == 0.0:
        raise EmbeddingPermanentError("embedding is the zero vector", bad_index=index)
    return [x / norm for x in values]


async def embed_isolating_failures(
    embedder: Embedder,
    texts: Sequence[str],
    *,
    check_batch_error: Callable[[EmbeddingPermanentError], Awaitable[None]] | None = None,
) -> list[list[float] | EmbeddingPermanentError]:
    """Embed ``texts``; inputs that fail permanently come back as their error, in place.

    The whole batch is tried first (the common case costs one call). On a permanent error the
    batch is split: at the reported ``bad_index`` when the embedder names the culprit, otherwise
    in halves; so k bad inputs among n cost O(k·log n) calls. A transient error at any point
    propagates, so the caller rolls the whole batch back and retries it later.

    A returned error's ``bad_index`` is relative to the sub-batch it was raised for; use the
    position in the returned list instead.

    ``check_batch_error`` is awaited once, when the whole batch fails permanently without
    naming an input, before any bisecting: it may raise to abort (the indexer's breaker does
    when the embedder fails a known-good text too, so nothing would be isolated).
    """
    results: list[list[float] | EmbeddingPermanentError | None] = [None] * len(texts)

    async def solve(lo: int, hi: int) -> None:
        if lo >= hi:
            return
        try:
            vectors = await embedder.embed(texts[lo:hi])
            if len(vectors) != hi - lo:
                # A contract breach; treated like a malformed response (bisect, then fail).
                raise EmbeddingPermanentError(
                    f"embedder {embedder.name} returned {len(vectors)} vectors for {hi - lo} inputs"
                )
        except EmbeddingPermanentError as exc:
            if check_batch_error is not None and exc.bad_index is None and hi - lo == len(texts):
                await check_batch_error(exc)
            if hi - lo == 1:
                results[lo] = exc
                return
            if exc.bad_index is not None and 0 <= exc.bad_index < hi - lo:
                bad = lo + exc.bad_index
                results[bad] = exc
                await solve(lo, bad)
                await solve(bad + 1, hi)
                return
            mid = (lo + hi) // 2
            await solve(lo, mid)
            await solve(mid, hi)
            return
        results[lo:hi] = vectors

    await solve(0, len(texts))
    # Every index ends in exactly one successful call or one failed single-input call.
    done = [r for r in results if r is not None]
    assert len(done) == len(texts)
    return done
