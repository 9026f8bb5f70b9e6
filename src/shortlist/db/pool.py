"""Connection pools (psycopg 3) with pgvector types registered on every connection."""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from pgvector.psycopg.vector import register_vector_info
from psycopg.rows import dict_row
from psycopg.types import TypeInfo
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from shortlist.db import vector_search
from shortlist.db.types import AsyncConn, AsyncPool, Row, SyncConn
from shortlist.fair import FairSlots

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


async def _reset_returned(conn: AsyncConn) -> None:
    """The pool's ``reset``: every connection goes back transactional (see
    :func:`single_statement`), and its return time is noted for :func:`_check_if_idle`. The
    pool hands it over idle (no transaction), so switching autocommit costs no round trip; if
    this raises, the pool discards the connection."""
    if conn.autocommit:
        await conn.set_autocommit(False)
    _returned_at[conn] = time.monotonic()


async def _check_if_idle(conn: AsyncConn) -> None:
    returned = _returned_at.get(conn)
    if returned is not None and time.monotonic() - returned < PING_IF_IDLE_FOR:
        return
    await AsyncConnectionPool.check_connection(conn)


# Session defaults of every pooled connection, set once when it opens (no round trip per
# query): the HNSW candidate list (by the size of the largest HNSW-indexed table then; a pooled
# connection lives at most psycopg_pool's max_lifetime, an hour), the IVFFlat probes and the
# iterative scans of shortlist.db.vector_search, so a filtered query still fills its LIMIT
# instead of filtering one candidate list and coming back short. A query that needs a longer
# list raises hnsw.ef_search with SET LOCAL. Session settings, like LISTEN, need session pooling
# if a pooler sits in front of PostgreSQL.
HNSW_EF_SEARCH = vector_search.EF_SEARCH
IVFFLAT_PROBES = vector_search.IVFFLAT_PROBES
IVFFLAT_MAX_PROBES = vector_search.IVFFLAT_MAX_PROBES
SESSION_SETTINGS = (
    "SELECT set_config('hnsw.ef_search', %s, false),"
    " set_config('hnsw.iterative_scan', %s, false),"
    " set_config('ivfflat.probes', %s, false),"
    " set_config('ivfflat.max_probes', %s, false),"
    " set_config('ivfflat.iterative_scan', %s, false)"
)


# The rows of the largest table with an HNSW index (the statistics' count, or the live rows
# the activity counters have when a bulk load was not analysed yet): a table of the product's
# or of a model space's migration, the listings or the candidates.
HNSW_TABLE_ROWS = """
SELECT coalesce(max(greatest(t.reltuples, pg_stat_get_live_tuples(t.oid))), 0) AS n
  FROM pg_index AS i
  JOIN pg_class AS ix ON ix.oid = i.indexrelid
  JOIN pg_am AS am ON am.oid = ix.relam AND am.amname = 'hnsw'
  JOIN pg_class AS t ON t.oid = i.indrelid
"""


def session_values(hnsw_rows: float = float("inf")) -> tuple[str, ...]:
    """The values of :data:`SESSION_SETTINGS` (read when a connection opens), for a database
    whose largest HNSW-indexed table has ``hnsw_rows`` rows (the HNSW candidate list:
    ``vector_search.ef_search_for``)."""
    return (
        str(vector_search.ef_search_for(hnsw_rows, HNSW_EF_SEARCH)),
        vector_search.ITERATIVE_SCAN,
        str(IVFFLAT_PROBES),
        str(IVFFLAT_MAX_PROBES),
        vector_search.ITERATIVE_SCAN,
    )


# What a new connection needs to know, in one statement: the ``vector`` type (resolved on the
# search path, as psycopg's TypeInfo.fetch does) for pgvector's adapters, and the rows that size
# the HNSW candidate list. pgvector's ``register_vector_async`` fetches four types (vector, bit,
# halfvec, sparsevec), each in a transaction of its own: about a dozen round trips. Only
# ``vector`` crosses the wire here (halfvec is a cast inside the SQL). Measured on loopback, a
# new pooled connection took 17 ms and 7 ms of the client's CPU before, 12 ms and 3 ms after;
# over a network each round trip saved is one more latency (tests/integration/test_db.py checks
# the adapters, the settings and the connection's state).
CONNECTION_FACTS = f"""
SELECT t.oid, t.typarray AS array_oid, t.oid::regtype::text AS regtype, t.typdelim AS delimiter,
       ({HNSW_TABLE_ROWS}) AS hnsw_rows
  FROM pg_type AS t
 WHERE t.oid = to_regtype('vector')
"""


def _register(
    conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any], facts: Row | None
) -> float:
    """pgvector's adapters on ``conn`` from :data:`CONNECTION_FACTS`; the HNSW rows."""
    if facts is None:
        raise psycopg.ProgrammingError("vector type not found in the database (pgvector)")
    info = TypeInfo(
        "vector",
        facts["oid"],
        facts["array_oid"],
        regtype=facts["regtype"],
        delimiter=facts["delimiter"],
    )
    register_vector_info(conn, info)
    return float(facts["hnsw_rows"])


