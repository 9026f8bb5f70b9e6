"""``/api/searches`` and ``/api/results``: recruiter candidate search with streaming backfill.

Thin: validation is ``SearchCreate``'s and FastAPI's, rules are ``shortlist.talent.service``'s,
errors are domain types mapped in ``shortlist.api.errors``. Every endpoint needs a recruiter
(or admin) token; a search is visible to its owner and admins only — anyone else gets the same
404 as for an id that does not exist.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, status
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from shortlist.api.deps import RecruiterDep, ServicesDep
from shortlist.db.types import Row
from shortlist.errors import NotFound
from shortlist.talent import service
from shortlist.talent.models import SearchCreate
from shortlist.talent.repository import SearchRecord
from shortlist.talent.why import CandidateWhy

router = APIRouter(tags=["searches"])

MAX_AFTER = 1_000_000


class _Out(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class SearchStartedOut(_Out):
    search_id: str
    status: str
    results_url: str


class CandidateOut(_Out):
    id: str
    full_name: str
    headline: str
    role_title: str
    location: str
    skills: list[str]
    years_experience: int | None
    email: str | None
    profile_url: str | None


class MarkOut(_Out):
    status: str
    note: str
    updated_at: datetime
    by: str | None = None
    """Who of the team marked the person."""


class ResultOut(_Out):
    rank: int
    candidate: CandidateOut | None
    """None for a tombstone (``status: forgotten``): the person asked to be forgotten."""
    score: float
    tier: str
    status: str
    why: CandidateWhy | None = None
    mark: MarkOut | None = None
    """The search owner's mark on this person (shortlisted / contacted / rejected), if any."""


class AttemptOut(_Out):
    """A candidate that is not (yet) in the results: queued, running or failed_*."""

    candidate_id: int
    external_id: str
    display_name: str | None
    tier: str
    status: str
    last_error: str | None


class ResultsOut(_Out):
    search_id: str
    status: str
    is_running: bool
    result_count: int
    results: list[ResultOut]
    candidates: dict[str, int]
    next_after: int
    attempts: list[AttemptOut]
    hidden_count: int = 0
    """People this search skipped because its recruiter already contacted or rejected them."""


class TierOut(_Out):
    tier: str
    status: str
    next_page: int
    found: int
    held: int = 0
    """People a page brought beyond the shortfall, taken before another page is asked for."""
    attempts: int
    last_error: str | None
    not_before: datetime
    updated_at: datetime
    calls: int = 0


class BriefOut(_Out):
    """The brief as understood (tier 1 sends exactly this)."""

    role: str | None
    location: str | None
    min_years_experience: int | None
    skills: list[str]


class CreditsOut(_Out):
    total: int
    by_provider: dict[str, int]
    on_results: int
    """Of the total, what was spent on the people who became results (a search record's
    credit, or the enrichment's)."""


class BudgetOut(_Out):
    credits: int | None
    reached: bool


class SearchOut(_Out):
    search_id: str
    query: str
    role: str | None
    location: str | None
    min_years_experience: int | None
    skills: list[str]
    status: str
    is_running: bool
    result_count: int
    target_count: int
    backfill_started: bool
    created_at: datetime
    last_progress_at: datetime
    finished_at: datetime | None
    results_url: str
    started_by: str | None = None
    """Who started it (a team sees its members' searches)."""


class SearchDetailOut(SearchOut):
    tiers: list[TierOut]
    candidates: dict[str, int]
    brief: BriefOut
    credits: CreditsOut
    enrichments: int
    budget: BudgetOut


class SearchListOut(_Out):
    searches: list[SearchOut]


class CandidateRetryOut(_Out):
    search_id: str
    candidate_id: int
    status: str = "queued"
    search_status: str


def candidate_out(row: Row) -> CandidateOut:
    return CandidateOut(
        id=str(row["candidate_id"]),
        full_name=row["full_name"],
        headline=row["headline"],
        role_title=row["role_title"],
        location=row["location"],
        skills=list(row["skills"] or ()),
        years_experience=row["years_experience"],
        email=row["email"],
        profile_url=row["profile_url"],
    )


def result_out(row: Row) -> ResultOut:
    mark = row.get("mark")
    return ResultOut(
        rank=int(row["rank"]),
        candidate=None if row["candidate_id"] is None else candidate_out(row),
        score=float(row["score"]),
        tier=str(row["tier"]),
        status=str(row["status"]),
        why=row.get("why"),
        mark=MarkOut(**mark) if mark else None,
    )


def attempt_out(row: Row) -> AttemptOut:
    return AttemptOut(
        candidate_id=int(row["id"]),
        external_id=row["external_id"],
        display_name=row["display_name"],
        tier=str(row["tier"]),
        status=str(row["status"]),
        last_error=row["last_error"],
    )


