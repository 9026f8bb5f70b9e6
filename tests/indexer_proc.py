"""One indexer worker in its own OS process, with the ``FakeEmbedder`` (for
``tests/e2e/test_indexer_process.py``)::

    python -m tests.indexer_proc DB_URL OUT_FILE

Touches ``OUT_FILE.ready`` once its worker runs, appends every batch it sends to the model to
``OUT_FILE`` as one JSON line, and on SIGTERM finishes the batch in flight and exits 0.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TextIO

from shortlist.db.pool import open_async_pool
from shortlist.indexer import LISTINGS, EmbeddingQueue
from shortlist.queue import QueueWorker, WorkerConfig
from shortlist.runtime import install_stop_signals
from tests.fakes import FakeEmbedder


async def run(url: str, log: TextIO, ready: Path) -> None:
    stop = asyncio.Event()
    install_stop_signals(stop)

    def record(batch: list[str]) -> None:
        log.write(json.dumps(batch) + "\n")
        log.flush()

    pool = await open_async_pool(url, min_size=1, max_size=2)
    try:
        # A little model latency, so the processes' batches overlap in time.
        embedder = FakeEmbedder(delay=0.02, before_return=record)
        worker = QueueWorker(
            EmbeddingQueue(pool, embedder, LISTINGS),
            WorkerConfig(batch_size=25, poll_interval=0.05),
        )
        await asyncio.to_thread(ready.touch)
        await worker.run(stop)
    finally:
        await pool.close()


def main() -> None:
    url, out = sys.argv[1], Path(sys.argv[2])
    with out.open("a", encoding="utf-8") as log:
        asyncio.run(run(url, log, Path(f"{out}.ready")))


if __name__ == "__main__":
    main()
