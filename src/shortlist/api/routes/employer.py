"""``GET /api/org/listings``: the listings of the organisation the caller acts for, each with
its status and who posted it (the employer page, ``/employer``, lists them). Posting, editing
and closing are ``/api/jobs``'s; the intake address is ``/api/intake``'s."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from shortlist.api.deps import CompanyDep, ConnDep
from shortlist.listings import repository as repo

router = APIRouter(tags=["jobs"])


class OrgListingOut(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    id: UUID
    company_name: str
    job_title: str
    city_location: str
    status: str
    """open | closed (taken down, gone from its board, or past its date)."""
    embedding_status: str
    """pending | embedded | failed: whether job search finds it yet."""
    source: str
    detail_page_slug: str
    created_at: datetime
    updated_at: datetime
    duplicate_of: UUID | None
    posted_by: str | None
    """The person (or service account) who posted it."""


class OrgListingsOut(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    organisation: str | None
    listings: list[OrgListingOut]


@router.get("/api/org/listings", response_model=OrgListingsOut, response_model_by_alias=True)
async def org_listings(
    principal: CompanyDep,
    conn: ConnDep,
    limit: Annotated[int, Query(ge=1, le=500)] = 200,
) -> OrgListingsOut:
    """The caller's organisation's listings, newest first (an employer's people and keys)."""
    if principal.org_id is None:
        return OrgListingsOut(organisation=None, listings=[])
    async with conn.transaction():
        rows = await repo.listings_of_org(conn, principal.org_id, limit)
    return OrgListingsOut(
        organisation=principal.company,
        listings=[OrgListingOut.model_validate(dict(r)) for r in rows],
    )
