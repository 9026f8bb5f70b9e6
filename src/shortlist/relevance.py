"""What both searches (job listings, the internal candidate corpus) rank by, and what the score
they show means.

**Query text.** People type abbreviations ("SRE", "QA", "CTO", "HR") that neither the English
stemmer nor MiniLM reliably reads as the words postings spell out, and postings title a role by
an abbreviation ("CTO", "SEO Specialist") that a query spells out. :func:`normalise_query`
appends the spelled-out form to an abbreviation (the abbreviation stays, since some titles use
it); the result is what is embedded. :func:`text_terms`, the words the full-text match and the
title features read, also appends the abbreviation to a spelled-out form of two or more words
(:func:`abbreviate`); it is not embedded, since an appended abbreviation moved the query's
vector away from every title spelling the role out (bench/README.md, relevance). It also drops
seniority words ("senior", "junior", "lead"…): every level of a role is a fair answer, and as
search words they would rank any title containing them above the role asked for.

**Score.** A hit's score is the estimated probability that it is relevant to the query, from
the hit's own evidence only: ``σ(w₀ + w_cos·cos + w_match·match + w_sim·sim)``, where ``cos`` is
the cosine similarity of the query and hit vectors, ``match`` the share of the query's words
(English lexemes) found in the title, and ``sim`` the title's similarity to the query. For a
listing, ``sim`` reads both ways (search.sql, ``evidence``): pg_trgm's ``word_similarity`` of the
query's words and the title (how much of the query the title holds, typos and all: "acountant"
still resembles "Accountant") times the mean of 1 and the ``word_similarity`` of the title and
the query's words (how much of the title the query holds). Read one way only, a title sharing
pieces of words with the query resembled it as much as the role asked for: "Intelligence
Research Specialist" 0.41 and "SEO Specialist" 0.36 for "search engine optimization SEO
specialist" ("search" is in "research"), "Pipeline Engineer" 0.44 and "Data Engineer" 0.40 for
"data engineer building ETL pipelines" (now 0.27 / 0.36 and 0.35 / 0.40). ``sim`` is never above
the one-way similarity, which the alert matcher's presearch relies on
(shortlist.alerts.reverse). For a person, ``match``
reads the role title and skills (not the headline, which names the employer) and weights each
query word by its rarity in the corpus (shortlist.talent.evidence). The weights are a logistic
regression fitted on the tune half of the relevance development set (bench/bench_relevance.py,
bench/README.md); the same run checks on both halves that "score ≥ X" is relevant about as
often as X says, so "80% match" means the same for a listing and for a person. Hits are
ordered by it, so the order and the number agree without borrowing a neighbour's value. A
listing still pending its embedding has no ``cos``: it is scored as an unrelated text would be
(``PENDING_COSINE``), i.e. on its words alone, conservatively.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from types import MappingProxyType

# Common abbreviations in job titles and briefs, spelled out. Lower-case keys; a key matches a
# whole word, case-insensitively.
ABBREVIATIONS = MappingProxyType(
    {
        "sre": "site reliability engineer",
        "qa": "quality assurance",
        "ml": "machine learning",
        "ai": "artificial intelligence",
        "nlp": "natural language processing",
        "cto": "chief technology officer",
        "cio": "chief information officer",
        "cfo": "chief financial officer",
        "ceo": "chief executive officer",
        "hr": "human resources",
        "hrbp": "human resources business partner",
        "it": "information technology",
        "infosec": "information security",
        "pr": "public relations",
        "ux": "user experience",
        "ui": "user interface",
        "pm": "project manager",
        "pmp": "project management",
        "mgr": "manager",
        "dev": "developer",
        "devs": "developers",
        "eng": "engineer",
        "sysadmin": "system administrator",
        "dba": "database administrator",
        "ee": "electrical engineer",
        "cpa": "certified public accountant",
        "eeo": "equal employment opportunity",
        "osha": "occupational safety and health",
        "be": "backend",
        "fe": "frontend",
        "rn": "registered nurse",
        "sr": "senior",
        "jr": "junior",
        "seo": "search engine optimization",
        "sem": "search engine marketing",
        "vp": "vice president",
        "coo": "chief operating officer",
        "cmo": "chief marketing officer",
        "ciso": "chief information security officer",
        "cna": "certified nursing assistant",
        "lpn": "licensed practical nurse",
        "emt": "emergency medical technician",
    }
)
# Abbreviations whose spelled-out form above is not what a title abbreviates by them: PMP is a
# certification (project management professional), OSHA the agency (… administration).
_NOT_ABBREVIATED = frozenset({"pmp", "osha"})
# Spelled-out forms of two or more words, to the abbreviation a title may use instead ("chief
# technology officer": CTO). Single words are left alone: "developer" needs no "dev" beside it,
# and "senior" is no search word at all.
ABBREVIATED = MappingProxyType(
    {
        full: abbreviation
        for abbreviation, full in ABBREVIATIONS.items()
        if " " in full and abbreviation not in _NOT_ABBREVIATED
    }
)
SENIORITY_WORDS = frozenset(
    {
        "senior",
        "sr",
        "junior",
        "jr",
        "lead",
        "principal",
        "staff",
        "head",
        "entry",
        "level",
        "experienced",
        "intern",
        "internship",
        "graduate",
        "new",
    }
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9+#.]*[A-Za-z0-9+#]|[A-Za-z]")


# The longest spelled-out form first, so "human resources business partner" is read whole.
_SPELLED_OUT = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    + "|".join(
        r"\s+".join(map(re.escape, full.split()))
        for full in sorted(ABBREVIATED, key=len, reverse=True)
    )
    + r")(?![A-Za-z0-9])",
    re.IGNORECASE,
)


def normalise_query(text: str) -> str:
    """``text`` with each known abbreviation followed by its spelled-out form."""

    def expand(match: re.Match[str]) -> str:
        word = match.group(0)
        full = ABBREVIATIONS.get(word.lower())
        return f"{word} {full}" if full and full != word.lower() else word

    return _WORD.sub(expand, text)


def abbreviate(normalised: str) -> str:
    """``normalised`` with each spelled-out form of two or more words followed by its
    abbreviation, unless the text already holds it (so abbreviating twice changes nothing)."""
    present = {w.lower() for w in _WORD.findall(normalised)}

    def append(match: re.Match[str]) -> str:
        phrase = match.group(0)
        abbreviation = ABBREVIATED[" ".join(phrase.lower().split())]
        if abbreviation in present:
            return phrase
        return f"{phrase} {abbreviation.upper() if len(abbreviation) <= 4 else abbreviation}"

    return _SPELLED_OUT.sub(append, normalised)


MAX_QUERY_WORDS = 32
"""Words of a query the full-text match uses: each is ORed into the match list (job search and
candidate search alike), so a long paste would make one search as costly as many."""


def text_terms(normalised: str) -> str:
    """The words a full-text match should look for: the normalised query with its spelled-out
    forms abbreviated (:func:`abbreviate`), minus seniority, the first :data:`MAX_QUERY_WORDS`
    of them."""
    found = _WORD.findall(abbreviate(normalised))
    words = [w for w in found if w.lower() not in SENIORITY_WORDS] or found
    return " ".join((words or normalised.split())[:MAX_QUERY_WORDS])


@dataclass(frozen=True)
class ScoreModel:
    """Logistic weights of a hit's evidence (module docstring)."""

    intercept: float
    cosine: float
    title_match: float
    title_similarity: float

    def score(self, cosine: float | None, title_match: float, title_similarity: float) -> float:
        z = (
            self.intercept
            + self.cosine * (PENDING_COSINE if cosine is None else cosine)
            + self.title_match * title_match
            + self.title_similarity * title_similarity
        )
        return 1.0 / (1.0 + math.exp(-z))


PENDING_COSINE = 0.1
"""The cosine similarity of two unrelated texts under all-MiniLM-L6-v2, roughly."""

# Fitted on the tune half of the relevance development set (bench/README.md, "relevance"):
# `python -m bench --only relevance` prints the candidate fit and writes it to
# bench/results/relevance-calibration.json.
# Jobs: over every candidate the search fuses (the top 40 of each list) for the tune half's
# queries. The share of the query's words in the title has no weight: with the trigram
# similarity beside it, its fitted weight was negative (-0.82 on the former top-10 pools, -0.21
# on these, -0.46 on the held-out half), so a title holding every word of the query scored
# below one holding half of them; the two say the same, and the similarity says it better.
# The trigram similarity reads the query's words but stop words (search.sql), and both ways
# (module docstring): refitted with it on the same pools (issue 40; bench/README.md, relevance).
# Of the held-out half's fused candidates scored >= 0.7, 82 % are relevant; >= 0.9, 95 %.
JOB_SCORE = ScoreModel(intercept=-3.123, cosine=5.104, title_match=0.0, title_similarity=3.922)
CANDIDATE_SCORE = ScoreModel(
    intercept=-1.664, cosine=3.824, title_match=6.475, title_similarity=0.830
)
