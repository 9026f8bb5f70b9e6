"""Connection pools (psycopg 3) with pgvector types registered on every connection."""

from __future__ import annotations

import logging

import psycopg
from pgvector.psycopg import register_vector, register_vector_async
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from shortlist.db.types import AsyncConn, AsyncPool, Row, SyncConn, SyncPool

log = logging.getLogger(__name__)


async def _configure_async(conn: AsyncConn) -> None:
    await register_vector_async(conn)
    # register_vector_async runs a query; leave the connection idle, not in a transaction.
    await conn.commit()


def _configure_sync(conn: SyncConn) -> None:
    register_vector(conn)
    conn.commit()


async def open_async_pool(
    url: str, *, min_size: int = 2, max_size: int = 10, name: str = "shortlist"
) -> AsyncPool:
    """An async pool whose connections are checked before use, so a restarted database is
    reconnected transparently (the pool retries connecting with its own bounded backoff)."""
    pool: AsyncPool = AsyncConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        name=name,
        open=False,
        connection_class=psycopg.AsyncConnection[Row],
        configure=_configure_async,
        check=AsyncConnectionPool.check_connection,
        kwargs={"row_factory": dict_row, "autocommit": False},
        reconnect_timeout=3600,
    )
    await pool.open(wait=True, timeout=30)
    return pool


def open_sync_pool(url: str, *, min_size: int = 1, max_size: int = 4) -> SyncPool:
    pool: SyncPool = ConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        open=False,
        connection_class=psycopg.Connection[Row],
        configure=_configure_sync,
        check=ConnectionPool.check_connection,
        kwargs={"row_factory": dict_row, "autocommit": False},
    )
    pool.open(wait=True, timeout=30)
    return pool


def connect(url: str, *, autocommit: bool = False) -> SyncConn:
    """A single sync connection (pgvector registered) for CLI commands and tests."""
    conn = psycopg.connect(url, row_factory=dict_row, autocommit=autocommit)
    register_vector(conn)
    if not autocommit:
        conn.commit()
    return conn
