"""Connection pools (psycopg 3) with pgvector types registered on every connection."""

from __future__ import annotations

import logging
import time
import weakref

import psycopg
from pgvector.psycopg import register_vector, register_vector_async
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from shortlist.db.types import AsyncConn, AsyncPool, Row, SyncConn

log = logging.getLogger(__name__)

# How long a caller waits for a pooled connection. While the database is down no connection can
# be made, and psycopg_pool's default (30 s) would hold every API request that long before a
# PoolTimeout (mapped to 503); a worker's claim fails over to its own back-off sooner, too.
CONNECTION_WAIT = 5.0
# How long one reconnection attempt backs off before psycopg_pool gives up on it. Its delays
# double without a cap (1, 2, 4, 8, 16 s ...), so after a long outage the next try could come
# many seconds after the database is back. Giving up after a few seconds lets the next caller
# start a fresh attempt at once: the pool is back within about two seconds of the database.
RECONNECT_WINDOW = 5.0


# A connection handed back less than this long ago is not pinged again on checkout. The ping is
# a round trip on every checkout, about a quarter of the cost of a queue claim (see bench/); a
# connection that died within this window fails its first statement instead, which every caller
# already treats as a transient error (a worker backs off, the API answers 503), and the pool
# discards it on return.
PING_IF_IDLE_FOR = 2.0
_returned_at: weakref.WeakKeyDictionary[AsyncConn, float] = weakref.WeakKeyDictionary()


async def _mark_returned(conn: AsyncConn) -> None:
    _returned_at[conn] = time.monotonic()


async def _check_if_idle(conn: AsyncConn) -> None:
    returned = _returned_at.get(conn)
    if returned is not None and time.monotonic() - returned < PING_IF_IDLE_FOR:
        return
    await AsyncConnectionPool.check_connection(conn)


async def _configure_async(conn: AsyncConn) -> None:
    await register_vector_async(conn)
    # register_vector_async runs a query; leave the connection idle, not in a transaction.
    await conn.commit()


async def open_async_pool(
    url: str, *, min_size: int = 2, max_size: int = 10, name: str = "shortlist"
) -> AsyncPool:
    """An async pool whose idle connections are checked before use, so a restarted database is
    reconnected transparently (the pool retries connecting with a short backoff, see
    ``RECONNECT_WINDOW``; waiting callers get a connection as soon as one can be made)."""
    pool: AsyncPool = AsyncConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        name=name,
        open=False,
        connection_class=psycopg.AsyncConnection[Row],
        configure=_configure_async,
        check=_check_if_idle,
        reset=_mark_returned,
        kwargs={"row_factory": dict_row, "autocommit": False},
        reconnect_timeout=RECONNECT_WINDOW,
        timeout=CONNECTION_WAIT,
    )
    await pool.open(wait=True, timeout=30)
    return pool


def connect(url: str, *, autocommit: bool = False) -> SyncConn:
    """A single sync connection (pgvector registered) for CLI commands and tests."""
    conn = psycopg.connect(url, row_factory=dict_row, autocommit=autocommit)
    register_vector(conn)
    if not autocommit:
        conn.commit()
    return conn
