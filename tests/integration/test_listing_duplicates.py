"""One job, one listing: near-duplicates linked by the indexer (link_near_duplicates), out of
search and facets, answering by id with ``duplicate_of``, judged again after an edit, promoted
when their original closes (migration 0024). Real PostgreSQL, the real indexer queue, and
vectors the test chooses (``ChosenVectors``)."""

from __future__ import annotations

import asyncio
import math
import re
import uuid
from collections.abc import Sequence
from typing import Any

import httpx
import psycopg
import pytest

from shortlist.auth import Role
from shortlist.bootstrap import Services, indexer_workers, interactive_indexer_workers
from shortlist.config import Settings
from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncPool
from shortlist.embedding.spaces import Spaces
from shortlist.indexer import LISTINGS, EmbeddingQueue
from shortlist.listings.models import ListingCreate
from shortlist.listings.repository import copy_listings
from shortlist.queue import run_batch
from shortlist.queue.notify import Notifier
from tests.api_fixtures import MakeToken
from tests.fakes import DIM, FakeEmbedder, hash_embed
from tests.helpers import wait_for

_AT = re.compile(r"\(at ([0-9.]+)\)")
SOURCES = load_queries("shortlist.listings.sources")
LISTINGS_SQL = load_queries("shortlist.listings")


def at(distance: float) -> list[float]:
    """The unit vector at ``distance`` (cosine) from the first axis; two of them are as far
    apart as the cosine of the angle between them says."""
    cos = 1.0 - distance
    return [cos, math.sqrt(1.0 - cos * cos)] + [0.0] * (DIM - 2)


class ChosenVectors(FakeEmbedder):
    """A listing's vector is chosen by its description alone — company, title and city never
    move it: "(at D)" in the description is ``at(D)``; any other description (and a search
    query) is the fake embedder's bag of words."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        return [self.vector(text) for text in texts]

    @staticmethod
    def vector(text: str) -> list[float]:
        description = text.partition("\n")[2] or text
        chosen = _AT.search(description)
        return at(float(chosen.group(1))) if chosen else hash_embed(description)


@pytest.fixture
def embedder() -> ChosenVectors:
    return ChosenVectors()


async def index_all(pool: AsyncPool, embedder: FakeEmbedder, **kw: Any) -> int:
    """What the indexer does with everything claimable (pending and edited rows)."""
    queue = EmbeddingQueue(pool, embedder, LISTINGS, **kw)
    done = 0
    while claimed := await queue.claim("test-indexer", 100, 30.0):
        await run_batch(queue, "test-indexer", claimed)
        done += len(claimed)
    return done


async def links(pool: AsyncPool) -> dict[uuid.UUID, uuid.UUID | None]:
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT id, duplicate_of FROM job_listings")
        return {r["id"]: r["duplicate_of"] for r in await cur.fetchall()}


@pytest.fixture
async def admin(make_token: MakeToken) -> dict[str, str]:
    return {"Authorization": f"Bearer {await make_token('ops', Role.admin)}"}


async def post(
    client: httpx.AsyncClient,
    admin: dict[str, str],
    description: str,
    *,
    company: str = "Acme",
    city: str = "Leeds",
    title: str = "Welder",
) -> dict[str, Any]:
    response = await client.post(
        "/api/jobs",
        json={
            "company_name": company,
            "job_title": title,
            "city_location": city,
            "description": description,
        },
        headers=admin,
    )
    assert response.status_code == 201, response.text
    listing: dict[str, Any] = response.json()
    return listing


async def search(client: httpx.AsyncClient, q: str) -> tuple[list[str], dict[str, int]]:
    """The ids of the hits, and the city facet's counts."""
    body = (await client.get("/api/jobs/search", params={"q": q})).json()
    cities = {c["value"]: c["count"] for c in body["facets"]["city"]}
    return [h["listing"]["id"] for h in body["hits"]], cities


async def test_a_repost_is_linked_out_of_search_and_facets_and_answers_by_id(
    client: httpx.AsyncClient, admin: dict[str, str], pool: AsyncPool, embedder: ChosenVectors
) -> None:
    original = await post(client, admin, "Weld hulls in the dry dock. (at 0)")
    # Reposted a day later: the company and city written differently, a sentence added.
    repost = await post(
        client,
        admin,
        "Weld hulls in the dry dock. Night shifts. (at 0.01)",
        company="  ACME ",
        city="leeds",
    )
    assert await index_all(pool, embedder) == 2
    assert (await links(pool))[uuid.UUID(repost["id"])] == uuid.UUID(original["id"])

    hits, cities = await search(client, "welder dry dock hulls")
    assert hits == [original["id"]]
    assert sum(cities.values()) == 1

    answered = (await client.get(f"/api/jobs/{repost['id']}")).json()
    assert answered["duplicate_of"] == original["id"]
    assert answered["status"] == "open"
    assert (await client.get(f"/api/jobs/{original['id']}")).json()["duplicate_of"] is None

    page = (await client.get(f"/jobs/{repost['detail_page_slug']}")).text
    assert "also listed as" in page
    assert f'href="/jobs/{original["detail_page_slug"]}"' in page
    assert "also listed as" not in (await client.get(f"/jobs/{original['detail_page_slug']}")).text


