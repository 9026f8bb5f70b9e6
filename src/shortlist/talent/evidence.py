"""The query side of a candidate's relevance evidence (shortlist.relevance): which of the query's
words a person's title and skills should contain, and how much each one counts.

Every query lexeme is weighted by its inverse document frequency among the corpus's titles,
headlines and skills, normalised to sum to 1: the ``title_match`` feature is then the weighted
share found in the person's title and skills (``relevance.sql``). Without the weights, "hire
engineers for us and run recruiting" is matched as well by every engineer as by the recruiters
it asks for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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


async def query_terms(conn: AsyncConn, terms: str) -> QueryTerms:
    """``terms`` (the normalised query minus seniority words) with its lexeme weights."""
    cur = await conn.execute(QUERIES["query_lexeme_idf"], {"terms": terms})
    rows = await cur.fetchall()
    total = sum(float(r["idf"]) for r in rows)
    return QueryTerms(
        terms,
        [str(r["lexeme"]) for r in rows],
        [float(r["idf"]) / total for r in rows] if total > 0 else [],
    )
