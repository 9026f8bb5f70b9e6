"""Why a job search hit matched: the query words it contains, a highlighted snippet, and which
retrieval found it (``meaning``: the vector list, ``words``: the full-text list, or ``both``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal
from uuid import UUID

from markupsafe import escape
from pydantic import BaseModel

from shortlist.db.sql import load_queries
from shortlist.db.types import Row

QUERIES = load_queries("shortlist.listings", "why.sql")

Via = Literal["meaning", "words", "both"]

START, STOP = "\ue000", "\ue001"
HEADLINE_OPTIONS = (
    f"StartSel={START}, StopSel={STOP}, MaxWords=30, MinWords=12, MaxFragments=2,"
    ' FragmentDelimiter=" … "'
)
_WORD = re.compile(r"\w+")


class Why(BaseModel):
    matched_terms: list[str]
    snippet: str
    """HTML: the description's text, escaped, with the matched words in ``<mark>``."""
    via: Via


def query_words(q: str) -> list[str]:
    """The query's distinct words, lower-cased, in order."""
    return list(dict.fromkeys(w.lower() for w in _WORD.findall(q)))


def why_params(q: str, ids: Sequence[UUID]) -> dict[str, object]:
    return {"q": q, "words": query_words(q), "ids": list(ids), "options": HEADLINE_OPTIONS}


def highlighted(headline: str) -> str:
    """ts_headline's text as safe HTML: everything escaped, then the sentinels made marks."""
    return str(escape(headline)).replace(START, "<mark>").replace(STOP, "</mark>")


def via(vector_rank: int | None, text_rank: int | None) -> Via:
    if vector_rank and text_rank:
        return "both"
    return "words" if text_rank else "meaning"


def why_by_id(rows: Sequence[Row]) -> dict[UUID, tuple[list[str], str]]:
    return {r["id"]: (list(r["matched_terms"]), highlighted(r["snippet"] or "")) for r in rows}