async def test_other_jobs_companies_and_cities_are_not_linked(
    client: httpx.AsyncClient, admin: dict[str, str], pool: AsyncPool, embedder: ChosenVectors
) -> None:
    original = await post(client, admin, "Weld hulls. (at 0)")
    await post(client, admin, "Paint ships. (at 0.3)", title="Painter")
    other_company = await post(client, admin, "Weld hulls. (at 0)", company="Initech")
    other_city = await post(client, admin, "Weld hulls. (at 0)", city="York")
    # Just beyond SHORTLIST_DUPLICATE_DISTANCE (0.02 by default).
    beyond = await post(client, admin, "Weld hulls, any shift. (at 0.025)")
    await index_all(pool, embedder)
    assert set((await links(pool)).values()) == {None}
    hits, _ = await search(client, "welder hulls")
    for listing in (original, other_company, other_city, beyond):
        assert listing["id"] in hits


async def test_the_distance_is_the_setting_and_every_indexer_worker_gets_it(
    client: httpx.AsyncClient,
    admin: dict[str, str],
    pool: AsyncPool,
    db_url: str,
    embedder: ChosenVectors,
) -> None:
    original = await post(client, admin, "Weld hulls. (at 0)")
    near = await post(client, admin, "Weld hulls, any shift. (at 0.025)")
    await index_all(pool, embedder, duplicate_distance=0.03)
    assert (await links(pool))[uuid.UUID(near["id"])] == uuid.UUID(original["id"])

    spaces = Spaces.of_embedder(pool, embedder)
    await spaces.refresh()
    services = Services(
        settings=Settings(database_url=db_url, duplicate_distance=0.05),
        database_url=db_url,
        pool=pool,
        notifier=Notifier(db_url),
        spaces=spaces,
    )
    workers = [*indexer_workers(services, [LISTINGS]), *interactive_indexer_workers(services)]
    assert [w.queue.duplicate_distance for w in workers] == [0.05, 0.05]


async def test_an_edit_judges_the_link_again(
    client: httpx.AsyncClient, admin: dict[str, str], pool: AsyncPool, embedder: ChosenVectors
) -> None:
    original = await post(client, admin, "Weld hulls. (at 0)")
    repost = await post(client, admin, "Weld hulls at night. (at 0.01)")
    await index_all(pool, embedder)
    original_id, repost_id = uuid.UUID(original["id"]), uuid.UUID(repost["id"])
    assert (await links(pool))[repost_id] == original_id

    async def edit(listing: dict[str, Any], description: str) -> None:
        response = await client.patch(
            f"/api/jobs/{listing['id']}", json={"description": description}, headers=admin
        )
        assert response.status_code == 200, response.text
        assert await index_all(pool, embedder) == 1

    # The repost becomes another job: listed on its own again.
    await edit(repost, "Inspect welds on hulls. (at 0.4)")
    assert (await links(pool))[repost_id] is None
    assert repost["id"] in (await search(client, "hulls"))[0]
    # ... and back.
    await edit(repost, "Weld hulls at night. (at 0.01)")
    assert (await links(pool))[repost_id] == original_id
    # Only the original is re-embedded, into another job: its duplicate is judged again too.
    await edit(original, "Inspect welds on hulls. (at 0.4)")
    assert (await links(pool)) == {original_id: None, repost_id: None}
    hits, _ = await search(client, "hulls")
    assert set(hits) == {original["id"], repost["id"]}


