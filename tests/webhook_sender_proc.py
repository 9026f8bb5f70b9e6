"""The webhook sender in its own OS process, for ``tests/e2e/test_webhook_sender_kill.py``::

    python -m tests.webhook_sender_proc DB_URL READY_FILE

The product's queue (``WebhookQueue``) on the queue worker, with a short lease (a killed
sender's deliveries are claimable again within ~2 s) and loopback allowed (the test's receiver).
Touches ``READY_FILE`` once its worker runs; SIGTERM stops it gracefully, SIGKILL does not.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from shortlist.db.pool import open_async_pool
from shortlist.queue import QueueWorker, WorkerConfig
from shortlist.runtime import install_stop_signals
from shortlist.webhooks.sender import SendPolicy, WebhookQueue

LEASE = 2.0


async def run(url: str, ready: Path) -> None:
    stop = asyncio.Event()
    install_stop_signals(stop)
    pool = await open_async_pool(url, min_size=1, max_size=6)
    try:
        worker = QueueWorker(
            WebhookQueue(pool, SendPolicy(timeout=5.0, allow_private=True)),
            WorkerConfig(
                batch_size=1, concurrency=4, poll_interval=0.1, lease=LEASE, heartbeat=0.5
            ),
        )
        await asyncio.to_thread(ready.touch)
        await worker.run(stop)
    finally:
        await pool.close()


def main() -> None:
    asyncio.run(run(sys.argv[1], Path(sys.argv[2])))


if __name__ == "__main__":
    main()
