"""The long-lived things one process shares: settings, the pool, the notification listener,
the embedder and the external-source clients. Built once per process by ``open_services``
and handed to the API, the workers and the CLI."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shortlist.config import Settings
from shortlist.db.pool import open_async_pool
from shortlist.db.types import AsyncPool
from shortlist.queue.notify import Notifier

if TYPE_CHECKING:
    from shortlist.embedding.base import Embedder


@dataclass
class Services:
    settings: Settings
    database_url: str
    pool: AsyncPool
    notifier: Notifier
    embedder: Embedder
    # external-source clients, created lazily by the talent pipeline (shortlist.sources)
    extras: dict[str, Any] = field(default_factory=dict)


@contextlib.asynccontextmanager
async def open_services(
    settings: Settings,
    database_url: str,
    *,
    embedder: Embedder | None = None,
    pool_max: int | None = None,
) -> AsyncIterator[Services]:
    if embedder is None:
        from shortlist.embedding.factory import make_embedder

        embedder = make_embedder(settings)
    pool = await open_async_pool(
        database_url,
        min_size=min(settings.db_pool_min, pool_max or settings.db_pool_max),
        max_size=pool_max or settings.db_pool_max,
    )
    notifier = Notifier(database_url)
    notifier.start()
    services = Services(settings, database_url, pool, notifier, embedder)
    try:
        yield services
    finally:
        for extra in services.extras.values():
            close = getattr(extra, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()
        embedder_close = getattr(services.embedder, "aclose", None)
        if embedder_close is not None:
            with contextlib.suppress(Exception):
                await embedder_close()
        await notifier.stop()
        await pool.close()
