"""Every database operation of the candidate-search pipeline, in one place.

Functions take a connection and run named SQL from ``queries.sql``; the caller owns the
transaction (service and workers decide where the commit boundaries are: a search's results
stream to the client only if each one commits on its own). The few functions taking a pool run
a complete transaction of their own.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pgvector import Vector
from psycopg import sql
from psycopg.types.json import Jsonb

from shortlist.db import channels
from shortlist.db.pool import single_statement
from shortlist.db.sql import compose, like_pattern, load_queries
from shortlist.db.tenant import act_for_org
from shortlist.db.types import AsyncConn, AsyncPool, Row
from shortlist.embedding.base import embed_queries
from shortlist.embedding.model_space import ModelSpace
from shortlist.embedding.spaces import ModelInUse, SpaceStatements
from shortlist.indexer.corpora import CANDIDATES
from shortlist.queue.lease import LEASE_ENDED
from shortlist.relevance import CANDIDATE_SCORE, ScoreModel, normalise_query, text_terms
from shortlist.talent.brief import Brief, brief_text
from shortlist.talent.constraints import Held, Judgement, location_terms
from shortlist.talent.evidence import TITLE_MATCH, query_terms
from shortlist.talent.models import (
    DISCOVERY_TIERS,
    CandidateStatus,
    ClaimedStub,
    ClaimedTier,
    NewStub,
    SearchBrief,
    Tier,
    TierStatus,
)
from shortlist.talent.vendors.base import CallRecord, Profile

QUERIES = load_queries("shortlist.talent")
# The indexer's own text expression for a candidates row, spliced into candidate_text.
_CANDIDATE_TEXT = compose(QUERIES["candidate_text"], text=sql.SQL(CANDIDATES.text_sql))
# The statements that read or write vectors, per embedding model space; with one title_match
# feature (shortlist.talent.evidence) for an internal hit and a backfilled person alike.
_IN_SPACE = SpaceStatements(QUERIES, title_match=TITLE_MATCH)
# "Nothing is left to do for this search", stated once and spliced into both statements using it.
_SEARCH_IS_DONE = sql.SQL(QUERIES["search_is_done"])
# Statements that take rows over from whoever held them end the lease as the queue states it.
_TAKEOVER = {
    name: compose(QUERIES[name], lease_ended=LEASE_ENDED)
    for name in (
        "enrichment_out_of_credit",
        "reap_lost_candidates",
        "reap_lost_tiers",
        "requeue_failed_candidates",
        "requeue_failed_tiers",
    )
}
_COMPLETE_SEARCH_IF_DONE = compose(
    QUERIES["complete_search_if_done"], search_is_done=_SEARCH_IS_DONE
)
_RUNNING_SEARCHES_WITHOUT_WORK = compose(
    QUERIES["running_searches_without_work"], search_is_done=_SEARCH_IS_DONE
)


@dataclass(frozen=True)
class CorpusHit:
    candidate_id: uuid.UUID
    score: float
    """The result's score: the role probability until the hit is judged, then its fit."""
    role_score: float | None = None
    """The role probability (shortlist.relevance) the score rests on."""
    held: Held | None = None
    """What the person's profile says about the brief's constraints (from search_corpus)."""
    judgement: Judgement | None = None
    """The brief's constraints held against the person (shortlist.talent.constraints)."""


@dataclass(frozen=True)
class CorpusFilters:
    """Pre-filters of the corpus search (recall; the verdict is the constraints'): the brief's
    place (its names, region and country in the location text), minimum years (unknown
    passes), and at least one of the given skills."""

    location: str | None
    min_years: int | None
    skills: Sequence[str]


@dataclass(frozen=True)
class CandidateRecord:
    """A profile ready for the ``candidates`` table (already cut to the schema's limits)."""

    external_id: str
    source: str
    full_name: str
    headline: str
    role_title: str
    role_family: str
    skills: list[str]
    years_experience: int | None
    location: str
    email: str | None
    summary: str
    profile_url: str | None
    email_on_file: bool = False
    """The provider has an address it does not show on this plan (migration 0018)."""
    aliases: tuple[str, ...] = ()
    """The person's other ids (migration 0031): older LinkedIn slugs, the PDL id."""

    def text_params(self) -> dict[str, Any]:
        return {
            "full_name": self.full_name,
            "headline": self.headline,
            "role_title": self.role_title,
            "location": self.location,
            "skills": self.skills,
            "summary": self.summary,
        }


