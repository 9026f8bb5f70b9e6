"""Rows for the integration tests, written straight into the tables in the state a test needs
(an INSERT fires no transition trigger, so any state can be the starting point)."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from pgvector import Vector

from shortlist.db.types import AsyncConn, Row
from tests.fakes import DIM, hash_embed

WORKER = "w1"
OTHER_WORKER = "w2"
LIVE_LEASE = 60.0
EXPIRED_LEASE = -60.0
FAILED = ("failed_no_email", "failed_transient", "failed_permanent")


def vector(text: str = "python engineer berlin") -> Vector:
    return Vector(hash_embed(text, DIM))


async def one(conn: AsyncConn, query: Any, params: Any = None) -> Row:
    cur = await conn.execute(query, params)
    row = await cur.fetchone()
    assert row is not None, query
    return row


async def insert_token(
    conn: AsyncConn, name: str = "recruiter", company_of: int | None = None
) -> int:
    """A recruiter token (a service account's key in the organisation named ``name``; with
    ``company_of``, another service account in that token's organisation)."""
    digest = hashlib.sha256(uuid.uuid4().bytes).digest()
    if company_of is not None:
        row = await one(
            conn,
            "INSERT INTO api_tokens (name, role, token_hash, user_id, org_id)"
            " SELECT %s, 'recruiter', %s, a.user_id, a.org_id"
            "   FROM api_tokens AS t, organisations AS o,"
            "        service_account_for(%s, 'recruiter', o.name) AS a"
            "  WHERE t.id = %s AND o.id = t.org_id RETURNING id",
            (name, digest, name, company_of),
        )
        return int(row["id"])
    row = await one(
        conn,
        "INSERT INTO api_tokens (name, role, token_hash) VALUES (%s, 'recruiter', %s) RETURNING id",
        (name, digest),
    )
    return int(row["id"])


async def insert_search(
    conn: AsyncConn,
    *,
    owner: int | None = None,
    status: str = "running",
    target: int = 10,
    backfill_started: bool = True,
    idle_seconds: float = 0.0,
    query: str = "python engineer",
) -> uuid.UUID:
    """A search; ``idle_seconds`` puts its last progress that far in the past."""
    owner = owner if owner is not None else await insert_token(conn)
    row = await one(
        conn,
        "INSERT INTO searches (owner_token_id, query, query_embedding, status, target_count,"
        " backfill_started, last_progress_at, finished_at)"
        " VALUES (%(owner)s, %(query)s, %(embedding)s, %(status)s::search_status, %(target)s,"
        " %(started)s,"
        " now() - make_interval(secs => %(idle)s),"
        " CASE WHEN %(status)s::text = 'complete' THEN now() END)"
        " RETURNING id",
        {
            "owner": owner,
            "query": query,
            "embedding": vector(query),
            "status": status,
            "target": target,
            "started": backfill_started,
            "idle": idle_seconds,
        },
    )
    search_id: uuid.UUID = row["id"]
    return search_id


def _lease(status: str, locked_by: str | None, lease: float) -> dict[str, Any]:
    holder = locked_by if locked_by is not None else (WORKER if status == "running" else None)
    return {"locked_by": holder, "lease": lease if holder is not None else None}


async def insert_tier(
    conn: AsyncConn,
    search_id: uuid.UUID,
    tier: str = "strict",
    *,
    status: str = "queued",
    locked_by: str | None = None,
    lease: float = LIVE_LEASE,
    attempts: int = 0,
    not_before_in: float = 0.0,
) -> int:
    """A tier; a running one is leased to ``locked_by`` (default WORKER) for ``lease`` seconds
    (negative: already expired), a failed one carries an error."""
    row = await one(
        conn,
        "INSERT INTO search_tiers (search_id, tier, status, attempts, last_error, locked_by,"
        " locked_until, not_before)"
        " VALUES (%(search_id)s, %(tier)s, %(status)s::tier_status, %(attempts)s,"
        " CASE WHEN %(status)s::text = 'failed' THEN 'boom' END, %(locked_by)s,"
        " now() + make_interval(secs => %(lease)s), now() + make_interval(secs => %(nb)s))"
        " RETURNING id",
        {
            "search_id": search_id,
            "tier": tier,
            "status": status,
            "attempts": attempts,
            "nb": not_before_in,
            **_lease(status, locked_by, lease),
        },
    )
    return int(row["id"])


async def insert_stub(
    conn: AsyncConn,
    search_id: uuid.UUID,
    external_id: str,
    *,
    status: str = "queued",
    locked_by: str | None = None,
    lease: float = LIVE_LEASE,
    lost_workers: int = 0,
    tier: str = "strict",
) -> int:
    """A search_candidates stub, leased and errored as its status requires (see insert_tier)."""
    row = await one(
        conn,
        "INSERT INTO search_candidates (search_id, external_id, tier, status, display_name,"
        " last_error, locked_by, locked_until, lost_workers)"
        " VALUES (%(search_id)s, %(external_id)s, %(tier)s, %(status)s::candidate_status,"
        " %(external_id)s, CASE WHEN %(status)s::text LIKE 'failed%%' THEN 'boom' END,"
        " %(locked_by)s,"
        " now() + make_interval(secs => %(lease)s), %(lost)s)"
        " RETURNING id",
        {
            "search_id": search_id,
            "external_id": external_id,
            "tier": tier,
            "status": status,
            "lost": lost_workers,
            **_lease(status, locked_by, lease),
        },
    )
    return int(row["id"])


async def insert_candidate(
    conn: AsyncConn,
    full_name: str,
    *,
    external_id: str | None = None,
    role_title: str = "Engineer",
    skills: tuple[str, ...] = ("python",),
    location: str = "Berlin",
    years: int = 5,
    text: str | None = None,
    email: str | None = "person@example.org",
) -> uuid.UUID:
    """An embedded corpus candidate whose vector is the fake embedding of ``text``."""
    row = await one(
        conn,
        "INSERT INTO candidates (external_id, full_name, email, role_title, skills, location,"
        " years_experience, embedding, embedding_status, embedded_at)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, 'embedded', now()) RETURNING id",
        (
            external_id,
            full_name,
            email,
            role_title,
            list(skills),
            location,
            years,
            vector(text or f"{role_title} {' '.join(skills)} {location}"),
        ),
    )
    candidate_id: uuid.UUID = row["id"]
    return candidate_id


async def insert_result(
    conn: AsyncConn, search_id: uuid.UUID, candidate_id: uuid.UUID, *, stub: int | None = None
) -> int:
    """The next result of a search (ranks as append_result hands them out)."""
    row = await one(
        conn,
        "WITH appended AS (INSERT INTO search_results"
        " (search_id, rank, candidate_id, search_candidate_id, tier, score)"
        " SELECT id, result_count + 1, %(candidate)s, %(stub)s, 'strict', 0.5 FROM searches"
        " WHERE id = %(search)s RETURNING rank)"
        " UPDATE searches SET result_count = appended.rank FROM appended"
        " WHERE searches.id = %(search)s RETURNING appended.rank",
        {"search": search_id, "candidate": candidate_id, "stub": stub},
    )
    return int(row["rank"])


PLAIN_STATUS = {"saved_searches", "alert_digests", "alert_matches", "webhook_deliveries"}
"""Tables whose machine tests read the status alone."""


async def status_of(conn: AsyncConn, table: str, key: Any) -> Row:
    """status, locked_by and last_error of a queue row (searches: status and finished_at;
    inbound_mail: reason for last_error)."""
    columns = "status::text AS status, finished_at, last_progress_at"
    if table in PLAIN_STATUS:
        columns = "status::text AS status"
    elif table == "inbound_mail":
        columns = "status::text AS status, locked_by, locked_until, reason, attempts"
    elif table != "searches":
        columns = "status::text AS status, locked_by, locked_until, last_error, attempts"
    return await one(conn, f"SELECT {columns} FROM {table} WHERE id = %s", (key,))
