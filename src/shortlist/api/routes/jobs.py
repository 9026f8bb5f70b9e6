"""``/api/jobs``: public search and reads; writes with a company (or admin) token.

Thin: validation is the models', rules are ``shortlist.listings.service``'s, errors are domain
types mapped to HTTP in ``shortlist.api.errors``. The fixed paths (``/search``, ``/email``) are
declared before ``/{id_or_slug}`` so they are never taken for a listing reference.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request, Response, status
from pydantic import BeforeValidator, Field
from starlette.requests import ClientDisconnect

from shortlist.api.deps import ClientIPDep, CompanyDep, ConnDep, ServicesDep
from shortlist.errors import BadInput
from shortlist.listings import service
from shortlist.listings.mail.listing import to_listing
from shortlist.listings.mail.store import posted_message_key
from shortlist.listings.models import (
    MAX_SALARY_KS,
    WORK_MODES,
    ListingCreate,
    ListingOut,
    ListingPatch,
    WorkMode,
)
from shortlist.listings.search import (
    MAX_OFFSET,
    MAX_POSTED_WITHIN_DAYS,
    MAX_QUERY_LENGTH,
    MAX_SIZE,
    SearchResult,
)
from shortlist.listings.similar import MAX_SIMILAR, SimilarJob
from shortlist.validation import blank_allowed, blank_to_none

router = APIRouter(prefix="/api/jobs", tags=["jobs"])

EMAIL_MEDIA_TYPE = "message/rfc822"


async def rate_limit_search(request: Request, client_ip: ClientIPDep) -> None:
    """Per client IP, before the parameters are even validated: a flood of bad requests is
    still a flood. ``async``, though it never awaits: no thread-pool hop (shortlist.api.deps)."""
    request.app.state.search_limiter.check(client_ip)


@router.get("/search", dependencies=[Depends(rate_limit_search)], response_model=SearchResult)
async def search(
    services: ServicesDep,
    q: Annotated[str, Query(max_length=MAX_QUERY_LENGTH, description="what to look for")],
    size: Annotated[int, Query(ge=1, le=MAX_SIZE)] = 10,
    location: Annotated[
        str | None, Query(max_length=200, description="substring of the city, any case")
    ] = None,
    salary_min: Annotated[
        Annotated[int, Field(ge=0, le=MAX_SALARY_KS)] | None,
        BeforeValidator(blank_to_none),
        Query(
            description="thousands; compared with the top figure",
            json_schema_extra=blank_allowed(
                {"type": "integer", "minimum": 0, "maximum": MAX_SALARY_KS}
            ),
        ),
    ] = None,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    work_mode: Annotated[
        WorkMode | None,
        BeforeValidator(blank_to_none),
        Query(
            description="remote, hybrid, onsite",
            json_schema_extra=blank_allowed({"type": "string", "enum": list(WORK_MODES)}),
        ),
    ] = None,
    posted_within_days: Annotated[
        Annotated[int, Field(ge=1, le=MAX_POSTED_WITHIN_DAYS)] | None,
        BeforeValidator(blank_to_none),
        Query(
            description="only listings created in the last N days (blank: any time, as an"
            " untouched form field sends it)",
            json_schema_extra=blank_allowed(
                {"type": "integer", "minimum": 1, "maximum": MAX_POSTED_WITHIN_DAYS}
            ),
        ),
    ] = None,
    currency: Annotated[
        str | None,
        BeforeValidator(blank_to_none),
        Query(
            description="ISO 4217 code: each hit's salary_converted, salary_min and the salary"
            " facet in this currency (by the reference rates, shortlist rates)",
            json_schema_extra=blank_allowed({"type": "string", "pattern": "^[A-Za-z]{3}$"}),
        ),
    ] = None,
    remote_country: Annotated[
        str | None,
        BeforeValidator(blank_to_none),
        Query(
            description="ISO 3166 alpha-2 code: remote jobs a person living there may take"
            " (those naming it, and those naming no country)",
            json_schema_extra=blank_allowed({"type": "string", "pattern": "^[A-Za-z]{2}$"}),
        ),
    ] = None,
    visa: Annotated[
        Literal["offered"] | None,
        BeforeValidator(blank_to_none),
        Query(
            description="offered: only listings that say they sponsor a visa",
            json_schema_extra=blank_allowed({"type": "string", "enum": ["offered"]}),
        ),
    ] = None,
) -> Response:
    """Hits with ``why`` (matched words, highlighted snippet, which retrieval found it) and the
    ``facets`` of the query's matches."""
    result = await service.run_job_search(
        services,
        q,
        size=size,
        location=location,
        salary_min=salary_min,
        offset=offset,
        work_mode=work_mode,
        posted_within_days=posted_within_days,
        currency=currency,
        remote_country=remote_country,
        visa=visa,
    )
    # Serialised once, by pydantic's Rust serialiser, as FastAPI's response model would, but not
    # first validated again as that model (it is one already); the schema is response_model's.
    # The answer cache kept these same bytes (SearchResult.json_bytes): not serialised twice.
    return Response(result.json_bytes(), media_type="application/json")


