"""``shortlist reindex``: mark embedded corpus rows for the indexer to embed again, and
``--resume`` embedding queues the breaker paused."""

from __future__ import annotations

from collections.abc import Sequence
from typing import LiteralString

from psycopg import sql

from shortlist.db.sql import compose, load_queries
from shortlist.db.types import AsyncConn
from shortlist.embedding.spaces import active_space
from shortlist.errors import BadInput
from shortlist.indexer.breaker import resume

QUERIES = load_queries("shortlist", "reindex.sql")

CORPORA: tuple[LiteralString, ...] = ("job_listings", "candidates")
"""The embedded corpus tables :func:`reindex` accepts."""


def _tables(table: str | None) -> Sequence[LiteralString]:
    if table is None:
        return CORPORA
    for known in CORPORA:
        if table == known:
            return (known,)
    raise BadInput(f"unknown corpus table {table!r} (one of: {', '.join(CORPORA)})", field="table")


async def reindex(
    conn: AsyncConn, *, failed: bool = False, all_rows: bool = False, table: str | None = None
) -> int:
    """Mark rows for re-embedding and return how many were marked.

    Runs in a transaction of its own (committed on return), or in a savepoint when the caller
    already has one open.

    * ``all_rows``: every row (e.g. after changing what text is embedded), forcing a real model
      call (a new model is a migration: ``shortlist embeddings migrate``);
    * ``failed``: failed rows back to pending, error and attempt count cleared;
    * neither: embedded rows whose vector was not computed from their current text.

    ``table`` limits it to one of :data:`CORPORA` (default: both). A running indexer notices
    at once: the tables' triggers NOTIFY it when rows become pending.
    """
    name = "reindex_all" if all_rows else "reindex_failed" if failed else "reindex_stale"
    marked = 0
    async with conn.transaction():
        space = await active_space(conn)
        for t in _tables(table):
            cur = await conn.execute(
                compose(QUERIES[name], **space.parts(), table=sql.Identifier(t))
            )
            marked += cur.rowcount
    return marked


async def resume_paused(conn: AsyncConn, *, table: str | None = None) -> list[str]:
    """Resume the embedding queues the breaker paused (``table``: one of :data:`CORPORA`,
    default both); returns those that were paused. The indexers wake at once."""
    return await resume(conn, _tables(table))
