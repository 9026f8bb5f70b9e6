"""A person's data: a candidate's detail (audited), forgetting a person (admin), and the audit
log of who saw contact details (admin). See shortlist.privacy and shortlist.audit."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Query

from shortlist import audit, privacy
from shortlist.api.deps import AdminDep, RecruiterDep, ServicesDep
from shortlist.api.routes.searches import CandidateOut, _Out, candidate_out
from shortlist.errors import BadInput, NotFound
from shortlist.talent import marks

router = APIRouter(tags=["privacy"])


class ErasureOut(_Out):
    candidate_ids: list[str]
    results_tombstoned: int
    attempts_scrubbed: int
    identifiers_suppressed: int
    messages_erased: int
    held_dropped: int
    listings_redacted: int
    searches_redacted: int
    notes_redacted: int


class AuditEntryOut(_Out):
    id: int
    at: str
    token_id: int | None
    token: str
    action: str
    search_id: str | None
    candidate_ids: list[str]
    attempt_ids: list[int]
    user: str | None = None
    """The person (or service account) who acted: their e-mail address or name."""
    user_id: int | None = None
    organisation: str | None = None
    """The organisation they acted for."""
    organisation_id: int | None = None


class AuditOut(_Out):
    entries: list[AuditEntryOut]
    next_before: int | None


_CANDIDATE = """
SELECT id AS candidate_id, full_name, headline, role_title, location, skills,
       years_experience, email, profile_url
  FROM candidates WHERE id = %(id)s
"""


@router.get(
    "/api/candidates/{candidate_id}", response_model=CandidateOut, response_model_by_alias=True
)
async def get_candidate(
    candidate_id: str, services: ServicesDep, principal: RecruiterDep
) -> CandidateOut:
    """A person one of your searches found (admins: anyone), contact details included; the
    read is written to the audit log."""
    cid = marks.parse_candidate_id(candidate_id)
    async with services.pool.connection() as conn, conn.transaction():
        cur = await conn.execute(
            marks.QUERIES["may_mark"],
            {"candidate_id": cid, "org_id": principal.org_id, "is_admin": principal.is_admin},
        )
        allowed = await cur.fetchone()
        if not (allowed and allowed["allowed"]):
            raise NotFound("no such candidate")
        cur = await conn.execute(_CANDIDATE, {"id": cid})
        row = await cur.fetchone()
        if row is None:
            raise NotFound("no such candidate")
        await audit.record(conn, principal, "candidate", [cid])
    return candidate_out(row)


@router.delete(
    "/api/candidates/{candidate_id}", response_model=ErasureOut, response_model_by_alias=True
)
async def forget_candidate(
    candidate_id: str, services: ServicesDep, principal: AdminDep
) -> ErasureOut:
    """Forget a person (GDPR Art. 17): profile, marks, notes and the personal fields of every
    result row removed (the rows stay as tombstones, ranks unchanged), the inbound e-mail sent
    from or naming their address erased, their identifiers kept only as keyed hashes so no
    backfill, ingest or e-mail intake adds them again. Admin only."""
    cid = marks.parse_candidate_id(candidate_id)
    erasure = await privacy.forget(
        services.pool, str(cid), configured_key=services.settings.privacy_key, who=principal
    )
    return ErasureOut.model_validate(erasure.as_json())


@router.get("/api/audit", response_model=AuditOut, response_model_by_alias=True)
async def audit_log(
    services: ServicesDep,
    principal: AdminDep,
    candidate: Annotated[str | None, Query(max_length=100, description="a candidate id")] = None,
    token: Annotated[str | None, Query(max_length=200, description="a token's name")] = None,
    token_id: Annotated[int | None, Query(alias="tokenId", ge=1, le=2**62)] = None,
    before: Annotated[int | None, Query(ge=1, le=2**62, description="entries older")] = None,
    limit: Annotated[int, Query(ge=1, le=audit.MAX_ENTRIES)] = 100,
) -> AuditOut:
    """Who viewed or exported contact details (and who erased whom), newest first; filtered by
    candidate and by token. Admin only."""
    try:
        cid = uuid.UUID(candidate) if candidate else None
    except ValueError:
        raise BadInput("candidate: not a candidate id", field="candidate") from None
    async with services.pool.connection() as conn:
        rows: list[dict[str, Any]] = await audit.entries(
            conn,
            candidate_id=cid,
            token_id=token_id,
            token_name=token,
            before=before,
            limit=limit,
        )
    return AuditOut(
        entries=[AuditEntryOut(**r) for r in rows],
        next_before=rows[-1]["id"] if len(rows) == limit else None,
    )
