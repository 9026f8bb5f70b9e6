"""The match queue: each listing whose vector was written is matched against every saved search
once (:mod:`.reverse`), on the one queue primitive (:mod:`shortlist.queue`).

``alert_listing_queue`` holds the listings to match (a trigger of migration 0034 queues one
when the indexer writes its vector, and notifies ``shortlist_alerts``). A matcher claims a batch
(SKIP LOCKED + lease), brings its saved-query vectors in memory up to date
(:mod:`.query_vectors`), and matches the batch in one transaction that ends the leases, writes
the matches (``ON CONFLICT DO NOTHING``, one statement for the batch) and takes the listings off
the queue: a matcher killed midway leaves nothing half-written, and the batch is matched again
by whoever takes the leases over, which inserts nothing twice.

Two batches are in flight at once (``bootstrap.ALERT_MATCH_CONCURRENCY``): one's matrix product
runs in the matcher while PostgreSQL writes the other's matches. Two transactions that write
the same (subscriber, job) or schedule the same saved search wait on each other, in one order
both keep (match.sql), so they do not deadlock; should the server still roll one back (a
deadlock, a serialization failure), the worker gives the batch back whole as transient
(``queue.transaction_conflict``) and it is matched again.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import datetime

from shortlist.alerts import reverse
from shortlist.alerts.query_vectors import QueryVectors
from shortlist.db import channels
from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncPool
from shortlist.embedding.spaces import Spaces
from shortlist.queue import DONE, Batch, LeaseTable
from shortlist.webhooks import store as webhooks

log = logging.getLogger(__name__)

SQL = load_queries("shortlist.alerts", "queue.sql")
MAX_ATTEMPTS = 5
"""Claims of one listing before it is given up (it kept killing its matcher)."""


@dataclass(frozen=True)
class QueuedListing:
    id: uuid.UUID
    queued_at: datetime
    attempts: int


class MatchQueue:
    """The ``shortlist.queue.worker.Queue`` of ``alert_listing_queue``."""

    name = "alert-matcher"
    channel: str | None = channels.ALERTS
    leases = LeaseTable("alert_listing_queue", key="listing_id", key_type="uuid")

    def __init__(self, pool: AsyncPool, spaces: Spaces | None, *, min_score: float) -> None:
        self.pool = pool
        self.spaces = spaces
        self.min_score = min_score
        self.matched = 0
        """Matches written by this queue (benchmarks and tests read it)."""
        self.vectors = QueryVectors(similarity=reverse.KEYWORD_SIMILARITY)
        """The active space's saved-query vectors (the meaning path), refreshed per batch."""

    async def claim(self, worker_id: str, limit: int, lease: float) -> list[QueuedListing]:
        async with self.pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                SQL["claim_listings"], {"worker_id": worker_id, "limit": limit, "lease": lease}
            )
            rows = await cur.fetchall()
        return [QueuedListing(r["listing_id"], r["queued_at"], int(r["attempts"])) for r in rows]

    async def handle(self, batch: Batch[QueuedListing]) -> None:
        space = self.spaces.active().space if self.spaces is not None else None
        statements = reverse.Statements.of(space)
        async with self.pool.connection() as conn:
            # Before the batch's transaction: a query saved since the last batch is in memory
            # (one saved after this read is the statement's to find, match.sql).
            await self.vectors.refresh(conn, statements.column, statements.dim)
            # The batch in one transaction (one commit for all: a commit per listing was most of
            # a listing's time): its leases end, its matches are written and it leaves the
            # queue together, or none of it happens and the batch is matched again.
            async with conn.transaction():
                # First: only listings whose lease is still ours get anything written.
                held = await batch.finish(conn, dict.fromkeys((i.id for i in batch.items), DONE))
                mine = [i for i in batch.items if i.id in held]
                for item in mine:
                    if item.attempts > MAX_ATTEMPTS:
                        log.error(
                            "alert matcher: listing %s given up after %d attempts",
                            item.id,
                            MAX_ATTEMPTS,
                        )
                found = await reverse.match_batch(
                    conn,
                    statements,
                    self.vectors,
                    [i.id for i in mine if i.attempts <= MAX_ATTEMPTS],
                    self.min_score,
                )
                self.matched += found.written
                await reverse.schedule(conn, found.searches)
                # Searches saved for an organisation's webhooks: alert.matched, in this
                # transaction.
                await webhooks.publish_job_matches(conn, [i.id for i in mine], found.searches)
                await conn.execute(
                    SQL["listings_matched"],
                    {"ids": [i.id for i in mine], "queued_at": [i.queued_at for i in mine]},
                )
