"""``/api/sources``: the job sources crawled into listings (admin token).

``GET`` lists them with their last crawl, open listings and errors; ``POST {"spec",
"company"?}`` adds one (201; crawled at once by the workers); ``DELETE /{id}`` removes it and
closes its open listings.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Response, status
from pydantic import BaseModel, ConfigDict, Field

from shortlist.api.deps import ServicesDep, require_role
from shortlist.auth import Principal
from shortlist.listings.sources import service
from shortlist.listings.sources.service import SourceOut

router = APIRouter(prefix="/api/sources", tags=["sources"])

AdminDep = Annotated[Principal, Depends(require_role())]


class SourceIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    spec: str = Field(
        min_length=1,
        max_length=2000,
        description="greenhouse:TOKEN, lever:SITE (https://jobs.eu.lever.co/SITE on Lever's EU"
        " instance), ashby:ORG, or a careers page / sitemap URL",
    )
    company: str | None = Field(None, max_length=200, description="for postings naming none")


@router.get("")
async def list_sources(_admin: AdminDep, services: ServicesDep) -> list[SourceOut]:
    return await service.list_sources(services.pool)


@router.post("", status_code=status.HTTP_201_CREATED)
async def add_source(
    body: SourceIn, _admin: AdminDep, services: ServicesDep, response: Response
) -> SourceOut:
    source = await service.add_source(services.pool, services.settings, body.spec, body.company)
    response.headers["Location"] = f"/api/sources/{source.id}"
    return source


@router.delete("/{source_id}", status_code=status.HTTP_204_NO_CONTENT)
async def remove_source(
    source_id: Annotated[int, Path(ge=1, le=2**62)], _admin: AdminDep, services: ServicesDep
) -> None:
    await service.remove_source(services.pool, source_id)
