"""Fixtures for tests of the HTTP API, imported by ``tests/integration/conftest.py`` and
``tests/e2e/conftest.py``.

* ``settings`` is the one of ``tests/conftest.py`` (changed with ``pytest.mark.settings``).
* ``embedder`` — a ``FakeEmbedder``; ``services``, ``app``, ``client`` (httpx over ASGI, peer
  ``127.0.0.1``) are built on it.
* ``make_token`` — ``await make_token(name, Role.company)`` → a plain API token.
* ``embed_pending`` — ``await embed_pending()`` runs the product's job-listings indexer (its
  queue on the queue worker, with ``embedder``) until no listing is pending; returns how many
  listings it embedded.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import httpx
import pytest
from fastapi import FastAPI

from shortlist.api.app import create_app
from shortlist.auth import Role, create_token_async
from shortlist.bootstrap import Services
from shortlist.config import Settings
from shortlist.db.types import AsyncPool
from shortlist.embedding.spaces import Spaces
from shortlist.indexer import LISTINGS, EmbeddingQueue
from shortlist.queue import QueueWorker, WorkerConfig
from shortlist.queue.notify import Notifier
from tests.fakes import FakeEmbedder
from tests.helpers import wait_for

# The socket peer ASGITransport reports for every request.
CLIENT_PEER = ("127.0.0.1", 50000)

MakeToken = Callable[..., Awaitable[str]]
EmbedPending = Callable[[], Awaitable[int]]


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def services(
    settings: Settings, db_url: str, pool: AsyncPool, embedder: FakeEmbedder
) -> Iterator[Services]:
    # The notifier is never started: API tests need no LISTEN connection.
    services = Services(
        settings=settings,
        database_url=db_url,
        pool=pool,
        notifier=Notifier(db_url),
        spaces=Spaces.of_embedder(pool, embedder),
    )
    yield services
    services.mail_parser.close()  # the e-mail route's parser processes, if it started them


@pytest.fixture
def app(services: Services) -> FastAPI:
    return create_app(services)


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, client=CLIENT_PEER)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        yield c


@pytest.fixture
def make_token(pool: AsyncPool) -> MakeToken:
    """A company token posts as ``company`` (default: its name)."""

    async def make(name: str, role: Role, company: str | None = None) -> str:
        async with pool.connection() as conn:
            _principal, token = await create_token_async(conn, name, role, company)
        return token

    return make


async def _waiting_listings(pool: AsyncPool) -> int:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM job_listings WHERE embedding_status = 'pending'"
        )
        row = await cur.fetchone()
    return int(row["n"]) if row else 0


async def _embedded_listings(pool: AsyncPool) -> int:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM job_listings WHERE embedding_status = 'embedded'"
        )
        row = await cur.fetchone()
    return int(row["n"]) if row else 0


@pytest.fixture
def embed_pending(services: Services) -> EmbedPending:
    async def embed() -> int:
        # The product's job-listings indexer (its queue on the queue worker, with the test's
        # embedder), polling often, until no listing waits for a vector.
        before = await _embedded_listings(services.pool)
        queue = EmbeddingQueue(
            services.pool,
            services.embedder,
            LISTINGS,
            spaces=services.spaces,
            duplicate_distance=services.settings.duplicate_distance,
        )
        config = WorkerConfig(
            batch_size=services.settings.indexer_batch_size,
            poll_interval=0.02,
            backoff_base=0.05,
            backoff_max=0.5,
            grace=5.0,
        )
        stop = asyncio.Event()
        worker = asyncio.create_task(QueueWorker(queue, config).run(stop))
        try:
            # A deadline for the largest corpora of these tests (2,000 listings, ~16 batches).
            await wait_for(
                lambda: _none_waiting(services.pool, worker),
                timeout=180.0,
                message="no listing pending",
            )
        finally:
            stop.set()
            await worker
        return await _embedded_listings(services.pool) - before

    return embed


async def _none_waiting(pool: AsyncPool, worker: asyncio.Task[None]) -> bool:
    if worker.done():
        worker.result()  # the worker's own failure, raised here
    return await _waiting_listings(pool) == 0
