"""The embedded corpora: each table with the embedding columns (migration 0001) and the text
its rows are embedded from (``corpora.sql``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import LiteralString

from shortlist.db.sql import load_queries

QUERIES = load_queries("shortlist.indexer", "corpora.sql")


@dataclass(frozen=True)
class Corpus:
    table: LiteralString
    text_sql: LiteralString
    """SQL expression over the table's columns: the text that is embedded. It reads exactly
    the columns the table's generated ``content_hash`` reads."""
    links_duplicates: bool = False
    """Link near-duplicates when vectors are written (queries.sql, link_near_duplicates): a
    job listing that repeats another of its company is not listed twice."""
    publishes_jobs: bool = False
    """Write ``job.published`` webhook events when vectors are written (after the links): a
    listing of an organisation that becomes searchable (shortlist.webhooks)."""


LISTINGS = Corpus(
    "job_listings", QUERIES["job_listings_text"], links_duplicates=True, publishes_jobs=True
)
CANDIDATES = Corpus("candidates", QUERIES["candidates_text"])
CORPORA: tuple[Corpus, ...] = (LISTINGS, CANDIDATES)
