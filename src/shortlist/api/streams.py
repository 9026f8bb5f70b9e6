"""Caps on open event streams, per token and in total, in this process's memory.

An open stream holds a task and, on every wake-up, a pooled connection: without a cap one
token could open thousands. In-process, as the per-IP limiter (shortlist.api.ratelimit): with N
API processes the effective caps are N times the settings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncGenerator, AsyncIterator

from shortlist.errors import QuotaExceeded

# What a refused client is told to wait before trying again (seconds): streams end with their
# search, so a slot frees up soon; meanwhile the page polls /api/results.
RETRY_AFTER = 10.0


class StreamSlot:
    """One open stream's place; :meth:`release` is idempotent (called by the stream's end and
    by the response's background task, whichever comes first)."""

    def __init__(self, slots: StreamSlots, token_id: int) -> None:
        self._slots = slots
        self.token_id = token_id
        self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            self._slots._release(self.token_id)


class StreamSlots:
    def __init__(self, *, per_token: int, total: int) -> None:
        self.per_token = per_token
        self.total = total
        self._by_token: Counter[int] = Counter()
        self._open = 0

    @property
    def open(self) -> int:
        return self._open

    def acquire(self, token_id: int) -> StreamSlot:
        """A slot for one more stream of ``token_id``, or :class:`QuotaExceeded` (429)."""
        if self._by_token[token_id] >= self.per_token:
            raise QuotaExceeded(
                f"this token already has {self.per_token} open event streams"
                " (SHORTLIST_SSE_PER_TOKEN); close one or poll /api/results",
                limit="SHORTLIST_SSE_PER_TOKEN",
                retry_after=RETRY_AFTER,
            )
        if self._open >= self.total:
            raise QuotaExceeded(
                f"the server has {self.total} open event streams (SHORTLIST_SSE_MAX_STREAMS);"
                " poll /api/results instead",
                limit="SHORTLIST_SSE_MAX_STREAMS",
                retry_after=RETRY_AFTER,
            )
        self._by_token[token_id] += 1
        self._open += 1
        return StreamSlot(self, token_id)

    def _release(self, token_id: int) -> None:
        self._by_token[token_id] -= 1
        if self._by_token[token_id] <= 0:
            del self._by_token[token_id]
        self._open -= 1


async def holding(slot: StreamSlot, body: AsyncGenerator[str, None]) -> AsyncIterator[str]:
    """``body``, releasing ``slot`` when it ends, fails or is cancelled (client gone)."""
    try:
        async for chunk in body:
            yield chunk
    finally:
        slot.release()
        await body.aclose()
