"""The embedding queue of one corpus.

    claim   WHERE pending OR (embedded AND updated_at > embedded_at), ORDER BY claim_lane,
            claim_seq, created_at (interactive producers first, batches interleaved),
            FOR UPDATE SKIP LOCKED, leased to this worker and committed (no transaction is
            held open while the model runs)
    handle  text unchanged (only e.g. the salary was edited) → embedded again, no model call
            otherwise one batch call, then ONE transaction: vectors with their status flip,
            near-duplicate links and job.published webhook events (job listings), and the rows
            that failed permanently

The run loop, the throttle between cycles, the NOTIFY wake-up, back-off and graceful stop are
the shared primitive's (``shortlist.queue``); this module only says what is claimable and what
"done" means.

While a second model space is being built (``shortlist.indexer.migration``), the same queue
fills it: rows claimed for the active model get the new model's vector too, and once nothing
is pending, embedded rows the new space lacks are claimed for it alone (``missing_from_build``).
The active model's work goes first, and a failing new model never holds it back.

A transient embedding error (network, empty response, HTTP 401/403/429/5xx) propagates as
``TransientError``: the worker gives the rows back (they stay pending) and backs off
``base × 2^attempt``, capped. A permanent error is attributed to the single input that caused
it (``embed_isolating_failures`` bisects) and that row alone is marked ``failed`` in the same
transaction that stores the others' vectors. Unless the embedder looks misconfigured rather
than the row bad: then the corpus pauses instead (``breaker``) and no row is failed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import psycopg
from pgvector import Vector
from psycopg import sql

from shortlist import metrics
from shortlist.config import DEFAULT_DUPLICATE_DISTANCE
from shortlist.db import channels
from shortlist.db.pool import single_statement
from shortlist.db.sql import compose, load_queries
from shortlist.db.types import AsyncConn, AsyncPool
from shortlist.embedding.base import Embedder, EmbeddingPermanentError, embed_isolating_failures
from shortlist.embedding.spaces import ModelInUse, Spaces
from shortlist.errors import TransientError
from shortlist.indexer.breaker import Breaker, EmbedderMisconfigured, probe_embedder
from shortlist.indexer.corpora import Corpus
from shortlist.queue import DONE, Batch, LeaseTable
from shortlist.redact import redact_emails
from shortlist.webhooks import publish_listings

log = logging.getLogger(__name__)

MAX_ERROR_CHARS = 1000
MAX_LANE = 32767
"""Every claim lane (``claim_lane`` is a smallint)."""

QUERIES = load_queries("shortlist.indexer")


@dataclass(frozen=True)
class ClaimedRow:
    id: UUID
    text: str
    content_hash: bytes
    """Hash of ``text`` at claim time; every write is guarded by it."""
    embedded_hash: bytes | None
    """Hash of the text the stored vector was computed from (``None``: no usable vector)."""
    has_vector: bool
    active_id: int = 0
    """The active space when claimed; a switch before the batch is handled hands it back."""
    needs_active: bool = True
    """Claimed for the active space (pending or edited), not only for the one being built."""
    target_hash: bytes | None = None
    """Hash of the text the space being built holds a vector (or a rejection) for."""

    @property
    def text_unchanged(self) -> bool:
        """The stored vector already belongs to this text: flip the status, skip the model."""
        return self.has_vector and self.embedded_hash == self.content_hash


@dataclass
class BatchResult:
    embedded: int = 0
    unchanged: int = 0
    failed: int = 0
    superseded: int = 0
    """Rows whose text changed while they were being embedded: given back, claimed again."""
    held_back: int = 0
    """Rows handed back untouched because the embedder looks misconfigured (queue paused)."""
    built: int = 0
    """Rows given a vector (or a recorded rejection) in the model space being built."""

    def add(self, other: BatchResult) -> None:
        self.embedded += other.embedded
        self.unchanged += other.unchanged
        self.failed += other.failed
        self.superseded += other.superseded
        self.held_back += other.held_back
        self.built += other.built


class EmbeddingQueue:
    """The ``shortlist.queue.worker.Queue`` of one corpus table."""

    def __init__(
        self,
        pool: AsyncPool,
        embedder: Embedder,
        target: Corpus,
        *,
        probe_every: float = 30.0,
        spaces: Spaces | None = None,
        interactive_only: bool = False,
        duplicate_distance: float = DEFAULT_DUPLICATE_DISTANCE,
    ) -> None:
        """``spaces``: the process's model spaces; without, the one space of ``embedder`` on the
        original columns (tests, benchmarks). ``interactive_only``: claim only rows of the
        interactive lane (API, e-mail; migration 0020), so they never wait for a bulk batch.
        ``duplicate_distance``: how near (cosine) a job listing's vector must be to an earlier
        one of its company and city to be linked as its duplicate
        (``SHORTLIST_DUPLICATE_DISTANCE``)."""
        self.pool = pool
        self.embedder = embedder
        # Without spaces: the table's active space, embedded by ``embedder`` whatever it is.
        self.spaces = spaces or Spaces.of_embedder(pool, embedder)
        self.target = target
        self.breaker = Breaker(pool, embedder, target.table, probe_every=probe_every)
        self.name = f"embed:{target.table}" + (":interactive" if interactive_only else "")
        self.max_lane = 0 if interactive_only else MAX_LANE
        self.duplicate_distance = duplicate_distance
        # Every corpus table notifies the one channel; a wake-up for the other table costs an
        # empty claim, which is cheaper than a listener per table.
        self.channel: str | None = channels.EMBED
        self.leases = LeaseTable(target.table, key_type="uuid")
        self.totals = BatchResult()
        """Running totals of this queue object (for logs, benchmarks and tests)."""
        self._table = sql.Identifier(target.table)
        self._text = sql.SQL(target.text_sql)
        self._composed: dict[tuple[object, ...], sql.Composed] = {}

    async def _models(self) -> tuple[ModelInUse, ModelInUse | None]:
        if not self.spaces.loaded:
            await self.spaces.refresh()
        return self.spaces.active(), self.spaces.building()

    def _sql(
        self,
        name: str,
        active: ModelInUse,
        building: ModelInUse | None = None,
        *,
        wanted: str | None = None,
    ) -> sql.Composed:
        """Statement ``name`` for these spaces (see queries.sql), composed once per pair;
        ``wanted``: the named condition that fills the claim's ``{wanted}``."""
        key = (name, wanted, active.space, None if building is None else building.space)
        statement = self._composed.get(key)
        if statement is None:
            target = (building or active).space.parts()
            parts: dict[str, sql.Composable] = {
                **active.space.parts(),
                "target_embedding": target["embedding"],
                "target_hash": target["embedded_hash"],
                "table": self._table,
                "text": self._text,
            }
            if wanted is not None:
                parts["wanted"] = compose(QUERIES[wanted], **parts)
            statement = self._composed[key] = compose(QUERIES[name], **parts)
        return statement

    # -- the Queue protocol ---------------------------------------------------------------------

    async def claim(self, worker_id: str, limit: int, lease: float) -> list[ClaimedRow]:
        active, building = await self._models()
        params = {
            "worker_id": worker_id,
            "limit": limit,
            "lease": lease,
            "corpus": self.target.table,
            "max_lane": self.max_lane,
        }
        async with single_statement(self.pool) as conn:
            cur = await conn.execute(self._sql("claim", active, building, wanted="pending"), params)
            rows = await cur.fetchall()
            for_build: list[Any] = []
            if building is not None and len(rows) < limit and self.max_lane == MAX_LANE:
                params["limit"] = limit - len(rows)
                cur = await conn.execute(
                    self._sql("claim", active, building, wanted="missing_from_build"), params
                )
                for_build = await cur.fetchall()
        if not rows and not for_build:
            # Idle, or paused: a paused corpus is probed from here, once per interval.
            self.breaker.embedder, self.breaker.dim = active.embedder, active.space.dim
            await self.breaker.probe_if_due()
        # UPDATE … RETURNING does not keep the CTE's order; embed oldest first anyway.
        rows.sort(key=lambda r: r["created_at"])
        return [
            ClaimedRow(
                id=r["id"],
                text=r["text"],
                content_hash=bytes(r["content_hash"]),
                embedded_hash=None if r["embedded_hash"] is None else bytes(r["embedded_hash"]),
                has_vector=r["has_vector"],
                active_id=active.space.id,
                needs_active=needs_active,
                target_hash=None if r["target_hash"] is None else bytes(r["target_hash"]),
            )
            for needs_active, claimed in ((True, rows), (False, for_build))
            for r in claimed
        ]

    async def handle(self, batch: Batch[ClaimedRow]) -> None:
        """Every row the active space's commit does not finish (superseded, held back, claimed
        for the space being built alone, or all of them when the spaces changed) is given back
        by the worker when this returns."""
        items = batch.items
        active, building = await self._models()
        if any(r.active_id != active.space.id for r in items):
            # The model switched between claim and now: claimed again, for the new space.
            return
        to_build = [] if building is None else [r for r in items if r.target_hash != r.content_hash]
        try:
            result = await self._index(batch, [r for r in items if r.needs_active], active)
            if to_build and building is not None:
                result.built = await self.build_batch(to_build, building)
                self.totals.built += result.built
        except psycopg.errors.UndefinedColumn as exc:
            # A space this process had not heard of leaving (cancelled, or dropped after a
            # switch): reload, and the rows are claimed again for what is in use now.
            log.info(
                "%s: embedding spaces changed under a batch (%s); reloading", self.target.table, exc
            )
            await self.spaces.refresh()
            return
        except psycopg.OperationalError as exc:
            # The database went away mid-batch: nothing was committed; the worker waits for
            # the database, not for the provider.
            raise TransientError(f"database unavailable: {exc}") from exc
        log.info(
            "%s: %d embedded, %d unchanged, %d failed, %d superseded, %d held back, %d built",
            self.target.table,
            result.embedded,
            result.unchanged,
            result.failed,
            result.superseded,
            result.held_back,
            result.built,
        )

    # -- the work ----------------------------------------------------------------------------------

    async def index_batch(
        self, worker_id: str, rows: Sequence[ClaimedRow], active: ModelInUse | None = None
    ) -> BatchResult:
        """Embed and commit one claimed batch in the active space, and give back what it did
        not finish (as the worker does after ``handle``); raises ``TransientError`` to have it
        retried."""
        batch = Batch(worker_id, list(rows), self.leases)
        result = await self._index(batch, rows, active)
        await batch.close(self.pool)
        return result

    async def _index(
        self, batch: Batch[ClaimedRow], rows: Sequence[ClaimedRow], active: ModelInUse | None
    ) -> BatchResult:
        """The active space's work on ``rows``: each row embedded (or failed, or confirmed
        unchanged) is finished in the transaction that writes it; the rest is left to the
        batch's close (given back)."""
        if active is None:
            active = (await self._models())[0]
        self.breaker.embedder, self.breaker.dim = active.embedder, active.space.dim
        result = BatchResult()
        done: set[UUID] = set()
        unchanged = [r for r in rows if r.text_unchanged]
        to_embed = [r for r in rows if not r.text_unchanged]
        if unchanged:
            # Committed before the model call, so a transient error below does not undo it.
            async with self.pool.connection() as conn, conn.transaction():
                held = await batch.finish(conn, dict.fromkeys((r.id for r in unchanged), DONE))
                cur = await conn.execute(self._sql("confirm_embedded", active), {"ids": list(held)})
                confirmed = {row["id"] for row in await cur.fetchall()}
            result.unchanged = len(confirmed)
            done |= confirmed
        paused = False
        if to_embed:
            try:
                outcomes = await embed_isolating_failures(
                    active.embedder,
                    [r.text for r in to_embed],
                    check_batch_error=self.breaker.check_batch_error,
                )
                await self.breaker.check_vectors(outcomes)
            except EmbedderMisconfigured as exc:
                await self.breaker.pause(str(exc))
                paused = True
            else:
                embedded, failed = await self._commit(batch, to_embed, outcomes, active)
                result.embedded, result.failed = len(embedded), len(failed)
                done |= embedded | failed
        # Paused (given back by the batch's close), or a guard did not match: the text changed
        # under us and the row, its lease ended, is claimable again.
        left = [r.id for r in rows if r.id not in done]
        if paused:
            result.held_back = len(left)
        else:
            result.superseded = len(left)
        self.totals.add(result)
        for outcome, count in (
            ("embedded", result.embedded),
            ("unchanged", result.unchanged),
            ("failed", result.failed),
            ("superseded", result.superseded),
            ("held_back", result.held_back),
        ):
            if count:
                metrics.EMBED_ROWS.labels(self.target.table, outcome).inc(count)
        return result

    async def _commit(
        self,
        batch: Batch[ClaimedRow],
        rows: Sequence[ClaimedRow],
        outcomes: Sequence[list[float] | EmbeddingPermanentError],
        active: ModelInUse,
    ) -> tuple[set[UUID], set[UUID]]:
        """Vectors (with their status flip) and permanent failures of a batch, in the one
        transaction that ends the rows' leases; returns the ids embedded and the ids marked
        failed."""
        good: list[tuple[ClaimedRow, list[float]]] = []
        bad: list[tuple[ClaimedRow, str]] = []
        for row, outcome in zip(rows, outcomes, strict=True):
            if isinstance(outcome, EmbeddingPermanentError):
                # A provider may quote the input back, and a profile summary may hold an
                # e-mail address: those never reach the logs or the status page.
                bad.append((row, redact_emails(str(outcome), MAX_ERROR_CHARS)))
            else:
                good.append((row, outcome))
        embedded: set[UUID] = set()
        failed: set[UUID] = set()
        async with self.pool.connection() as conn, conn.transaction():
            # First: the rows this worker still holds, locked to the end of the transaction.
            held = await batch.finish(conn, dict.fromkeys((r.id for r in rows), DONE))
            good = [(r, v) for r, v in good if r.id in held]
            bad = [(r, e) for r, e in bad if r.id in held]
            if good:
                cur = await conn.execute(
                    self._sql("store_embeddings", active),
                    {
                        "ids": [r.id for r, _ in good],
                        "vectors": [Vector(v) for _, v in good],
                        "hashes": [r.content_hash for r, _ in good],
                    },
                )
                embedded = {row["id"] for row in await cur.fetchall()}
                if embedded and self.target.links_duplicates:
                    await conn.execute(
                        self._sql("link_near_duplicates", active),
                        {"ids": list(embedded), "max_distance": self.duplicate_distance},
                    )
                if embedded and self.target.publishes_jobs:
                    # After the links: a listing that repeats another is not published.
                    await publish_listings(conn, sorted(embedded))
                await self._after_vectors_written(conn, sorted(embedded))
            if bad:
                for row, error in bad:
                    log.warning("%s %s: embedding failed: %s", self.target.table, row.id, error)
                cur = await conn.execute(
                    self._sql("mark_failed", active),
                    {
                        "ids": [r.id for r, _ in bad],
                        "errors": [error for _, error in bad],
                        "hashes": [r.content_hash for r, _ in bad],
                    },
                )
                failed = {row["id"] for row in await cur.fetchall()}
        return embedded, failed

    async def build_batch(self, rows: Sequence[ClaimedRow], building: ModelInUse) -> int:
        """Vectors of the space being built for ``rows``; returns how many were stored. A row
        the new model rejects is recorded as tried (its hash, no vector) and logged; it does not
        fail the row, whose status is the active space's. Transient errors propagate."""
        active = (await self._models())[0]

        async def systematic(exc: EmbeddingPermanentError) -> None:
            # The breaker's test, for the new model: if it cannot embed a known-good text
            # either, it is misconfigured, and no row is recorded as rejected by it.
            reason = await probe_embedder(building.embedder, building.space.dim)
            if reason is not None:
                raise TransientError(f"model {building.space.label} fails a probe: {reason}")

        outcomes = await embed_isolating_failures(
            building.embedder, [r.text for r in rows], check_batch_error=systematic
        )
        vectors: list[Vector | None] = []
        for row, outcome in zip(rows, outcomes, strict=True):
            if isinstance(outcome, EmbeddingPermanentError):
                log.warning(
                    "%s %s: model %s rejects the text: %s",
                    self.target.table,
                    row.id,
                    building.space.label,
                    redact_emails(str(outcome), MAX_ERROR_CHARS),
                )
                vectors.append(None)
            elif len(outcome) != building.space.dim:
                raise TransientError(
                    f"model {building.space.label} returned {len(outcome)}-d vectors, not"
                    f" {building.space.dim}"
                )
            else:
                vectors.append(Vector(outcome))
        async with single_statement(self.pool) as conn:
            cur = await conn.execute(
                self._sql("store_in_target", active, building),
                {
                    "ids": [r.id for r in rows],
                    "vectors": vectors,
                    "hashes": [r.content_hash for r in rows],
                },
            )
            stored = len(await cur.fetchall())
        if stored:
            metrics.EMBED_ROWS.labels(self.target.table, "built").inc(stored)
        return stored

    async def _after_vectors_written(self, conn: AsyncConn, ids: list[UUID]) -> None:
        """Test seam inside the commit, after the vectors and status flips are written and
        before the failures and the COMMIT: a test subclass raises here to prove that a batch
        commits whole or not at all."""