@dataclass(frozen=True)
class Appended:
    rank: int
    score: float


async def _one(conn: AsyncConn, query: Any, params: dict[str, Any]) -> Row | None:
    cur = await conn.execute(query, params)
    return await cur.fetchone()


async def _all(conn: AsyncConn, query: Any, params: dict[str, Any]) -> list[Row]:
    cur = await conn.execute(query, params)
    return await cur.fetchall()


# --- starting a search ---------------------------------------------------------------------


async def insert_search(
    conn: AsyncConn,
    *,
    owner_token_id: int | None,
    user_id: int | None = None,
    org_id: int | None = None,
    query: str,
    role: str | None,
    location: str | None,
    min_years: int | None,
    skills: Sequence[str],
    embedding: Sequence[float],
    model_id: int,
    target_count: int,
    brief: Brief,
    credit_budget: int | None,
) -> uuid.UUID:
    row = await _one(
        conn,
        QUERIES["insert_search"],
        {
            "owner_token_id": owner_token_id,
            "user_id": user_id,
            "org_id": org_id,
            "query": query,
            "role": role,
            "location": location,
            "min_years": min_years,
            "skills": list(skills),
            "embedding": Vector(list(embedding)),
            "model_id": model_id,
            "target_count": target_count,
            "brief": Jsonb(brief.as_json()),
            "credit_budget": credit_budget,
        },
    )
    assert row is not None
    search_id: uuid.UUID = row["id"]
    return search_id


async def search_corpus(
    conn: AsyncConn,
    *,
    space: ModelSpace,
    embedding: Sequence[float],
    text: str,
    filters: CorpusFilters,
    min_score: float,
    limit: int,
    pool_size: int,
    model: ScoreModel = CANDIDATE_SCORE,
) -> list[CorpusHit]:
    """The internal corpus's people who fit, best first: the nearest ``pool_size`` by meaning and
    by words, scored (queries.sql ``search_corpus``)."""
    # The vector index scan is iterative (shortlist.db.pool sets it on every connection): it
    # keeps walking the HNSW graph, or reading IVFFlat lists, until enough rows pass the filters.
    params = {"limit": limit, "pool_size": pool_size}
    return await _scored_people(
        conn, "search_corpus", space, embedding, text, filters, min_score, model, params
    )


async def score_corpus_people(
    conn: AsyncConn,
    ids: Sequence[uuid.UUID],
    *,
    space: ModelSpace,
    embedding: Sequence[float],
    text: str,
    filters: CorpusFilters,
    min_score: float,
    model: ScoreModel = CANDIDATE_SCORE,
) -> list[CorpusHit]:
    """:func:`search_corpus` for the people ``ids`` alone, wherever they rank in the corpus: the
    same pre-filter and score, best first (a saved people search's new people)."""
    params = {"ids": list(ids), "limit": max(len(ids), 1)}
    return await _scored_people(
        conn, "score_corpus_people", space, embedding, text, filters, min_score, model, params
    )


async def _scored_people(
    conn: AsyncConn,
    statement: str,
    space: ModelSpace,
    embedding: Sequence[float],
    text: str,
    filters: CorpusFilters,
    min_score: float,
    model: ScoreModel,
    params: dict[str, Any],
) -> list[CorpusHit]:
    terms = await query_terms(conn, text_terms(normalise_query(text)))
    rows = await _all(
        conn,
        _IN_SPACE.get(statement, space),
        {
            "embedding": Vector(list(embedding)),
            **terms.params(),
            "w_intercept": model.intercept,
            "w_cosine": model.cosine,
            "w_title_match": model.title_match,
            "w_title_similarity": model.title_similarity,
            "location_patterns": [like_pattern(t) for t in location_terms(filters.location)],
            "min_years": filters.min_years,
            "skills": [s.lower() for s in filters.skills],
            "min_score": min_score,
            **params,
        },
    )
    return [
        CorpusHit(
            r["candidate_id"],
            float(r["score"]),
            role_score=float(r["score"]),
            held=Held(
                location=r["location"],
                years=r["years_experience"],
                skills=list(r["skills"] or ()),
                title=f"{r['role_title']}\n{r['headline']}",
                prose=f"{r['headline']}\n{r['summary']}",
            ),
        )
        for r in rows
    ]


def _judged(judgement: Judgement | None) -> Jsonb | None:
    return None if judgement is None else Jsonb(judgement.as_json())


