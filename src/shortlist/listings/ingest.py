"""Bulk import of job listings from JSONL or CSV (``shortlist ingest jobs FILE``).

The reading, validation and batching are shared with every corpus (``shortlist.ingest_files``);
this module says what a listing row is: the ``ListingCreate`` model, the short column names
people use (``company``, ``title``, ``city``, ``location``, ``currency``), and the COPY that
inserts a batch with ``source = 'file'``.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType

from shortlist.db.types import AsyncConn
from shortlist.ingest_files import (
    DEFAULT_BATCH_SIZE,
    BadRow,
    IngestReport,
    RecordFileReader,
    ingest_records,
)
from shortlist.listings.models import ListingCreate
from shortlist.listings.repository import copy_listings

__all__ = ["BadRow", "IngestReport", "ListingFileReader", "ingest_listings"]


class ListingFileReader(RecordFileReader[ListingCreate]):
    model = ListingCreate
    aliases = MappingProxyType(
        {
            "company": "company_name",
            "title": "job_title",
            "city": "city_location",
            "location": "city_location",
            "currency": "currency_code",
        }
    )
    blank_is_absent = frozenset({"currency_code"})


async def _insert(conn: AsyncConn, batch: list[ListingCreate]) -> int:
    return await copy_listings(conn, batch, source="file")


async def ingest_listings(
    conn: AsyncConn,
    reader: ListingFileReader,
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_bad_row: Callable[[BadRow], None] | None = None,
    on_progress: Callable[[RecordFileReader[ListingCreate], int], None] | None = None,
) -> IngestReport:
    """Read every row of an opened ``reader``; insert the good listings in batches."""
    return await ingest_records(
        conn, reader, _insert, batch_size=batch_size, on_bad_row=on_bad_row, on_progress=on_progress
    )
