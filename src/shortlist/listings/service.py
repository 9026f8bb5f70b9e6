"""The listing operations a caller asks for: create, read, change and delete a job listing.

Who may change a listing and how a partial update merges into the stored row are decided here;
the repository only reads and writes rows.

Transactions (the same rule as :mod:`shortlist.talent.service`): each service function is one
unit of work — it runs in one transaction that it opens itself and that commits when it returns
(a savepoint, if the caller already has a transaction open); repository functions never open or
commit one, they run in their caller's.
"""

from __future__ import annotations

from typing import Protocol
from uuid import UUID

from pydantic import ValidationError

from shortlist.auth import Principal
from shortlist.db.replicas import ReadPools
from shortlist.db.types import AsyncConn, AsyncPool, Row
from shortlist.embedding.spaces import ModelInUse, Spaces
from shortlist.errors import BadInput, Forbidden, NotFound
from shortlist.listings import repository as repo
from shortlist.listings.models import (
    ListingCreate,
    ListingOut,
    ListingPatch,
    Source,
    bad_input_from,
)
from shortlist.listings.rates import RateCache
from shortlist.listings.repository import NO_OWNER, Owner
from shortlist.listings.result_cache import ResultCache
from shortlist.listings.search import SearchResult, check_seeker_filters, search_jobs
from shortlist.listings.similar import SimilarJob, similar_jobs
from shortlist.listings.slug import listing_id_from_slug


def parse_listing_ref(id_or_slug: str) -> UUID:
    """The id named by a path segment (a uuid or a slug ending in one); else ``NotFound`` —
    a malformed reference names no listing, which is what 404 says."""
    listing_id = listing_id_from_slug(id_or_slug)
    if listing_id is None:
        raise NotFound(f"no job listing {id_or_slug[:100]!r}")
    return listing_id


def ensure_may_edit(principal: Principal, listing: Row) -> None:
    """A listing is changed by its organisation (its people acting for it, and their keys),
    by the key that posted it, or by an admin. Listings without an owner (imported, sample, or
    whose token was deleted) are admin-only."""
    if principal.is_admin:
        return
    org_id, token_id = listing["org_id"], listing["owner_token_id"]
    if org_id is not None and org_id == principal.org_id:
        return
    if token_id is None or token_id != principal.token_id:
        raise Forbidden("only the company that posted this listing (or an admin) may change it")


def owner_of(principal: Principal) -> Owner:
    """The user and organisation a listing ``principal`` posts belongs to."""
    return Owner(principal.user_id, principal.org_id)


