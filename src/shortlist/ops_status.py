"""What an operator asks of the queues: ``shortlist status`` (and the web /status page) and
``shortlist reindex``.

Everything is read from the database, so the answer is right whichever processes did the work.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, LiteralString

from psycopg import sql

from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn
from shortlist.errors import BadInput

_QUERIES = load_queries("shortlist", "ops_status.sql")

CORPORA: tuple[LiteralString, ...] = ("job_listings", "candidates")
"""The embedded corpus tables, as named in the report and accepted by :func:`reindex`."""
FAILURES_SHOWN = 10
RUNNING_SEARCHES_SHOWN = 50

# Free text (a recruiter's query, a provider's error quoting a profile) may hold e-mail
# addresses; they never leave the database through the status report or the indexer's logs
# (which end up in terminals, log stores and screenshots).
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def redact_emails(text: str) -> str:
    """``text`` with anything shaped like an e-mail address replaced by ``[e-mail]``."""
    return _EMAIL.sub("[e-mail]", text)


def _table_query(name: str, table: LiteralString) -> sql.Composed:
    return sql.SQL(_QUERIES[name]).format(table=sql.Identifier(table))


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


async def collect_status(conn: AsyncConn) -> dict[str, Any]:
    """A JSON-ready snapshot of every queue (plain values: ids and timestamps as strings)::

    {
      "generated_at": ISO-8601,
      "corpora": {                      # "job_listings" and "candidates"
        "job_listings": {
          "total": int,
          "by_status": {"pending": int, "embedded": int, "failed": int},
          "claimed": int,               # held by an indexer right now (live lease)
          "reembed_due": int,           # embedded, but edited since (updated_at > embedded_at)
          "failures": [                 # the latest FAILURES_SHOWN, newest first
            {"id", "label", "error", "attempts", "failed_at"}
          ]
        },
        "candidates": {...}
      },
      "search_candidates": {"queued": int, "running": int, ..., "failed_permanent": int},
      "searches": {"running": int, "complete": int, "stale": int},
      "running_searches": [             # oldest first; never an owner or e-mail address
        {"id", "query", "result_count", "target_count", "created_at", "last_progress_at"}
      ]
    }
    """
    corpora: dict[str, Any] = {}
    for table, failures_query in (
        ("job_listings", "listing_failures"),
        ("candidates", "candidate_failures"),
    ):
        cur = await conn.execute(_table_query("embedding_counts", table))
        counts = await cur.fetchall()
        cur = await conn.execute(_QUERIES[failures_query], {"limit": FAILURES_SHOWN})
        failures = await cur.fetchall()
        corpora[table] = {
            "total": sum(int(r["n"]) for r in counts),
            "by_status": {r["status"]: int(r["n"]) for r in counts},
            "claimed": sum(int(r["claimed"]) for r in counts),
            "reembed_due": sum(int(r["reembed_due"]) for r in counts),
            "failures": [
                {
                    "id": f["id"],
                    "label": f["label"],
                    "error": redact_emails(f["error"]),
                    "attempts": f["attempts"],
                    "failed_at": _iso(f["failed_at"]),
                }
                for f in failures
            ],
        }
    cur = await conn.execute(_QUERIES["search_candidate_counts"])
    search_candidates = {r["status"]: int(r["n"]) for r in await cur.fetchall()}
    cur = await conn.execute(_QUERIES["search_counts"])
    searches = {r["status"]: int(r["n"]) for r in await cur.fetchall()}
    cur = await conn.execute(_QUERIES["running_searches"], {"limit": RUNNING_SEARCHES_SHOWN})
    running = [
        {
            "id": r["id"],
            "query": redact_emails(r["query"]),
            "result_count": r["result_count"],
            "target_count": r["target_count"],
            "created_at": _iso(r["created_at"]),
            "last_progress_at": _iso(r["last_progress_at"]),
        }
        for r in await cur.fetchall()
    ]
    return {
        "generated_at": datetime.now(UTC).isoformat(),
        "corpora": corpora,
        "search_candidates": search_candidates,
        "searches": searches,
        "running_searches": running,
    }


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

    * ``all_rows``: every row (e.g. after changing the model), forcing a real model call;
    * ``failed``: failed rows back to pending, error and attempt count cleared;
    * neither: embedded rows whose vector was not computed from their current text.

    ``table`` limits it to one of :data:`CORPORA` (default: both). A running indexer notices
    at once: the tables' triggers NOTIFY it when rows become pending.
    """
    name = "reindex_all" if all_rows else "reindex_failed" if failed else "reindex_stale"
    marked = 0
    async with conn.transaction():
        for t in _tables(table):
            cur = await conn.execute(_table_query(name, t))
            marked += cur.rowcount
    return marked