async def test_closing_the_original_lists_its_oldest_duplicate_in_its_place(
    client: httpx.AsyncClient, admin: dict[str, str], pool: AsyncPool, embedder: ChosenVectors
) -> None:
    original = await post(client, admin, "Weld hulls. (at 0)")
    first = await post(client, admin, "Weld hulls. (at 0.005)")
    second = await post(client, admin, "Weld hulls. (at 0.01)")
    await index_all(pool, embedder)
    first_id, second_id = uuid.UUID(first["id"]), uuid.UUID(second["id"])
    assert (await links(pool))[second_id] == uuid.UUID(original["id"])

    closed = await client.delete(f"/api/jobs/{original['id']}", headers=admin)
    assert closed.status_code == 204
    assert await links(pool) == {
        uuid.UUID(original["id"]): None,
        first_id: None,
        second_id: first_id,
    }
    hits, cities = await search(client, "welder hulls")
    assert hits == [first["id"]] and cities == {"Leeds": 1}

    # Deleted (no API does it; the foreign key unlinks): the last one is listed again.
    async with pool.connection() as conn:
        await conn.execute("DELETE FROM job_listings WHERE id = %s", (first_id,))
    assert (await links(pool))[second_id] is None
    assert (await search(client, "welder hulls"))[0] == [second["id"]]


async def test_a_crawl_closing_an_original_and_its_duplicate_together(
    pool: AsyncPool, embedder: ChosenVectors
) -> None:
    """A crawl's close_gone closes both in one statement: the third is listed, and nobody
    points at a closed listing."""
    rows = [
        ListingCreate(
            company_name="Acme", job_title="Welder", city_location="Leeds", description=text
        )
        for text in ("Weld. (at 0)", "Weld. (at 0.01)", "Weld. (at 0.015)")
    ]
    async with pool.connection() as conn:
        await copy_listings(conn, rows, source="file")
    await index_all(pool, embedder)
    by_link = await links(pool)
    [original] = [i for i, o in by_link.items() if o is None]
    dups = [i for i, o in by_link.items() if o == original]
    assert len(dups) == 2
    async with pool.connection() as conn:
        cur = await conn.execute(
            SOURCES["close_gone"], {"ids": [original, dups[0]], "source": "greenhouse:acme"}
        )
        assert len(await cur.fetchall()) == 2
    assert await links(pool) == {original: None, dups[0]: None, dups[1]: None}


async def test_identical_rows_of_one_batch_repeat_one_original(
    pool: AsyncPool, embedder: ChosenVectors
) -> None:
    """A file (or a crawl) with one job three times: one COPY, so one created_at, and one
    indexer batch — two duplicates of the same original, not a chain; another company's copy
    is its own."""
    row = ListingCreate(
        company_name="Acme", job_title="Welder", city_location="Leeds", description="Weld."
    )
    async with pool.connection() as conn:
        await copy_listings(conn, [row, row, row], source="file")
        await copy_listings(
            conn, [row.model_copy(update={"company_name": "Globex"})], source="file"
        )
    assert await index_all(pool, embedder) == 4
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT id, company_name, duplicate_of FROM job_listings")
        by_company: dict[str, list[Any]] = {}
        for r in await cur.fetchall():
            by_company.setdefault(r["company_name"], []).append(r)
    [globex] = by_company["Globex"]
    assert globex["duplicate_of"] is None
    [acme] = [r["id"] for r in by_company["Acme"] if r["duplicate_of"] is None]
    assert sorted(str(r["duplicate_of"]) for r in by_company["Acme"]) == sorted(
        ["None", str(acme), str(acme)]
    )


async def test_an_original_closed_while_its_repost_is_linked_leaves_no_link_to_a_closed_one(
    client: httpx.AsyncClient,
    admin: dict[str, str],
    pool: AsyncPool,
    db_url: str,
    embedder: ChosenVectors,
) -> None:
    """The original closes in a transaction that has not committed when the indexer links its
    repost: the close promoted the duplicates it could see (none), so the link must wait for it
    and then name no closed listing. (Before the originals were locked, the repost was linked to
    the closed original, out of search for good.)"""
    original = await post(client, admin, "Weld hulls in the dry dock. (at 0)")
    assert await index_all(pool, embedder) == 1
    repost = await post(client, admin, "Weld hulls in the dry dock. Nights. (at 0.01)")
    closer = await psycopg.AsyncConnection.connect(db_url)
    try:
        await closer.execute(LISTINGS_SQL["close_listing"], {"id": original["id"]})
        indexing = asyncio.create_task(index_all(pool, embedder))

        async def waiting_for_the_close() -> bool:
            cur = await closer.execute(
                "SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'"
            )
            row = await cur.fetchone()
            return indexing.done() or (row is not None and row[0] > 0)

        await wait_for(waiting_for_the_close, timeout=10, message="the indexer at the close")
        await closer.commit()
        assert await asyncio.wait_for(indexing, 10) == 1
    finally:
        await closer.close()
    assert (await links(pool))[uuid.UUID(repost["id"])] is None
    hits, _ = await search(client, "welder dry dock hulls")
    assert hits == [repost["id"]]


