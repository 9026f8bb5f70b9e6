"""Why this candidate: a result held against the brief, criterion by criterion.

One function, :func:`explain_candidate`, takes the brief's structured fields (role, location,
minimum years, skills) and a candidate, and says for each criterion whether the person meets
it, plus the similarity the ranking used. The brief today is the search row's own fields; a
brief parsed from free text feeds the same :class:`Brief`.

Ranking candidates is a high-risk use under the EU AI Act (Annex III 4(a)): the recruiter sees
what the score rests on, and decides.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from shortlist.talent.roles import role_family


@dataclass(frozen=True)
class Brief:
    role: str | None
    location: str | None
    min_years_experience: int | None
    skills: Sequence[str]


@dataclass(frozen=True)
class Person:
    role_title: str
    headline: str
    location: str
    years_experience: int | None
    skills: Sequence[str]


class CandidateWhy(BaseModel):
    """Each criterion is ``None`` when the brief does not state it."""

    # camelCase in JSON, as every other field of the recruiter API.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    role_match: bool | None
    location_match: bool | None
    years_experience: int | None
    min_years_experience: int | None
    years_ok: bool | None
    skills_matched: list[str]
    skills_missing: list[str]
    similarity: float
    summary: str


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold().strip()


def _role_match(wanted: str, person: Person) -> bool:
    """Same title words, or the same role family (a "Platform Engineer" for an SRE brief)."""
    held = _fold(f"{person.role_title} {person.headline}")
    if _fold(wanted) in held:
        return True
    family = role_family(wanted)
    return family is not None and role_family(person.role_title) == family


def explain_candidate(brief: Brief, person: Person, similarity: float) -> CandidateWhy:
    role = _role_match(brief.role, person) if brief.role else None
    location = _fold(brief.location) in _fold(person.location) if brief.location else None
    years_ok = (
        None
        if brief.min_years_experience is None
        else person.years_experience is not None
        and person.years_experience >= brief.min_years_experience
    )
    held = {_fold(s) for s in person.skills}
    matched = [s for s in brief.skills if _fold(s) in held]
    missing = [s for s in brief.skills if _fold(s) not in held]
    parts: list[str] = []
    if role is not None:
        parts.append("role ✓" if role else "role ✗")
    if location is not None:
        parts.append("location ✓" if location else "location ✗")
    if years_ok is not None:
        years = "?" if person.years_experience is None else str(person.years_experience)
        parts.append(f"{years}/{brief.min_years_experience}+ yrs {'✓' if years_ok else '✗'}")
    if brief.skills:
        parts.append(f"skills {len(matched)}/{len(brief.skills)}")
        if missing:
            parts.append("missing " + ", ".join(missing))
    parts.append(f"similarity {similarity:.2f}")
    return CandidateWhy(
        role_match=role,
        location_match=location,
        years_experience=person.years_experience,
        min_years_experience=brief.min_years_experience,
        years_ok=years_ok,
        skills_matched=matched,
        skills_missing=missing,
        similarity=round(similarity, 4),
        summary="; ".join(parts),
    )
