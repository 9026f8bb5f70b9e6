"""The answers of repeated job searches are kept per process until a listing changes
(shortlist.listings.result_cache; the notification of migration 0025)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import psycopg
import pytest
from prometheus_client import REGISTRY

from shortlist.bootstrap import Services, open_services
from shortlist.config import Settings
from shortlist.db import channels
from shortlist.db.types import AsyncConn
from shortlist.listings.service import run_job_search
from tests.fakes import FakeEmbedder
from tests.helpers import wait_for

INSERT = (
    "INSERT INTO job_listings (company_name, job_title, city_location, description,"
    " detail_page_slug, work_mode) VALUES (%s, %s, 'Porto', 'Dispensing and advice.', %s,"
    " 'onsite') RETURNING id"
)


def _lookups(result: str) -> float:
    return (
        REGISTRY.get_sample_value("shortlist_search_cache_lookups_total", {"result": result}) or 0
    )


async def _insert(conn: AsyncConn, company: str, title: str = "Pharmacist") -> uuid.UUID:
    cur = await conn.execute(INSERT, (company, title, f"{company.lower()}-{uuid.uuid4().hex}"))
    row = await cur.fetchone()
    assert row is not None
    return uuid.UUID(str(row["id"]))


def _companies(services_result: object) -> list[str]:
    hits = getattr(services_result, "hits")  # noqa: B009
    return [h.listing.company_name for h in hits]


async def _open(db_url: str, embedder: FakeEmbedder) -> AsyncIterator[Services]:
    settings = Settings(database_url=db_url, load_sample_data=False, search_rate_limit=0)
    async with open_services(settings, db_url, embedder=embedder) as services:

        async def listening() -> bool:
            return services.search_cache.listening

        await wait_for(listening, message="the answer cache listening")
        yield services


@pytest.fixture
def embedder(request: pytest.FixtureRequest) -> FakeEmbedder:
    return FakeEmbedder(**getattr(request, "param", {}))


@pytest.fixture
async def services(db_url: str, embedder: FakeEmbedder) -> AsyncIterator[Services]:
    async for s in _open(db_url, embedder):
        yield s


async def test_a_repeated_search_is_answered_from_the_cache_until_a_listing_changes(
    services: Services,
) -> None:
    async with services.pool.connection() as conn:
        await _insert(conn, "Farmacia Norte")

    async def kept() -> bool:
        # The insert's own notification may arrive while a search runs: that answer is not kept.
        await run_job_search(services, "pharmacist", size=10)
        return len(services.search_cache) == 1

    await wait_for(kept, timeout=10, message="an answer kept")
    hits = _lookups("hit")
    first = await run_job_search(services, "pharmacist", size=10)
    assert _companies(first) == ["Farmacia Norte"]
    assert _lookups("hit") == hits + 1

    # Deleted behind the cache's back (triggers off, so no notification): the second answer
    # still names it, so it did not come from PostgreSQL.
    async with services.pool.connection() as conn:
        await conn.execute("SET session_replication_role = replica")
        await conn.execute("DELETE FROM job_listings")
        await conn.execute("RESET session_replication_role")
    second = await run_job_search(services, "pharmacist", size=10)
    assert _lookups("hit") == hits + 2
    assert second.hits == first.hits and second.facets == first.facets
    # Another page or filter is another answer.
    assert _companies(await run_job_search(services, "pharmacist", size=10, offset=1)) == []
    assert _companies(await run_job_search(services, "pharmacist", size=5)) == []

    # A listing written as every producer writes one empties every process's cache.
    async with services.pool.connection() as conn:
        await _insert(conn, "Botica Sul")

    async def fresh() -> bool:
        return _companies(await run_job_search(services, "pharmacist", size=10)) == ["Botica Sul"]

    await wait_for(fresh, timeout=10, message="the new listing in the answer")


async def _changes_sent_by(conn: AsyncConn, listener: psycopg.AsyncConnection, sql: str) -> int:
    """Notifications on the listings channel that ``sql`` sends, counted up to a sentinel sent
    after it (notifications arrive in commit order): no wait for an absence."""
    await conn.execute(sql)
    await conn.execute("SELECT pg_notify(%s, 'sentinel')", (channels.LISTINGS,))
    sent = 0
    async for note in listener.notifies(timeout=10):
        if note.channel != channels.LISTINGS:
            continue
        if note.payload == "sentinel":
            return sent
        sent += 1
    raise AssertionError("the sentinel notification never arrived")


async def test_claims_and_lease_renewals_empty_no_cache_and_every_visible_change_does(
    db_url: str,
) -> None:
    async with (
        await psycopg.AsyncConnection.connect(db_url, autocommit=True) as listener,
        await psycopg.AsyncConnection.connect(db_url, autocommit=True) as writer,
    ):
        await listener.execute(f"LISTEN {channels.LISTINGS}")
        assert (
            await _changes_sent_by(
                writer,
                listener,
                "INSERT INTO job_listings (company_name, job_title, city_location, description,"
                " detail_page_slug, work_mode)"
                " VALUES ('A', 'Pharmacist', 'Porto', 'x', 'a-1', 'onsite')",
            )
            == 1
        )
        quiet = (
            "UPDATE job_listings SET locked_by = 'w1', locked_until = now() + interval '1 minute'",
            "UPDATE job_listings SET locked_until = now() + interval '2 minutes'",
            "UPDATE job_listings SET claim_seq = claim_seq + 1, embedding_attempts = 1",
        )
        for sql in quiet:
            assert await _changes_sent_by(writer, listener, sql) == 0, sql
        visible = (
            "UPDATE job_listings SET status = 'closed', closed_at = now()",
            "UPDATE job_listings SET job_title = 'Senior Pharmacist'",
            "UPDATE job_listings SET embedding_status = 'failed', embedding_error = 'rejected',"
            " embedding_failed_at = now()",
            "UPDATE job_listings SET last_seen_at = now()",
            "DELETE FROM job_listings",
        )
        for sql in visible:
            assert await _changes_sent_by(writer, listener, sql) == 1, sql


@pytest.mark.parametrize("embedder", [{"fail_transient_times": 1}], indirect=True)
async def test_an_answer_degraded_to_full_text_is_not_kept(services: Services) -> None:
    async with services.pool.connection() as conn:
        await _insert(conn, "Farmacia Norte")
    services.search_cache.invalidate()  # the insert's notification may not be in yet
    degraded = await run_job_search(services, "pharmacist", size=10)
    assert degraded.degraded and _companies(degraded) == ["Farmacia Norte"]
    assert len(services.search_cache) == 0

    async def kept() -> bool:
        semantic = await run_job_search(services, "pharmacist", size=10)
        assert not semantic.degraded and _companies(semantic) == ["Farmacia Norte"]
        return len(services.search_cache) == 1

    await wait_for(kept, timeout=10, message="the semantic answer kept")
