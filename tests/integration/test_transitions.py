"""The status machines the database enforces (migrations 0001, 0002, 0005, 0027, 0034, 0035,
0046): every edge of searches, search_tiers, search_candidates, inbound_mail, saved_searches,
alert_digests, alert_matches and webhook_deliveries, allowed and forbidden (job_sources: the
crawl outcomes that take its two states both ways), and the CHECK constraints
that go with the states (a running row has a lease, a failed one an error, a complete search a
finish time, an embedded corpus row a vector)."""

from __future__ import annotations

import itertools
import uuid

import psycopg
import pytest

from shortlist.db.pool import single_statement
from shortlist.db.types import AsyncConn, AsyncPool
from tests.integration.rows import (
    FAILED,
    insert_candidate,
    insert_search,
    insert_stub,
    insert_tier,
    one,
    status_of,
    vector,
)

CANDIDATE_STATES = ("queued", "running", "succeeded", *FAILED)
CANDIDATE_EDGES = {
    ("queued", "running"),
    ("running", "queued"),  # a worker gives its claim back
    ("running", "succeeded"),
    *(("running", failed) for failed in FAILED),
    *((failed, "queued") for failed in FAILED),  # a retry
}
TIER_STATES = ("queued", "running", "exhausted", "failed", "quota_exhausted")
TIER_EDGES = {
    ("queued", "running"),
    ("queued", "quota_exhausted"),  # the account its people need ran dry (serp, enrichment)
    ("running", "queued"),
    ("running", "exhausted"),
    ("running", "failed"),
    ("running", "quota_exhausted"),
    ("failed", "queued"),
    ("quota_exhausted", "queued"),
}
SEARCH_STATES = ("running", "complete", "stale")
SEARCH_EDGES = {
    ("running", "complete"),
    ("running", "stale"),
    ("complete", "running"),
    ("stale", "running"),
}


def edges(states: tuple[str, ...], allowed: set[tuple[str, str]]) -> list[object]:
    """Every (from, to, allowed) pair of a machine; staying in a state is always allowed."""
    return [
        pytest.param(a, b, a == b or (a, b) in allowed, id=f"{a}->{b}")
        for a, b in itertools.product(states, states)
    ]


# Columns an UPDATE sets along with the new status, so that only the transition trigger can
# refuse it (never a CHECK constraint): a running row gets a lease, a failed one an error.
def arrival(status: str) -> str:
    if status == "running":
        return "locked_by = 'w9', locked_until = now() + interval '1 minute', last_error = 'x'"
    return "locked_by = NULL, locked_until = NULL, last_error = 'x'"


async def move(conn: AsyncConn, table: str, key: object, to: str, extra: str) -> None:
    await conn.execute(f"UPDATE {table} SET status = %s, {extra} WHERE id = %s", (to, key))


async def check_edge(
    conn: AsyncConn, table: str, key: object, before: str, after: str, allowed: bool, extra: str
) -> None:
    if allowed:
        await move(conn, table, key, after, extra)
        assert (await status_of(conn, table, key))["status"] == after
    else:
        with pytest.raises(psycopg.errors.CheckViolation, match=f"from {before} to {after}"):
            await move(conn, table, key, after, extra)
        assert (await status_of(conn, table, key))["status"] == before


@pytest.mark.parametrize(("before", "after", "allowed"), edges(CANDIDATE_STATES, CANDIDATE_EDGES))
async def test_search_candidate_edge(
    pool: AsyncPool, before: str, after: str, allowed: bool
) -> None:
    async with single_statement(pool) as conn:
        stub = await insert_stub(conn, await insert_search(conn), "p1", status=before)
        await check_edge(conn, "search_candidates", stub, before, after, allowed, arrival(after))


@pytest.mark.parametrize(("before", "after", "allowed"), edges(TIER_STATES, TIER_EDGES))
async def test_search_tier_edge(pool: AsyncPool, before: str, after: str, allowed: bool) -> None:
    async with single_statement(pool) as conn:
        tier = await insert_tier(conn, await insert_search(conn), status=before)
        await check_edge(conn, "search_tiers", tier, before, after, allowed, arrival(after))


