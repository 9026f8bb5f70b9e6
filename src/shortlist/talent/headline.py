"""The backfill's headline numbers in /metrics: time to the first backfilled result, and the
hit rate (backfilled searches that reach their target, over backfilled searches).

The facts of an append are read in the append's transaction and observed once it committed,
so a rolled-back append counts for nothing.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from shortlist import metrics
from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn

QUERIES = load_queries("shortlist.talent", "headline.sql")


@dataclass(frozen=True)
class AppendFacts:
    age_seconds: float
    first_from_backfill: bool
    reached_target: bool


async def appended_result_facts(
    conn: AsyncConn, search_id: uuid.UUID, rank: int
) -> AppendFacts | None:
    cur = await conn.execute(
        QUERIES["appended_result_facts"], {"search_id": search_id, "rank": rank}
    )
    row = await cur.fetchone()
    if row is None:
        return None
    return AppendFacts(
        float(row["age_seconds"]), bool(row["first_from_backfill"]), bool(row["reached_target"])
    )


def observe_committed(facts: AppendFacts | None) -> None:
    if facts is None:
        return
    if facts.first_from_backfill:
        metrics.BACKFILL_TIME_TO_FIRST_RESULT.observe(facts.age_seconds)
    if facts.reached_target:
        metrics.BACKFILL_REACHED_TARGET.inc()


def observe_backfill_started() -> None:
    metrics.BACKFILL_SEARCHES.inc()
