"""One test per named statement of the candidate-search pipeline (shortlist/talent/queries.sql),
run through the repository function that wraps it. Guarded transitions first: each moves the
rows it may move and leaves a row in the wrong state untouched; a worker's own moves run after
the settle of its lease (``shortlist.queue``), which leaves a row another worker holds alone."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import uuid
from dataclasses import replace

import psycopg
import pytest

from shortlist.db import channels
from shortlist.db.types import AsyncPool
from shortlist.embedding.model_space import first_space
from shortlist.queue import DONE, GIVE_BACK, Retry
from shortlist.talent import repository as repo
from shortlist.talent.brief import Brief
from shortlist.talent.candidates import CandidateQueue
from shortlist.talent.ingest import CandidateCreate, insert_candidates
from shortlist.talent.models import CandidateStatus, NewStub, Tier, TierStatus
from shortlist.talent.repository import CandidateRecord, CorpusFilters, CorpusHit
from shortlist.talent.sample import SAMPLE_SIZE, load_sample_candidates
from shortlist.talent.tiers import TierQueue
from shortlist.talent.vendors.base import Profile
from tests.fakes import hash_embed
from tests.integration.rows import (
    EXPIRED_LEASE,
    OTHER_WORKER,
    WORKER,
    insert_candidate,
    insert_result,
    insert_search,
    insert_stub,
    insert_tier,
    insert_token,
    one,
    status_of,
)

# --- tiers ------------------------------------------------------------------------------------

FIRST = first_space(384)
"""The model space of the original columns, which these tests' vectors are in."""


async def test_claim_tiers_takes_due_tiers_of_running_searches_short_of_target(
    pool: AsyncPool,
) -> None:
    async with pool.connection() as conn:
        wanted = await insert_tier(conn, await insert_search(conn))
        not_due = await insert_tier(conn, await insert_search(conn), not_before_in=600)
        of_stale = await insert_tier(conn, await insert_search(conn, status="stale"))
        full = await insert_search(conn, target=1)
        await insert_stub(conn, full, "p1")  # one in flight: the target is covered
        of_full = await insert_tier(conn, full)
        held = await insert_tier(conn, await insert_search(conn), status="running")

    claimed = await repo.claim_tiers(pool, OTHER_WORKER, 10, 30.0)

    assert [t.id for t in claimed] == [wanted]
    assert claimed[0].attempts == 1
    async with pool.connection() as conn:
        assert (await status_of(conn, "search_tiers", wanted))["locked_by"] == OTHER_WORKER
        for untouched in (not_due, of_stale, of_full):
            assert (await status_of(conn, "search_tiers", untouched))["status"] == "queued"
        assert (await status_of(conn, "search_tiers", held))["locked_by"] == WORKER


HELD = (
    NewStub("serp:held", "Held Person", None),
    NewStub(
        "pdl:ada",
        "Ada",
        Profile("pdl:ada", "ada", "Ada", "Engineer", "Engineer", "software", skills=["Rust"]),
    ),
)


@pytest.mark.parametrize(
    ("has_more", "fetched", "held", "status", "next_page", "provider_done"),
    [
        (True, True, (), TierStatus.queued, 2, False),
        (False, True, (), TierStatus.exhausted, 2, True),
        # the provider's last page, some of it held: queued until the held people are taken
        (False, True, HELD, TierStatus.queued, 2, True),
        # held people taken, the provider has more: same page number, the next one is asked
        (True, False, (), TierStatus.queued, 1, False),
        (False, False, (), TierStatus.exhausted, 1, True),
    ],
)
async def test_tier_page_done(
    pool: AsyncPool,
    has_more: bool,
    fetched: bool,
    held: tuple[NewStub, ...],
    status: TierStatus,
    next_page: int,
    provider_done: bool,
) -> None:
    async with pool.connection() as conn:
        tier = await insert_tier(conn, await insert_search(conn), status="running", attempts=2)
        done = functools.partial(
            repo.tier_page_done, conn, tier, found=3, has_more=has_more, fetched=fetched, held=held
        )
        assert await done(cursor="next") == status
        assert await done(cursor="next") is None  # no longer running
        assert await TierQueue.leases.settle(conn, OTHER_WORKER, {tier: DONE}) == set()
        assert await TierQueue.leases.settle(conn, WORKER, {tier: DONE}) == {tier}
        row = await one(
            conn,
            "SELECT next_page, found, attempts, locked_by, cursor, provider_done, held"
            " FROM search_tiers WHERE id = %s",
            (tier,),
        )
    assert row == {
        "next_page": next_page,
        "found": 3,
        "attempts": 0,
        "locked_by": None,
        "cursor": "next" if fetched else None,
        "provider_done": provider_done,
        "held": [
            {"external_id": h.external_id, "display_name": h.display_name}
            | {
                "profile": json.loads(json.dumps(dataclasses.asdict(h.profile)))
                if h.profile
                else None
            }
            | {"aliases": list(h.aliases)}
            for h in held
        ],
    }
    claimed = await repo.claim_tiers(pool, OTHER_WORKER, 10, 30.0)
    if status is TierStatus.queued:
        assert [(t.id, t.held, t.provider_done) for t in claimed] == [(tier, held, provider_done)]