def _search(record: SearchRecord) -> dict[str, Any]:
    return {
        "search_id": str(record.id),
        "query": record.query,
        "role": record.role,
        "location": record.location,
        "min_years_experience": record.min_years_experience,
        "skills": record.skills,
        "status": record.status,
        "is_running": record.status == "running",
        "result_count": record.result_count,
        "target_count": record.target_count,
        "backfill_started": record.backfill_started,
        "created_at": record.created_at,
        "last_progress_at": record.last_progress_at,
        "finished_at": record.finished_at,
        "results_url": f"/api/results?searchId={record.id}",
        "started_by": record.owner,
    }


def _stub_id(raw: str) -> int:
    # Like a malformed search id, a malformed candidate id names nothing: 404, not 422.
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 18:
        raise NotFound("no such candidate in this search")
    return int(raw)


@router.post(
    "/api/searches",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=SearchStartedOut,
    response_model_by_alias=True,
)
async def create_search(
    payload: SearchCreate, services: ServicesDep, principal: RecruiterDep
) -> SearchStartedOut:
    """Search the internal corpus now; backfill from the external sources if it falls short."""
    # A provider outage is a TransientError: shortlist.api.errors answers 503 with Retry-After.
    started = await service.start_search(services, principal, payload)
    return SearchStartedOut(
        search_id=str(started.search_id),
        status=started.status.value,
        results_url=started.results_url,
    )


@router.get("/api/results", response_model=ResultsOut, response_model_by_alias=True)
async def results(
    services: ServicesDep,
    principal: RecruiterDep,
    search_id: Annotated[str, Query(alias="searchId", max_length=100)],
    after: Annotated[int, Query(ge=0, le=MAX_AFTER, description="ranks after this one")] = 0,
    limit: Annotated[int, Query(ge=1, le=service.MAX_PAGE)] = 100,
) -> ResultsOut:
    """Results with rank > ``after`` in rank order (append-only: a row never moves), the
    search's state, and every candidate not (yet) in the results with its status."""
    page = await service.results_page(services, principal, search_id, after=after, limit=limit)
    search = page.search
    return ResultsOut(
        search_id=str(search.id),
        status=search.status,
        is_running=search.status == "running",
        result_count=search.result_count,
        results=[result_out(r) for r in page.results],
        candidates=page.candidate_counts,
        next_after=page.next_after,
        attempts=[attempt_out(r) for r in page.attempts],
        hidden_count=page.hidden_count,
    )


@router.get("/api/searches", response_model=SearchListOut, response_model_by_alias=True)
async def list_searches(
    services: ServicesDep,
    principal: RecruiterDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> SearchListOut:
    """The caller's most recent searches."""
    records = await service.list_searches(services, principal, limit)
    return SearchListOut(searches=[SearchOut(**_search(r)) for r in records])


@router.get(
    "/api/searches/{search_id}", response_model=SearchDetailOut, response_model_by_alias=True
)
async def get_search(
    search_id: str, services: ServicesDep, principal: RecruiterDep
) -> SearchDetailOut:
    """A search's summary with its discovery tiers (status, pages, last error)."""
    summary = await service.search_summary(services, principal, search_id)
    record = summary.search
    return SearchDetailOut(
        **_search(record),
        tiers=[TierOut(**t) for t in summary.tiers],
        candidates=summary.candidate_counts,
        brief=BriefOut(**record.brief.as_json()),
        credits=CreditsOut(
            total=record.credits_spent,
            by_provider={str(c["provider"]): int(c["credits"]) for c in summary.credits},
            on_results=summary.credits_on_results,
        ),
        enrichments=sum(int(c["enrichments"]) for c in summary.credits),
        budget=BudgetOut(credits=record.credit_budget, reached=record.budget_reached),
    )


@router.post(
    "/api/searches/{search_id}/retry", response_model=SearchOut, response_model_by_alias=True
)
async def retry_search(search_id: str, services: ServicesDep, principal: RecruiterDep) -> SearchOut:
    """Resume a stale search, or re-run the failed tiers and transient failures of a complete
    one. 409 while it is running, or when nothing in a complete search can be retried."""
    record = await service.retry_search(services, principal, search_id)
    return SearchOut(**_search(record))


@router.post(
    "/api/searches/{search_id}/candidates/{candidate_id}/retry",
    response_model=CandidateRetryOut,
    response_model_by_alias=True,
)
async def retry_candidate(
    search_id: str, candidate_id: str, services: ServicesDep, principal: RecruiterDep
) -> CandidateRetryOut:
    """Re-queue one failed candidate (``candidateId`` of ``attempts[]``); 409 unless failed."""
    stub_id = _stub_id(candidate_id)
    record = await service.retry_candidate(services, principal, search_id, stub_id)
    return CandidateRetryOut(
        search_id=str(record.id), candidate_id=stub_id, search_status=record.status
    )
