"""The embedded corpora: each table with the embedding columns (migration 0001) and the text
its rows are embedded from (``corpora.sql``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import LiteralString

from shortlist.db.sql import load_queries

_TEXT = load_queries("shortlist.indexer", "corpora.sql")


@dataclass(frozen=True)
class Corpus:
    table: LiteralString
    text_sql: LiteralString
    """SQL expression over the table's columns: the text that is embedded. It reads exactly
    the columns the table's generated ``content_hash`` reads."""


LISTINGS = Corpus("job_listings", _TEXT["job_listings_text"])
CANDIDATES = Corpus("candidates", _TEXT["candidates_text"])
CORPORA: tuple[Corpus, ...] = (LISTINGS, CANDIDATES)
