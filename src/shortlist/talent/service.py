"""The recruiter-facing operations: start a search, read its results, retry what failed.

Starting a search is synchronous only up to the internal corpus: the brief is parsed (role,
place, years, skills), the query embedded once, the corpus searched with the brief's place and
years as pre-filters, each hit judged against the brief's constraints
(:mod:`shortlist.talent.constraints`: a hit failing a hard one is left out and does not count),
those meeting every constraint first; the hits are appended as ranks 1..k, and if they fall
short of the target the three discovery tiers are queued for the backfill workers — all in the
one transaction that creates the search, so a client never sees a search without its first
results, nor a backfill without its tiers.

Transactions (the same rule as :mod:`shortlist.listings.service`): each service function is one
unit of work — it runs in one transaction that it opens itself and that commits when it returns
(a savepoint, if the caller already has a transaction open); repository functions never open or
commit one, they run in their caller's.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from pydantic import ValidationError

from shortlist import audit, metrics
from shortlist.accounts.quota import reserve_search
from shortlist.accounts.scope import act_for
from shortlist.auth import Principal
from shortlist.config import Settings
from shortlist.db.replicas import ReadPools
from shortlist.db.types import AsyncConn, AsyncPool, Row
from shortlist.embedding.base import EmbeddingPermanentError, embed_queries
from shortlist.embedding.spaces import ModelInUse, Spaces
from shortlist.errors import BadInput, Conflict, NotFound
from shortlist.relevance import normalise_query
from shortlist.talent import headline, marks
from shortlist.talent import repository as repo
from shortlist.talent.brief import Brief, brief_text, parse_brief
from shortlist.talent.constraints import Judgement, Wanted, judge
from shortlist.talent.models import (
    CandidateStatus,
    SearchCreate,
    SearchStarted,
    SearchStatus,
)
from shortlist.talent.repository import CorpusFilters, SearchRecord

log = logging.getLogger(__name__)


class TalentServices(Protocol):
    """What the recruiter-facing operations use (the composition root's ``Services`` has them):
    the settings, the pool that writes, where searches read, and the embedding models."""

    @property
    def settings(self) -> Settings: ...
    @property
    def pool(self) -> AsyncPool: ...
    @property
    def reads(self) -> ReadPools: ...
    @property
    def spaces(self) -> Spaces: ...


# How many nearest neighbours / full-text matches feed the fusion; all of them are scored and
# judged, and of those that meet the brief the first INTERNAL_HIT_LIMIT are appended (the
# backfill never runs for such a search anyway).
CORPUS_POOL_SIZE = 200
INTERNAL_HIT_LIMIT = 100
# Bounds of what one response carries.
MAX_PAGE = 500
MAX_ATTEMPTS_LISTED = 500


def search_text(payload: SearchCreate) -> str:
    return brief_text(payload.query, payload.role, payload.skills)


def query_embedding_text(payload: SearchCreate) -> str:
    """What is embedded: the brief with its abbreviations spelled out (shortlist.relevance)."""
    return normalise_query(search_text(payload))


def parse_search_create(data: Mapping[str, Any]) -> SearchCreate:
    """A ``SearchCreate`` from untrusted input (CLI, scripts); the API gets the same checks from
    FastAPI's body validation."""
    try:
        return SearchCreate.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or None
        raise BadInput(f"{where or 'search'}: {first.get('msg', 'invalid')}", field=where) from None


def parse_search_id(raw: str) -> uuid.UUID:
    """A search id from a URL; anything malformed is simply a search that does not exist."""
    try:
        return uuid.UUID(raw)
    except (ValueError, TypeError, AttributeError):
        raise NotFound("no such search") from None


def _check_visible(record: SearchRecord | None, principal: Principal) -> SearchRecord:
    # Someone else's search answers exactly like a missing one: no probing for ids.
    # A team sees its members' searches: visible within the searching organisation.
    if record is None or not (
        principal.is_admin
        or (principal.org_id is not None and record.org_id == principal.org_id)
        or (principal.token_id is not None and record.owner_token_id == principal.token_id)
    ):
        raise NotFound("no such search")
    return record


async def _visible_search(
    conn: AsyncConn, principal: Principal, search_id: uuid.UUID
) -> SearchRecord:
    # The rest of the transaction acts for the caller's organisation: row-level security
    # keeps every later read of it inside that organisation, whatever its own filter.
    await act_for(conn, principal)
    return _check_visible(await repo.get_search(conn, search_id), principal)


async def visible_search(
    conn: AsyncConn, principal: Principal, search_id: uuid.UUID
) -> SearchRecord:
    """The search if ``principal`` may see it (its organisation's, or its own), else
    ``NotFound`` — for what other packages build on a search (its alert)."""
    return await _visible_search(conn, principal, search_id)


# --- start -----------------------------------------------------------------------------------

SKILL_VOCABULARY_SIZE = 2000
_skill_vocabulary_cache: list[str] = []


async def _skill_vocabulary(conn: AsyncConn) -> list[str]:
    """The corpus's skills, read once per process: a vocabulary, not a live view."""
    if not _skill_vocabulary_cache:
        _skill_vocabulary_cache.extend(await repo.corpus_skills(conn, SKILL_VOCABULARY_SIZE))
    return _skill_vocabulary_cache


_Searched = tuple[ModelInUse, list[float], list[repo.CorpusHit]]
"""The model a search was embedded by, its query vector, and its internal hits."""


def wanted_of(brief: Brief) -> Wanted:
    """The constraints of a brief as understood."""
    return Wanted.of(brief.location, brief.min_years_experience, brief.skills)


def judge_hits(
    wanted: Wanted, hits: Sequence[repo.CorpusHit], min_score: float = 0.0
) -> list[repo.CorpusHit]:
    """The hits that fail no hard constraint and whose fit to the whole brief reaches
    ``min_score``, each scored by that fit: those meeting every constraint first, then the rest
    (some constraint unknown), by score. A weak maybe (elsewhere in the country, no must-have
    skill) is no result: it would take a place of the target and keep the backfill from
    looking for people who meet the brief."""
    kept: list[repo.CorpusHit] = []
    for hit in hits:
        judgement = judge(wanted, hit.held) if hit.held is not None else Judgement(())
        if judgement.failure is not None:
            continue
        fit = judgement.fit(hit.score)
        if fit < min_score:
            continue
        kept.append(replace(hit, score=fit, judgement=judgement))
    kept.sort(
        key=lambda h: (
            not (h.judgement is not None and h.judgement.meets_all),
            -h.score,
            str(h.candidate_id),
        )
    )
    return kept


async def check_daily_caps(services: TalentServices, principal: Principal) -> int | None:
    """Reserve one search against the daily caps of the recruiter and, pooled, of their
    organisation (shortlist.accounts.quota: atomic, concurrent searches cannot overspend);
    :class:`QuotaExceeded` when one is reached; else the credits the new search may spend (the
    per-search budget cut to what the caps leave; None: no budget). Admins are exempt."""
    settings = services.settings
    budget = settings.search_credit_budget or None
    capped = (
        settings.recruiter_daily_searches
        or settings.recruiter_daily_credits
        or settings.org_daily_searches
        or settings.org_daily_credits
    )
    if principal.is_admin or not capped or principal.user_id is None or principal.org_id is None:
        return budget
    async with services.pool.connection() as conn, conn.transaction():
        return await reserve_search(conn, settings, principal.user_id, principal.org_id)


async def start_search(
    services: TalentServices, principal: Principal, payload: SearchCreate
) -> SearchStarted:
    settings = services.settings
    started = time.perf_counter()
    target = settings.backfill_min_results
    # Before any work: a recruiter over a daily cap is refused (429), and the search may spend
    # no more than the day has left.
    credit_budget = await check_daily_caps(services, principal)
    # The brief first: its place and years pre-filter the corpus, and every hit is judged by it.
    async with services.pool.connection() as conn:
        vocabulary = await _skill_vocabulary(conn)
    brief = parse_brief(
        payload.query,
        role=payload.role,
        location=payload.location,
        min_years_experience=payload.min_years_experience,
        skills=payload.skills,
        skill_vocabulary=vocabulary,
    )

    async def embed_and_search(
        model: ModelInUse,
    ) -> tuple[ModelInUse, list[float], list[repo.CorpusHit]]:
        try:
            [embedding] = await embed_queries(model.embedder, [query_embedding_text(payload)])
        except EmbeddingPermanentError as exc:
            raise BadInput(f"the query cannot be embedded: {exc}", field="query") from exc

        async def corpus_hits(pool: AsyncPool) -> list[repo.CorpusHit]:
            async with pool.connection() as conn:
                return await repo.search_corpus(
                    conn,
                    space=model.space,
                    embedding=embedding,
                    text=search_text(payload),
                    filters=CorpusFilters(
                        brief.location, brief.min_years_experience, payload.skills
                    ),
                    min_score=settings.internal_min_score,
                    # Every hit found: some are judged out below.
                    limit=2 * CORPUS_POOL_SIZE,
                    pool_size=CORPUS_POOL_SIZE,
                )

        # The corpus search reads (from a replica when there is one); the search is written
        # after.
        return model, embedding, await services.reads.read(corpus_hits)

    model, embedding, found = await services.spaces.run(embed_and_search)
    judged = judge_hits(wanted_of(brief), found, settings.internal_min_score)
    hits = judged[:INTERNAL_HIT_LIMIT]
    async with services.pool.connection() as conn, conn.transaction():
        search_id = await repo.insert_search(
            conn,
            owner_token_id=principal.token_id,
            user_id=principal.user_id,
            org_id=principal.org_id,
            query=payload.query,
            role=payload.role,
            location=payload.location,
            min_years=payload.min_years_experience,
            skills=payload.skills,
            embedding=embedding,
            model_id=model.space.id,
            target_count=target,
            brief=brief,
            credit_budget=credit_budget,
        )
        hits = await marks.drop_handled(conn, search_id, principal.org_id, hits)
        count = await repo.append_internal_hits(conn, search_id, hits) if hits else 0
        if count < target:
            await repo.start_backfill(conn, search_id)
            status = SearchStatus.running
        else:
            await repo.complete_without_backfill(conn, search_id)
            status = SearchStatus.complete
    metrics.SEARCH_LATENCY.labels("candidates").observe(time.perf_counter() - started)
    if status is SearchStatus.running:
        headline.observe_backfill_started()
    log.info(
        "search %s started: %d internal hits (%d found, %d outside the brief), %s",
        search_id,
        count,
        len(found),
        len(found) - len(judged),
        "backfilling" if status is SearchStatus.running else "complete",
    )
    return SearchStarted(search_id, status, count, status is SearchStatus.running)


# --- reads -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResultsPage:
    search: SearchRecord
    results: list[Row]
    candidate_counts: dict[str, int]
    attempts: list[Row]
    next_after: int
    hidden_count: int = 0


@dataclass(frozen=True)
class SearchSummary:
    search: SearchRecord
    tiers: list[Row]
    candidate_counts: dict[str, int] = field(default_factory=dict)
    credits: list[Row] = field(default_factory=list)
    """Per provider: credits spent and enrichment calls made (the ledger)."""
    credits_on_results: int = 0
    """What the search paid for the people who became its results."""


def _all_counts(counts: dict[str, int]) -> dict[str, int]:
    """Every status, zeros included, so the client never has to guess a missing key."""
    return {s.value: counts.get(s.value, 0) for s in CandidateStatus}


async def results_page(
    services: TalentServices,
    principal: Principal,
    raw_search_id: str,
    *,
    after: int,
    limit: int,
    audit_as: audit.Action | None = "results",
) -> ResultsPage:
    """Results with rank > ``after``, in rank order, plus the state around them.

    Read in one REPEATABLE READ snapshot, so ``resultCount`` and the rows agree: a poll never
    reports a count whose ranks it does not also return (up to ``limit``). The people whose
    contact details the page shows are written to the audit log as ``audit_as``.
    """
    search_id = parse_search_id(raw_search_id)
    async with services.pool.connection() as conn, conn.transaction():
        await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        search = await _visible_search(conn, principal, search_id)
        rows = await repo.results_after(conn, search_id, after, min(limit, MAX_PAGE))
        counts = await repo.candidate_counts(conn, search_id)
        attempts = await repo.open_attempts(conn, search_id, MAX_ATTEMPTS_LISTED)
        hidden = await marks.annotate_results(conn, search, rows)
    if audit_as is not None:
        await record_contact_views(services.pool, principal, audit_as, rows, search_id)
        await record_attempt_views(services.pool, principal, attempts, search_id)
    next_after = int(rows[-1]["rank"]) if rows else after
    return ResultsPage(search, rows, _all_counts(counts), attempts, next_after, hidden)


async def record_contact_views(
    pool: AsyncPool,
    principal: Principal,
    action: audit.Action,
    rows: Sequence[Row],
    search_id: uuid.UUID | None,
) -> None:
    """Audit the people among ``rows`` whose e-mail address or profile link was handed out."""
    shown = [r["candidate_id"] for r in rows if r.get("email") or r.get("profile_url")]
    if shown:
        async with pool.connection() as conn, conn.transaction():
            await audit.record(conn, principal, action, shown, search_id=search_id)


async def record_attempt_views(
    pool: AsyncPool, principal: Principal, attempts: Sequence[Row], search_id: uuid.UUID
) -> None:
    """Audit the backfill attempts handed out (each names a person: a name, a LinkedIn id)."""
    shown = [int(r["id"]) for r in attempts if not str(r["external_id"]).startswith("forgotten:")]
    if shown:
        async with pool.connection() as conn, conn.transaction():
            await audit.record(
                conn,
                principal,
                "attempts",
                [r.get("candidate_id") for r in attempts],
                search_id=search_id,
                attempt_ids=shown,
            )


async def search_summary(
    services: TalentServices, principal: Principal, raw_search_id: str
) -> SearchSummary:
    search_id = parse_search_id(raw_search_id)
    async with services.pool.connection() as conn, conn.transaction():
        await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        search = await _visible_search(conn, principal, search_id)
        tiers = await repo.tiers_of_search(conn, search_id)
        counts = await repo.candidate_counts(conn, search_id)
        credits = await repo.credits_by_provider(conn, search_id)
        on_results = await repo.credits_on_results(conn, search_id)
    return SearchSummary(search, tiers, _all_counts(counts), credits, on_results)


async def list_searches(
    services: TalentServices, principal: Principal, limit: int = 50
) -> list[SearchRecord]:
    async with services.pool.connection() as conn, conn.transaction():
        await act_for(conn, principal)
        return await repo.list_searches(conn, principal.org_id, limit)


# --- retries ---------------------------------------------------------------------------------


async def retry_candidate(
    services: TalentServices, principal: Principal, raw_search_id: str, stub_id: int
) -> SearchRecord:
    """failed_* → queued for one candidate; a complete or stale search runs again."""
    search_id = parse_search_id(raw_search_id)
    async with services.pool.connection() as conn, conn.transaction():
        # The search lock first, as every writer of a search's work (see queries.sql).
        _check_visible(await repo.get_search(conn, search_id), principal)
        await repo.lock_search(conn, search_id)
        if not await repo.retry_candidate(conn, search_id, stub_id):
            status = await repo.candidate_status(conn, search_id, stub_id)
            if status is None:
                raise NotFound("no such candidate in this search")
            raise Conflict(f"candidate is {status}; only a failed candidate can be retried")
        await repo.resume_search(conn, search_id)
        search = await repo.get_search(conn, search_id)
    assert search is not None
    log.info("search %s: candidate %d re-queued", search_id, stub_id)
    return search


async def retry_search(
    services: TalentServices, principal: Principal, raw_search_id: str
) -> SearchRecord:
    """Resume a stale search, or re-run the failures of a complete one: failed tiers and
    transient candidate failures go back to the queue, and the search runs again."""
    search_id = parse_search_id(raw_search_id)
    async with services.pool.connection() as conn, conn.transaction():
        _check_visible(await repo.get_search(conn, search_id), principal)
        locked = await repo.lock_search(conn, search_id)
        assert locked is not None
        if locked["status"] == SearchStatus.running:
            raise Conflict("search is still running")
        tiers = await repo.requeue_failed_tiers(conn, search_id)
        stubs = await repo.requeue_failed_candidates(conn, search_id)
        if locked["status"] == SearchStatus.complete and tiers == 0 and stubs == 0:
            raise Conflict("search is complete and nothing in it failed transiently")
        await repo.resume_search(conn, search_id)
        # A stale search may have had nothing left but its status: settle it at once.
        await repo.complete_search_if_done(conn, search_id)
        search = await repo.get_search(conn, search_id)
    assert search is not None
    log.info("search %s resumed (%d tiers, %d candidates re-queued)", search_id, tiers, stubs)
    return search