@pytest.mark.parametrize(("before", "after", "allowed"), edges(SEARCH_STATES, SEARCH_EDGES))
async def test_search_edge(pool: AsyncPool, before: str, after: str, allowed: bool) -> None:
    async with single_statement(pool) as conn:
        search = await insert_search(conn, status=before)
        finished = "finished_at = now()" if after == "complete" else "finished_at = NULL"
        await check_edge(conn, "searches", search, before, after, allowed, finished)


# --- the constraints that go with the states ---------------------------------------------------

LEASE_AND_ERROR = [
    pytest.param(table, status, columns, id=f"{table}:{status}:{columns}")
    for table, statuses in (
        ("search_candidates", ("running", *FAILED)),
        ("search_tiers", ("running", "failed")),
    )
    for status in statuses
    for columns in (
        ("locked_by = NULL", "locked_until = NULL")
        if status == "running"
        else ("last_error = NULL",)
    )
]


@pytest.mark.parametrize(("table", "status", "cleared"), LEASE_AND_ERROR)
async def test_running_needs_a_lease_and_failed_an_error(
    pool: AsyncPool, table: str, status: str, cleared: str
) -> None:
    async with single_statement(pool) as conn:
        search = await insert_search(conn)
        if table == "search_tiers":
            key = await insert_tier(conn, search, status=status)
        else:
            key = await insert_stub(conn, search, "p1", status=status)
        before = await status_of(conn, table, key)
        with pytest.raises(psycopg.errors.CheckViolation, match=r"has_lease|has_error"):
            await conn.execute(f"UPDATE {table} SET {cleared} WHERE id = %s", (key,))
        assert await status_of(conn, table, key) == before


@pytest.mark.parametrize(
    ("table", "status", "columns"),
    [
        ("search_candidates", "running", "locked_by, locked_until"),
        ("search_candidates", "failed_permanent", "last_error"),
        ("search_tiers", "running", "locked_by, locked_until"),
        ("search_tiers", "failed", "last_error"),
    ],
)
async def test_a_row_cannot_be_inserted_running_without_lease_or_failed_without_error(
    pool: AsyncPool, table: str, status: str, columns: str
) -> None:
    async with single_statement(pool) as conn:
        search = await insert_search(conn)
        key_columns = "external_id, tier" if table == "search_candidates" else "tier"
        key_values = "'p1', 'strict'" if table == "search_candidates" else "'strict'"
        with pytest.raises(psycopg.errors.CheckViolation):
            await conn.execute(
                f"INSERT INTO {table} (search_id, {key_columns}, status)"
                f" VALUES (%s, {key_values}, %s)",
                (search, status),
            )


async def test_a_complete_search_has_a_finish_time(pool: AsyncPool) -> None:
    async with single_statement(pool) as conn:
        search = await insert_search(conn)
        with pytest.raises(psycopg.errors.CheckViolation, match="searches_finished_has_time"):
            await conn.execute("UPDATE searches SET status = 'complete' WHERE id = %s", (search,))
        assert (await status_of(conn, "searches", search))["status"] == "running"


async def test_result_count_only_grows(pool: AsyncPool) -> None:
    async with single_statement(pool) as conn:
        search = await insert_search(conn)
        await conn.execute("UPDATE searches SET result_count = 2 WHERE id = %s", (search,))
        with pytest.raises(psycopg.errors.CheckViolation, match="may not shrink"):
            await conn.execute("UPDATE searches SET result_count = 1 WHERE id = %s", (search,))
        row = await one(conn, "SELECT result_count FROM searches WHERE id = %s", (search,))
    assert row["result_count"] == 2


async def test_search_results_are_append_only(pool: AsyncPool) -> None:
    async with single_statement(pool) as conn:
        search = await insert_search(conn)
        candidate = await insert_candidate(conn, "Ada")
        await conn.execute(
            "INSERT INTO search_results (search_id, rank, candidate_id, tier, score)"
            " VALUES (%s, 1, %s, 'internal', 0.9)",
            (search, candidate),
        )
        with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
            await conn.execute(
                "UPDATE search_results SET score = 0.1 WHERE search_id = %s", (search,)
            )


