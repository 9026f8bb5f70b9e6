"""Reverse search: which saved searches new job listings satisfy, at a million of them.

A saved search matches a listing when its filters hold (job search's: place, salary floor, work
mode) and job search would score the listing at least the search's threshold on the score it
shows: ``σ(b + w_cos·cos + w_sim·sim)`` (``shortlist.relevance.JOB_SCORE``), where ``cos`` is
the cosine of the query's and the listing's vectors and ``sim`` the title similarity both ways:
``ws·(1 + ws′)/2``, ``ws`` pg_trgm's ``word_similarity`` of the query's title words and the
title, ``ws′`` the title's of the words (search.sql's evidence). ``sim ≤ ws``, so the presearch
below is written on ``ws`` and still finds every match. No query is run forward; instead the
score is split so that each saved query is found by a condition every match of it meets (a
presearch, as Luwak does for stored Lucene queries), and the few found are checked exactly:

* **keywords** (``ws > KEYWORD_SIMILARITY``): the title then holds more than that share of
  the query's ``n`` trigrams (``word_similarity`` counts those found in a stretch of the title),
  so at least ``⌊s·n⌋ + 1`` of them. The match queue holds every query's trigrams (pg_trgm's) in
  memory as inverted lists and counts, per title, how many each query shares
  (:class:`.query_vectors.TrigramIndex`): exact, and tighter than the GIN *anchor keys* it
  replaced (migration 0041: pairs of the query's trigrams a title similar enough holds;
  dropped by 0049).
* **meaning** (``ws ≤ KEYWORD_SIMILARITY``, so ``sim`` too; queries without title words too:
  their ``sim`` is 0): the score then needs ``cos ≥ (logit(t) − b − w_sim·s) / w_cos``
  (:func:`meaning_radius`),
  a range around the listing's vector. The distinct queries' vectors (identical queries are one
  row) are held in the match queue's memory too and compared with a whole batch of listings in
  one matrix product (:mod:`.query_vectors`): exact, where an HNSW range scan per listing was
  approximate and cost more (bench_alerts), as did the GIN presearch per listing (both
  dropped by migration 0049).

Of what either path finds, the pairs whose score cannot reach the floor by the upper bounds
of its inputs (``ws``'s bounds ``sim``) are left out in memory (:func:`score_reach`); the rest
are scored exactly as job search scores them, then each saved search of the query is held to
its own threshold and filters (indexed columns of ``saved_searches``), and the matches are
inserted ``ON CONFLICT DO NOTHING``: the whole batch in one statement (match.sql,
insert_matches).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from psycopg import sql

from shortlist.alerts.query_vectors import QueryVectors, Reach, unit_rows
from shortlist.db.sql import compose, load_queries
from shortlist.db.types import AsyncConn
from shortlist.embedding.model_space import ModelSpace
from shortlist.relevance import JOB_SCORE

QUERIES = load_queries("shortlist.alerts", "match.sql")
DIM = 384
"""The first space's dimension (alert_queries.embedding, migration 0034)."""

KEYWORD_SIMILARITY = 0.7
"""The title similarity above which a query is found by its anchors, at or below which by its
vector: higher makes fewer anchors (a more selective keyword path) and a wider vector radius.
``python -m bench --only alerts --alert-keyword-similarity S`` at 100,000 saved searches
(10,000 queries), p50 per listing on the loaded 2-core machine: 0.5 → 94 ms, 0.7 → 66 ms,
0.9 → 154 ms (the vector radius then admits too many)."""

if JOB_SCORE.title_match != 0.0:  # pragma: no cover - a refit that weighs it needs match.sql too
    raise RuntimeError("match.sql scores without the title-match share: JOB_SCORE weighs it now")
if JOB_SCORE.cosine <= 0.0 or JOB_SCORE.title_similarity <= 0.0:  # pragma: no cover
    raise RuntimeError("score_reach bounds the score from above by its inputs' upper bounds")


def logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def meaning_radius(floor: float) -> float:
    """The cosine distance within which a query's vector must lie for a listing to reach score
    ``floor`` with a title similarity of at most :data:`KEYWORD_SIMILARITY`."""
    cos = (logit(floor) - JOB_SCORE.intercept - JOB_SCORE.title_similarity * KEYWORD_SIMILARITY) / (
        JOB_SCORE.cosine
    )
    return max(0.0, 1.0 - cos) + 1e-6


