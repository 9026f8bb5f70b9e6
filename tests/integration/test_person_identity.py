"""One person, one candidate, whatever id each provider gave them (issue 38, "one identity per
person across providers and slugs"; migration 0031).

A LinkedIn member who changed their public URL keeps the old slug in PDL's record (Person
Schema, ``profiles[]``), Google may still link the old one, and a PDL record found without a
LinkedIn URL is named by its PDL id. Each test runs both orders the tiers can arrive in, on a
real PostgreSQL: the stub dedup before anyone is bought, the record that spares an enrichment,
the ingest that merges, and the append that never gives a search a second row of one person."""

from __future__ import annotations

from dataclasses import replace

from shortlist.db.types import AsyncPool
from shortlist.embedding.spaces import first_space
from shortlist.talent import repository as repo
from shortlist.talent.models import NewStub, Tier
from shortlist.talent.repository import CandidateRecord
from shortlist.talent.vendors.base import Profile
from tests.fakes import hash_embed
from tests.integration.rows import insert_search, one

FIRST = first_space(384)
NEW = "linkedin:jane-doe-4b2a1c"
OLD = "linkedin:janedoe77"
PDL = "pdl:qEnOZ5Oh0poWnQ1luFBfVw_0000"

RECORD = Profile(
    NEW,
    "jane-doe-4b2a1c",
    "Jane Doe",
    "Data Engineer",
    "Data Engineer",
    "engineering",
    aliases=(OLD, PDL),
)
# The PDL search hit: a whole record, its older slug and PDL id beside its current slug.
PDL_HIT = NewStub(NEW, "Jane Doe", RECORD, (OLD, PDL))
# The web hit: Google linked the old slug, and knows nothing else.
SERP_HIT = NewStub(OLD, "Jane Doe", None)


def person(external_id: str, aliases: tuple[str, ...] = ()) -> CandidateRecord:
    return CandidateRecord(
        external_id=external_id,
        source="talent_api",
        full_name="Jane Doe",
        headline="Data Engineer",
        role_title="Data Engineer",
        role_family="engineering",
        skills=["spark"],
        years_experience=6,
        location="Lisbon",
        email="jane@example.org",
        summary="",
        profile_url=None,
        aliases=aliases,
    )


async def _stubs(pool: AsyncPool, search_id: object) -> list[dict[str, object]]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT external_id, tier, enriched_profile IS NOT NULL AS has_record, credits"
            " FROM search_candidates WHERE search_id = %s ORDER BY id",
            (search_id,),
        )
        return list(await cur.fetchall())


async def test_a_pdl_record_first_keeps_the_web_hit_on_its_old_slug_out(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn)
        assert await repo.insert_stubs(conn, search, Tier.strict, [PDL_HIT]) == 1
        assert await repo.insert_stubs(conn, search, Tier.serp, [SERP_HIT]) == 0
        # by the PDL id as well (a record found again without its LinkedIn URL)
        by_id = NewStub(PDL, "Jane Doe", replace(RECORD, external_id=PDL), ())
        assert await repo.insert_stubs(conn, search, Tier.broad, [by_id]) == 0
    assert {OLD, NEW, PDL} <= await repo.known_external_ids(pool, search)
    assert await _stubs(pool, search) == [
        {"external_id": NEW, "tier": "strict", "has_record": True, "credits": 1}
    ]


async def test_a_web_hit_first_gets_the_pdl_record_and_is_never_enriched(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn)
        assert await repo.insert_stubs(conn, search, Tier.serp, [SERP_HIT]) == 1
        # The search page paid for the record: it goes onto the queued web hit.
        assert await repo.insert_stubs(conn, search, Tier.strict, [PDL_HIT]) == 0
    assert await _stubs(pool, search) == [
        {"external_id": OLD, "tier": "serp", "has_record": True, "credits": 1}
    ]
    [claimed] = await repo.claim_candidates(pool, "w1", 10, 30.0)
    assert claimed.enriched is not None and claimed.enriched.external_id == NEW


async def test_ingest_under_an_old_slug_merges_into_the_persons_row(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        current = await repo.upsert_candidate(conn, person(NEW, (OLD,)), hash_embed("a"), FIRST)
        # enriched by the old slug a web hit linked: the same person, the same row
        again = await repo.upsert_candidate(conn, person(OLD, (NEW, PDL)), hash_embed("b"), FIRST)
        row = await one(conn, "SELECT count(*) AS n, min(external_id) AS id FROM candidates")
        aliases = await one(conn, "SELECT aliases FROM candidates WHERE id = %s", (current,))
    assert again == current
    assert row == {"n": 1, "id": NEW}
    assert aliases is not None and sorted(aliases["aliases"]) == sorted([OLD, PDL])


async def test_two_rows_of_one_person_never_both_become_results(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn)
        # Two rows of one person, ingested side by side before either knew the other's id.
        first = await repo.upsert_candidate(conn, person(OLD), hash_embed("a"), FIRST)
        second = await repo.upsert_candidate(conn, person(NEW), hash_embed("b"), FIRST)
        await conn.execute("UPDATE candidates SET aliases = %s WHERE id = %s", ([OLD], second))
        assert first != second
        append = {"search_candidate_id": None, "tier": Tier.serp, "score": 0.9}
        assert await repo.append_result(conn, search_id=search, candidate_id=second, **append)
        assert (
            await repo.append_result(conn, search_id=search, candidate_id=first, **append) is None
        )
        row = await one(conn, "SELECT result_count FROM searches WHERE id = %s", (search,))
    assert row == {"result_count": 1}