async def append_internal_hits(
    conn: AsyncConn, search_id: uuid.UUID, hits: Sequence[CorpusHit]
) -> int:
    row = await _one(
        conn,
        QUERIES["append_internal_hits"],
        {
            "search_id": search_id,
            "candidate_ids": [h.candidate_id for h in hits],
            "scores": [h.score for h in hits],
            "role_scores": [h.score if h.role_score is None else h.role_score for h in hits],
            "constraints": [_judged(h.judgement) for h in hits],
        },
    )
    if row is None:
        raise RuntimeError(f"search {search_id} already had results before its corpus hits")
    return int(row["result_count"])


async def start_backfill(conn: AsyncConn, search_id: uuid.UUID) -> bool:
    row = await _one(
        conn,
        QUERIES["start_backfill"],
        {"search_id": search_id, "tiers": [t.value for t in DISCOVERY_TIERS]},
    )
    return row is not None


async def complete_without_backfill(conn: AsyncConn, search_id: uuid.UUID) -> bool:
    return (
        await _one(conn, QUERIES["complete_without_backfill"], {"search_id": search_id}) is not None
    )


# --- the search row ------------------------------------------------------------------------


async def lock_search(conn: AsyncConn, search_id: uuid.UUID) -> Row | None:
    """The search's row lock, taken first by every transaction that writes a search's work;
    the rest of the transaction acts for the search's organisation (row-level security,
    shortlist.db.tenant): a worker writing for a claimed item sees and changes that
    organisation's rows only."""
    row = await _one(conn, QUERIES["lock_search"], {"search_id": search_id})
    if row is not None and row["org_id"] is not None:
        await act_for_org(conn, int(row["org_id"]))
    return row


async def touch_search(conn: AsyncConn, search_id: uuid.UUID) -> None:
    await conn.execute(QUERIES["touch_search"], {"search_id": search_id})


async def complete_search_if_done(conn: AsyncConn, search_id: uuid.UUID) -> bool:
    """running → complete if nothing is left to do. Takes the search lock first (see
    ``complete_search_if_done`` in queries.sql for why the order matters)."""
    if await lock_search(conn, search_id) is None:
        return False
    return await _one(conn, _COMPLETE_SEARCH_IF_DONE, {"search_id": search_id}) is not None


# --- discovery tiers -------------------------------------------------------------------------


def _brief(row: Row) -> SearchBrief:
    # The brief as understood (migration 0009); a search from before it has only its columns.
    brief = Brief.from_json(row.get("brief"))
    return SearchBrief(
        search_id=row["search_id"],
        query=row["query"],
        role=brief.role or row["role"],
        location=brief.location or row["location"],
        min_years_experience=(
            brief.min_years_experience
            if brief.min_years_experience is not None
            else row["min_years_experience"]
        ),
        skills=brief.skills or tuple(row["skills"] or ()),
    )


async def claim_tiers(
    pool: AsyncPool, worker_id: str, limit: int, lease: float, *, records_first: bool = False
) -> list[ClaimedTier]:
    """``records_first``: the talent API's search returns whole records (claim_tiers)."""
    async with single_statement(pool) as conn:
        rows = await _all(
            conn,
            QUERIES["claim_tiers"],
            {
                "worker_id": worker_id,
                "limit": limit,
                "lease": lease,
                "records_first": records_first,
            },
        )
    return [
        ClaimedTier(
            id=int(r["id"]),
            tier=Tier(r["tier"]),
            next_page=int(r["next_page"]),
            attempts=int(r["attempts"]),
            search=_brief(r),
            cursor=r.get("cursor"),
            held=tuple(_held(r["held"])),
            provider_done=bool(r["provider_done"]),
        )
        for r in rows
    ]


def _held(rows: list[dict[str, Any]]) -> list[NewStub]:
    """The stubs ``tier_page_done`` held, back from JSON (a profile that no longer fits
    :class:`Profile` is dropped, so that person is enriched instead)."""
    return [
        NewStub(
            h["external_id"],
            h["display_name"],
            _kept_profile(h["profile"]),
            tuple(str(a) for a in h.get("aliases") or ()),
        )
        for h in rows
    ]


def _profile_json(profile: Profile | None) -> dict[str, Any] | None:
    return None if profile is None else dataclasses.asdict(profile)


