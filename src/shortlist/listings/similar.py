"""Similar jobs: the open listings nearest in meaning to one listing, each with a reason.

Nearest by the active model's vectors through the vector index (as search's vector list reads
it), leaving out the listing's own duplicates (a near-identical text the indexer linked) and
the same company's posts (the same job in another city is a link on its own page, not a
suggestion). The reason is read from what the two listings share: title words, city, work mode
("Also a backend engineer role · Also in Berlin"); else "Similar work" (only the meaning).
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncPool
from shortlist.embedding.model_space import ModelSpace
from shortlist.embedding.spaces import SpaceStatements
from shortlist.listings.models import ListingOut

QUERIES = SpaceStatements(load_queries("shortlist.listings", "similar.sql"))
MAX_SIMILAR = 20
CANDIDATES = 40
"""Nearest listings read before the same company's are left out."""
# Words of a title that say nothing of the work ("Senior", "(m/w/d)", "and").
_LEVEL_WORDS = frozenset({
    "senior", "junior", "lead", "staff", "principal", "head", "sr", "jr", "mid", "level", "i",
    "ii", "iii", "and", "of", "for", "the", "a", "an", "in", "at", "m", "w", "d", "f", "x",
    "remote", "hybrid", "intern", "internship", "&", "-", "/",
})  # fmt: skip
_WORD = re.compile(r"[^\W_]+(?:[.+#][^\W_]*)*", re.UNICODE)


class SimilarJob(BaseModel):
    listing: ListingOut
    similarity: float
    """Cosine similarity of the two listings' vectors (1: the same meaning)."""
    reason: str
    """Why it is suggested, in words: what the two listings share."""


def _title_words(title: str) -> list[str]:
    return [w for w in _WORD.findall(title.lower()) if w not in _LEVEL_WORDS]


def reason(of: ListingOut, other: ListingOut) -> str:
    """What ``other`` shares with ``of``, in a few words."""
    mine = set(_title_words(of.job_title))
    shared = [w for w in _title_words(other.job_title) if w in mine]
    parts = []
    if shared:
        parts.append(f"Also a {' '.join(dict.fromkeys(shared))} role")
    else:
        parts.append("Similar work")
    if other.city_location.casefold() == of.city_location.casefold():
        parts.append(f"also in {other.city_location}")
    elif other.work_mode == "remote" and of.work_mode == "remote":
        parts.append("also remote")
    return " · ".join(parts)


async def similar_jobs(
    pool: AsyncPool, space: ModelSpace, listing: ListingOut, size: int = 5
) -> list[SimilarJob]:
    """Up to ``size`` open listings like ``listing`` (none while it has no vector yet)."""
    async with pool.connection() as conn:
        cur = await conn.execute(
            QUERIES.get("similar_listings", space),
            {"id": listing.id, "k": CANDIDATES, "size": min(size, MAX_SIMILAR)},
        )
        rows = await cur.fetchall()
    found = []
    for row in rows:
        other = ListingOut.from_row(row)
        found.append(
            SimilarJob(
                listing=other,
                similarity=round(1.0 - float(row["distance"]), 4),
                reason=reason(listing, other),
            )
        )
    return found