# --- the embedding state of the corpora (0001, 0003) -----------------------------------------

CORPUS_INSERTS = {
    "job_listings": (
        "INSERT INTO job_listings (company_name, job_title, city_location, description,"
        " detail_page_slug) VALUES ('Acme', 'Engineer', 'Berlin', 'Build things', %s)"
        " RETURNING id"
    ),
    "candidates": "INSERT INTO candidates (full_name, external_id) VALUES ('Ada', %s) RETURNING id",
}
EDITS = {
    "job_listings": "UPDATE job_listings SET description = 'Build more things' WHERE id = %s",
    "candidates": "UPDATE candidates SET summary = 'Builds more things' WHERE id = %s",
}


async def insert_corpus_row(conn: AsyncConn, table: str) -> uuid.UUID:
    row = await one(conn, CORPUS_INSERTS[table], (f"slug-{uuid.uuid4()}",))
    key: uuid.UUID = row["id"]
    return key


@pytest.mark.parametrize("table", CORPUS_INSERTS)
@pytest.mark.parametrize(
    ("status", "columns", "constraint"),
    [
        ("embedded", "embedding = NULL, embedded_at = now()", "has_vector"),
        ("embedded", "embedding = %(vector)s, embedded_at = NULL", "has_vector"),
        ("failed", "embedding_error = NULL", "failed_has_error"),
    ],
)
async def test_corpus_state_needs_its_columns(
    pool: AsyncPool, table: str, status: str, columns: str, constraint: str
) -> None:
    async with single_statement(pool) as conn:
        key = await insert_corpus_row(conn, table)
        with pytest.raises(psycopg.errors.CheckViolation, match=constraint):
            await conn.execute(
                f"UPDATE {table} SET embedding_status = %(status)s, {columns} WHERE id = %(id)s",
                {"status": status, "vector": vector(), "id": key},
            )


@pytest.mark.parametrize("table", CORPUS_INSERTS)
async def test_an_edit_of_a_failed_corpus_row_makes_it_pending(pool: AsyncPool, table: str) -> None:
    async with single_statement(pool) as conn:
        key = await insert_corpus_row(conn, table)
        await conn.execute(
            f"UPDATE {table} SET embedding_status = 'failed', embedding_error = 'too long',"
            " embedding_attempts = 3 WHERE id = %s",
            (key,),
        )
        await conn.execute(EDITS[table], (key,))
        row = await one(
            conn,
            f"SELECT embedding_status::text AS status, embedding_error, embedding_attempts"
            f" FROM {table} WHERE id = %s",
            (key,),
        )
    assert (row["status"], row["embedding_error"], row["embedding_attempts"]) == (
        "pending",
        None,
        0,
    )


@pytest.mark.parametrize("table", CORPUS_INSERTS)
async def test_the_indexers_own_writes_do_not_move_updated_at(pool: AsyncPool, table: str) -> None:
    async with single_statement(pool) as conn:
        key = await insert_corpus_row(conn, table)
        before = await one(conn, f"SELECT updated_at FROM {table} WHERE id = %s", (key,))
        await conn.execute(
            f"UPDATE {table} SET embedding_status = 'failed', embedding_error = 'x',"
            " locked_by = 'w1' WHERE id = %s",
            (key,),
        )
        after = await one(
            conn,
            f"SELECT updated_at, embedding_status::text AS s FROM {table} WHERE id = %s",
            (key,),
        )
    assert after["updated_at"] == before["updated_at"]
    assert after["s"] == "failed"


# --- the e-mail intake's and the crawler's queues ---------------------------------------------

MAIL_STATES = ("queued", "running", "posted", "rejected", "failed")
MAIL_EDGES = {
    ("queued", "running"),
    ("running", "queued"),  # a parser gives its claim back
    ("running", "posted"),
    ("running", "rejected"),
    ("running", "failed"),
    ("queued", "failed"),  # its sender forgotten on request before it was read
}