async def test_tier_outcome_retry_requeues_for_later_only_for_the_holder(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        tier = await insert_tier(conn, await insert_search(conn), status="running")
        throttled = {tier: Retry(after=30, reason="429")}
        assert await TierQueue.leases.settle(conn, OTHER_WORKER, throttled) == set()
        assert (await status_of(conn, "search_tiers", tier))["status"] == "running"
        assert await TierQueue.leases.settle(conn, WORKER, throttled) == {tier}
        row = await one(
            conn,
            "SELECT status::text AS status, last_error, not_before > now() + interval '20 s'"
            " AS later, locked_by FROM search_tiers WHERE id = %s",
            (tier,),
        )
    assert row == {"status": "queued", "last_error": "429", "later": True, "locked_by": None}


async def test_tier_outcome_give_back_is_not_a_lost_claim(pool: AsyncPool) -> None:
    # attempts counts the claims of a page whose worker was lost (reap_lost_tiers): a claim
    # its live worker gave back (a database outage, a dropped page) is taken off again.
    async with pool.connection() as conn:
        tier = await insert_tier(conn, await insert_search(conn), status="running", attempts=3)
        assert await TierQueue.leases.settle(conn, WORKER, {tier: GIVE_BACK}) == {tier}
        row = await status_of(conn, "search_tiers", tier)
    assert (row["status"], row["attempts"], row["locked_by"]) == ("queued", 2, None)


async def test_tier_failed_only_for_a_running_tier_its_holder_settled(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn)
        tier = await insert_tier(conn, search, status="running")
        queued = await insert_tier(conn, search, "broad")
        assert not await repo.tier_failed(conn, queued, error="boom")
        assert await repo.tier_failed(conn, tier, error="boom")
        assert not await repo.tier_failed(conn, tier, error="boom")
        assert await TierQueue.leases.settle(conn, OTHER_WORKER, {tier: DONE}) == set()
        assert await TierQueue.leases.settle(conn, WORKER, {tier: DONE}) == {tier}
        row = await status_of(conn, "search_tiers", tier)
        assert (await status_of(conn, "search_tiers", queued))["status"] == "queued"
    assert (row["status"], row["last_error"], row["locked_by"]) == ("failed", "boom", None)


# --- candidates -------------------------------------------------------------------------------


async def test_claim_candidates_takes_queued_stubs_of_running_searches(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        running = await insert_search(conn)
        wanted = await insert_stub(conn, running, "p1")
        held = await insert_stub(conn, running, "p2", status="running")
        failed = await insert_stub(conn, running, "p3", status="failed_transient")
        of_stale = await insert_stub(conn, await insert_search(conn, status="stale"), "p4")

    claimed = await repo.claim_candidates(pool, OTHER_WORKER, 10, 30.0)

    assert [(s.id, s.external_id, s.attempts, s.tier) for s in claimed] == [
        (wanted, "p1", 1, Tier.strict)
    ]
    async with pool.connection() as conn:
        assert (await status_of(conn, "search_candidates", wanted))["locked_by"] == OTHER_WORKER
        assert (await status_of(conn, "search_candidates", held))["locked_by"] == WORKER
        assert (await status_of(conn, "search_candidates", failed))["status"] == "failed_transient"
        assert (await status_of(conn, "search_candidates", of_stale))["status"] == "queued"


async def _with_record(conn: psycopg.AsyncConnection, stub: int) -> None:
    """The stub carries the whole record a search page paid for (no enrichment to buy)."""
    await conn.execute(
        "UPDATE search_candidates SET enriched_profile = '{}'::jsonb WHERE id = %s", (stub,)
    )


async def test_a_paid_enrichment_waits_while_a_page_of_records_is_out_or_due(
    pool: AsyncPool,
) -> None:
    # records_first (PDL: a search page carries whole records, each already billed): a web hit
    # is not enriched (bought) while a strict or broad page that may fill the target is out or
    # due; a record is; a page deferred by a 429 holds nothing; without records_first nothing
    # waits (the generic talent API's stubs need an enrichment too).
    async with pool.connection() as conn:
        search = await insert_search(conn)
        strict = await insert_tier(conn, search, status="running")
        web = await insert_stub(conn, search, "linkedin:web", tier="serp")
        record = await insert_stub(conn, search, "linkedin:rec")
        await _with_record(conn, record)
        await conn.commit()

    claimed = await repo.claim_candidates(pool, OTHER_WORKER, 10, 30.0, records_first=True)
    assert [s.id for s in claimed] == [record]

    async with pool.connection() as conn:
        await conn.execute(
            "UPDATE search_tiers SET status = 'queued', locked_by = NULL WHERE id = %s", (strict,)
        )
        await conn.commit()
    assert await repo.claim_candidates(pool, OTHER_WORKER, 10, 30.0, records_first=True) == []
    async with pool.connection() as conn:
        await conn.execute(
            "UPDATE search_tiers SET not_before = now() + interval '1 minute' WHERE id = %s",
            (strict,),
        )
        await conn.commit()
    # ... and so is a due broad page that waits behind strict's deferred first page.
    async with pool.connection() as conn:
        await insert_tier(conn, search, "broad")
        await conn.commit()
    claimed = await repo.claim_candidates(pool, OTHER_WORKER, 10, 30.0, records_first=True)
    assert [s.id for s in claimed] == [web]

    async with pool.connection() as conn:
        other = await insert_search(conn)
        await insert_tier(conn, other, "broad", status="running")
        plain = await insert_stub(conn, other, "talent:plain", tier="serp")
        await conn.commit()
    claimed = await repo.claim_candidates(pool, OTHER_WORKER, 10, 30.0)
    assert [s.id for s in claimed] == [plain]


async def test_a_page_of_records_is_asked_for_before_queued_web_hits_are_bought(
    pool: AsyncPool,
) -> None:
    # Web hits queued but not enriched (bought) yet do not cover the target for a strict or
    # broad page of records (records_first): that tier is claimed and asks for the whole
    # shortfall; the serp tier counts them as before, and so does everything without
    # records_first.
    async with pool.connection() as conn:
        search = await insert_search(conn, target=5)
        for n in range(4):
            await insert_stub(conn, search, f"linkedin:web{n}", tier="serp")
        record = await insert_stub(conn, search, "linkedin:rec")
        await _with_record(conn, record)
        strict = await insert_tier(conn, search)
        await insert_tier(conn, search, "serp")
        await conn.commit()
        assert await repo.records_wanted(conn, search) == 0
        assert await repo.records_wanted(conn, search, records_first=True) == 4
        assert await repo.search_shortfall(conn, search) == 0
        assert await repo.search_shortfall(conn, search, records_first=True) == 4

    assert await repo.claim_tiers(pool, OTHER_WORKER, 10, 30.0) == []
    claimed = await repo.claim_tiers(pool, OTHER_WORKER, 10, 30.0, records_first=True)
    assert [t.id for t in claimed] == [strict]


async def test_settling_a_candidate_proves_the_lease(pool: AsyncPool) -> None:
    leases = CandidateQueue.leases
    async with pool.connection() as conn:
        search = await insert_search(conn)
        running = await insert_stub(conn, search, "p1", status="running")
        theirs = await insert_stub(conn, search, "p2", status="running", locked_by=OTHER_WORKER)
        assert await leases.settle(conn, WORKER, {running: GIVE_BACK, theirs: GIVE_BACK}) == {
            running
        }
        assert (await status_of(conn, "search_candidates", running))["status"] == "queued"
        assert (await status_of(conn, "search_candidates", theirs))["status"] == "running"
        assert await leases.settle(conn, WORKER, {running: GIVE_BACK}) == set()


async def test_finish_candidate_only_of_a_running_stub_its_holder_settled(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn)
        person = await insert_candidate(conn, "Ada", external_id="talent:ada")
        stub = await insert_stub(conn, search, "talent:ada", status="running")
        await conn.execute(
            "UPDATE search_candidates SET enriched_profile = '{}' WHERE id = %s", (stub,)
        )
        ok = CandidateStatus.succeeded
        assert await repo.finish_candidate(conn, stub, ok, candidate_id=person)
        assert not await repo.finish_candidate(conn, stub, ok, candidate_id=person)
        assert await CandidateQueue.leases.settle(conn, OTHER_WORKER, {stub: DONE}) == set()
        assert (await status_of(conn, "search_candidates", stub))["locked_by"] == WORKER
        assert await CandidateQueue.leases.settle(conn, WORKER, {stub: DONE}) == {stub}
        row = await one(
            conn,
            "SELECT status::text AS status, candidate_id, enriched_profile, locked_by"
            " FROM search_candidates WHERE id = %s",
            (stub,),
        )
    assert row == {
        "status": "succeeded",
        "candidate_id": person,
        "enriched_profile": None,
        "locked_by": None,
    }


async def test_keep_enriched_profile_only_with_the_holders_give_back(pool: AsyncPool) -> None:
    """Only of a running stub (``queued``'s is refused), kept only when the settle that gives it
    back finds the lease still the worker's."""
    async with pool.connection() as conn:
        search = await insert_search(conn)
        mine = await insert_stub(conn, search, "talent:ada", status="running")
        theirs = await insert_stub(conn, search, "talent:bob", status="running", locked_by="w3")
        queued = await insert_stub(conn, search, "talent:cy")
    profile = Profile("talent:ada", "ada", "Ada", "Engineer", "Engineer", "software")

    async with pool.connection() as conn:
        assert not await repo.keep_enriched_profile(conn, queued, profile)
    for stub in (mine, theirs):
        async with pool.connection() as conn, conn.transaction() as tx:
            assert await repo.keep_enriched_profile(conn, stub, profile)
            if not await CandidateQueue.leases.settle(conn, WORKER, {stub: GIVE_BACK}):
                raise psycopg.Rollback(tx)  # the holder's give-back or nothing (CandidateQueue)

    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT id, enriched_profile ->> 'username' AS username FROM search_candidates"
            " ORDER BY id"
        )
        assert await cur.fetchall() == [
            {"id": mine, "username": "ada"},
            {"id": theirs, "username": None},
            {"id": queued, "username": None},
        ]


# --- the reaper -------------------------------------------------------------------------------


async def test_reap_lost_candidates_requeues_then_fails_forward(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn)
        lost = await insert_stub(conn, search, "p1", status="running", lease=EXPIRED_LEASE)
        lost_often = await insert_stub(
            conn, search, "p2", status="running", lease=EXPIRED_LEASE, lost_workers=2
        )
        live = await insert_stub(conn, search, "p3", status="running")
        queued = await insert_stub(conn, search, "p4")
        reaped = await repo.reap_lost_candidates(conn, max_lost=3)
        assert sorted((r["id"], r["status"]) for r in reaped) == [
            (lost, "queued"),
            (lost_often, "failed_transient"),
        ]
        failed = await status_of(conn, "search_candidates", lost_often)
        assert failed["last_error"] == "worker lost 3 times (lease expired)"
        assert (await status_of(conn, "search_candidates", live))["locked_by"] == WORKER
        assert (await status_of(conn, "search_candidates", queued))["status"] == "queued"


async def test_reap_lost_tiers_requeues_then_fails(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn)
        lost = await insert_tier(conn, search, status="running", lease=EXPIRED_LEASE, attempts=1)
        lost_often = await insert_tier(
            conn, search, "broad", status="running", lease=EXPIRED_LEASE, attempts=3
        )
        live = await insert_tier(conn, search, "serp", status="running", attempts=5)
        reaped = await repo.reap_lost_tiers(conn, max_lost=3)
        assert sorted((r["id"], r["status"]) for r in reaped) == [
            (lost, "queued"),
            (lost_often, "failed"),
        ]
        assert (await status_of(conn, "search_tiers", live))["status"] == "running"


async def test_reap_after_an_outage_requeues_without_counting_lost_workers(pool: AsyncPool) -> None:
    # Leases that ran out while the database was down: their workers may be alive.
    async with pool.connection() as conn:
        search = await insert_search(conn)
        stub = await insert_stub(
            conn, search, "p1", status="running", lease=EXPIRED_LEASE, lost_workers=2
        )
        tier = await insert_tier(conn, search, status="running", lease=EXPIRED_LEASE, attempts=3)
        reaped = await repo.reap_lost_candidates(conn, max_lost=3, counted=False)
        assert [(r["id"], r["status"]) for r in reaped] == [(stub, "queued")]
        tiers = await repo.reap_lost_tiers(conn, max_lost=3, counted=False)
        assert [(r["id"], r["status"]) for r in tiers] == [(tier, "queued")]
        stub_row = await one(
            conn,
            "SELECT lost_workers, last_error, locked_by FROM search_candidates WHERE id = %s",
            (stub,),
        )
        tier_row = await status_of(conn, "search_tiers", tier)
    assert stub_row == {"lost_workers": 2, "last_error": None, "locked_by": None}
    assert (tier_row["attempts"], tier_row["last_error"], tier_row["locked_by"]) == (2, None, None)


async def test_mark_stale_searches_spares_recent_progress_and_live_leases(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        idle = await insert_search(conn, idle_seconds=600)
        recent = await insert_search(conn, idle_seconds=5)
        working = await insert_search(conn, idle_seconds=600)
        await insert_stub(conn, working, "p1", status="running")
        lost = await insert_search(conn, idle_seconds=600)
        await insert_stub(conn, lost, "p1", status="running", lease=EXPIRED_LEASE)
        done = await insert_search(conn, status="complete", idle_seconds=600)
        assert sorted(await repo.mark_stale_searches(conn, stale_after=60)) == sorted([idle, lost])
        for search, status in ((recent, "running"), (working, "running"), (done, "complete")):
            assert (await status_of(conn, "searches", search))["status"] == status


async def test_running_searches_without_work(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        nothing_left = await insert_search(conn)
        await insert_tier(conn, nothing_left, status="exhausted")
        target_reached = await insert_search(conn, target=1)
        await insert_tier(conn, target_reached)
        await insert_result(conn, target_reached, await insert_candidate(conn, "Ada"))
        with_stub = await insert_search(conn)
        await insert_stub(conn, with_stub, "p1")
        with_tier = await insert_search(conn)
        await insert_tier(conn, with_tier)
        await insert_search(conn, status="stale")
        found = await repo.running_searches_without_work(conn)
    assert sorted(found) == sorted([nothing_left, target_reached])


async def test_complete_search_if_done(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        done = await insert_search(conn)
        await insert_tier(conn, done, status="exhausted")
        busy = await insert_search(conn)
        await insert_stub(conn, busy, "p1", status="running")
        stale = await insert_search(conn, status="stale")
        assert await repo.complete_search_if_done(conn, done)
        assert not await repo.complete_search_if_done(conn, busy)
        assert not await repo.complete_search_if_done(conn, stale)
        assert not await repo.complete_search_if_done(conn, uuid.uuid4())
        finished = await status_of(conn, "searches", done)
        assert (finished["status"], finished["finished_at"] is not None) == ("complete", True)
        assert (await status_of(conn, "searches", busy))["status"] == "running"
        assert (await status_of(conn, "searches", stale))["status"] == "stale"


async def test_lock_search_blocks_a_second_writer_until_commit(
    pool: AsyncPool, db_url: str
) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn, target=7)
    async with pool.connection() as holder:
        row = await repo.lock_search(holder, search)
        assert row is not None
        assert {k: row[k] for k in ("status", "result_count", "target_count")} == {
            "status": "running",
            "result_count": 0,
            "target_count": 7,
        }
        assert row["org_id"] is not None  # the transaction acts for it from here
        async with await psycopg.AsyncConnection.connect(db_url) as other:
            await other.execute("SET lock_timeout = '100ms'")
            with pytest.raises(psycopg.errors.LockNotAvailable):
                await other.execute(
                    "UPDATE searches SET last_progress_at = now() WHERE id = %s", (search,)
                )
        assert await repo.lock_search(holder, uuid.uuid4()) is None


# --- starting a search ------------------------------------------------------------------------


async def test_insert_search(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn)
        owner = (await one(conn, "SELECT owner_token_id AS o FROM searches"))["o"]
        new = await repo.insert_search(
            conn,
            owner_token_id=owner,
            query="rust developer",
            role="Engineer",
            location=None,
            min_years=3,
            skills=["rust"],
            embedding=hash_embed("rust developer"),
            model_id=1,
            target_count=20,
            brief=Brief(role="Rust Developer", min_years_experience=3, skills=("rust",)),
            credit_budget=50,
        )
        record = await repo.get_search(conn, new)
    assert new != search
    assert record is not None
    assert (record.query, record.role, record.min_years_experience, record.skills) == (
        "rust developer",
        "Engineer",
        3,
        ["rust"],
    )
    assert (record.status, record.result_count, record.target_count) == ("running", 0, 20)
    assert not record.backfill_started


async def test_search_corpus_applies_filters_and_the_score_floor(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        match = await insert_candidate(conn, "Ada", skills=("python",), location="Berlin", years=6)
        await insert_candidate(conn, "Bob", skills=("python",), location="Paris", years=6)
        await insert_candidate(conn, "Cy", skills=("python",), location="Berlin", years=1)
        await insert_candidate(conn, "Di", skills=("go",), location="Berlin", years=6)
        text = "Engineer python Berlin"
        hits = await repo.search_corpus(
            conn,
            space=FIRST,
            embedding=hash_embed(text),
            text=text,
            filters=CorpusFilters(location="berlin", min_years=5, skills=["Python"]),
            min_score=0.5,
            limit=10,
            pool_size=50,
        )
        unrelated = await repo.search_corpus(
            conn,
            space=FIRST,
            embedding=hash_embed("florist amsterdam tulips"),
            text="florist",
            filters=CorpusFilters(location=None, min_years=None, skills=[]),
            min_score=0.9,
            limit=10,
            pool_size=50,
        )
    assert [h.candidate_id for h in hits] == [match]
    assert unrelated == []


async def test_a_backfilled_person_scores_as_the_same_person_found_internally(
    pool: AsyncPool,
) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn, query="python engineer")
        ada = await insert_candidate(conn, "Ada", role_title="Python Engineer")
        florist = await insert_candidate(
            conn, "Flo", role_title="Florist", skills=("tulips",), location="Amsterdam"
        )
        found = await repo.search_corpus(
            conn,
            space=FIRST,
            embedding=hash_embed("python engineer"),
            text="python engineer",
            filters=CorpusFilters(location=None, min_years=None, skills=[]),
            min_score=0.0,
            limit=10,
            pool_size=50,
        )
        internal = {h.candidate_id: h.score for h in found}
        backfilled = {c: await repo.backfill_score(conn, search, c, FIRST) for c in (ada, florist)}
    assert backfilled[ada] == pytest.approx(internal[ada], abs=1e-6)
    # The florist stays under the default relevance floor (SHORTLIST_INTERNAL_MIN_SCORE 0.5).
    assert backfilled[ada] > 0.9 > 0.5 > backfilled[florist]


async def test_append_internal_hits_only_on_a_search_without_results(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn)
        ada = await insert_candidate(conn, "Ada")
        hits = [CorpusHit(ada, 0.9), CorpusHit(await insert_candidate(conn, "Bob"), 0.8)]
        assert await repo.append_internal_hits(conn, search, hits) == 2
        ranks = await conn.execute(
            "SELECT rank, tier, score FROM search_results WHERE search_id = %s ORDER BY rank",
            (search,),
        )
        assert [(r["rank"], r["tier"]) for r in await ranks.fetchall()] == [
            (1, "internal"),
            (2, "internal"),
        ]
    async with pool.connection() as conn:
        with pytest.raises(RuntimeError, match="already had results"):
            await repo.append_internal_hits(conn, search, [])


async def test_start_backfill_queues_the_three_tiers_of_a_running_search(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn, backfill_started=False)
        assert await repo.start_backfill(conn, search)
        assert await repo.start_backfill(conn, search)  # idempotent: tiers exist once
        tiers = await repo.tiers_of_search(conn, search)
        stale = await insert_search(conn, status="stale", backfill_started=False)
        assert not await repo.start_backfill(conn, stale)
        assert await one(conn, "SELECT backfill_started FROM searches WHERE id = %s", (stale,)) == {
            "backfill_started": False
        }
        assert await repo.tiers_of_search(conn, stale) == []  # a refused start queues nothing
    assert [(t["tier"], t["status"]) for t in tiers] == [
        ("strict", "queued"),
        ("broad", "queued"),
        ("serp", "queued"),
    ]


async def test_complete_without_backfill_only_before_backfill(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        quick = await insert_search(conn, backfill_started=False)
        backfilling = await insert_search(conn, backfill_started=True)
        assert await repo.complete_without_backfill(conn, quick)
        assert not await repo.complete_without_backfill(conn, quick)
        assert not await repo.complete_without_backfill(conn, backfilling)
        assert (await status_of(conn, "searches", quick))["status"] == "complete"
        assert (await status_of(conn, "searches", backfilling))["status"] == "running"


async def test_touch_search_restarts_the_clock_of_running_searches_only(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        running = await insert_search(conn, idle_seconds=600)
        stale = await insert_search(conn, status="stale", idle_seconds=600)
        for search in (running, stale):
            await repo.touch_search(conn, search)
        cur = await conn.execute(
            "SELECT id, last_progress_at > now() - interval '1 minute' AS fresh FROM searches"
        )
        fresh = {r["id"]: r["fresh"] for r in await cur.fetchall()}
    assert fresh == {running: True, stale: False}


# --- discovery bookkeeping --------------------------------------------------------------------


async def test_insert_stubs_counts_only_new_people(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn)
        await insert_stub(conn, search, "talent:ada")
        new = await repo.insert_stubs(
            conn,
            search,
            Tier.broad,
            [NewStub("talent:ada", "Ada", None), NewStub("talent:bob", "Bob", None)],
        )
        cur = await conn.execute(
            "SELECT external_id, tier, status::text AS status FROM search_candidates ORDER BY id"
        )
        rows = [tuple(r.values()) for r in await cur.fetchall()]
    assert new == 1
    assert rows == [("talent:ada", "strict", "queued"), ("talent:bob", "broad", "queued")]


async def test_known_external_ids_are_stubs_and_provider_hits(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn)
        other = await insert_search(conn)
        await insert_stub(conn, search, "talent:ada", status="failed_permanent")
        await insert_stub(conn, other, "talent:eve")
        await insert_result(
            conn, search, await insert_candidate(conn, "Bob", external_id="serp:bob")
        )
        await insert_result(conn, search, await insert_candidate(conn, "Internal Cy"))
    assert await repo.known_external_ids(pool, search) == {"talent:ada", "serp:bob"}


async def test_search_shortfall_counts_results_and_work_in_flight(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn, target=10)
        await insert_result(conn, search, await insert_candidate(conn, "Ada"))
        await insert_stub(conn, search, "p1")
        await insert_stub(conn, search, "p2", status="running")
        await insert_stub(conn, search, "p3", status="failed_no_email")
        assert await repo.search_shortfall(conn, search) == 10 - 1 - 2
        assert await repo.search_shortfall(conn, uuid.uuid4()) == 0


# --- ingesting a backfilled profile -----------------------------------------------------------


ADA = CandidateRecord(
    external_id="talent:ada",
    source="talent_api",
    full_name="Ada Lovelace",
    headline="Analyst",
    role_title="Engineer",
    role_family="software",
    skills=["python", "math"],
    years_experience=9,
    location="London",
    email="ada@example.org",
    summary="",
    profile_url=None,
)


async def test_candidate_text_is_the_indexers_text(pool: AsyncPool) -> None:
    text = await repo.candidate_text(pool, ADA)
    assert text == "Ada Lovelace\nAnalyst\nEngineer, London\nSkills: python, math"
    assert "ada@example.org" not in text


async def test_upsert_candidate_ingests_embedded_and_refreshes_by_external_id(
    pool: AsyncPool,
) -> None:
    async with pool.connection() as conn:
        first = await repo.upsert_candidate(conn, ADA, hash_embed("ada"), FIRST)
        again = await repo.upsert_candidate(
            conn, replace(ADA, location="Paris"), hash_embed("ada 2"), FIRST
        )
        row = await one(
            conn,
            "SELECT count(*) OVER () AS n, location, embedding_status::text AS status,"
            " embedded_hash = content_hash AS hash_matches, embedded_at >= updated_at AS fresh"
            " FROM candidates",
        )
    assert again == first
    assert row == {
        "n": 1,
        "location": "Paris",
        "status": "embedded",
        "hash_matches": True,
        "fresh": True,
    }


async def test_mark_candidate_embedded_keeps_the_row_from_the_indexers_claim(
    pool: AsyncPool,
) -> None:
    async with pool.connection() as conn:
        person = await repo.upsert_candidate(conn, ADA, hash_embed("ada"), FIRST)
        # an edit whose new embedding comes with it: the touch trigger moves updated_at
        await repo.upsert_candidate(conn, replace(ADA, summary="New"), hash_embed("ada new"), FIRST)
        claimable = await one(
            conn,
            "SELECT embedding_status = 'pending' OR updated_at > embedded_at AS claimable"
            " FROM candidates WHERE id = %s",
            (person,),
        )
    assert claimable == {"claimable": False}


# --- retries ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "retried"),
    [(s.value, s.value.startswith("failed")) for s in CandidateStatus],
)
async def test_retry_candidate_only_from_a_failed_state(
    pool: AsyncPool, status: str, retried: bool
) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn)
        stub = await insert_stub(conn, search, "p1", status=status, lost_workers=2)
        assert not await repo.retry_candidate(conn, await insert_search(conn), stub)
        assert await repo.retry_candidate(conn, search, stub) == retried
        row = await one(
            conn,
            "SELECT status::text AS status, lost_workers, last_error FROM search_candidates"
            " WHERE id = %s",
            (stub,),
        )
    if retried:
        assert row == {"status": "queued", "lost_workers": 0, "last_error": None}
    else:
        assert row["status"] == status


async def test_requeue_failed_candidates_takes_transient_failures_and_lost_leases(
    pool: AsyncPool,
) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn)
        transient = await insert_stub(conn, search, "p1", status="failed_transient")
        lost = await insert_stub(conn, search, "p2", status="running", lease=EXPIRED_LEASE)
        keep = {
            await insert_stub(conn, search, "p3", status="failed_permanent"): "failed_permanent",
            await insert_stub(conn, search, "p4", status="failed_no_email"): "failed_no_email",
            await insert_stub(conn, search, "p5", status="running"): "running",
            await insert_stub(conn, search, "p6", status="succeeded"): "succeeded",
        }
        await insert_stub(conn, await insert_search(conn), "p1", status="failed_transient")
        assert await repo.requeue_failed_candidates(conn, search) == 2
        for stub in (transient, lost):
            assert (await status_of(conn, "search_candidates", stub))["status"] == "queued"
        for stub, status in keep.items():
            assert (await status_of(conn, "search_candidates", stub))["status"] == status


async def test_requeue_failed_tiers_takes_failures_and_lost_leases(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn)
        await insert_tier(conn, search, "strict", status="failed")
        await insert_tier(conn, search, "broad", status="running", lease=EXPIRED_LEASE)
        await insert_tier(conn, search, "serp", status="exhausted")
        live = await insert_search(conn)
        await insert_tier(conn, live, "strict", status="running")
        assert await repo.requeue_failed_tiers(conn, search) == 2
        assert await repo.requeue_failed_tiers(conn, live) == 0
        statuses = [t["status"] for t in await repo.tiers_of_search(conn, search)]
        assert [t["status"] for t in await repo.tiers_of_search(conn, live)] == ["running"]
    assert statuses == ["queued", "queued", "exhausted"]


async def test_backfill_wake_ups_only_for_statements_that_change_a_status(
    pool: AsyncPool, db_url: str
) -> None:
    """Claims that find nothing and lease renewals wake nobody (an empty claim used to wake
    every backfill worker, whose empty claims woke them again: a busy loop on an idle server);
    new rows, claims that take rows and status changes do."""

    async def wake_ups(*statements: str, claims: bool = False) -> list[str]:
        async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as listener:
            await listener.execute(f"LISTEN {channels.BACKFILL}")
            async with pool.connection() as conn:
                for statement in statements:
                    await conn.execute(statement.encode())
                    await conn.commit()
            if claims:
                assert await repo.claim_tiers(pool, WORKER, 10, 30.0) == []
                assert await repo.claim_candidates(pool, WORKER, 10, 30.0) == []
            return [n.payload async for n in listener.notifies(timeout=0.5)]

    async with pool.connection() as conn:
        search = await insert_search(conn)
    assert await wake_ups() == []
    assert await wake_ups(claims=True) == []
    for table in ("search_tiers", "search_candidates"):
        assert await wake_ups(f"UPDATE {table} SET status = 'running' WHERE false") == []
    async with pool.connection() as conn:
        tier = await insert_tier(conn, search, status="running", locked_by=WORKER)
    renew = f"UPDATE search_tiers SET locked_until = now() + interval '1 min' WHERE id = {tier}"
    assert await wake_ups(renew) == []
    requeue = f"UPDATE search_tiers SET status = 'queued' WHERE id = {tier}"
    assert await wake_ups(requeue) == ["search_tiers"]
    stub = (
        "INSERT INTO search_candidates (search_id, external_id, tier)"
        f" VALUES ('{search}', 'talent:ada', 'broad')"
    )
    assert await wake_ups(stub) == ["search_candidates"]


async def test_resume_search_reopens_and_wakes_the_workers(pool: AsyncPool, db_url: str) -> None:
    async with pool.connection() as conn:
        stale = await insert_search(conn, status="stale")
        complete = await insert_search(conn, status="complete")
        running = await insert_search(conn)
    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as listener:
        await listener.execute(f"LISTEN {channels.BACKFILL}")
        async with pool.connection() as conn:
            for search in (stale, complete):
                assert await repo.resume_search(conn, search)
            assert not await repo.resume_search(conn, running)
        wake_ups = [n.payload async for n in listener.notifies(timeout=5, stop_after=1)]
    assert wake_ups == ["searches"]
    async with pool.connection() as conn:
        for search in (stale, complete):
            row = await status_of(conn, "searches", search)
            assert (row["status"], row["finished_at"]) == ("running", None)


# --- the internal corpus ----------------------------------------------------------------------


async def test_import_candidate_inserts_or_refreshes_by_external_id(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        ada = CandidateCreate(full_name="Ada", external_id="hr:1", location="London")
        assert await insert_candidates(conn, [ada, CandidateCreate(full_name="Bob")]) == 2
        await insert_candidates(conn, [ada.model_copy(update={"location": "Paris"})])
        cur = await conn.execute("SELECT full_name, location, source FROM candidates ORDER BY 1")
        rows = [tuple(r.values()) for r in await cur.fetchall()]
    assert rows == [("Ada", "Paris", "import"), ("Bob", "", "import")]


async def test_sample_candidates_load_once_into_an_empty_corpus(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        assert await load_sample_candidates(conn) == SAMPLE_SIZE
    async with pool.connection() as a, pool.connection() as b:
        # the advisory lock serialises concurrent loaders; the second sees rows and loads none
        assert await asyncio.gather(load_sample_candidates(a), load_sample_candidates(b)) == [0, 0]
        row = await one(
            a, "SELECT count(*) AS n, min(source) AS s, max(external_id) AS e FROM candidates"
        )
    assert row == {"n": SAMPLE_SIZE, "s": "sample", "e": None}


# --- reads ------------------------------------------------------------------------------------


async def test_candidate_status_of_a_stub_of_this_search(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn)
        stub = await insert_stub(conn, search, "p1", status="failed_no_email")
        assert await repo.candidate_status(conn, search, stub) == "failed_no_email"
        assert await repo.candidate_status(conn, await insert_search(conn), stub) is None


async def test_get_search_and_list_searches_of_one_team(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        first = await insert_search(conn, query="first")
        owner = await one(conn, "SELECT owner_token_id AS o, org_id FROM searches")
        # A teammate's search is the team's too; another organisation's is not.
        mate = await insert_token(conn, "mate", company_of=owner["o"])
        second = await insert_search(conn, owner=mate, query="second")
        await insert_search(conn, owner=await insert_token(conn, "other"), query="someone else's")
        assert await repo.get_search(conn, uuid.uuid4()) is None
        listed = await repo.list_searches(conn, owner["org_id"], limit=10)
        newest = await repo.list_searches(conn, owner["org_id"], limit=1)
    assert {s.id for s in listed} == {first, second}
    assert listed[0].created_at >= listed[1].created_at
    assert [s.id for s in newest] == [listed[0].id]


async def test_results_after_pages_by_rank(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn)
        internal = await insert_candidate(conn, "Ada")
        backfilled = await insert_candidate(conn, "Bob", external_id="talent:bob")
        stub = await insert_stub(conn, search, "talent:bob", status="running")
        await insert_result(conn, search, internal)
        await insert_result(conn, search, backfilled, stub=stub)
        await insert_result(conn, search, await insert_candidate(conn, "Cy"))
        page = await repo.results_after(conn, search, after=1, limit=1)
    assert [(r["rank"], r["full_name"], r["status"]) for r in page] == [(2, "Bob", "running")]
    async with pool.connection() as conn:
        first = await repo.results_after(conn, search, after=0, limit=10)
    assert [(r["rank"], r["status"]) for r in first] == [
        (1, "succeeded"),
        (2, "running"),
        (3, "succeeded"),
    ]


async def test_candidate_counts_and_open_attempts(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn)
        for n, status in enumerate(("queued", "queued", "succeeded", "failed_permanent")):
            await insert_stub(conn, search, f"p{n}", status=status)
        await insert_stub(conn, await insert_search(conn), "p9")
        counts = await repo.candidate_counts(conn, search)
        attempts = await repo.open_attempts(conn, search, limit=10)
        first = await repo.open_attempts(conn, search, limit=1)
    assert counts == {"queued": 2, "succeeded": 1, "failed_permanent": 1}
    assert [(a["external_id"], a["status"], a["last_error"]) for a in attempts] == [
        ("p0", "queued", None),
        ("p1", "queued", None),
        ("p3", "failed_permanent", "boom"),
    ]
    assert [a["external_id"] for a in first] == ["p0"]


async def test_tiers_of_search_in_tier_order(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        search = await insert_search(conn)
        for tier in ("serp", "strict", "broad"):
            await insert_tier(conn, search, tier)
        tiers = await repo.tiers_of_search(conn, search)
    assert [t["tier"] for t in tiers] == ["strict", "broad", "serp"]
