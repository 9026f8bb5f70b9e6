"""Reverse search: which saved searches one new job listing satisfies, at a million of them.

A saved search matches a listing when its filters hold (job search's: place, salary floor, work
mode) and job search would score the listing at least the search's threshold on the score it
shows: ``σ(b + w_cos·cos + w_sim·sim)`` (``shortlist.relevance.JOB_SCORE``), where ``cos`` is
the cosine of the query's and the listing's vectors and ``sim`` pg_trgm's ``word_similarity``
of the query's title words and the title. No query is run forward; instead the score is split
so that each saved query is found through an index by a condition every match of it meets
(a presearch, as Luwak does for stored Lucene queries), and the few found are checked exactly:

* **keywords** (``sim > KEYWORD_SIMILARITY``): the title then holds more than that share of
  the query's ``n`` trigrams, so it holds at least one of any ``n - ⌊s·n⌋`` of them. Those are
  the query's *anchors*, in a GIN index; a listing finds the queries whose anchors its title's
  trigrams hold. Exact: an index lookup, no approximation.
* **meaning** (``sim ≤ KEYWORD_SIMILARITY``): the score then needs
  ``cos ≥ (logit(t) − b − w_sim·s) / w_cos`` (:func:`meaning_radius`), a range around the
  listing's vector; the queries' vectors are in an HNSW index (identical queries are one row),
  read nearest first until past the radius. Approximate as HNSW is: the bench measures recall.
* queries **without anchors** (no title words: their ``sim`` is 0) are always checked.

Whatever either path finds is scored exactly as job search scores it, then each saved search of
the query is held to its own threshold and filters (indexed columns of ``saved_searches``), and
the matches are inserted ``ON CONFLICT DO NOTHING`` (match.sql).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import sql

from shortlist.db.sql import compose, load_queries
from shortlist.db.types import AsyncConn
from shortlist.embedding.model_space import ModelSpace
from shortlist.relevance import JOB_SCORE

QUERIES = load_queries("shortlist.alerts", "match.sql")

KEYWORD_SIMILARITY = 0.5
"""The title similarity above which a query is found by its anchors, at or below which by its
vector: higher makes fewer anchors (a more selective keyword path) and a wider vector radius."""
FIRST_K = 64
"""Nearest queries read first; widened four times over while all are within the radius."""
MAX_K = 65_536

if JOB_SCORE.title_match != 0.0:  # pragma: no cover - a refit that weighs it needs match.sql too
    raise RuntimeError("match.sql scores without the title-match share: JOB_SCORE weighs it now")


def logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def meaning_radius(floor: float) -> float:
    """The cosine distance within which a query's vector must lie for a listing to reach score
    ``floor`` with a title similarity of at most :data:`KEYWORD_SIMILARITY`."""
    cos = (logit(floor) - JOB_SCORE.intercept - JOB_SCORE.title_similarity * KEYWORD_SIMILARITY) / (
        JOB_SCORE.cosine
    )
    return max(0.0, 1.0 - cos) + 1e-6


def anchors(trigrams: Sequence[str]) -> list[str]:
    """Trigrams of a query of which a title must hold one for its similarity to exceed
    :data:`KEYWORD_SIMILARITY`: any ``n - ⌊s·n⌋`` of its ``n``; those inside a word (no
    padding blank) first, as they are rarer in titles."""
    unique = sorted(set(trigrams), key=lambda t: (t.count(" "), t))
    n = len(unique)
    if n == 0:
        return []
    need = math.floor(KEYWORD_SIMILARITY * n) + 1  # shared trigrams for sim > s
    return unique[: n - need + 1]


def score_params(floor: float) -> dict[str, float]:
    return {
        "intercept": JOB_SCORE.intercept,
        "w_cosine": JOB_SCORE.cosine,
        "w_similarity": JOB_SCORE.title_similarity,
        "floor": floor,
    }


@dataclass(frozen=True)
class Statements:
    """match.sql composed for one model space (its vector column)."""

    listing: sql.Composed
    insert: sql.Composed
    exhaustive: sql.Composed

    @classmethod
    def of(cls, space: ModelSpace | None) -> Statements:
        column = sql.Identifier(space.vector_column if space is not None else "embedding")
        return cls(
            *(
                compose(QUERIES[name], embedding=column)
                for name in ("listing_to_match", "insert_matches", "exhaustive_matches")
            )
        )


async def nearest_queries(conn: AsyncConn, vector: Any, radius: float) -> list[int]:
    """The saved queries within ``radius`` (cosine distance) of ``vector``, through the HNSW
    index: read nearest first, the list widened while every query read is within it. In the
    caller's transaction (the candidate list's size is set for it)."""
    k = FIRST_K
    while True:
        await conn.execute(QUERIES["widen_scan"], {"ef_search": str(min(1000, max(40, k)))})
        cur = await conn.execute(QUERIES["nearest_queries"], {"vector": vector, "k": k})
        rows = await cur.fetchall()
        within = [int(r["id"]) for r in rows if float(r["distance"]) <= radius]
        if len(rows) < k or len(within) < len(rows) or k >= MAX_K:
            return within
        k *= 4


async def match_listing(
    conn: AsyncConn, statements: Statements, listing_id: uuid.UUID, floor: float
) -> list[uuid.UUID] | None:
    """Write the matches of one listing in the caller's transaction; returns the saved searches
    that got one, or None when the listing is not to be matched (closed, a duplicate, no
    vector)."""
    cur = await conn.execute(statements.listing, {"id": listing_id})
    row = await cur.fetchone()
    if row is None:
        return None
    near = await nearest_queries(conn, row["vector"], meaning_radius(floor))
    cur = await conn.execute(
        statements.insert, {"id": listing_id, "near": near, **score_params(floor)}
    )
    searches = sorted({r["search_id"] for r in await cur.fetchall()})
    if searches:
        await conn.execute(QUERIES["schedule_digests"], {"ids": searches})
    return searches


async def exhaustive_matches(
    conn: AsyncConn, statements: Statements, listing_id: uuid.UUID, floor: float
) -> dict[uuid.UUID, float]:
    """Every saved search the listing satisfies, by scoring all of them (no index): what the
    presearch must agree with."""
    cur = await conn.execute(statements.exhaustive, {"id": listing_id, **score_params(floor)})
    return {r["search_id"]: float(r["score"]) for r in await cur.fetchall()}