def score_reach(floor: float) -> Reach:
    """The score at least ``floor`` as a floor on its linear part (the score is increasing in
    both the cosine and the title similarity): a candidate whose upper bounds of the two
    cannot reach it is left out before PostgreSQL scores it (at a million saved searches ~4 in
    5 of the pairs the two presearches find; bench/README, alerts)."""
    return Reach(
        cosine=JOB_SCORE.cosine,
        similarity=JOB_SCORE.title_similarity,
        at_least=logit(floor) - JOB_SCORE.intercept - 1e-6,
    )


def score_params(floor: float) -> dict[str, float]:
    return {
        "keyword_similarity": KEYWORD_SIMILARITY,
        "intercept": JOB_SCORE.intercept,
        "w_cosine": JOB_SCORE.cosine,
        "w_similarity": JOB_SCORE.title_similarity,
        "floor": floor,
    }


@dataclass(frozen=True)
class Statements:
    """match.sql composed for one model space (its vector column, on the listings and on the
    saved queries)."""

    insert: sql.Composed
    exhaustive: sql.Composed
    listing_vectors: sql.Composed
    column: str
    dim: int

    @classmethod
    def of(cls, space: ModelSpace | None) -> Statements:
        column = space.vector_column if space is not None else "embedding"
        insert, exhaustive, listing_vectors = (
            compose(QUERIES[name], embedding=sql.Identifier(column))
            for name in ("insert_matches", "exhaustive_matches", "listing_vectors")
        )
        return cls(
            insert, exhaustive, listing_vectors, column, space.dim if space is not None else DIM
        )


@dataclass(frozen=True)
class Matched:
    searches: list[uuid.UUID]
    """The saved searches that got a match."""
    written: int
    """Matches written."""


async def match_batch(
    conn: AsyncConn,
    statements: Statements,
    vectors: QueryVectors,
    listing_ids: Sequence[uuid.UUID],
    floor: float,
) -> Matched:
    """Write the matches of ``listing_ids`` in the caller's transaction, in the batch's order
    (a job two of them are listings of goes to a subscriber once, as the first), ``vectors``
    refreshed before (made with :data:`KEYWORD_SIMILARITY`). Listings not to be matched
    (closed, a duplicate, no vector) get none. Two statements: the listings' vectors and
    titles, then the matches."""
    if not listing_ids:
        return Matched([], 0)
    ids = list(listing_ids)
    cur = await conn.execute(statements.listing_vectors, {"ids": ids}, binary=True)
    rows = await cur.fetchall()
    near = await vectors.candidates(
        [int(r["ord"]) for r in rows],
        unit_rows([r["vector"] for r in rows], vectors.dim),
        [r["trigrams"] or () for r in rows],
        1.0 - meaning_radius(floor),
        score_reach(floor),
    )
    cur = await conn.execute(
        statements.insert,
        {
            "ids": ids,
            # Array literals: psycopg's list dumper took ~0.7 ms of CPU per listing for the
            # ~15,000 numbers of a batch at a million saved searches.
            "near_ords": _array_literal(near.ords),
            "near_queries": _array_literal(near.queries),
            "seen": near.seen,
            **score_params(floor),
        },
    )
    row = await cur.fetchone()
    assert row is not None
    return Matched(list(row["searches"]), int(row["written"]))


def _array_literal(numbers: Sequence[int]) -> str:
    return "{" + ",".join(map(str, numbers)) + "}"


async def schedule(conn: AsyncConn, searches: Sequence[uuid.UUID]) -> None:
    """Saved searches that got matches fall due (their digest slot), in the caller's
    transaction."""
    if searches:
        await conn.execute(QUERIES["schedule_digests"], {"ids": list(searches)})


async def exhaustive_matches(
    conn: AsyncConn, statements: Statements, listing_id: uuid.UUID, floor: float
) -> dict[uuid.UUID, float]:
    """Every saved search the listing satisfies, by scoring all of them (no index): what the
    presearch must agree with."""
    cur = await conn.execute(statements.exhaustive, {"id": listing_id, **score_params(floor)})
    return {r["search_id"]: float(r["score"]) for r in await cur.fetchall()}