async def insert_message(conn: AsyncConn, status: str) -> int:
    row = await one(
        conn,
        "INSERT INTO inbound_mail (company_name, recipient, dedup_key, raw, status, reason,"
        " locked_by, locked_until)"
        " VALUES ('Acme', 'post-x@example.test', %s, 'raw', %s, 'x', 'w9',"
        " now() + interval '1 minute') RETURNING id",
        (uuid.uuid4().hex, status),
    )
    return int(row["id"])


@pytest.mark.parametrize(("before", "after", "allowed"), edges(MAIL_STATES, MAIL_EDGES))
async def test_inbound_mail_edge(pool: AsyncPool, before: str, after: str, allowed: bool) -> None:
    async with single_statement(pool) as conn:
        message = await insert_message(conn, before)
        await check_edge(conn, "inbound_mail", message, before, after, allowed, "reason = 'x'")


async def insert_source(conn: AsyncConn, status: str) -> int:
    row = await one(
        conn,
        "INSERT INTO job_sources (spec, kind, status, last_error, locked_by, locked_until)"
        " VALUES (%s, 'greenhouse', %s, 'x', 'w1', now() + interval '1 minute') RETURNING id",
        (f"greenhouse:{uuid.uuid4().hex[:12]}", status),
    )
    return int(row["id"])


async def test_job_source_edges_are_the_crawls_outcomes(pool: AsyncPool) -> None:
    """active -> failed only through the holder's Failed outcome; failed -> active only by a
    crawl that committed; no third state."""
    from shortlist.config import Settings
    from shortlist.listings.sources.queue import QUERIES as SOURCES_SQL
    from shortlist.listings.sources.queue import CrawlQueue
    from shortlist.queue import Failed

    leases = CrawlQueue(pool, Settings()).leases
    async with single_statement(pool) as conn:
        source = await insert_source(conn, "active")
        assert await leases.settle(conn, "w2", {source: Failed("404")}) == set()
        assert (await status_of(conn, "job_sources", source))["status"] == "active"
        assert await leases.settle(conn, "w1", {source: Failed("404")}) == {source}
        row = await status_of(conn, "job_sources", source)
        assert (row["status"], row["last_error"], row["locked_by"]) == ("failed", "404", None)
        cur = await conn.execute(
            SOURCES_SQL["crawl_succeeded"], {"id": source, "outcome": None, "interval": 60}
        )
        assert await cur.fetchone() is not None
        assert (await status_of(conn, "job_sources", source))["status"] == "active"
        with pytest.raises(psycopg.errors.CheckViolation):
            await move(conn, "job_sources", source, "paused", "last_error = 'x'")


# --- alerts and webhooks ------------------------------------------------------------------------

SAVED_SEARCH_STATES = ("pending", "active", "unsubscribed", "disabled")
SAVED_SEARCH_EDGES = {
    ("pending", "active"),  # consent: the confirmation link, or a signed-in save
    ("pending", "unsubscribed"),
    ("pending", "disabled"),
    ("active", "unsubscribed"),
    ("active", "disabled"),
    ("disabled", "active"),  # an operator's disable undone; an unsubscribe is final
}
DIGEST_STATES = ("pending", "sent", "cancelled", "failed")
DIGEST_EDGES = {("pending", "sent"), ("pending", "cancelled"), ("pending", "failed")}
MATCH_STATES = ("queued", "sent", "dropped", "cancelled")
MATCH_EDGES = {("queued", "sent"), ("queued", "dropped"), ("queued", "cancelled")}
DELIVERY_STATES = ("pending", "delivered", "failed", "cancelled")
DELIVERY_EDGES = {("pending", "delivered"), ("pending", "failed"), ("pending", "cancelled")}


