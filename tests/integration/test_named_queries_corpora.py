"""One test per named statement around the embedded corpora: the embedding indexer
(indexer/queries.sql, corpora.sql), leases (queue/lease.sql), `shortlist reindex`
(reindex.sql), `shortlist status` (status.sql) and the job-listing producers
(listings/queries.sql). Each runs through the Python code that wraps it."""

from __future__ import annotations

import asyncio
import uuid

import psycopg
import pytest

from shortlist.db.types import AsyncConn, AsyncPool
from shortlist.errors import NotFound
from shortlist.indexer.corpora import CANDIDATES, LISTINGS
from shortlist.indexer.queue import EmbeddingQueue
from shortlist.listings import repository as listings
from shortlist.listings.models import ListingCreate
from shortlist.listings.sample import SAMPLE_SIZE, load_sample_listings
from shortlist.queue.lease import LeaseKeeper, LeaseTable
from shortlist.reindex import reindex
from shortlist.status import QUERIES as STATUS_QUERIES
from shortlist.status import queue_depths
from tests.fakes import FakeEmbedder
from tests.integration.rows import (
    OTHER_WORKER,
    WORKER,
    insert_search,
    one,
    vector,
)

ACME = ListingCreate(
    company_name="Acme",
    job_title="Engineer",
    city_location="Berlin",
    description="Build things",
    salary_min_ks=50,
    salary_max_ks=70,
)


async def add_listing(conn: AsyncConn, data: ListingCreate = ACME) -> uuid.UUID:
    return (await listings.insert_listing(conn, data, source="api", owner_token_id=None)).id


async def set_state(conn: AsyncConn, key: uuid.UUID, assignments: str) -> None:
    await conn.execute(f"UPDATE job_listings SET {assignments} WHERE id = %s", (key,))


async def state(conn: AsyncConn, key: uuid.UUID) -> dict[str, object]:
    return await one(
        conn,
        "SELECT embedding_status::text AS status, locked_by, embedding_error AS error,"
        " embedded_hash = content_hash AS hash_matches FROM job_listings WHERE id = %s",
        (key,),
    )


EMBEDDED = "embedding_status = 'embedded', embedding = %s, embedded_at = now()"
EMBEDDED_HASHED = EMBEDDED + ", embedded_hash = content_hash"


async def embed_now(conn: AsyncConn, key: uuid.UUID) -> None:
    await conn.execute(f"UPDATE job_listings SET {EMBEDDED_HASHED} WHERE id = %s", (vector(), key))


# --- the embedding indexer --------------------------------------------------------------------