async def test_a_repost_embedded_before_its_original_is_linked_when_the_original_is(
    client: httpx.AsyncClient, admin: dict[str, str], pool: AsyncPool, embedder: ChosenVectors
) -> None:
    """Rows are embedded out of their order (two workers, a retry): the repost, embedded
    first, found no original; the original's embedding links it then. A listing near the
    repost but not the original is no duplicate of the repost, which is a duplicate itself."""
    repost = await post(client, admin, "Weld hulls in the dry dock. Nights. (at 0.01)")
    assert await index_all(pool, embedder) == 1
    original = await post(client, admin, "Weld hulls in the dry dock. (at 0)")
    async with pool.connection() as conn:  # created first, embedded after (a slower worker)
        await conn.execute(
            "UPDATE job_listings SET created_at = created_at - interval '1 hour' WHERE id = %s",
            (original["id"],),
        )
    # 0.04 from the original (another job), 0.0101 from the repost.
    near_the_repost = await post(client, admin, "Weld hulls in the dry dock. (at 0.04)")
    assert await index_all(pool, embedder) == 2
    got = await links(pool)
    assert got[uuid.UUID(repost["id"])] == uuid.UUID(original["id"])
    assert got[uuid.UUID(original["id"])] is None
    assert got[uuid.UUID(near_the_repost["id"])] is None
    hits, _ = await search(client, "welder dry dock hulls")
    assert sorted(hits) == sorted([original["id"], near_the_repost["id"]])


# Issue #39's six cases: two roles of one company and city written from one description
# (the same vector), told apart by their titles or pay bands.
CSM = ("Customer Success Manager", 90, 110, "CAD")
SAME_DESCRIPTION_OTHER_JOB = [
    (CSM, ("Customer Success Manager, Technical", 115, 130, "CAD")),
    (("Account Executive", 240, 240, "USD"), ("Account Executive, Named", 309, 309, "USD")),
    (("Sales Development Rep", None, None, "USD"), ("Sales Associate", None, None, "USD")),
    (("Account Executive", 240, 240, "USD"), ("Account Executive", 309, 309, "USD")),
    (("Data Engineer", 120, 150, "USD"), ("Senior Data Engineer", 150, 180, "USD")),
    (("Nurse", 70, 80, "USD"), ("Nurse", 70, 80, "CAD")),
]  # fmt: skip


async def _post_paid(
    client: httpx.AsyncClient,
    admin: dict[str, str],
    job: tuple[str, int | None, int | None, str],
    description: str,
) -> dict[str, Any]:
    title, low, high, currency = job
    response = await client.post(
        "/api/jobs",
        json={
            "company_name": "Northpeak",
            "job_title": title,
            "city_location": "Toronto",
            "description": description,
            "salary_min_ks": low,
            "salary_max_ks": high,
            "currency_code": currency,
        },
        headers=admin,
    )
    assert response.status_code == 201, response.text
    listing: dict[str, Any] = response.json()
    return listing


@pytest.mark.parametrize("case", range(len(SAME_DESCRIPTION_OTHER_JOB)))
async def test_one_description_another_title_or_pay_is_another_job(
    client: httpx.AsyncClient,
    admin: dict[str, str],
    pool: AsyncPool,
    embedder: ChosenVectors,
    case: int,
) -> None:
    first, second = SAME_DESCRIPTION_OTHER_JOB[case]
    description = "Own a portfolio of customers and grow it with our team. (at 0)"
    await _post_paid(client, admin, first, description)
    await _post_paid(client, admin, second, description)
    assert await index_all(pool, embedder) == 2
    assert set((await links(pool)).values()) == {None}  # both listed


async def test_the_same_title_and_pay_with_one_description_is_one_job(
    client: httpx.AsyncClient, admin: dict[str, str], pool: AsyncPool, embedder: ChosenVectors
) -> None:
    job = CSM
    original = await _post_paid(client, admin, job, "Own a portfolio. (at 0)")
    repost = await _post_paid(client, admin, job, "Own a portfolio. (at 0.01)")
    # A repost that leaves the pay out does not disagree with it.
    unpaid = await _post_paid(client, admin, (job[0], None, None, "CAD"), "Own it. (at 0.005)")
    await index_all(pool, embedder)
    got = await links(pool)
    assert got[uuid.UUID(repost["id"])] == uuid.UUID(original["id"])
    assert got[uuid.UUID(unpaid["id"])] == uuid.UUID(original["id"])
