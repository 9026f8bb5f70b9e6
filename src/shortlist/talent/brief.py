"""Brief understanding: a recruiter's free text → role, location, minimum years, skills.

Tier 1 maps the brief 1:1 onto the provider's filters, so it needs structured fields even when
the recruiter typed only "FPGA verification engineer in Munich, 5+ years". Everything here is
local and deterministic (no network, no model): the role from the product's own titles
(roles.py) or, failing that, the words in front of a job noun ("engineer", "nurse" …); the
location from the gazetteer (shortlist.places: aliases and languages, "München" is Munich); the
years from "N+ years" or a seniority word; the skills from the corpus's own skill vocabulary.
Structured fields the recruiter gave always win.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache, lru_cache
from typing import Any

from shortlist import places
from shortlist.places import PlaceKind
from shortlist.talent.roles import ROLE_TITLES

# Nouns that end a job title: "<what> <noun>" is read as the role when no known title matches.
JOB_NOUNS = frozenset({
    "engineer", "developer", "programmer", "architect", "scientist", "analyst", "designer",
    "manager", "researcher", "administrator", "consultant", "specialist", "technician",
    "lead", "director", "nurse", "doctor", "physician", "surgeon", "teacher", "accountant",
    "lawyer", "attorney", "chef", "cook", "electrician", "plumber", "carpenter", "welder",
    "mechanic", "pilot", "driver", "writer", "editor", "recruiter", "marketer", "blower",
    "artisan", "pharmacist", "therapist", "veterinarian", "economist", "statistician",
    "translator", "photographer", "sommelier", "baker", "tester", "sre", "devops",
})  # fmt: skip
# Words that end a head of Faker's occupation list but name no occupation ("Clothing/textile
# technologist", "Television floor manager"): never read as a job noun.
_NOT_OCCUPATIONS = frozenset({
    "activities", "clothing", "commercial", "copy", "crew", "emeritus", "film", "forest",
    "garment", "industrial", "land", "logistics", "make", "maths", "medical", "museum",
    "person", "planning", "product", "professional", "sciences", "staff", "support",
    "television", "wales", "visitor", "associate",
})  # fmt: skip


@cache
def occupation_nouns() -> frozenset[str]:
    """Nouns that end a job title: :data:`JOB_NOUNS` and the head nouns of Faker's list of
    occupations (a well-kept list of real ones: "geophysicist", "actuary", "hydrogeologist"),
    taken from each title's head before a comma ("Engineer, aeronautical") and from each
    alternative of a slash ("Geophysicist/field seismologist")."""
    from faker.providers.job import Provider

    nouns = set(JOB_NOUNS)
    for job in Provider.jobs:
        for alternative in job.split(",")[0].split("/"):
            words = re.findall(r"[a-z]+", alternative.lower())
            if words and len(words[-1]) >= 4:
                nouns.add(words[-1])
    return frozenset(nouns - _NOT_OCCUPATIONS)


_ROLE_STOP = frozenset({
    "a", "an", "the", "for", "with", "in", "at", "and", "or", "who", "looking", "need",
    "needed", "wanted", "hiring", "seeking", "senior", "junior", "staff", "principal", "mid",
    "experienced", "years", "year", "yrs", "plus", "remote", "based", "of", "to", "our",
})  # fmt: skip
# Seniority words → the least years of experience they imply (when no number is given).
SENIORITY_YEARS = {"junior": 0, "mid": 3, "intermediate": 3, "senior": 5, "lead": 7,
                   "staff": 8, "principal": 10}  # fmt: skip
_YEARS = re.compile(r"(\d{1,2})\s*\+?\s*(?:years?|yrs?)\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9+#.\-]*")
_ROLE_WORDS = 3


@dataclass(frozen=True)
class Brief:
    """A search brief as understood: what tier 1 sends, stored on the search, shown back."""

    role: str | None = None
    location: str | None = None
    min_years_experience: int | None = None
    skills: tuple[str, ...] = field(default_factory=tuple)

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["skills"] = list(self.skills)
        return data

    @classmethod
    def from_json(cls, data: Any) -> Brief:
        if not isinstance(data, dict):
            return cls()
        years = data.get("min_years_experience")
        return cls(
            role=data.get("role") or None,
            location=data.get("location") or None,
            min_years_experience=int(years) if isinstance(years, int) else None,
            skills=tuple(str(s) for s in data.get("skills") or ()),
        )


@lru_cache(maxsize=4)
def _matcher(phrases: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern finding any of ``phrases`` as whole words, any case, longest first at a
    position; a lookahead, so a phrase inside another ("learning" in "machine learning") is
    found at its own position too. Compiled once per vocabulary: a pattern per phrase, 2,000
    of them, took 68-109 ms of the event loop per brief (and evicted ``re``'s cache)."""
    ordered = sorted(phrases, key=len, reverse=True)
    alternation = "|".join(re.escape(p) for p in ordered)
    return re.compile(rf"(?=(?<!\w)({alternation})(?!\w))", re.IGNORECASE)