def same_company(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def ensure_posts_as(principal: Principal, company_name: str) -> None:
    """A company token posts as its own company only (an admin, as anyone): nobody posts a
    listing in another company's name."""
    if principal.company is not None and not same_company(company_name, principal.company):
        raise Forbidden(
            f"this token posts for {principal.company!r}: company_name must be that company"
        )


def merge_patch(current: Row, patch: ListingPatch) -> ListingCreate:
    """The stored listing with ``patch`` applied, validated as a whole listing."""
    changes = patch.changes()
    merged = {k: current[k] for k in ListingCreate.model_fields} | changes
    if "description" in changes or "job_title" in changes or "city_location" in changes:
        # A new text is read again for who may take the job, unless the patch says it.
        for derived in ("remote_countries", "visa_sponsorship"):
            merged[derived] = changes.get(derived)
    low, high = merged["salary_min_ks"], merged["salary_max_ks"]
    if low is not None and high is not None and low > high:
        # Each value may be fine alone and still cross the stored other one: the caller's
        # mistake (4xx), which would otherwise surface as a CHECK violation (500).
        raise BadInput(
            f"salary_min_ks ({low}) would be greater than salary_max_ks ({high})",
            field="salary_min_ks" if "salary_min_ks" in changes else "salary_max_ks",
        )
    try:
        return ListingCreate.model_validate(merged)
    except ValidationError as exc:
        raise bad_input_from(exc) from None


async def create_listing(
    conn: AsyncConn,
    data: ListingCreate,
    *,
    source: Source = "api",
    owner_token_id: int | None = None,
    owner: Owner = NO_OWNER,
) -> ListingOut:
    async with conn.transaction():
        return await repo.insert_listing(
            conn, data, source=source, owner_token_id=owner_token_id, owner=owner
        )


async def create_listing_once(
    conn: AsyncConn,
    data: ListingCreate,
    *,
    source: Source,
    owner_token_id: int | None,
    external_id: str,
    owner: Owner = NO_OWNER,
) -> tuple[ListingOut, bool]:
    """As :func:`create_listing`, for a posting its producer may send again: the second time
    it returns the first listing, unchanged, and ``False``."""
    async with conn.transaction():
        return await repo.insert_listing_once(
            conn,
            data,
            source=source,
            owner_token_id=owner_token_id,
            external_id=external_id,
            owner=owner,
        )


async def find_listing(conn: AsyncConn, id_or_slug: str) -> ListingOut:
    """By id or by any slug ending in the id (so a renamed listing's old links still work)."""
    listing_id = parse_listing_ref(id_or_slug)
    async with conn.transaction():
        return await repo.get_listing(conn, listing_id)


async def _lock_editable(conn: AsyncConn, listing_id: UUID, principal: Principal) -> Row:
    current = await repo.lock_listing(conn, listing_id)
    ensure_may_edit(principal, current)
    return current


async def update_listing(
    conn: AsyncConn, id_or_slug: str, patch: ListingPatch, principal: Principal
) -> ListingOut:
    """Apply ``patch`` (owner company or admin); the slug follows company, title and city."""
    listing_id = parse_listing_ref(id_or_slug)
    async with conn.transaction():
        current = await _lock_editable(conn, listing_id, principal)
        merged = merge_patch(current, patch)
        if "company_name" in patch.changes():
            ensure_posts_as(principal, merged.company_name)
        return await repo.update_listing(conn, listing_id, merged)


async def close_listing(conn: AsyncConn, id_or_slug: str, principal: Principal) -> None:
    """Owner company or admin: the listing closes (out of search, its page says so). Closing
    a closed listing changes nothing."""
    listing_id = parse_listing_ref(id_or_slug)
    async with conn.transaction():
        await _lock_editable(conn, listing_id, principal)
        await repo.close_listing(conn, listing_id)


class JobSearchServices(Protocol):
    """What a served job search reads with (the composition root's ``Services`` has them)."""

    @property
    def reads(self) -> ReadPools: ...
    @property
    def spaces(self) -> Spaces: ...
    @property
    def search_cache(self) -> ResultCache: ...
    @property
    def rates(self) -> RateCache: ...


async def run_job_search(
    services: JobSearchServices,
    query: str,
    *,
    size: int,
    offset: int = 0,
    location: str | None = None,
    salary_min: int | None = None,
    work_mode: str | None = None,
    posted_within_days: int | None = None,
    currency: str | None = None,
    remote_country: str | None = None,
    visa: str | None = None,
) -> SearchResult:
    """A job search as the API and the pages run it (``shortlist.listings.search``): with the
    active model, on a healthy read replica if there is one, through the process's
    query-embedding and answer caches. Raises ``BadInput`` as ``search_jobs`` does."""
    currency, remote_country, visa = check_seeker_filters(currency, remote_country, visa)
    rates = None if currency is None else await services.rates.get(services.reads.primary)

    async def in_model(model: ModelInUse) -> SearchResult:
        key = (
            model.space.model_key(),
            query,
            size,
            offset,
            location,
            salary_min,
            work_mode,
            posted_within_days,
            currency,
            remote_country,
            visa,
        )

        async def compute() -> tuple[SearchResult, bool]:
            replica = False

            async def on(pool: AsyncPool) -> SearchResult:
                nonlocal replica
                replica = pool is not services.reads.primary
                return await search_jobs(
                    pool,
                    model.embedder,
                    query,
                    size=size,
                    location=location,
                    salary_min=salary_min,
                    offset=offset,
                    work_mode=work_mode,
                    posted_within_days=posted_within_days,
                    space=model.space,
                    query_cache=services.spaces.query_cache,
                    currency=currency,
                    remote_country=remote_country,
                    visa=visa,
                    rates=rates,
                )

            result = await services.reads.read(on)
            return result, replica

        return await services.search_cache.answer(key, compute)

    return await services.spaces.run(in_model)


async def find_similar(
    services: JobSearchServices, id_or_slug: str, *, size: int = 5
) -> list[SimilarJob]:
    """The listing's similar jobs (shortlist.listings.similar), read where searches read;
    ``NotFound`` for no such listing."""
    listing_id = parse_listing_ref(id_or_slug)

    async def in_model(model: ModelInUse) -> list[SimilarJob]:
        async def on(pool: AsyncPool) -> list[SimilarJob]:
            async with pool.connection() as conn:
                listing = await repo.get_listing(conn, listing_id)
            return await similar_jobs(pool, model.space, listing, size)

        return await services.reads.read(on)

    return await services.spaces.run(in_model)
