"""Fixtures for tests of the HTTP API, loaded with ``pytest_plugins = ["tests.api_fixtures"]``
(not imported: pytest registers the module itself).

* ``settings`` — for the per-test database, samples off, rate limit off; override this fixture
  in a test module to change settings.
* ``embedder`` — a ``FakeEmbedder``; ``services``, ``app``, ``client`` (httpx over ASGI, peer
  ``127.0.0.1``) are built on it.
* ``make_token`` — ``await make_token(name, Role.company)`` → a plain API token.
* ``embed_pending`` — ``await embed_pending()`` does what the indexer does, synchronously:
  vectors from the same embedder, status flip in the same transaction; returns the count.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import httpx
import numpy as np
import pytest
from fastapi import FastAPI

from shortlist.api.app import create_app
from shortlist.auth import Role, create_token_async
from shortlist.bootstrap import Services
from shortlist.config import Settings
from shortlist.db.types import AsyncPool
from shortlist.embedding.spaces import Spaces
from shortlist.queue.notify import Notifier
from tests.fakes import FakeEmbedder

# The socket peer ASGITransport reports for every request.
CLIENT_PEER = ("127.0.0.1", 50000)

MakeToken = Callable[..., Awaitable[str]]
EmbedPending = Callable[[], Awaitable[int]]


@pytest.fixture
def settings(db_url: str) -> Settings:
    return Settings(
        database_url=db_url,
        load_sample_data=False,
        search_rate_limit=0,  # off unless a test is about it
        trusted_proxies="",
    )


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


def listing_text(row: dict[str, Any]) -> str:
    """The text the indexer embeds for a listing (``job_listings_text`` in indexer.sql)."""
    return (
        f"{row['job_title']} at {row['company_name']}, {row['city_location']}\n{row['description']}"
    )


_SELECT_PENDING = (
    "SELECT id, job_title, company_name, city_location, description FROM job_listings"
    " WHERE embedding_status = 'pending'"
)
_WRITE_VECTOR = (
    "UPDATE job_listings SET embedding = %s, embedding_status = 'embedded',"
    " embedded_at = now(), embedded_hash = content_hash WHERE id = %s"
)


@pytest.fixture
def embed_pending(pool: AsyncPool, embedder: FakeEmbedder) -> EmbedPending:
    async def embed() -> int:
        async with pool.connection() as conn:
            cur = await conn.execute(_SELECT_PENDING)
            rows = await cur.fetchall()
            if not rows:
                return 0
            vectors = await embedder.embed([listing_text(r) for r in rows])
            params = [
                (np.asarray(v, dtype=np.float32), r["id"])
                for r, v in zip(rows, vectors, strict=True)
            ]
            async with conn.transaction(), conn.cursor() as wcur:
                await wcur.executemany(_WRITE_VECTOR, params)
        return len(rows)

    return embed