def _held_json(stubs: Sequence[NewStub]) -> Jsonb:
    return Jsonb(
        [
            {
                "external_id": s.external_id,
                "display_name": s.display_name,
                "profile": _profile_json(s.profile),
                "aliases": list(s.aliases),
            }
            for s in stubs
        ]
    )


async def known_external_ids(pool: AsyncPool, search_id: uuid.UUID) -> set[str]:
    async with pool.connection() as conn:
        rows = await _all(conn, QUERIES["known_external_ids"], {"search_id": search_id})
    return {str(r["external_id"]) for r in rows}


async def insert_stubs(
    conn: AsyncConn,
    search_id: uuid.UUID,
    tier: Tier,
    stubs: Sequence[NewStub],
) -> int:
    """Insert ``(external_id, display_name, profile, aliases)`` stubs as queued (a profile the
    discovery answer already carried is kept on the stub, so it is never enriched), none of
    whom the search knows by any id; returns how many were new. Run under the search's lock.

    A whole record of someone already queued as a bare web hit goes onto that stub first
    (``attach_records``): the search page paid for the record, so the hit is never enriched."""
    if not stubs:
        return 0
    records = [s for s in stubs if s.profile is not None]
    if records:
        await _all(
            conn,
            QUERIES["attach_records"],
            {
                "search_id": search_id,
                "profiles": [Jsonb(_profile_json(s.profile)) for s in records],
                "ids": [Jsonb([s.external_id, *s.aliases]) for s in records],
            },
        )
    rows = await _all(
        conn,
        QUERIES["insert_stubs"],
        {
            "search_id": search_id,
            "tier": tier.value,
            "external_ids": [s.external_id for s in stubs],
            "display_names": [s.display_name for s in stubs],
            "profiles": [
                None if s.profile is None else Jsonb(_profile_json(s.profile)) for s in stubs
            ],
            "aliases": [Jsonb(list(s.aliases)) for s in stubs],
            # PDL bills a search per record returned: a record on the stub cost one credit.
            "credits": [0 if s.profile is None else 1 for s in stubs],
        },
    )
    return len(rows)


async def search_shortfall(
    conn: AsyncConn, search_id: uuid.UUID, *, records_first: bool = False
) -> int:
    row = await _one(
        conn,
        QUERIES["search_shortfall"],
        {"search_id": search_id, "records_first": records_first},
    )
    return 0 if row is None else int(row["shortfall"])


async def records_wanted(
    conn: AsyncConn, search_id: uuid.UUID, *, records_first: bool = False
) -> int:
    """Records a paid discovery page should ask for (``records_wanted``)."""
    row = await _one(
        conn, QUERIES["records_wanted"], {"search_id": search_id, "records_first": records_first}
    )
    return 0 if row is None else int(row["wanted"])


async def tier_page_done(
    conn: AsyncConn,
    tier_id: int,
    *,
    found: int,
    has_more: bool,
    fetched: bool,
    held: Sequence[NewStub] = (),
    cursor: str | None = None,
) -> TierStatus | None:
    """The tier's new status (queued/exhausted), or None if it is no longer running.
    ``fetched``: the provider was asked for the tier's next page (else its held people were
    the page); ``held``: who is left for the next claim."""
    row = await _one(
        conn,
        QUERIES["tier_page_done"],
        {
            "id": tier_id,
            "found": found,
            "has_more": has_more,
            "fetched": fetched,
            "held": _held_json(held),
            "cursor": cursor,
        },
    )
    return None if row is None else TierStatus(row["status"])


async def tier_failed(
    conn: AsyncConn,
    tier_id: int,
    *,
    error: str,
    status: TierStatus = TierStatus.failed,
) -> bool:
    params = {"id": tier_id, "error": error, "status": status.value}
    return await _one(conn, QUERIES["tier_failed"], params) is not None


async def enrichment_out_of_credit(conn: AsyncConn, search_id: uuid.UUID, error: str) -> int:
    """End the search's tiers that need enrichment (``enrichment_out_of_credit``)."""
    rows = await _all(
        conn, _TAKEOVER["enrichment_out_of_credit"], {"search_id": search_id, "error": error}
    )
    return len(rows)


# --- candidates -------------------------------------------------------------------------------


