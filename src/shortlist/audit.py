"""The audit log: who saw whose contact details, when, in which search — and who erased whom.

Recorded on every read that hands out e-mail addresses, profile links or names: a page of
``GET /api/results`` (and each batch of an event stream's ``result`` rows), the CSV export, a
search's hidden people, a candidate's detail, a recruiter's shortlist (``GET /api/shortlist``),
the backfill attempts a page or a stream shows (``attempts``: a name and a LinkedIn id each,
named by attempt id); and on every erasure. Read by admins only
(``GET /api/audit``, ``shortlist audit``), filtered by person and by token.

A row names people by candidate id only, never by name or address; after an erasure the id
points at nothing, and the log still says who had seen that person before. Every row names the
user and the organisation acted for (a key's owner, or the signed-in person), and the key used
if any.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Literal

from shortlist.auth import Principal
from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn

QUERIES = load_queries("shortlist", "audit.sql")

Action = Literal[
    "results", "stream", "export", "candidate", "hidden", "forget", "purge", "shortlist", "attempts"
]
MAX_ENTRIES = 1000


async def record(
    conn: AsyncConn,
    who: Principal | None,
    action: Action,
    candidate_ids: Sequence[uuid.UUID | None],
    *,
    search_id: uuid.UUID | None = None,
    actor: str | None = None,
    attempt_ids: Sequence[int] = (),
) -> None:
    """One audit row in the caller's transaction (``who`` None: an operator at the CLI,
    named ``actor``). Nothing is recorded for a read that showed nobody."""
    ids = sorted({i for i in candidate_ids if i is not None}, key=str)
    attempts = sorted(set(attempt_ids))
    if not ids and not attempts and action not in ("forget", "purge"):
        return
    await conn.execute(
        QUERIES["record"],
        {
            "token_id": who.token_id if who else None,
            "token_name": who.name if who else (actor or "cli"),
            "action": action,
            "search_id": search_id,
            "candidate_ids": ids,
            "attempt_ids": attempts,
            "user_id": who.user_id if who else None,
            "org_id": who.org_id if who else None,
        },
    )


async def entries(
    conn: AsyncConn,
    *,
    candidate_id: uuid.UUID | None = None,
    token_id: int | None = None,
    token_name: str | None = None,
    before: int | None = None,
    limit: int = 100,
) -> list[dict[str, Any]]:
    """Audit rows newest first, as JSON-ready dicts."""
    cur = await conn.execute(
        QUERIES["entries"],
        {
            "candidate_id": candidate_id,
            "token_id": token_id,
            "token_name": token_name,
            "before": before,
            "limit": min(limit, MAX_ENTRIES),
        },
    )
    return [
        {
            "id": int(r["id"]),
            "at": r["at"].isoformat(),
            "tokenId": r["token_id"],
            "token": r["token_name"],
            "action": r["action"],
            "searchId": None if r["search_id"] is None else str(r["search_id"]),
            "candidateIds": [str(c) for c in r["candidate_ids"]],
            "attemptIds": [int(a) for a in r["attempt_ids"]],
            "user": r["user_name"],
            "userId": r["user_id"],
            "organisation": r["org_name"],
            "organisationId": r["org_id"],
        }
        for r in await cur.fetchall()
    ]