async def configure_session(conn: psycopg.AsyncConnection[Any]) -> None:
    """A new connection's vector adapters and session settings (the pool's ``configure``; the
    benchmarks' own connections too), in two round trips outside any transaction: the facts,
    then the settings. The connection must be idle (a new one is), so switching autocommit
    costs no round trip; it is left as it came, whatever its row factory."""
    was = conn.autocommit
    await conn.set_autocommit(True)
    try:
        cur = conn.cursor(row_factory=dict_row)
        facts = await (await cur.execute(CONNECTION_FACTS)).fetchone()
        await conn.execute(SESSION_SETTINGS, session_values(_register(conn, facts)))
    finally:
        await conn.set_autocommit(was)


async def open_async_pool(
    url: str,
    *,
    min_size: int = 2,
    max_size: int = 10,
    name: str = "shortlist",
    wait: bool = True,
    statement_timeout: float = 0.0,
) -> AsyncPool:
    """An async pool whose idle connections are checked before use, so a restarted database is
    reconnected transparently (the pool retries connecting with a short backoff, see
    ``RECONNECT_WINDOW``; waiting callers get a connection as soon as one can be made).
    ``wait=False``: return at once and connect in the background (a replica that may be down).
    ``statement_timeout`` (seconds, 0: none): no statement on these connections runs longer
    (PostgreSQL cancels it: ``QueryCanceled``, which the API answers 503)."""
    kwargs: dict[str, object] = {"row_factory": dict_row, "autocommit": False}
    if statement_timeout > 0:
        # A startup option (libpq "options"), so it costs no round trip and holds for the whole
        # session; a statement that needs longer sets its own with SET LOCAL.
        kwargs["options"] = f"-c statement_timeout={max(1, round(statement_timeout * 1000))}"
    pool: AsyncPool = AsyncConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        name=name,
        open=False,
        connection_class=psycopg.AsyncConnection[Row],
        configure=configure_session,
        check=_check_if_idle,
        reset=_reset_returned,
        kwargs=kwargs,
        reconnect_timeout=RECONNECT_WINDOW,
        timeout=CONNECTION_WAIT,
    )
    await pool.open(wait=wait, timeout=30)
    return pool


class PoolShare:
    """At most ``size`` of ``pool``'s connections, for one kind of work that anyone outside
    can make plentiful (the e-mail intake: SMTP sessions and ``POST /api/jobs/email``), shared
    fairly between its keys (companies, :class:`shortlist.fair.FairSlots`). A flood of it waits
    for its own turns — the rest of the pool stays free for searches, probes and sign-ins, and
    one company's stalled writes leave a turn to another's. A caller waits at most
    :data:`CONNECTION_WAIT` for a turn, then ``PoolTimeout``, as it would for the pool's own
    connections (the API answers 503, the SMTP intake 451)."""

    def __init__(self, pool: AsyncPool, size: int, name: str) -> None:
        self.pool = pool
        self.size = size
        self.name = name
        self.in_use = 0
        self.most_in_use = 0
        """The most connections the share held at once (tests read it)."""
        self._turns = FairSlots(size)

    @asynccontextmanager
    async def connection(self, key: str = "") -> AsyncIterator[AsyncConn]:
        try:
            async with asyncio.timeout(CONNECTION_WAIT):
                await self._turns.acquire(key)
        except TimeoutError:
            raise PoolTimeout(
                f"{self.name}: no connection of its {self.size} free after {CONNECTION_WAIT:g} s"
            ) from None
        self.in_use += 1
        self.most_in_use = max(self.most_in_use, self.in_use)
        try:
            async with self.pool.connection() as conn:
                yield conn
        finally:
            self.in_use -= 1
            self._turns.release(key)


@asynccontextmanager
async def single_statement(pool: AsyncPool) -> AsyncIterator[AsyncConn]:
    """A pooled connection in autocommit mode, for work that is one SQL statement.

    A statement is its own transaction either way, but on a transactional connection psycopg
    wraps it in ``BEGIN`` … ``COMMIT``: three round trips instead of one. The queue's claims,
    heartbeats and releases are single statements run thousands of times a second under load;
    in autocommit they cost a third (bench/bench_queue.py measures the difference). Never run
    two statements that must commit together on it. The connection is switched back before
    the pool lends it again (``_reset_returned``).
    """
    async with pool.connection() as conn:
        await conn.set_autocommit(True)
        yield conn


def connect(url: str, *, autocommit: bool = False) -> SyncConn:
    """A single sync connection (pgvector registered) for CLI commands and tests."""
    conn = psycopg.connect(url, row_factory=dict_row, autocommit=True)
    try:
        _register(conn, conn.execute(CONNECTION_FACTS).fetchone())
        conn.autocommit = autocommit
    except BaseException:
        conn.close()
        raise
    return conn
