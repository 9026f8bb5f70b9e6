"""Test harness: one embedded PostgreSQL per test session, a migrated template database, and a
fresh database cloned from it (``CREATE DATABASE … TEMPLATE``) for every test that touches SQL.
No state is shared between tests."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from shortlist.config import get_settings
from shortlist.db.embedded import EmbeddedServer
from shortlist.db.migrate import migrate
from shortlist.db.pool import open_async_pool
from shortlist.db.types import AsyncPool

# No network but loopback, and never a model download.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

TEMPLATE_DB = "shortlist_template"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    root = Path(tempfile.mkdtemp(prefix="shortlist-test-pg-"))
    os.chmod(root, 0o755)
    server = EmbeddedServer(root, delete_on_close=True)
    try:
        yield server
    finally:
        server.close()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def template_url(pg_server: Any) -> str:
    admin = pg_server.url()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {TEMPLATE_DB}")
        conn.execute(f"CREATE DATABASE {TEMPLATE_DB}")
    url = pg_server.url(TEMPLATE_DB)
    migrate(url)
    return url


@pytest.fixture
def db_url(pg_server: Any, template_url: str) -> Iterator[str]:
    """A fresh, migrated database owned by this test alone."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    admin = pg_server.url()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE_DB}")
    try:
        yield pg_server.url(name)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
async def pool(db_url: str) -> AsyncIterator[AsyncPool]:
    p = await open_async_pool(db_url, min_size=1, max_size=8)
    try:
        yield p
    finally:
        await p.close()


@pytest.fixture
def cli_env(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``shortlist`` commands invoked in-process run against this test's database."""
    monkeypatch.setenv("SHORTLIST_DATABASE_URL", db_url)
    monkeypatch.setenv("SHORTLIST_LOG_LEVEL", "WARNING")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()
