"""Why a job search hit matched: the query words it contains, a highlighted snippet, and which
retrieval found it (``meaning``: the vector list, ``words``: the full-text list, or ``both``)."""

from __future__ import annotations

import re
from typing import Literal

from markupsafe import escape
from psycopg import sql
from pydantic import BaseModel

from shortlist.db.sql import compose, load_queries

QUERIES = load_queries("shortlist.listings", "why.sql")
WHY_COLUMNS = sql.SQL(" ".join(QUERIES["why_columns"].split()).replace(", ", ","))
"""The select list of a listing with its why (why.sql), as the search's statements include it:
white space collapsed, as shortlist.listings.search sends its own (no literal of it holds a
space it needs)."""
PAGE_WITH_WHY = compose(QUERIES["page_with_why"], why_columns=WHY_COLUMNS)

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
    labels: list[str] = []
    """The match in a few words people read, chosen from the evidence the score is computed
    from (:func:`match_labels`): "Title matches", "Title matches in part", "Mentions Python,
    Kotlin", "Similar in meaning"."""


TITLE_MATCHES = "Title matches"
TITLE_PART = "Title matches in part"
SIMILAR = "Similar in meaning"
MAX_MENTIONED = 3


def match_labels(title_match: float, title: str, matched_terms: list[str], via: Via) -> list[str]:
    """What a hit shares with the query, in words: every query word (lexeme) in its title
    ("Title matches"), some of them ("… in part"), the query's words its description names
    that its title does not ("Mentions Python, Kotlin"), or, found only by the vector list,
    "Similar in meaning". ``title_match``: the share of the query's lexemes in the title
    (shortlist.relevance's evidence)."""
    labels = []
    if title_match >= 0.999:
        labels.append(TITLE_MATCHES)
    elif title_match > 0:
        labels.append(TITLE_PART)
    in_title = {w.lower() for w in _WORD.findall(title)}
    mentioned = [t for t in matched_terms if t.lower() not in in_title][:MAX_MENTIONED]
    if mentioned:
        labels.append("Mentions " + ", ".join(_display(t) for t in mentioned))
    if not labels:
        labels.append(SIMILAR if via == "meaning" else "Matches your words")
    return labels


def _display(term: str) -> str:
    # "python" → "Python", "go" → "Go"; three letters are mostly acronyms ("sql", "aws")
    return term.upper() if len(term) == 3 else term[:1].upper() + term[1:]


def query_words(q: str) -> list[str]:
    """The query's distinct words, lower-cased, in order."""
    return list(dict.fromkeys(w.lower() for w in _WORD.findall(q)))


def why_params(q: str) -> dict[str, object]:
    """The parameters of ``why_columns`` (why.sql) for the query ``q``."""
    return {"q": q, "words": query_words(q), "options": HEADLINE_OPTIONS}


def highlighted(headline: str) -> str:
    """ts_headline's text as safe HTML: everything escaped, then the sentinels made marks."""
    return str(escape(headline)).replace(START, "<mark>").replace(STOP, "</mark>")


def via(vector_rank: int | None, text_rank: int | None) -> Via:
    if vector_rank and text_rank:
        return "both"
    return "words" if text_rank else "meaning"
