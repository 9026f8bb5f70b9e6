"""Every database operation of the listing producers and readers, in one place.

Ids are made here (uuid4), not by the database, because the slug contains the id and is
written in the same INSERT. Functions run in their caller's transaction (the transaction rule
is :mod:`shortlist.listings.service`'s).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn, Row
from shortlist.errors import NotFound
from shortlist.listings import eligibility
from shortlist.listings.models import ListingCreate, ListingOut, Source
from shortlist.listings.slug import make_detail_page_slug

QUERIES = load_queries("shortlist.listings")


@dataclass(frozen=True)
class Owner:
    """Who a new listing belongs to: a user in an organisation (None, None: nobody named here;
    a listing written with a key then gets the key's owner, migration 0029)."""

    user_id: int | None = None
    org_id: int | None = None


NO_OWNER = Owner()


def _fields(data: ListingCreate) -> dict[str, Any]:
    """The listing's columns; who may take the job, when the producer did not say, read from
    its text (shortlist.listings.eligibility)."""
    fields = data.model_dump()
    text = f"{data.job_title}\n{data.city_location}\n{data.description}"
    if fields["remote_countries"] is None:
        fields["remote_countries"] = eligibility.remote_countries_in(text)
    if fields["visa_sponsorship"] is None:
        fields["visa_sponsorship"] = eligibility.visa_in(text)
    return fields


def _new_row(data: ListingCreate, source: Source) -> dict[str, Any]:
    listing_id = uuid.uuid4()
    return {
        "id": listing_id,
        **_fields(data),
        "detail_page_slug": make_detail_page_slug(
            data.company_name, data.job_title, data.city_location, listing_id
        ),
        "source": source,
    }


async def _insert(
    conn: AsyncConn,
    data: ListingCreate,
    source: Source,
    owner_token_id: int | None,
    external_id: str | None,
    owner: Owner,
) -> ListingOut | None:
    row = {
        **_new_row(data, source),
        "owner_token_id": owner_token_id,
        "external_id": external_id,
        "user_id": owner.user_id,
        "org_id": owner.org_id,
    }
    cur = await conn.execute(QUERIES["insert_listing"], row)
    created = await cur.fetchone()
    return ListingOut.from_row(created) if created is not None else None


async def insert_listing(
    conn: AsyncConn,
    data: ListingCreate,
    *,
    source: Source,
    owner_token_id: int | None,
    owner: Owner = NO_OWNER,
) -> ListingOut:
    created = await _insert(conn, data, source, owner_token_id, None, owner)
    assert created is not None  # without an external_id nothing conflicts
    return created


async def insert_listing_once(
    conn: AsyncConn,
    data: ListingCreate,
    *,
    source: Source,
    owner_token_id: int | None,
    external_id: str,
    owner: Owner = NO_OWNER,
) -> tuple[ListingOut, bool]:
    """The listing ``source`` knows as ``external_id``: inserted, or the one inserted before
    (a concurrent insert of the same one waits for the first to commit); and whether it is new."""
    while True:
        created = await _insert(conn, data, source, owner_token_id, external_id, owner)
        if created is not None:
            return created, True
        cur = await conn.execute(
            QUERIES["listing_of_external_id"], {"source": source, "external_id": external_id}
        )
        existing = await cur.fetchone()
        if existing is not None:
            with contextlib.suppress(NotFound):
                return await get_listing(conn, existing["id"]), False
        # The first one was deleted in between: insert it after all.


async def get_listing(conn: AsyncConn, listing_id: UUID) -> ListingOut:
    cur = await conn.execute(QUERIES["get_listing"], {"id": listing_id})
    row = await cur.fetchone()
    if row is None:
        raise NotFound(f"no job listing {listing_id}")
    return ListingOut.from_row(row)


async def get_listings_by_ids(conn: AsyncConn, ids: Sequence[UUID]) -> dict[UUID, ListingOut]:
    if not ids:
        return {}
    cur = await conn.execute(QUERIES["get_listings_by_ids"], {"ids": list(ids)})
    return {row["id"]: ListingOut.from_row(row) for row in await cur.fetchall()}


async def lock_listing(conn: AsyncConn, listing_id: UUID) -> Row:
    """The stored fields and owner of a listing, locked until the caller's transaction ends."""
    cur = await conn.execute(QUERIES["lock_listing"], {"id": listing_id})
    current = await cur.fetchone()
    if current is None:
        raise NotFound(f"no job listing {listing_id}")
    return current


async def update_listing(conn: AsyncConn, listing_id: UUID, data: ListingCreate) -> ListingOut:
    """Overwrite a listing's fields; the slug follows company, title and city."""
    cur = await conn.execute(
        QUERIES["update_listing"],
        {
            **_fields(data),
            "id": listing_id,
            "detail_page_slug": make_detail_page_slug(
                data.company_name, data.job_title, data.city_location, listing_id
            ),
        },
    )
    updated = await cur.fetchone()
    if updated is None:
        raise NotFound(f"no job listing {listing_id}")
    return ListingOut.from_row(updated)


async def close_listing(conn: AsyncConn, listing_id: UUID) -> bool:
    """open -> closed; False if it was closed already."""
    cur = await conn.execute(QUERIES["close_listing"], {"id": listing_id})
    return await cur.fetchone() is not None


async def copy_listings(conn: AsyncConn, items: Iterable[ListingCreate], *, source: Source) -> int:
    """COPY ``items`` into job_listings inside the caller's transaction; returns the count."""
    n = 0
    cur = conn.cursor()
    async with cur.copy(QUERIES["copy_listings"]) as copy:
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
                    n + 1,
                    row["apply_url"],
                    row["apply_email"],
                    row["remote_countries"],
                    row["visa_sponsorship"],
                )
            )
            n += 1
    return n


async def listings_exist(conn: AsyncConn) -> bool:
    cur = await conn.execute(QUERIES["any_listing"])
    row = await cur.fetchone()
    return bool(row and row["present"])


async def listings_of_org(conn: AsyncConn, org_id: int, limit: int) -> list[Row]:
    """An organisation's listings, newest first (``listings_of_org``)."""
    cur = await conn.execute(QUERIES["listings_of_org"], {"org_id": org_id, "limit": limit})
    return await cur.fetchall()