def _created(response: Response, listing: ListingOut) -> ListingOut:
    response.headers["Location"] = f"/api/jobs/{listing.id}"
    return listing


@router.post("", status_code=status.HTTP_201_CREATED)
async def create(
    body: ListingCreate, principal: CompanyDep, conn: ConnDep, response: Response
) -> ListingOut:
    service.ensure_posts_as(principal, body.company_name)
    listing = await service.create_listing(
        conn,
        body,
        source="api",
        owner_token_id=principal.token_id,
        owner=service.owner_of(principal),
    )
    return _created(response, listing)


async def read_body(request: Request, max_bytes: int, seconds: float) -> bytes:
    """The request's body: 413 past ``max_bytes``, 408 past ``seconds``; a client
    that disconnects is a 400 (it reads no answer; the log says it left). ``seconds``: the
    time it may take in all (408 past it)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise HTTPException(
            status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            f"the message is larger than {max_bytes} bytes",
        )
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(seconds):
            async for chunk in request.stream():
                size += len(chunk)
                if size > max_bytes:
                    raise HTTPException(
                        status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
                        f"the message is larger than {max_bytes} bytes",
                    )
                chunks.append(chunk)
    except TimeoutError:
        raise HTTPException(
            status.HTTP_408_REQUEST_TIMEOUT, f"the message took more than {seconds:g} s to send"
        ) from None
    except ClientDisconnect:
        raise BadInput("the client disconnected before sending the whole message") from None
    return b"".join(chunks)


@router.post(
    "/email",
    status_code=status.HTTP_201_CREATED,
    responses={
        200: {"model": ListingOut, "description": "posted before: the listing it made then"}
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {EMAIL_MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}}},
        }
    },
)
async def create_from_email(
    request: Request,
    principal: CompanyDep,
    services: ServicesDep,
    response: Response,
) -> ListingOut:
    """A job post as a raw e-mail message (the body is the message, ``message/rfc822``),
    written as employers write (no template), read in a parser process with a time limit. A
    company token's listing carries its company, whatever the message says. The same message
    posted again (same Message-ID, or the same bytes without one) answers ``200`` with the
    listing it made the first time, unchanged."""
    media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media_type != EMAIL_MEDIA_TYPE:
        raise HTTPException(
            status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
            f"send the raw e-mail message with Content-Type: {EMAIL_MEDIA_TYPE}",
        )
    # The body is read whole, bounded in size and time, and parsed, before the request takes
    # a pooled connection: a client sending slowly (or a slow message) holds none.
    raw = await read_body(
        request, services.settings.mail_max_bytes, services.settings.mail_body_timeout
    )
    reading = await services.mail_parser.read(raw, principal.company or "")
    data = to_listing(reading, principal.company)
    # The same message posted again (a client's retry, a resend) is the same listing, as a
    # redelivery is on the SMTP intake: 200 with the listing the first post made. On the
    # intake's share of the pool: a flood of posts never holds every connection.
    async with services.intake.connection(data.company_name) as conn:
        listing, created = await service.create_listing_once(
            conn,
            data,
            source="email",
            owner_token_id=principal.token_id,
            external_id=posted_message_key(data.company_name, reading.message_id, raw),
            owner=service.owner_of(principal),
        )
    if not created:
        response.status_code = status.HTTP_200_OK
    return _created(response, listing)


@router.get("/{id_or_slug}/similar", responses={404: {"description": "no such listing"}})
async def similar(
    id_or_slug: str,
    services: ServicesDep,
    size: Annotated[int, Query(ge=1, le=MAX_SIMILAR)] = 5,
) -> list[SimilarJob]:
    """The open listings nearest in meaning (the vector index), without this listing's
    duplicates or its company's other posts, each with a ``reason`` in words; empty while the
    listing has no vector yet."""
    return await service.find_similar(services, id_or_slug, size=size)


@router.get("/{id_or_slug}")
async def get(id_or_slug: str, conn: ConnDep) -> ListingOut:
    """By id or by ``detail_page_slug`` (any slug ending in the id, so old slugs still work)."""
    return await service.find_listing(conn, id_or_slug)


@router.patch("/{id_or_slug}")
async def patch(
    id_or_slug: str, body: ListingPatch, principal: CompanyDep, conn: ConnDep
) -> ListingOut:
    """Owner company or admin. Any change bumps ``updated_at``, which queues a re-embed."""
    return await service.update_listing(conn, id_or_slug, body, principal)


@router.delete("/{id_or_slug}", status_code=status.HTTP_204_NO_CONTENT)
async def delete(id_or_slug: str, principal: CompanyDep, conn: ConnDep) -> None:
    """Owner company or admin: the listing closes (``status: closed``), leaves search, and
    still answers ``GET`` with its status."""
    await service.close_listing(conn, id_or_slug, principal)