async def insert_saved_search(conn: AsyncConn, status: str = "active") -> tuple[uuid.UUID, int]:
    """A consented saved search in ``status`` and its subscriber's id."""
    subscriber = await one(
        conn,
        "INSERT INTO alert_subscribers (email) VALUES (%s) RETURNING id",
        (f"{uuid.uuid4().hex[:12]}@example.test",),
    )
    query = await one(
        conn,
        "INSERT INTO alert_queries (normalised, embedding) VALUES (%s, %s) RETURNING id",
        (f"python {uuid.uuid4().hex[:8]}", vector()),
    )
    row = await one(
        conn,
        "INSERT INTO saved_searches (subscriber_id, query_id, query, min_score, frequency,"
        " status, consent_at) VALUES (%s, %s, 'python', 0.5, 'daily', %s, now()) RETURNING id",
        (subscriber["id"], query["id"], status),
    )
    return row["id"], int(subscriber["id"])


@pytest.mark.parametrize(
    ("before", "after", "allowed"), edges(SAVED_SEARCH_STATES, SAVED_SEARCH_EDGES)
)
async def test_saved_search_edge(pool: AsyncPool, before: str, after: str, allowed: bool) -> None:
    async with single_statement(pool) as conn:
        search, _ = await insert_saved_search(conn, before)
        await check_edge(conn, "saved_searches", search, before, after, allowed, "ended_at = now()")


@pytest.mark.parametrize(("before", "after", "allowed"), edges(DIGEST_STATES, DIGEST_EDGES))
async def test_alert_digest_edge(pool: AsyncPool, before: str, after: str, allowed: bool) -> None:
    async with single_statement(pool) as conn:
        search, _ = await insert_saved_search(conn)
        digest = await one(
            conn,
            "INSERT INTO alert_digests (search_id, message_id, status) VALUES (%s, %s, %s)"
            " RETURNING id",
            (search, f"<{uuid.uuid4().hex}@example.test>", before),
        )
        await check_edge(
            conn, "alert_digests", digest["id"], before, after, allowed, "attempts = 1"
        )


@pytest.mark.parametrize(("before", "after", "allowed"), edges(MATCH_STATES, MATCH_EDGES))
async def test_alert_match_edge(pool: AsyncPool, before: str, after: str, allowed: bool) -> None:
    async with single_statement(pool) as conn:
        search, subscriber = await insert_saved_search(conn)
        listing = await one(
            conn,
            "INSERT INTO job_listings (company_name, job_title, city_location, description,"
            " detail_page_slug) VALUES ('Acme', 'Python Engineer', 'Berlin', 'Writes Python.',"
            " %s) RETURNING id",
            (f"acme-python-{uuid.uuid4().hex[:8]}",),
        )
        match = await one(
            conn,
            "INSERT INTO alert_matches (search_id, subscriber_id, listing_id, job_key,"
            " company_key, score, status) VALUES (%s, %s, %s, 'job', 'acme', 0.9, %s)"
            " RETURNING id",
            (search, subscriber, listing["id"], before),
        )
        await check_edge(conn, "alert_matches", match["id"], before, after, allowed, "score = 0.8")


@pytest.mark.parametrize(("before", "after", "allowed"), edges(DELIVERY_STATES, DELIVERY_EDGES))
async def test_webhook_delivery_edge(
    pool: AsyncPool, before: str, after: str, allowed: bool
) -> None:
    async with single_statement(pool) as conn:
        org = await one(
            conn, "INSERT INTO organisations (name, kind) VALUES ('Acme', 'both') RETURNING id"
        )
        endpoint = await one(
            conn,
            "INSERT INTO webhook_endpoints (org_id, url, events, secret)"
            " VALUES (%s, 'https://hooks.example.test/in', ARRAY['alert.matched'], 'whsec_x')"
            " RETURNING id",
            (org["id"],),
        )
        message = await one(
            conn,
            "INSERT INTO webhook_messages (msg_id, org_id, event_type, body)"
            " VALUES (%s, %s, 'alert.matched', '{}') RETURNING id",
            (f"msg_{uuid.uuid4().hex}", org["id"]),
        )
        delivery = await one(
            conn,
            "INSERT INTO webhook_deliveries (message_id, endpoint_id, org_id, status)"
            " VALUES (%s, %s, %s, %s::webhook_delivery_status) RETURNING id",
            (message["id"], endpoint["id"], org["id"], before),
        )
        await check_edge(
            conn, "webhook_deliveries", delivery["id"], before, after, allowed, "attempts = 1"
        )
