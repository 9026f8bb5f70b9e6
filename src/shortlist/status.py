"""What an operator asks of the queues: ``shortlist status``, the web /status page and the queue
depths of /metrics.

Everything is read from the database, so the answer is right whichever processes did the work.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn, Row
from shortlist.db.vector_index import NO_OVERRIDES, BuildOverrides, index_report
from shortlist.indexer.migration import status as models_status
from shortlist.listings.mail.store import inbound_status
from shortlist.redact import redact_emails

QUERIES = load_queries("shortlist", "status.sql")

FAILURES_SHOWN = 10
RUNNING_SEARCHES_SHOWN = 50
# The embedded corpora and the query listing each one's latest failures.
_CORPUS_FAILURES = {"job_listings": "listing_failures", "candidates": "candidate_failures"}


async def queue_depths(conn: AsyncConn) -> list[Row]:
    """One row per queue table and status: ``queue``, ``status``, ``n``, ``claimed``,
    ``reembed_due`` (every status, zeros included)."""
    cur = await conn.execute(QUERIES["queue_depths"])
    return await cur.fetchall()


async def indexer_pauses(conn: AsyncConn) -> dict[str, Row]:
    """The paused embedding queues by corpus: ``reason``, ``paused_at``."""
    cur = await conn.execute(QUERIES["indexer_pauses"])
    return {str(r["corpus"]): r for r in await cur.fetchall()}


def iso(value: datetime | None) -> str | None:
    """A timestamp as JSON shows it (ISO 8601), or None."""
    return None if value is None else value.isoformat()


async def collect_status(
    conn: AsyncConn, index_build: BuildOverrides = NO_OVERRIDES
) -> dict[str, Any]:
    """A JSON-ready snapshot of every queue (plain values: ids and timestamps as strings)::

    {
      "generated_at": ISO-8601,
      "corpora": {                      # "job_listings" and "candidates"
        "job_listings": {
          "total": int,
          "by_status": {"pending": int, "embedded": int, "failed": int},
          "claimed": int,               # held by an indexer right now (live lease)
          "reembed_due": int,           # embedded, but edited since (updated_at > embedded_at)
          "paused_reason": str | None,  # why the breaker paused its queue; None: running
          "paused_at": ISO-8601 | None,
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
      ],
      "vector_indexes": [               # the active model space's (shortlist.db.vector_index)
        {"table", "name", "method", "lists", "valid", "rows", "bytes", "fits", "planned"}
      ],
      "embedding_models": {             # as `shortlist embeddings status --json`
        "active": {"id", "kind", "model", "url", "dim"},
        "building": None | {"id", "kind", "model", "url", "dim", "coverage": {corpus: 0..1}}
      },
      "inbound_mail": {                 # the e-mail intake's parse queue
        "by_status": {"queued": int, "running": int, "posted": int, "rejected": int,
                      "failed": int},
        "failures": [{"id", "company", "status", "rejected_as", "reason", "attempts", "at"}]
      }
      "webhooks": {                     # shortlist.webhooks: the sender's queue
        "deliveries": {"pending": int, "delivered": int, "failed": int, "cancelled": int},
        "claimed": int,                 # being sent right now (live lease)
        "endpoints": {"enabled": int, "failing": int, "disabled": int}
      },
      "job_sources": [                  # shortlist.listings.sources
        {"id", "spec", "status", "listings_open", "last_crawl_at", "last_success_at",
         "next_crawl_at", "last_error", "last_outcome"}
      ]
    }
    """
    depths: dict[str, list[Row]] = {}
    for row in await queue_depths(conn):
        depths.setdefault(row["queue"], []).append(row)
    pauses = await indexer_pauses(conn)
    corpora: dict[str, Any] = {}
    for table, failures_query in _CORPUS_FAILURES.items():
        counts = depths.get(table, [])
        cur = await conn.execute(QUERIES[failures_query], {"limit": FAILURES_SHOWN})
        failures = await cur.fetchall()
        corpora[table] = {
            "total": sum(int(r["n"]) for r in counts),
            "by_status": {r["status"]: int(r["n"]) for r in counts},
            "claimed": sum(int(r["claimed"]) for r in counts),
            "reembed_due": sum(int(r["reembed_due"]) for r in counts),
            "paused_reason": pauses[table]["reason"] if table in pauses else None,
            "paused_at": iso(pauses[table]["paused_at"]) if table in pauses else None,
            "failures": [
                {
                    "id": f["id"],
                    "label": f["label"],
                    "error": redact_emails(f["error"]),
                    "attempts": f["attempts"],
                    "failed_at": iso(f["failed_at"]),
                }
                for f in failures
            ],
        }
    cur = await conn.execute(QUERIES["running_searches"], {"limit": RUNNING_SEARCHES_SHOWN})
    running = [
        {
            "id": r["id"],
            "query": redact_emails(r["query"]),
            "result_count": r["result_count"],
            "target_count": r["target_count"],
            "created_at": iso(r["created_at"]),
            "last_progress_at": iso(r["last_progress_at"]),
        }
        for r in await cur.fetchall()
    ]
    return {
        "generated_at": datetime.now(UTC).isoformat(),
        "corpora": corpora,
        "search_candidates": {r["status"]: int(r["n"]) for r in depths["search_candidates"]},
        "searches": {r["status"]: int(r["n"]) for r in depths["searches"]},
        "running_searches": running,
        "vector_indexes": await index_report(conn, index_build),
        "embedding_models": await models_status(conn),
        "inbound_mail": await inbound_status(conn),
        "webhooks": await _webhooks(conn, depths.get("webhook_deliveries", [])),
        "job_sources": await _job_sources(conn),
        "alerts": {
            "listings_to_match": sum(int(r["n"]) for r in depths.get("alert_listings", [])),
            "matches": {r["status"]: int(r["n"]) for r in depths.get("alert_matches", [])},
            "digests": {r["status"]: int(r["n"]) for r in depths.get("alert_digests", [])},
        },
    }


PUBLIC_PAUSE_REASON = "the embedder looks misconfigured (details for admins)"


def public_view(report: dict[str, Any]) -> dict[str, Any]:
    """The report without what only an operator should read: row and search ids, search
    queries, raw error texts (a provider's or the embedder's words, which may quote hosts or
    people) and the embedder's URL. Counts, states and timings stay."""
    corpora = {
        table: {
            **c,
            "paused_reason": PUBLIC_PAUSE_REASON if c["paused_reason"] else None,
            "failures": [{**f, "id": None, "error": None} for f in c["failures"]],
        }
        for table, c in report["corpora"].items()
    }
    running = [{**r, "id": None, "query": None} for r in report["running_searches"]]
    models = {
        state: None if m is None else {k: v for k, v in m.items() if k != "url"}
        for state, m in report["embedding_models"].items()
    }
    mail = report["inbound_mail"]
    inbound = {
        **mail,
        # Which company's message failed, and why in words its sender chose: the operator's.
        "failures": [{**f, "id": None, "company": None, "reason": None} for f in mail["failures"]],
    }
    sources = [{**src, "last_error": None} for src in report["job_sources"]]
    return {
        **report,
        "corpora": corpora,
        "running_searches": running,
        "embedding_models": models,
        "inbound_mail": inbound,
        "job_sources": sources,
    }


def spec_shown(spec: str) -> str:
    """A source's spec as a report shows it: a URL without its user, password, query and
    fragment (where a site's credentials or tokens would be); a ``kind:key`` spec as it is.
    ``shortlist sources list`` is where the operator reads the whole spec."""
    parts = urlsplit(spec)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return spec
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


async def _job_sources(conn: AsyncConn) -> list[dict[str, Any]]:
    cur = await conn.execute(QUERIES["job_sources"])
    return [
        {
            "id": r["id"],
            "spec": spec_shown(r["spec"]),
            "status": r["status"],
            "listings_open": int(r["listings_open"]),
            "last_crawl_at": iso(r["last_crawl_at"]),
            "last_success_at": iso(r["last_success_at"]),
            "next_crawl_at": iso(r["next_crawl_at"]),
            "last_error": r["last_error"],
            "last_outcome": r["last_outcome"],
        }
        for r in await cur.fetchall()
    ]


async def _webhooks(conn: AsyncConn, deliveries: list[Row]) -> dict[str, Any]:
    cur = await conn.execute(QUERIES["webhook_endpoints"])
    endpoints = await cur.fetchone()
    return {
        "deliveries": {r["status"]: int(r["n"]) for r in deliveries},
        "claimed": sum(int(r["claimed"]) for r in deliveries),
        "endpoints": {
            k: int(endpoints[k]) if endpoints else 0 for k in ("enabled", "failing", "disabled")
        },
    }
