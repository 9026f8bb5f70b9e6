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

import psycopg

from shortlist.db.migrate import retune_indexes
from shortlist.db.vector_index import BuildOverrides

log = logging.getLogger(__name__)


async def keep_indexes_fitting(
    url: str, overrides: BuildOverrides, interval: float, stop: asyncio.Event
) -> None:
    """The loop of an indexer process (``interval`` 0: off; the first check after one
    interval, since every start has just run ``shortlist migrate``)."""
    from shortlist.queue.worker import wait_any

    if interval <= 0:
        return
    while not stop.is_set():
        await wait_any(stop.wait(), timeout=interval)
        if stop.is_set():
            return
        try:
            built = await asyncio.to_thread(retune_indexes, url, overrides)
        except (psycopg.Error, OSError) as exc:
            log.warning("vector index retune failed, trying again in %.0f s: %s", interval, exc)
            continue
        if built:
            log.info("vector indexes retuned to fit their tables: %s", ", ".join(built))
