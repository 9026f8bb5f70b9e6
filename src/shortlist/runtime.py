"""Process orchestration for ``shortlist serve`` and ``shortlist worker``.

One asyncio loop holds the HTTP server(s), the queue workers and, on the embedded default,
the talent-API simulator. SIGINT/SIGTERM set one stop event; shutdown then runs in order:
stop accepting requests → let workers finish the work they started (bounded by
``SHORTLIST_SHUTDOWN_GRACE``) → stop the simulator → close the pool → release the embedded
PostgreSQL. Work that has started is never cut in half (see ``shortlist.queue.worker``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import uvicorn

from shortlist.config import Settings
from shortlist.db.embedded import embedded_url, start_embedded
from shortlist.db.migrate import migrate
from shortlist.queue.worker import GRACE_OVER
from shortlist.services import Services

log = logging.getLogger(__name__)

EMBEDDED_DATABASE = "shortlist"
Runner = Callable[[asyncio.Event], Coroutine[Any, Any, None]]
WORKER_KINDS = ("indexer", "backfill", "reaper")


@dataclass
class Database:
    url: str
    embedded: Any | None = None

    def close(self) -> None:
        if self.embedded is not None:
            self.embedded.cleanup()
            self.embedded = None


def open_database(settings: Settings) -> Database:
    """The configured PostgreSQL, or the embedded one in the data dir (started on demand)."""
    if settings.database_url:
        return Database(settings.database_url)
    server = start_embedded(settings.data_dir)
    admin = embedded_url(server)
    with psycopg.connect(admin, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (EMBEDDED_DATABASE,)
        ).fetchone()
        if not exists:
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                conn.execute(f"CREATE DATABASE {EMBEDDED_DATABASE}")
    return Database(embedded_url(server, EMBEDDED_DATABASE), server)


@contextlib.contextmanager
def prepared_database(settings: Settings) -> Iterator[Database]:
    db = open_database(settings)
    try:
        migrate(db.url)
        yield db
    finally:
        db.close()


def install_stop_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)


class QuietServer(uvicorn.Server):
    """A uvicorn server that leaves signals to us: one stop event governs the whole process."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def worker_runners(services: Services, only: set[str]) -> list[Runner]:
    """The worker coroutines of this process, by kind."""
    runners: list[Runner] = []
    if "indexer" in only:
        from shortlist.listings.indexer import build_indexer_workers

        runners.extend(w.run for w in build_indexer_workers(services))
    if "backfill" in only:
        from shortlist.talent.workers import build_backfill_workers

        runners.extend(w.run for w in build_backfill_workers(services))
    if "reaper" in only:
        from shortlist.talent.reaper import run_reaper

        runners.append(lambda stop: run_reaper(services, stop))
    return runners


async def run_until_stopped(
    runners: list[Runner],
    stop: asyncio.Event,
    grace: float,
) -> None:
    """Run worker coroutines until ``stop``; give them ``grace`` seconds to drain."""
    tasks = [asyncio.create_task(r(stop)) for r in runners]
    if not tasks:
        await stop.wait()
        return
    stop_wait = asyncio.create_task(stop.wait())
    await asyncio.wait([*tasks, stop_wait], return_when=asyncio.FIRST_COMPLETED)
    for t in tasks:
        if t.done() and not t.cancelled() and t.exception() is not None:
            log.error("a worker died", exc_info=t.exception())
    stop.set()
    _done, still = await asyncio.wait(tasks, timeout=grace)
    if still:
        log.warning("%d workers did not finish within %.0fs; cancelling", len(still), grace)
        for t in still:
            # Cancels the batches they still run (they roll back and release their items).
            t.cancel(GRACE_OVER)
        await asyncio.wait(still)
    stop_wait.cancel()
