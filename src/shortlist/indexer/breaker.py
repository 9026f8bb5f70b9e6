"""The embedding indexer's circuit breaker: a misconfigured embedder pauses a corpus's queue
instead of failing its rows.

A permanent embedding error is either data (this row's text is rejected) or configuration (the
wrong model, URL or dimension; a proxy's HTML page answering 200). The second fails every row
alike, and failing them all would need ``reindex --failed`` after the fix. The breaker tells
the two apart with a probe: when a batch fails without the embedder naming an input, it asks
for a vector of a known-good text. If that fails too, nothing would embed: the corpus pauses
(``indexer_pauses``, migration 0012) with the probe's error as the reason, and the claimed rows
go back untouched. Vectors whose dimension is not the column's are configuration by definition.
If the probe succeeds, the batch holds a bad row and the bisect isolates it as before.

The pause is in PostgreSQL, so every worker process's claim skips the corpus. While it is
paused, an idle claim probes again, at most once per ``probe_every`` seconds across all
processes (``take_probe`` is guarded in SQL); the first probe that succeeds resumes the queue,
as ``shortlist reindex --resume`` does.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence

from shortlist.db import channels
from shortlist.db.pool import single_statement
from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn, AsyncPool
from shortlist.embedding.base import Embedder, EmbeddingPermanentError
from shortlist.errors import TransientError
from shortlist.redact import redact_emails

log = logging.getLogger(__name__)

QUERIES = load_queries("shortlist.indexer", "breaker.sql")

PROBE_TEXT = "Software engineer at Example Corp, Berlin\nBuilds and tests Python web services."
"""A text every working embedder embeds: if it fails, the embedder is what is wrong."""
MAX_REASON_CHARS = 1000


def dimension_mismatch(embedder: Embedder, got: int, expected: int) -> str:
    return (
        f"embedder {embedder.name} returns {got}-dimensional vectors, but the embedding model"
        f" holds {expected} (check SHORTLIST_EMBEDDER_MODEL and SHORTLIST_EMBEDDING_DIM, or"
        " `shortlist embeddings status`)"
    )


async def probe_embedder(embedder: Embedder, dim: int) -> str | None:
    """Embed :data:`PROBE_TEXT`: ``None`` if that works and gives ``dim`` dimensions, else why
    not. A transient error propagates (nothing can be concluded from it)."""
    try:
        vectors = await embedder.embed([PROBE_TEXT])
    except EmbeddingPermanentError as exc:
        return str(exc)
    if len(vectors) != 1 or len(vectors[0]) != dim:
        return dimension_mismatch(embedder, len(vectors[0]) if vectors else 0, dim)
    return None


class EmbedderMisconfigured(Exception):
    """The embedder fails in a way no row's text explains; the message is the pause reason."""


class Breaker:
    """The pause state of one corpus's queue, and the probe that decides it."""

    def __init__(
        self, pool: AsyncPool, embedder: Embedder, table: str, *, probe_every: float
    ) -> None:
        self.pool = pool
        self.embedder = embedder
        self.table = table
        self.probe_every = probe_every
        self._column_dim: int | None = None
        self.dim: int | None = None
        """The active model space's dimension (set by the queue before each use); unset, read
        from ``embedding_models``."""

    # -- deciding -------------------------------------------------------------------------------

    async def check_batch_error(self, exc: EmbeddingPermanentError) -> None:
        """For ``embed_isolating_failures``: raise ``EmbedderMisconfigured`` when a known-good
        text fails too. A transient error of the probe propagates (the batch is retried)."""
        reason = await self.probe()
        if reason is not None:
            raise EmbedderMisconfigured(reason)

    async def check_vectors(self, outcomes: Sequence[object]) -> None:
        """Raise ``EmbedderMisconfigured`` when a vector's dimension is not the column's."""
        expected = await self.column_dim()
        for outcome in outcomes:
            if isinstance(outcome, list) and len(outcome) != expected:
                raise EmbedderMisconfigured(self._dimension_mismatch(len(outcome), expected))

    async def probe(self) -> str | None:
        """Embed the probe text: ``None`` if that works, else why not."""
        return await probe_embedder(self.embedder, await self.column_dim())

    def _dimension_mismatch(self, got: int, expected: int) -> str:
        return dimension_mismatch(self.embedder, got, expected)

    async def column_dim(self) -> int:
        if self.dim is not None:
            return self.dim
        if self._column_dim is None:
            async with single_statement(self.pool) as conn:
                cur = await conn.execute(QUERIES["column_dim"])
                row = await cur.fetchone()
            if row is None:
                raise RuntimeError("no active embedding model")
            self._column_dim = int(row["dim"])
        return self._column_dim

    # -- the state ------------------------------------------------------------------------------

    async def pause(self, reason: str) -> bool:
        """Pause the corpus; True if this call did (it then logs the reason, once)."""
        reason = redact_emails(reason, MAX_REASON_CHARS)
        async with single_statement(self.pool) as conn:
            cur = await conn.execute(QUERIES["pause"], {"corpus": self.table, "reason": reason})
            paused = await cur.fetchone() is not None
        if paused:
            log.error(
                "%s: embedding paused, the embedder looks misconfigured: %s (probing every"
                " %.0fs; `shortlist reindex --resume` resumes at once)",
                self.table,
                reason,
                self.probe_every,
            )
        return paused

    async def probe_if_due(self) -> None:
        """While the corpus is paused: probe once per interval (one process does), and resume
        it when the probe succeeds."""
        async with single_statement(self.pool) as conn:
            cur = await conn.execute(
                QUERIES["take_probe"], {"corpus": self.table, "every": self.probe_every}
            )
            due = await cur.fetchone()
        if due is None:
            return
        try:
            reason = await self.probe()
        except TransientError as exc:
            log.info("%s: paused; probe failed transiently: %s", self.table, exc)
            return
        if reason is not None:
            log.debug("%s: still paused: %s", self.table, reason)
            return
        async with self.pool.connection() as conn:
            if await resume(conn, [self.table]):
                log.warning("%s: embedding resumed (the probe succeeded)", self.table)


async def resume(conn: AsyncConn, tables: Collection[str]) -> list[str]:
    """Resume the paused corpora among ``tables`` and wake the indexers; returns those that
    were paused. Commits (in a savepoint when the caller has a transaction open)."""
    async with conn.transaction():
        cur = await conn.execute(
            QUERIES["resume"], {"corpora": list(tables), "channel": channels.EMBED}
        )
        return [str(row["corpus"]) for row in await cur.fetchall()]
