"""A recruiter's shortlist: ``PUT /api/candidates/{id}/mark``, ``GET /api/shortlist``, the people
a search hid (``GET /api/searches/{id}/hidden``) and its CSV export
(``GET /api/searches/{id}/results.csv``). Recruiter or admin token; marks and searches of
another recruiter answer 404, as missing ones do.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query, Response

from shortlist import audit
from shortlist.api.deps import RecruiterDep, ServicesDep
from shortlist.api.routes.searches import CandidateOut, MarkOut, _Out, candidate_out
from shortlist.talent import marks
from shortlist.talent import repository as repo
from shortlist.talent.marks import MarkIn, MarkStatus
from shortlist.talent.service import _visible_search, parse_search_id, record_contact_views

router = APIRouter(tags=["shortlist"])

MAX_EXPORT = 100_000


class MarkedOut(_Out):
    candidate_id: str
    status: str
    note: str
    created_at: datetime
    updated_at: datetime


class ShortlistEntryOut(MarkedOut):
    recruiter: str
    full_name: str
    headline: str
    role_title: str
    location: str
    profile_url: str | None


class ShortlistOut(_Out):
    marks: list[ShortlistEntryOut]


class HiddenOut(_Out):
    candidate: CandidateOut
    score: float
    mark: MarkOut | None


class HiddenListOut(_Out):
    search_id: str
    hidden: list[HiddenOut]


@router.put(
    "/api/candidates/{candidate_id}/mark", response_model=MarkedOut, response_model_by_alias=True
)
async def mark_candidate(
    candidate_id: str, body: MarkIn, services: ServicesDep, principal: RecruiterDep
) -> MarkedOut:
    """Shortlist, mark contacted or reject a person one of your searches found, with a note.
    Contacted and rejected people are left out of your later searches."""
    row = await marks.set_mark(services.pool, principal, candidate_id, body)
    return MarkedOut(**{**row, "candidate_id": str(row["candidate_id"])})


@router.get("/api/shortlist", response_model=ShortlistOut, response_model_by_alias=True)
async def shortlist(
    services: ServicesDep,
    principal: RecruiterDep,
    status: Annotated[MarkStatus | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> ShortlistOut:
    """Your marks, newest first (an admin sees every recruiter's)."""
    rows = await marks.list_marks(services.pool, principal, status, limit)
    # Every entry names a person (and links a profile): audited, as a results page is.
    if rows:
        async with services.pool.connection() as conn, conn.transaction():
            await audit.record(conn, principal, "shortlist", [r["candidate_id"] for r in rows])
    return ShortlistOut(
        marks=[ShortlistEntryOut(**{**r, "candidate_id": str(r["candidate_id"])}) for r in rows]
    )


@router.get(
    "/api/searches/{search_id}/hidden", response_model=HiddenListOut, response_model_by_alias=True
)
async def hidden(search_id: str, services: ServicesDep, principal: RecruiterDep) -> HiddenListOut:
    """The people this search left out because you had contacted or rejected them."""
    sid = parse_search_id(search_id)
    async with services.pool.connection() as conn:
        await _visible_search(conn, principal, sid)
        rows = await marks.hidden_of_search(conn, sid)
    await record_contact_views(services.pool, principal, "hidden", rows, sid)
    return HiddenListOut(
        search_id=str(sid),
        hidden=[
            HiddenOut(
                candidate=candidate_out(r),
                score=float(r["score"]),
                mark=MarkOut(
                    status=r["mark_status"], note=r["mark_note"], updated_at=r["updated_at"]
                )
                if r["mark_status"]
                else None,
            )
            for r in rows
        ],
    )


@router.get(
    "/api/searches/{search_id}/results.csv",
    response_class=Response,
    responses={200: {"content": {"text/csv": {}}, "description": "UTF-8 CSV, rank order"}},
)
async def results_csv(search_id: str, services: ServicesDep, principal: RecruiterDep) -> Response:
    """Every result in rank order with its ``why`` summary and your mark; every cell quoted,
    and a formula character escaped wherever a spreadsheet could start a cell. Audited."""
    sid = parse_search_id(search_id)
    async with services.pool.connection() as conn, conn.transaction():
        await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        search = await _visible_search(conn, principal, sid)
        rows = await repo.results_after(conn, sid, 0, MAX_EXPORT)
        await marks.annotate_results(conn, search, rows)
    await record_contact_views(services.pool, principal, "export", rows, sid)
    return Response(
        marks.results_csv(rows).encode("utf-8"),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="shortlist-{sid}.csv"'},
    )
