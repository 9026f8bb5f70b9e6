"""The query side of a candidate's relevance evidence (shortlist.relevance): which of the query's
words a person's title and skills should contain, and how much each one counts.

Every query lexeme is weighted by its inverse document frequency among the corpus's titles,
headlines and skills, normalised to sum to 1: the ``title_match`` feature is then the weighted
share found in the person's title and skills (``relevance.sql``). Without the weights, "hire
engineers for us and run recruiting" is matched as well by every engineer as by the recruiters
it asks for.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from cachetools import TTLCache
from psycopg import sql

from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn

QUERIES = load_queries("shortlist.talent", "relevance.sql")
TITLE_MATCH = sql.SQL(QUERIES["title_match"])


@dataclass(frozen=True)
class QueryTerms:
    """What the text features of a query read: its search words and their lexemes' weights."""

    terms: str
    lexemes: list[str]
    weights: list[float]

    def params(self) -> dict[str, Any]:
        return {"terms": self.terms, "lexemes": self.lexemes, "weights": self.weights}


WEIGHTS_TTL = 300.0
"""Seconds a query's weights are reused: counting a common word over a large corpus takes a
GIN scan of every row that has it, and the backfill scores each person of a search against
the same query. A corpus's word frequencies move slowly; five minutes old is exact enough."""
WEIGHTS_CACHED = 1024

_weights: TTLCache[tuple[str, int, str, str], QueryTerms] = TTLCache(
    maxsize=WEIGHTS_CACHED, ttl=WEIGHTS_TTL, timer=time.monotonic
)
"""By database (host, port, name) and terms."""


async def query_terms(conn: AsyncConn, terms: str) -> QueryTerms:
    """``terms`` (the normalised query minus seniority words) with its lexeme weights."""
    key = (conn.info.host, conn.info.port, conn.info.dbname, terms)
    cached = _weights.get(key)
    if cached is not None:
        return cached
    cur = await conn.execute(QUERIES["query_lexeme_idf"], {"terms": terms})
    rows = await cur.fetchall()
    total = sum(float(r["idf"]) for r in rows)
    weighted = QueryTerms(
        terms,
        [str(r["lexeme"]) for r in rows],
        [float(r["idf"]) / total for r in rows] if total > 0 else [],
    )
    _weights[key] = weighted
    return weighted