async def claim_candidates(
    pool: AsyncPool, worker_id: str, limit: int, lease: float, *, records_first: bool = False
) -> list[ClaimedStub]:
    """``records_first``: a paid enrichment waits for the search's record pages
    (claim_candidates)."""
    async with single_statement(pool) as conn:
        rows = await _all(
            conn,
            QUERIES["claim_candidates"],
            {
                "worker_id": worker_id,
                "limit": limit,
                "lease": lease,
                "records_first": records_first,
            },
        )
    return [
        ClaimedStub(
            id=int(r["id"]),
            search_id=r["search_id"],
            external_id=str(r["external_id"]),
            tier=Tier(r["tier"]),
            attempts=int(r["attempts"]),
            enriched=_kept_profile(r["enriched_profile"]),
        )
        for r in rows
    ]


def _kept_profile(value: object) -> Profile | None:
    """The profile ``keep_enriched_profile`` stored, or None: none stored, or one that no longer
    fits :class:`Profile` (a newer version changed it), in which case the stub is enriched
    again."""
    if not isinstance(value, dict):
        return None
    try:
        profile = Profile(**value)
    except TypeError:
        return None
    # JSON gave a list where the dataclass holds a tuple.
    return dataclasses.replace(profile, aliases=tuple(profile.aliases))


async def keep_enriched_profile(conn: AsyncConn, stub_id: int, profile: Profile) -> bool:
    params = {"id": stub_id, "profile": Jsonb(dataclasses.asdict(profile))}
    return await _one(conn, QUERIES["keep_enriched_profile"], params) is not None


async def candidate_text(pool: AsyncPool, record: CandidateRecord) -> str:
    """The text to embed for ``record``, built by the indexer's own SQL expression."""
    async with pool.connection() as conn:
        row = await _one(conn, _CANDIDATE_TEXT, record.text_params())
    assert row is not None
    return str(row["text"])


async def query_in_space(pool: AsyncPool, search_id: uuid.UUID, model: ModelInUse) -> None:
    """Make the search's query vector one of ``model``'s (once, after a model switch)."""
    async with pool.connection() as conn:
        row = await _one(conn, QUERIES["search_model"], {"search_id": search_id})
    if row is None or row["embedding_model_id"] == model.space.id:
        return
    text = normalise_query(brief_text(row["query"], row["role"], row["skills"]))
    [vector] = await embed_queries(model.embedder, [text])
    async with pool.connection() as conn:
        await conn.execute(
            QUERIES["move_search_to_space"],
            {"search_id": search_id, "embedding": Vector(vector), "model_id": model.space.id},
        )


async def upsert_candidate(
    conn: AsyncConn, record: CandidateRecord, embedding: Sequence[float], space: ModelSpace
) -> uuid.UUID:
    """Ingest ``record`` into the row of the person it is, known by any of their ids (a new
    row when none is there)."""
    external_id = record.external_id
    ids = [external_id, *record.aliases]
    if record.aliases:
        known = await _one(
            conn, QUERIES["candidate_by_ids"], {"ids": ids, "external_id": external_id}
        )
        if known is not None:
            external_id = str(known["external_id"])
    row = await _one(
        conn,
        _IN_SPACE.get("upsert_candidate", space),
        {
            "external_id": external_id,
            "aliases": ids,
            "source": record.source,
            "full_name": record.full_name,
            "headline": record.headline,
            "role_title": record.role_title,
            "role_family": record.role_family,
            "skills": record.skills,
            "years_experience": record.years_experience,
            "location": record.location,
            "email": record.email,
            "email_on_file": record.email_on_file,
            "summary": record.summary,
            "profile_url": record.profile_url,
            "embedding": Vector(list(embedding)),
        },
    )
    assert row is not None
    candidate_id: uuid.UUID = row["id"]
    await conn.execute(_IN_SPACE.get("mark_candidate_embedded", space), {"id": candidate_id})
    return candidate_id


async def append_result(
    conn: AsyncConn,
    *,
    search_id: uuid.UUID,
    candidate_id: uuid.UUID,
    search_candidate_id: int | None,
    tier: Tier,
    score: float,
    role_score: float | None = None,
    judgement: Judgement | None = None,
) -> Appended | None:
    """Append one result at the next rank; None if the person is already in the results.
    ``score``: the fit to the whole brief; ``role_score`` and ``judgement``: what it rests on."""
    row = await _one(
        conn,
        QUERIES["append_result"],
        {
            "search_id": search_id,
            "candidate_id": candidate_id,
            "search_candidate_id": search_candidate_id,
            "tier": tier.value,
            "score": score,
            "role_score": score if role_score is None else role_score,
            "constraints": _judged(judgement),
        },
    )
    return None if row is None else Appended(int(row["rank"]), float(row["score"]))