async def test_claim_takes_pending_and_edited_rows_not_live_leases(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        pending = await add_listing(conn)
        edited = await add_listing(conn)
        await embed_now(conn, edited)
        await set_state(conn, edited, "description = 'Build more things'")
        expired = await add_listing(conn)
        await set_state(conn, expired, "locked_by = 'w3', locked_until = now() - interval '1 s'")
        leased = await add_listing(conn)
        await set_state(conn, leased, "locked_by = 'w3', locked_until = now() + interval '1 m'")
        embedded = await add_listing(conn)
        await embed_now(conn, embedded)
        failed = await add_listing(conn)
        await set_state(conn, failed, "embedding_status = 'failed', embedding_error = 'x'")
    queue = EmbeddingQueue(pool, FakeEmbedder(), LISTINGS)

    claimed = await queue.claim(WORKER, 10, 30.0)

    assert {r.id for r in claimed} == {pending, edited, expired}
    assert {r.text for r in claimed} >= {"Engineer at Acme, Berlin\nBuild things"}
    async with pool.connection() as conn:
        for key in (pending, edited, expired):
            assert (await state(conn, key))["locked_by"] == WORKER
        assert (await state(conn, leased))["locked_by"] == "w3"


async def test_store_embeddings_only_for_the_holder_and_the_claimed_text(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        kept, edited, stolen = [await add_listing(conn) for _ in range(3)]
    queue = EmbeddingQueue(pool, FakeEmbedder(), LISTINGS)
    claimed = await queue.claim(WORKER, 10, 30.0)
    async with pool.connection() as conn:
        await set_state(conn, edited, "description = 'Build more things'")
        await set_state(conn, stolen, "locked_by = 'w3'")

    result = await queue.index_batch(WORKER, claimed)

    assert (result.embedded, result.superseded) == (1, 2)
    async with pool.connection() as conn:
        assert await state(conn, kept) == {
            "status": "embedded",
            "locked_by": None,
            "error": None,
            "hash_matches": True,
        }
        assert (await state(conn, edited))["status"] == "pending"
        assert await state(conn, stolen) == {
            "status": "pending",
            "locked_by": "w3",
            "error": None,
            "hash_matches": None,
        }


async def test_confirm_embedded_flips_an_unchanged_text_without_the_model(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        key = await add_listing(conn)
        await embed_now(conn, key)
        await set_state(conn, key, "salary_max_ks = 80")  # not part of the embedded text
    embedder = FakeEmbedder()
    queue = EmbeddingQueue(pool, embedder, LISTINGS)
    claimed = await queue.claim(WORKER, 10, 30.0)
    assert [r.text_unchanged for r in claimed] == [True]

    result = await queue.index_batch(WORKER, claimed)

    assert (result.unchanged, embedder.calls) == (1, 0)
    async with pool.connection() as conn:
        row = await one(
            conn,
            "SELECT embedded_at >= updated_at AS current, locked_by FROM job_listings"
            " WHERE id = %s",
            (key,),
        )
    assert row == {"current": True, "locked_by": None}
    assert await queue.claim(WORKER, 10, 30.0) == []


async def test_mark_failed_records_the_reason(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        good = await add_listing(conn)
        bad = await add_listing(conn, ACME.model_copy(update={"description": "poison"}))
    embedder = FakeEmbedder(fail_permanent_on=lambda text: "poison" in text)
    queue = EmbeddingQueue(pool, embedder, LISTINGS)

    result = await queue.index_batch(WORKER, await queue.claim(WORKER, 10, 30.0))

    assert (result.embedded, result.failed) == (1, 1)
    async with pool.connection() as conn:
        assert (await state(conn, good))["status"] == "embedded"
        failed = await one(
            conn,
            "SELECT embedding_status::text AS status, embedding_error, embedding_attempts,"
            " embedding_failed_at IS NOT NULL AS stamped, locked_by FROM job_listings"
            " WHERE id = %s",
            (bad,),
        )
    assert failed.pop("embedding_error").startswith("fake rejects input")
    assert failed == {
        "status": "failed",
        "embedding_attempts": 1,
        "stamped": True,
        "locked_by": None,
    }


async def test_candidates_text_leaves_out_the_email_and_empty_fields(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        await conn.execute(
            "INSERT INTO candidates (full_name, role_title, email, skills)"
            " VALUES ('Ada', 'Engineer', 'ada@example.org', '{python,sql}')"
        )
    claimed = await EmbeddingQueue(pool, FakeEmbedder(), CANDIDATES).claim(WORKER, 10, 30.0)
    assert [r.text for r in claimed] == ["Ada\nEngineer\nSkills: python, sql"]


# --- leases -----------------------------------------------------------------------------------


async def test_release_gives_back_only_the_callers_rows(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        mine, theirs = await add_listing(conn), await add_listing(conn)
        await set_state(conn, mine, f"locked_by = '{WORKER}', locked_until = now() + '1 m'")
        await set_state(conn, theirs, f"locked_by = '{OTHER_WORKER}', locked_until = now() + '1 m'")
    table = LeaseTable("job_listings", key_type="uuid")

    assert await table.release(pool, WORKER, [mine, theirs]) == 1

    async with pool.connection() as conn:
        assert (await state(conn, mine))["locked_by"] is None
        assert (await state(conn, theirs))["locked_by"] == OTHER_WORKER


async def test_renew_moves_only_leases_the_process_holds(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        mine, theirs = await add_listing(conn), await add_listing(conn)
        await set_state(conn, mine, f"locked_by = '{WORKER}', locked_until = now() + '1 s'")
        await set_state(conn, theirs, f"locked_by = '{OTHER_WORKER}', locked_until = now() + '1 s'")
    keeper = LeaseKeeper(pool, every=3600)
    table = LeaseTable("job_listings", key_type="uuid")

    async with keeper.renewing(table, 600.0, WORKER, lambda: [mine, theirs]):
        assert await keeper.beat() == 1

    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT id, locked_until > now() + interval '5 minutes' AS renewed FROM job_listings"
        )
        renewed = {r["id"]: r["renewed"] for r in await cur.fetchall()}
    assert renewed == {mine: True, theirs: False}


# --- reindex ----------------------------------------------------------------------------------


async def corpus_states(conn: AsyncConn) -> dict[uuid.UUID, tuple[str, bool]]:
    cur = await conn.execute(
        "SELECT id, embedding_status::text AS s, embedded_hash IS NOT NULL AS h FROM job_listings"
    )
    return {r["id"]: (r["s"], r["h"]) for r in await cur.fetchall()}


async def three_listings(conn: AsyncConn) -> tuple[uuid.UUID, uuid.UUID, uuid.UUID]:
    """One embedded from its current text, one embedded from other text, one failed."""
    current, stale, failed = [await add_listing(conn) for _ in range(3)]
    await embed_now(conn, current)
    await conn.execute(
        f"UPDATE job_listings SET {EMBEDDED}, embedded_hash = '\\x00' WHERE id = %s",
        (vector(), stale),
    )
    await set_state(conn, failed, "embedding_status = 'failed', embedding_error = 'x'")
    await conn.execute(
        "INSERT INTO candidates (full_name, embedding_status, embedding_error)"
        " VALUES ('Ada', 'failed', 'x')"
    )
    return current, stale, failed


@pytest.mark.parametrize(
    ("option", "marked", "after"),
    [
        ({}, 1, [("embedded", True), ("pending", True), ("failed", False)]),
        ({"failed": True}, 2, [("embedded", True), ("embedded", True), ("pending", False)]),
        ({"all_rows": True}, 4, [("pending", False), ("pending", False), ("pending", False)]),
    ],
    ids=["reindex_stale", "reindex_failed", "reindex_all"],
)
async def test_reindex(
    pool: AsyncPool, option: dict[str, bool], marked: int, after: list[tuple[str, bool]]
) -> None:
    async with pool.connection() as conn:
        keys = await three_listings(conn)
    async with pool.connection() as conn:
        assert await reindex(conn, **option) == marked
        states = await corpus_states(conn)
    assert [states[k] for k in keys] == after


# --- status -----------------------------------------------------------------------------------


async def test_queue_depths_lists_every_status_of_every_queue(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        key = await add_listing(conn)
        await set_state(conn, key, "locked_by = 'w', locked_until = now() + '1 m'")
        await insert_search(conn, status="stale")
        rows = await queue_depths(conn)
    depths = {(r["queue"], r["status"]): (r["n"], r["claimed"]) for r in rows}
    # search_candidates: 6 + skipped, below_threshold; alerts: listings to match, 4 match and
    # 4 digest statuses, digests due
    # webhook_deliveries: every status of its enum
    webhooks = sum(1 for queue, _status in depths if queue == "webhook_deliveries")
    assert webhooks >= 4
    assert len(depths) == 3 + 3 + 8 + 3 + 1 + 4 + 5 + webhooks
    assert depths[("job_listings", "pending")] == (1, 1)
    assert depths[("job_listings", "failed")] == (0, 0)
    assert depths[("searches", "stale")] == (1, 0)
    assert depths[("search_candidates", "queued")] == (0, 0)
    assert depths[("alert_matches", "queued")] == (0, 0)


async def test_listing_failures_newest_first(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        old, new = await add_listing(conn), await add_listing(conn)
        for key, when in ((old, "2 hours"), (new, "1 hour")):
            await set_state(
                conn,
                key,
                f"embedding_status = 'failed', embedding_error = 'e', embedding_attempts = 2,"
                f" embedding_failed_at = now() - interval '{when}'",
            )
        await add_listing(conn)
        cur = await conn.execute(STATUS_QUERIES["listing_failures"], {"limit": 10})
        rows = await cur.fetchall()
    assert [(r["id"], r["label"], r["attempts"]) for r in rows] == [
        (str(new), "Engineer at Acme", 2),
        (str(old), "Engineer at Acme", 2),
    ]


async def test_candidate_failures_are_labelled_by_role_never_by_name(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        await conn.execute(
            "INSERT INTO candidates (full_name, role_title, headline, embedding_status,"
            " embedding_error, embedding_failed_at) VALUES"
            " ('Ada', 'Engineer', '', 'failed', 'e', now()),"
            " ('Bob', '', 'Data wrangler', 'failed', 'e', now() - interval '1 h'),"
            " ('Cy', '', '', 'failed', 'e', now() - interval '2 h'),"
            " ('Di', 'Pending', '', 'pending', NULL, NULL)"
        )
        cur = await conn.execute(STATUS_QUERIES["candidate_failures"], {"limit": 10})
        labels = [r["label"] for r in await cur.fetchall()]
    assert labels == ["Engineer", "Data wrangler", "(no title)"]


async def test_running_searches_oldest_first_without_the_owner(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        first = await insert_search(conn, query="first")
        second = await insert_search(conn, query="second")
        await insert_search(conn, status="complete")
        cur = await conn.execute(STATUS_QUERIES["running_searches"], {"limit": 10})
        rows = await cur.fetchall()
    assert [(r["id"], r["query"]) for r in rows] == [(str(first), "first"), (str(second), "second")]
    assert "owner_token_id" not in rows[0]


# --- job listings -----------------------------------------------------------------------------


async def test_insert_and_get_listing(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        created = await listings.insert_listing(conn, ACME, source="email", owner_token_id=None)
        fetched = await listings.get_listing(conn, created.id)
        source = await one(conn, "SELECT source FROM job_listings WHERE id = %s", (created.id,))
        with pytest.raises(NotFound):
            await listings.get_listing(conn, uuid.uuid4())
    assert fetched == created
    assert (fetched.embedding_status, source["source"]) == ("pending", "email")
    assert str(created.id) in created.detail_page_slug


async def test_get_listings_by_ids(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        a, b = await add_listing(conn), await add_listing(conn)
        await add_listing(conn)
        found = await listings.get_listings_by_ids(conn, [a, b, uuid.uuid4()])
    assert set(found) == {a, b}


async def test_lock_listing_holds_the_row_for_the_transaction(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        key = await add_listing(conn)
    async with pool.connection() as holder:
        locked = await listings.lock_listing(holder, key)
        assert (locked["id"], locked["owner_token_id"]) == (key, None)
        async with pool.connection() as other:
            await other.execute("SET lock_timeout = '100ms'")
            with pytest.raises(psycopg.errors.LockNotAvailable):
                await other.execute("UPDATE job_listings SET job_title = 'x' WHERE id = %s", (key,))
        with pytest.raises(NotFound):
            await listings.lock_listing(holder, uuid.uuid4())


async def test_update_listing_rewrites_fields_and_slug(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        before = await listings.get_listing(conn, await add_listing(conn))
        moved = ACME.model_copy(update={"city_location": "Paris"})
        after = await listings.update_listing(conn, before.id, moved)
        with pytest.raises(NotFound):
            await listings.update_listing(conn, uuid.uuid4(), moved)
    assert after.city_location == "Paris"
    assert "paris" in after.detail_page_slug
    assert after.updated_at > before.updated_at


async def test_close_listing_moves_open_to_closed_once(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        closing, kept = await add_listing(conn), await add_listing(conn)
        assert await listings.close_listing(conn, closing)
        assert not await listings.close_listing(conn, closing)  # closed already: no change
        remaining = await listings.get_listings_by_ids(conn, [closing, kept])
    assert remaining[closing].status == "closed"
    assert remaining[kept].status == "open"


async def test_copy_listings_in_the_callers_transaction(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        assert not await listings.listings_exist(conn)
        assert await listings.copy_listings(conn, [ACME, ACME], source="file") == 2
        await conn.rollback()
        assert not await listings.listings_exist(conn)
        await listings.copy_listings(conn, [ACME], source="file")
        row = await one(conn, "SELECT count(*) AS n, min(source) AS s FROM job_listings")
    assert row == {"n": 1, "s": "file"}


@pytest.mark.slow
async def test_sample_listings_load_once_into_an_empty_table(pool: AsyncPool) -> None:
    async with pool.connection() as a, pool.connection() as b:
        loaded = await asyncio.gather(load_sample_listings(a), load_sample_listings(b))
        assert await listings.listings_exist(a)
    assert sorted(loaded) == [0, SAMPLE_SIZE]


async def test_the_sample_is_not_loaded_over_existing_listings(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        await add_listing(conn)
    async with pool.connection() as conn:
        assert await load_sample_listings(conn) == 0
