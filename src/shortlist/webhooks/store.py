"""Endpoints and the events written for them: every statement of ``queries.sql`` but the
sender's. Each function runs on the caller's connection, in the caller's transaction; the API
makes that transaction act for the caller's organisation (``shortlist.accounts.scope``), so
row-level security (migration 0035) keeps each organisation to its own endpoints."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn, AsyncPool
from shortlist.webhooks.schedule import ROTATION_OVERLAP
from shortlist.webhooks.secrets import secret_box
from shortlist.webhooks.signing import new_msg_id, new_secret

log = logging.getLogger(__name__)

_SQL = load_queries("shortlist.webhooks")

JOB_PUBLISHED = "job.published"
"""A listing of the organisation is open and searchable: embedded, and nobody's duplicate."""
ALERT_MATCHED = "alert.matched"
"""A saved search of the organisation matched something new (written by the alerts' matcher)."""
EVENT_TYPES = (JOB_PUBLISHED, ALERT_MATCHED)
MAX_ENDPOINTS = 20
"""Endpoints per organisation (each event is sent to each)."""


@dataclass(frozen=True)
class NewEndpoint:
    id: int
    secret: str
    """Shown once: the organisation verifies signatures with it."""


async def create_endpoint(
    conn: AsyncConn,
    org_id: int,
    user_id: int | None,
    url: str,
    events: Sequence[str],
    *,
    secret_keys: str = "",
) -> NewEndpoint | None:
    """A new endpoint with a new secret, stored encrypted (``secret_keys``:
    ``SHORTLIST_WEBHOOK_SECRET_KEYS``); None when the organisation has its
    :data:`MAX_ENDPOINTS` already."""
    cur = await conn.execute(_SQL["count_endpoints"], {"org_id": org_id})
    row = await cur.fetchone()
    if row is not None and int(row["n"]) >= MAX_ENDPOINTS:
        return None
    secret = new_secret()
    box = await secret_box(conn, secret_keys)
    cur = await conn.execute(
        _SQL["insert_endpoint"],
        {
            "org_id": org_id,
            "url": url,
            "events": list(dict.fromkeys(events)),
            "secret": box.seal(secret),
            "user_id": user_id,
        },
    )
    row = await cur.fetchone()
    assert row is not None
    return NewEndpoint(int(row["id"]), secret)


async def list_endpoints(conn: AsyncConn) -> list[dict[str, Any]]:
    """The endpoints the transaction may see, never their secrets."""
    cur = await conn.execute(_SQL["list_endpoints"])
    return [
        {
            "id": r["id"],
            "organisationId": r["org_id"],
            "url": r["url"],
            "events": list(r["events"]),
            "status": r["status"],
            "disabledReason": r["disabled_reason"],
            "disabledAt": _iso(r["disabled_at"]),
            "failingSince": _iso(r["failing_since"]),
            "pausedUntil": _iso(r["paused_until"]),
            "rotationEndsAt": _iso(r["rotation_ends_at"]),
            "createdAt": _iso(r["created_at"]),
            "deliveries": {k: int(r[k]) for k in ("pending", "delivered", "failed", "cancelled")},
        }
        for r in await cur.fetchall()
    ]


async def delete_endpoint(conn: AsyncConn, endpoint_id: int) -> bool:
    cur = await conn.execute(_SQL["delete_endpoint"], {"id": endpoint_id})
    return await cur.fetchone() is not None


async def enable_endpoint(conn: AsyncConn, endpoint_id: int) -> dict[str, Any] | None:
    """Enable an endpoint (a disabled one, or an enabled one whose failures are forgiven): its
    failure window starts afresh, so 5 more days of failures disable it again. Returns it as
    :func:`list_endpoints` shows it; None: no such endpoint here. What its disable cancelled
    stays cancelled (the receiver reads what it missed from the API)."""
    cur = await conn.execute(_SQL["enable_endpoint"], {"id": endpoint_id})
    if await cur.fetchone() is None:
        return None
    return next(e for e in await list_endpoints(conn) if e["id"] == endpoint_id)


async def disable_endpoint(conn: AsyncConn, endpoint_id: int, reason: str) -> int | None:
    """Disable an endpoint (an operator's ``shortlist webhooks disable``); its pending
    deliveries are cancelled. Returns how many were; None: no such endpoint."""
    cur = await conn.execute(_SQL["endpoint_exists"], {"id": endpoint_id})
    if await cur.fetchone() is None:
        return None
    cur = await conn.execute(
        _SQL["disable_endpoint"], {"id": endpoint_id, "reason": reason, "ahead": 0.0}
    )
    return len(await cur.fetchall())


async def rotate_secret(
    conn: AsyncConn, endpoint_id: int, *, secret_keys: str = ""
) -> NewEndpoint | None:
    """A new secret for the endpoint, stored encrypted (None: no such endpoint here); the old
    one keeps signing beside it for :data:`ROTATION_OVERLAP`, so a receiver can switch without
    losing a message."""
    secret = new_secret()
    box = await secret_box(conn, secret_keys)
    cur = await conn.execute(
        _SQL["rotate_secret"],
        {"id": endpoint_id, "secret": box.seal(secret), "overlap": ROTATION_OVERLAP},
    )
    return NewEndpoint(endpoint_id, secret) if await cur.fetchone() is not None else None


