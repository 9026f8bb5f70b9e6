"""The vector indexes keep fitting their tables: every ``SHORTLIST_INDEX_RETUNE_INTERVAL``
seconds an indexer process checks them and rebuilds, CONCURRENTLY, one that no longer fits
(an HNSW index on a table that has grown past 500k vectors becomes IVFFlat; IVFFlat lists
follow the row count). Searches use the old index until the new one is valid
(``shortlist.db.vector_index.build_index``); one process at a time, under the migrators' lock
(``shortlist.db.migrate.retune_indexes``). ``shortlist migrate --retune`` does the same at once.
"""

from __future__ import annotations

import asyncio
import logging

from shortlist.db.migrate import retune_indexes
from shortlist.db.vector_index import BuildOverrides
from shortlist.queue.periodic import Periodic, run_periodic

log = logging.getLogger(__name__)


async def keep_indexes_fitting(
    url: str, overrides: BuildOverrides, interval: float, stop: asyncio.Event
) -> None:
    """The loop of an indexer process (``interval`` 0: off)."""
    await run_periodic([retune_job(url, overrides, interval)], stop)


def retune_job(url: str, overrides: BuildOverrides, interval: float) -> Periodic:
    """A check every ``interval`` seconds (0: off), the first after one interval, since every
    start has just run ``shortlist migrate`` (shortlist.queue.periodic)."""

    async def check() -> None:
        built = await asyncio.to_thread(retune_indexes, url, overrides)
        if built:
            log.info("vector indexes retuned to fit their tables: %s", ", ".join(built))

    return Periodic("vector index retune", interval, check, first_after=interval)