async def finish_candidate(
    conn: AsyncConn,
    stub_id: int,
    status: CandidateStatus,
    *,
    candidate_id: uuid.UUID | None = None,
    error: str | None = None,
) -> bool:
    row = await _one(
        conn,
        QUERIES["finish_candidate"],
        {
            "id": stub_id,
            "status": status.value,
            "candidate_id": candidate_id,
            "error": error,
        },
    )
    return row is not None


# --- reaper -----------------------------------------------------------------------------------


async def reap_lost_candidates(
    conn: AsyncConn, max_lost: int, *, counted: bool = True
) -> list[Row]:
    """``counted``: each lease that ran out is a lost worker (false after a database outage)."""
    return await _all(
        conn, _TAKEOVER["reap_lost_candidates"], {"max_lost": max_lost, "counted": counted}
    )


async def reap_lost_tiers(conn: AsyncConn, max_lost: int, *, counted: bool = True) -> list[Row]:
    """``counted``: as :func:`reap_lost_candidates`."""
    return await _all(
        conn, _TAKEOVER["reap_lost_tiers"], {"max_lost": max_lost, "counted": counted}
    )


async def running_searches_without_work(conn: AsyncConn) -> list[uuid.UUID]:
    rows = await _all(conn, _RUNNING_SEARCHES_WITHOUT_WORK, {})
    return [r["id"] for r in rows]


async def mark_stale_searches(conn: AsyncConn, stale_after: float) -> list[uuid.UUID]:
    rows = await _all(conn, QUERIES["mark_stale_searches"], {"stale_after": stale_after})
    return [r["id"] for r in rows]


# --- retries ----------------------------------------------------------------------------------


async def retry_candidate(conn: AsyncConn, search_id: uuid.UUID, stub_id: int) -> bool:
    params = {"id": stub_id, "search_id": search_id}
    return await _one(conn, QUERIES["retry_candidate"], params) is not None


async def candidate_status(conn: AsyncConn, search_id: uuid.UUID, stub_id: int) -> str | None:
    row = await _one(conn, QUERIES["candidate_status"], {"id": stub_id, "search_id": search_id})
    return None if row is None else str(row["status"])


async def requeue_failed_candidates(conn: AsyncConn, search_id: uuid.UUID) -> int:
    return len(await _all(conn, _TAKEOVER["requeue_failed_candidates"], {"search_id": search_id}))


async def requeue_failed_tiers(conn: AsyncConn, search_id: uuid.UUID) -> int:
    return len(await _all(conn, _TAKEOVER["requeue_failed_tiers"], {"search_id": search_id}))


async def resume_search(conn: AsyncConn, search_id: uuid.UUID) -> bool:
    params = {"search_id": search_id, "channel": channels.BACKFILL}
    return await _one(conn, QUERIES["resume_search"], params) is not None


# --- reads ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchRecord:
    id: uuid.UUID
    owner_token_id: int | None
    query: str
    role: str | None
    location: str | None
    min_years_experience: int | None
    skills: list[str]
    status: str
    result_count: int
    target_count: int
    backfill_started: bool
    created_at: datetime
    last_progress_at: datetime
    finished_at: datetime | None
    brief: Brief = field(default_factory=Brief)
    credit_budget: int | None = None
    credits_spent: int = 0
    user_id: int | None = None
    org_id: int | None = None
    owner: str | None = None
    """Who started it (an address, or a service account's name): a team sees who did what."""

    def understood(self) -> Brief:
        """The brief as understood (migration 0009), its columns for a search from before."""
        b = self.brief
        return Brief(
            role=b.role or self.role,
            location=b.location or self.location,
            min_years_experience=(
                b.min_years_experience
                if b.min_years_experience is not None
                else self.min_years_experience
            ),
            skills=b.skills or tuple(self.skills),
        )

    @property
    def budget_reached(self) -> bool:
        return self.credit_budget is not None and self.credits_spent >= self.credit_budget

    @classmethod
    def from_row(cls, row: Row) -> SearchRecord:
        return cls(
            id=row["id"],
            owner_token_id=row["owner_token_id"],
            query=row["query"],
            role=row["role"],
            location=row["location"],
            min_years_experience=row["min_years_experience"],
            skills=list(row["skills"] or ()),
            status=str(row["status"]),
            result_count=int(row["result_count"]),
            target_count=int(row["target_count"]),
            backfill_started=bool(row["backfill_started"]),
            created_at=row["created_at"],
            last_progress_at=row["last_progress_at"],
            finished_at=row["finished_at"],
            brief=Brief.from_json(row.get("brief")),
            credit_budget=row.get("credit_budget"),
            credits_spent=int(row.get("credits_spent") or 0),
            user_id=row.get("user_id"),
            org_id=row.get("org_id"),
            owner=row.get("owner"),
        )


