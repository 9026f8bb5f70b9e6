"""The alert matcher and digest sender in their own OS process, for
``tests/e2e/test_alerts_kill.py``::

    python -m tests.alerts_proc DB_URL RELAY_URL READY_FILE

The product's two queues (``MatchQueue``, ``DigestQueue``) on the queue worker, with a short
lease (a killed process's listings and searches are claimable again within ~2 s). Touches
``READY_FILE`` once its workers run; SIGTERM stops it gracefully, SIGKILL does not.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from shortlist.alerts.digests import DigestQueue
from shortlist.alerts.matcher import MatchQueue
from shortlist.bootstrap import ALERT_MATCH_CONCURRENCY
from shortlist.config import Settings
from shortlist.db.pool import open_async_pool
from shortlist.listings.mail.reply import Relay
from shortlist.queue import LeaseKeeper, QueueWorker, WorkerConfig
from shortlist.runtime import install_stop_signals

LEASE = 2.0


async def run(url: str, relay_url: str, ready: Path) -> None:
    stop = asyncio.Event()
    install_stop_signals(stop)
    settings = Settings(
        database_url=url,
        smtp_relay_url=relay_url,
        public_url="https://board.test",
        mail_domain="board.test",
        alert_retry_base=0.2,
    )
    pool = await open_async_pool(url, min_size=1, max_size=6)
    keeper = LeaseKeeper(pool, every=0.5)
    config = WorkerConfig(poll_interval=0.1, lease=LEASE, heartbeat=0.5, backoff_base=0.1)
    try:
        matcher = QueueWorker(
            MatchQueue(pool, None, min_score=0.8),
            # As the product runs it: two batches in flight.
            WorkerConfig(
                **{**config.__dict__, "batch_size": 4, "concurrency": ALERT_MATCH_CONCURRENCY}
            ),
            keeper=keeper,
        )
        sender = QueueWorker(
            DigestQueue(pool, settings, Relay.from_url(relay_url)),
            WorkerConfig(**{**config.__dict__, "batch_size": 1, "concurrency": 3}),
            keeper=keeper,
        )
        await asyncio.to_thread(ready.touch)
        await asyncio.gather(matcher.run(stop), sender.run(stop))
    finally:
        await pool.close()


def main() -> None:
    asyncio.run(run(sys.argv[1], sys.argv[2], Path(sys.argv[3])))


if __name__ == "__main__":
    main()