def _phrases_in(text: str, phrases: tuple[str, ...]) -> list[str]:
    """The phrases found in ``text`` (as written in ``text``), in the order they appear."""
    if not phrases:
        return []
    return [m.group(1) for m in _matcher(phrases).finditer(text)]


def find_role(text: str) -> str | None:
    """A known title in ``text`` (the longest), else the words before a job noun."""
    titles = {t.lower(): t for t in ROLE_TITLES}
    found = [titles[f.lower()] for f in _phrases_in(text, tuple(ROLE_TITLES))]
    if found:
        return max(found, key=len)
    words = _WORD.findall(text)
    for i, word in enumerate(words):
        if word.lower() not in occupation_nouns():
            continue
        start = i
        while (
            start > 0 and i - start < _ROLE_WORDS - 1 and words[start - 1].lower() not in _ROLE_STOP
        ):
            start -= 1
        role = " ".join(words[start : i + 1])
        return " ".join(w if w.isupper() else w.capitalize() for w in role.split())
    return None


def find_location(text: str) -> str | None:
    """The place the text names (the gazetteer, :func:`shortlist.places.find_place`), as the
    brief stores it: the place's own name ("Munich" for "München"), or its full label when the
    name alone would resolve to another place ("Portland, Maine, United States"); "Remote" for
    a remote brief."""
    place = places.find_place(text)
    if place is None:
        return None
    if place.kind is PlaceKind.remote:
        return "Remote"
    return place.name if places.resolve(place.name) == place else place.label()


def find_min_years(text: str) -> int | None:
    match = _YEARS.search(text)
    if match:
        return int(match.group(1))
    found = [
        SENIORITY_YEARS[w] for w in re.findall(r"[a-z]+", text.lower()) if w in SENIORITY_YEARS
    ]
    return max(found) if found else None


def find_skills(text: str, vocabulary: Collection[str], role: str | None) -> tuple[str, ...]:
    """Vocabulary skills named in ``text`` (whole words), not counting the role's own words."""
    role_words = {w.lower() for w in (role or "").split()}
    # The first spelling of a skill names it (the vocabulary holds one per skill).
    names: dict[str, str] = {}
    for skill in vocabulary:
        key = skill.lower()
        if len(key) >= 2 and key not in role_words:
            names.setdefault(key, skill)
    found: list[str] = []
    for match in _phrases_in(text, tuple(sorted(names))):
        skill = names[match.lower()]
        if skill not in found:
            found.append(skill)
    return tuple(found[:10])


_YEARS_PHRASE = re.compile(
    r",?\s*\b\d{1,2}\s*\+?\s*(?:years?|yrs?)(?:\s+of)?(?:\s+experience)?\b", re.IGNORECASE
)


def _meaning(query: str) -> str:
    """The brief's words without its place and its years: "nurse in Toronto, 5+ years" reads
    as "nurse". Both are constraints judged on their own; left in, "in Berlin" would make every
    Berliner look like the role."""
    text = _YEARS_PHRASE.sub("", places.without_place(query)).strip(" ,;")
    return text or query


def brief_text(query: str, role: str | None, skills: Sequence[str]) -> str:
    """What a search's query embedding and relevance score are of: the brief, plus the role and
    skills, which describe the person wanted. Location and experience are filters, not meaning,
    and stay out."""
    parts = [_meaning(query)]
    if role:
        parts.append(f"Role: {role}")
    if skills:
        parts.append("Skills: " + ", ".join(skills))
    return "\n".join(parts)


def parse_brief(
    query: str,
    *,
    role: str | None = None,
    location: str | None = None,
    min_years_experience: int | None = None,
    skills: Sequence[str] = (),
    skill_vocabulary: Collection[str] = (),
) -> Brief:
    """The brief as understood. Given fields win; the free text fills in the rest. A brief in
    which no role is recognised keeps its text as the role, so tier 1 always asks something."""
    parsed_role = role or find_role(query) or " ".join(query.split())[:200]
    return Brief(
        role=parsed_role,
        location=location or find_location(query),
        min_years_experience=(
            min_years_experience if min_years_experience is not None else find_min_years(query)
        ),
        skills=tuple(skills) or find_skills(query, skill_vocabulary, parsed_role),
    )
