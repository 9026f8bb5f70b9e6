"""Every database operation of the listing producers and readers, in one place.

Ids are made here (uuid4), not by the database, because the slug contains the id and is
written in the same INSERT. Functions taking an ``AsyncConn`` run their own transaction
(``conn.transaction()``), except :func:`copy_listings`, which joins the caller's so a caller
can make a whole bulk load atomic.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any
from uuid import UUID

from pydantic import ValidationError

from shortlist.auth import Principal
from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn
from shortlist.errors import BadInput, Forbidden, NotFound
from shortlist.listings.models import (
    ListingCreate,
    ListingOut,
    ListingPatch,
    Source,
    bad_input_from,
)
from shortlist.listings.slug import listing_id_from_slug, make_detail_page_slug

Q = load_queries("shortlist.listings")

DEFAULT_BATCH_SIZE = 500


def _new_row(data: ListingCreate, source: Source) -> dict[str, Any]:
    listing_id = uuid.uuid4()
    return {
        "id": listing_id,
        **data.model_dump(),
        "detail_page_slug": make_detail_page_slug(
            data.company_name, data.job_title, data.city_location, listing_id
        ),
        "source": source,
    }


async def create_listing(
    conn: AsyncConn,
    data: ListingCreate,
    *,
    source: Source = "api",
    owner_token_id: int | None = None,
) -> ListingOut:
    row = {**_new_row(data, source), "owner_token_id": owner_token_id}
    async with conn.transaction():
        cur = await conn.execute(Q["insert_listing"], row)
        created = await cur.fetchone()
    assert created is not None  # INSERT … RETURNING always returns the row
    return ListingOut.from_row(created)


async def get_listing(conn: AsyncConn, listing_id: UUID) -> ListingOut:
    async with conn.transaction():
        cur = await conn.execute(Q["get_listing"], {"id": listing_id})
        row = await cur.fetchone()
    if row is None:
        raise NotFound(f"no job listing {listing_id}")
    return ListingOut.from_row(row)


def parse_listing_ref(id_or_slug: str) -> UUID:
    """The id named by a path segment (a uuid or a slug ending in one); else ``NotFound`` —
    a malformed reference names no listing, which is what 404 says."""
    listing_id = listing_id_from_slug(id_or_slug)
    if listing_id is None:
        raise NotFound(f"no job listing {id_or_slug[:100]!r}")
    return listing_id


async def find_listing(conn: AsyncConn, id_or_slug: str) -> ListingOut:
    return await get_listing(conn, parse_listing_ref(id_or_slug))


async def get_listings_by_ids(conn: AsyncConn, ids: Sequence[UUID]) -> dict[UUID, ListingOut]:
    if not ids:
        return {}
    cur = await conn.execute(Q["get_listings_by_ids"], {"ids": list(ids)})
    return {row["id"]: ListingOut.from_row(row) for row in await cur.fetchall()}


def ensure_may_edit(principal: Principal, owner_token_id: int | None) -> None:
    """A listing is changed by the company token that posted it, or by an admin. Listings
    without an owner (imported, sample, or whose token was deleted) are admin-only."""
    if principal.is_admin:
        return
    if owner_token_id is None or owner_token_id != principal.token_id:
        raise Forbidden("only the company that posted this listing (or an admin) may change it")


async def update_listing(
    conn: AsyncConn, listing_id: UUID, patch: ListingPatch, principal: Principal
) -> ListingOut:
    """Apply ``patch``; the slug follows company, title and city."""
    async with conn.transaction():
        cur = await conn.execute(Q["lock_listing"], {"id": listing_id})
        current = await cur.fetchone()
        if current is None:
            raise NotFound(f"no job listing {listing_id}")
        ensure_may_edit(principal, current["owner_token_id"])
        changes = patch.changes()
        merged = {k: current[k] for k in ListingCreate.model_fields} | changes
        low, high = merged["salary_min_ks"], merged["salary_max_ks"]
        if low is not None and high is not None and low > high:
            # Each value may be fine alone and still cross the stored other one: the caller's
            # mistake (4xx), which would otherwise surface as a CHECK violation (500).
            raise BadInput(
                f"salary_min_ks ({low}) would be greater than salary_max_ks ({high})",
                field="salary_min_ks" if "salary_min_ks" in changes else "salary_max_ks",
            )
        try:
            data = ListingCreate.model_validate(merged)
        except ValidationError as exc:
            raise bad_input_from(exc) from None
        cur = await conn.execute(
            Q["update_listing"],
            {
                **data.model_dump(),
                "id": listing_id,
                "detail_page_slug": make_detail_page_slug(
                    data.company_name, data.job_title, data.city_location, listing_id
                ),
            },
        )
        updated = await cur.fetchone()
    assert updated is not None  # the row is locked by this transaction
    return ListingOut.from_row(updated)


async def delete_listing(conn: AsyncConn, listing_id: UUID, principal: Principal) -> None:
    async with conn.transaction():
        cur = await conn.execute(Q["lock_listing"], {"id": listing_id})
        current = await cur.fetchone()
        if current is None:
            raise NotFound(f"no job listing {listing_id}")
        ensure_may_edit(principal, current["owner_token_id"])
        await conn.execute(Q["delete_listing"], {"id": listing_id})


async def copy_listings(conn: AsyncConn, items: Iterable[ListingCreate], *, source: Source) -> int:
    """COPY ``items`` into job_listings inside the caller's transaction; returns the count."""
    n = 0
    cur = conn.cursor()
    async with cur.copy(Q["copy_listings"]) as copy:
        for data in items:
            row = _new_row(data, source)
            await copy.write_row(
                (
                    row["id"],
                    row["company_name"],
                    row["job_title"],
                    row["city_location"],
                    row["description"],
                    row["salary_min_ks"],
                    row["salary_max_ks"],
                    row["currency_code"],
                    row["work_mode"],
                    row["detail_page_slug"],
                    row["source"],
                )
            )
            n += 1
    return n


def batched(items: Iterable[ListingCreate], size: int) -> Iterator[list[ListingCreate]]:
    it = iter(items)
    while batch := list(islice(it, size)):
        yield batch


async def insert_listings(
    conn: AsyncConn,
    items: Iterable[ListingCreate],
    *,
    source: Source,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> int:
    """Bulk insert, one transaction per batch: a failure loses at most the batch in flight,
    and the indexer starts on the first batches while later ones are still loading."""
    total = 0
    for batch in batched(items, batch_size):
        async with conn.transaction():
            total += await copy_listings(conn, batch, source=source)
    return total


async def listings_exist(conn: AsyncConn) -> bool:
    cur = await conn.execute(Q["any_listing"])
    row = await cur.fetchone()
    return bool(row and row["present"])