def message_body(event_type: str, payload: Mapping[str, Any], at: datetime | None = None) -> str:
    """The body every endpoint receives, as the spec's payload structure has it: ``type``,
    ``timestamp`` (when the event happened) and ``data``; compact JSON, signed as it is."""
    occurred = (at or datetime.now(UTC)).astimezone(UTC).isoformat().replace("+00:00", "Z")
    return json.dumps(
        {"type": event_type, "timestamp": occurred, "data": payload},
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )


async def enqueue(
    conn: AsyncConn,
    organisation_id: int,
    event_type: str,
    payload: Mapping[str, Any],
    *,
    subject: str | None = None,
    saved_search_id: UUID | None = None,
) -> int:
    """Write ``event_type`` with ``payload`` (its ``data``) for delivery to every enabled
    endpoint of ``organisation_id`` subscribed to it, in the caller's transaction: the event
    is sent if and only if that transaction commits. Returns the deliveries written (0 when no
    endpoint takes the event).

    ``subject`` names what the event is about; an event of the same type and subject for the
    organisation is written once, ever (a second call writes nothing and returns 0), so a
    caller that may run twice for one thing (a retried batch, a re-embedded listing) names it.
    ``saved_search_id``: the saved job search an ``alert.matched`` is of; ending the search
    cancels its pending deliveries (``shortlist.alerts.store.end``).

    The alerts' matcher calls it for a saved search's new match, in the transaction that
    records the match::

        await enqueue(conn, org_id, ALERT_MATCHED,
                      {"alertId": ..., "kind": "job" | "candidate", "item": {...}},
                      subject=f"{alert_id}:{item_id}")

    Keep ``payload`` small and free of contact details (the spec recommends thin payloads:
    the receiver reads the rest from the API, with its own key)."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown webhook event type {event_type!r}")
    cur = await conn.execute(
        _SQL["enqueue"],
        {
            "org_id": organisation_id,
            "event_type": event_type,
            "msg_id": new_msg_id(),
            "subject": subject,
            "body": message_body(event_type, payload),
            "saved_search_id": saved_search_id,
        },
    )
    return len(await cur.fetchall())


async def publish_listings(conn: AsyncConn, ids: Sequence[UUID]) -> int:
    """``job.published`` for each of these just-embedded listings that is open and listed, of an
    organisation whose endpoint takes it, once per listing (an edit that re-embeds it sends
    nothing more); in the indexer's transaction. Returns the deliveries written."""
    if not ids:
        return 0
    cur = await conn.execute(_SQL["publishable_listings"], {"ids": list(ids)})
    written = 0
    for r in await cur.fetchall():
        written += await enqueue(
            conn,
            int(r["org_id"]),
            JOB_PUBLISHED,
            {
                "id": str(r["id"]),
                "slug": r["detail_page_slug"],
                "title": r["job_title"],
                "company": r["company_name"],
                "location": r["city_location"],
                "workMode": r["work_mode"],
                "salaryMinK": r["salary_min_ks"],
                "salaryMaxK": r["salary_max_ks"],
                "currency": r["currency_code"],
                "sourceUrl": r["source_url"],
                "postedAt": _iso(r["created_at"]),
            },
            subject=str(r["id"]),
        )
    return written


async def publish_job_matches(
    conn: AsyncConn, listings: Sequence[UUID], searches: Sequence[UUID]
) -> int:
    """``alert.matched`` (``kind: job``) for each match the alerts' matcher just wrote, in its
    transaction, of ``listings`` to ``searches`` saved for an organisation's webhooks; once per
    (saved search, listing). Returns the deliveries written."""
    if not listings or not searches:
        return 0
    cur = await conn.execute(
        _SQL["job_alert_matches"], {"listings": list(listings), "searches": list(searches)}
    )
    written = 0
    for r in await cur.fetchall():
        written += await enqueue(
            conn,
            int(r["org_id"]),
            ALERT_MATCHED,
            {
                "alertId": str(r["search_id"]),
                "kind": "job",
                "item": {
                    "id": str(r["id"]),
                    "slug": r["detail_page_slug"],
                    "title": r["job_title"],
                    "company": r["company_name"],
                    "location": r["city_location"],
                    "workMode": r["work_mode"],
                    "score": round(float(r["score"]), 4),
                },
            },
            subject=f"job:{r['search_id']}:{r['id']}",
            saved_search_id=r["search_id"],
        )
    return written


async def delivery_counts(conn: AsyncConn) -> dict[str, int]:
    """Deliveries by status, every status (zeros included)."""
    cur = await conn.execute(_SQL["delivery_counts"])
    return {str(r["status"]): int(r["n"]) for r in await cur.fetchall()}


PURGE_BATCH = 1000
"""Deliveries one purge transaction deletes at most."""


async def purge_settled_deliveries(pool: AsyncPool, retention_days: float) -> int:
    """Delete the deliveries settled (delivered, failed, cancelled) and made more than
    ``retention_days`` ago (0: keep forever), a batch per transaction until none is left, and
    their messages once no delivery holds them (one naming a subject keeps its row, its body
    emptied: an event of a subject is written once ever). Returns the deliveries deleted."""
    if retention_days <= 0:
        return 0
    purged = 0
    while True:
        async with pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                _SQL["purge_settled_deliveries"],
                {"older_than": retention_days * 86400.0, "limit": PURGE_BATCH},
            )
            row = await cur.fetchone()
            assert row is not None
            deleted = int(row["deleted"])
            if deleted:
                await conn.execute(_SQL["purge_spent_messages"], {"ids": list(row["messages"])})
        purged += deleted
        if deleted < PURGE_BATCH:
            break
    if purged:
        log.info("webhooks: purged %d settled deliveries past retention", purged)
    return purged


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()