async def get_search(conn: AsyncConn, search_id: uuid.UUID) -> SearchRecord | None:
    row = await _one(conn, QUERIES["get_search"], {"search_id": search_id})
    return None if row is None else SearchRecord.from_row(row)


async def list_searches(conn: AsyncConn, org_id: int | None, limit: int) -> list[SearchRecord]:
    rows = await _all(conn, QUERIES["list_searches"], {"org_id": org_id, "limit": limit})
    return [SearchRecord.from_row(r) for r in rows]


async def results_after(conn: AsyncConn, search_id: uuid.UUID, after: int, limit: int) -> list[Row]:
    return await _all(
        conn, QUERIES["results_after"], {"search_id": search_id, "after": after, "limit": limit}
    )


async def candidate_counts(conn: AsyncConn, search_id: uuid.UUID) -> dict[str, int]:
    rows = await _all(conn, QUERIES["candidate_counts"], {"search_id": search_id})
    return {str(r["status"]): int(r["n"]) for r in rows}


async def open_attempts(conn: AsyncConn, search_id: uuid.UUID, limit: int) -> list[Row]:
    return await _all(conn, QUERIES["open_attempts"], {"search_id": search_id, "limit": limit})


async def tiers_of_search(conn: AsyncConn, search_id: uuid.UUID) -> list[Row]:
    return await _all(conn, QUERIES["tiers_of_search"], {"search_id": search_id})


# --- relevance floor and the credit ledger ----------------------------------------------------


async def backfill_score(
    conn: AsyncConn,
    search_id: uuid.UUID,
    candidate_id: uuid.UUID,
    space: ModelSpace,
    model: ScoreModel = CANDIDATE_SCORE,
) -> float:
    """A backfilled person's relevance to the search: the score an internal hit gets
    (search_corpus), so one floor and one percentage serve every result."""
    search = await get_search(conn, search_id)
    assert search is not None, "searches are never deleted under their running backfill"
    terms = await query_terms(
        conn, text_terms(normalise_query(brief_text(search.query, search.role, search.skills)))
    )
    row = await _one(
        conn,
        _IN_SPACE.get("relevance_evidence", space),
        {"search_id": search_id, "candidate_id": candidate_id, **terms.params()},
    )
    assert row is not None
    return model.score(
        float(row["cosine"]), float(row["title_match"]), float(row["title_similarity"])
    )


async def record_provider_calls(
    pool: AsyncPool,
    search_id: uuid.UUID,
    tier: Tier,
    calls: Sequence[CallRecord],
    *,
    discovery: bool,
    attempt: int | None = None,
) -> None:
    """Ledger rows for ``calls`` (made for ``search_id`` by ``tier``); the search's credit
    total, for discovery calls the tier's call count, and for an enrichment the credits of
    the attempt it was for (``attempt``: the stub's id) follow in the same statement."""
    if not calls:
        return
    async with single_statement(pool) as conn:
        await conn.execute(
            QUERIES["record_provider_calls"],
            {
                "search_id": search_id,
                "tier": tier.value,
                "discovery": discovery,
                "attempt": attempt,
                "providers": [c.provider for c in calls],
                "kinds": [c.kind for c in calls],
                "credits": [c.credits for c in calls],
                "outcomes": [c.outcome for c in calls],
            },
        )


async def credits_by_provider(conn: AsyncConn, search_id: uuid.UUID) -> list[Row]:
    return await _all(conn, QUERIES["credits_by_provider"], {"search_id": search_id})


async def credits_on_results(conn: AsyncConn, search_id: uuid.UUID) -> int:
    """The credits the search spent on people who became its results."""
    row = await _one(conn, QUERIES["credits_on_results"], {"search_id": search_id})
    return 0 if row is None else int(row["credits"])


async def corpus_skills(conn: AsyncConn, limit: int) -> list[str]:
    return [str(r["skill"]) for r in await _all(conn, QUERIES["corpus_skills"], {"limit": limit})]
