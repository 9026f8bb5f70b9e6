"""Why this candidate: a result held against the brief, criterion by criterion.

:func:`explain_candidate` takes the brief's structured fields (role, location, minimum years,
skills) and a candidate, and says for each constraint whether the person meets it
(:mod:`shortlist.talent.constraints`: ``met`` / ``unknown`` / ``not_met``, with what it rests on),
whether the title fits the role, and the two probabilities the score is made of: the role's
(``similarity``, today's calibrated relevance) and the whole brief's (``fit``, the score shown).
A result's constraints are the ones judged when it was appended (stored beside its rank), so
what it says is what its score rests on.

Ranking candidates is a high-risk use under the EU AI Act (Annex III 4(a)): the recruiter sees
what the score rests on, and decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from shortlist.talent.constraints import (
    ConstraintKind,
    Judgement,
    Outcome,
    Wanted,
    held_of,
    judge,
    skills_listed,
)
from shortlist.talent.roles import role_family
from shortlist.text import fold

EMAIL_ON_FILE = "e-mail on file with the provider (not shown on this plan)"


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
    summary: str = ""
    email: str | None = None
    email_on_file: bool = False


class _CamelModel(BaseModel):
    # camelCase in JSON, as every other field of the recruiter API.
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class ConstraintWhy(_CamelModel):
    """One of the brief's constraints held against the person."""

    kind: ConstraintKind
    label: str
    """What the person has: "Munich", "Garching (metro Munich)", "15 ≥ 5"."""
    outcome: Outcome
    detail: str


class CandidateWhy(_CamelModel):
    """Each criterion is ``None`` when the brief does not state it (or, for location and years,
    when the profile does not say)."""

    constraints: list[ConstraintWhy]
    """Each constraint of the brief (location, years, skills) with its outcome."""
    contact: str | None
    """How the person is reached when the corpus holds no address (:data:`EMAIL_ON_FILE`)."""
    fit: float
    """The probability that the person fits the whole brief: the result's score."""
    role_match: bool | None
    location_match: bool | None
    years_experience: int | None
    min_years_experience: int | None
    years_ok: bool | None
    skills_matched: list[str]
    skills_missing: list[str]
    similarity: float
    """The role probability (shortlist.relevance) that ``fit`` is derived from."""
    summary: str


def _role_match(wanted: str, person: Person) -> bool:
    """Same title words, or the same role family (a "Platform Engineer" for an SRE brief)."""
    held = fold(f"{person.role_title} {person.headline}")
    if fold(wanted) in held:
        return True
    family = role_family(wanted)
    return family is not None and role_family(person.role_title) == family


def wanted_of(brief: Brief) -> Wanted:
    return Wanted.of(brief.location, brief.min_years_experience, brief.skills)


def _flag(judgement: Judgement, kind: ConstraintKind) -> bool | None:
    found = next((c for c in judgement.constraints if c.kind is kind), None)
    if found is None or found.outcome is Outcome.unknown:
        return None
    return found.outcome is Outcome.met


def explain_candidate(
    brief: Brief,
    person: Person,
    score: float,
    *,
    role_score: float | None = None,
    judged: object = None,
) -> CandidateWhy:
    """``score``: the result's (the whole brief's probability); ``role_score``: the role
    probability it came from (None: a result from before constraints, whose score is the
    role's); ``judged``: the constraints stored with the result, if any."""
    role = _role_match(brief.role, person) if brief.role else None
    judgement = Judgement.from_json(judged) or judge(wanted_of(brief), held_of(person))
    similarity = score if role_score is None else role_score
    listed = skills_listed(brief.skills, held_of(person))
    matched = [s for s, ok in zip(brief.skills, listed, strict=True) if ok]
    missing = [s for s, ok in zip(brief.skills, listed, strict=True) if not ok]
    contact = EMAIL_ON_FILE if person.email is None and person.email_on_file else None
    parts = [c.summary() for c in judgement.constraints]
    if role is not None:
        parts.append("role ✓" if role else "role ~")
    if contact:
        parts.append(contact)
    parts.append(f"fit {score:.0%}" + (f" (role {similarity:.0%})" if role_score else ""))
    return CandidateWhy(
        constraints=[
            ConstraintWhy(kind=c.kind, label=c.label, outcome=c.outcome, detail=c.detail)
            for c in judgement.constraints
        ],
        contact=contact,
        fit=round(score, 4),
        role_match=role,
        location_match=_flag(judgement, ConstraintKind.location),
        years_experience=person.years_experience,
        min_years_experience=brief.min_years_experience,
        years_ok=_flag(judgement, ConstraintKind.years),
        skills_matched=matched,
        skills_missing=missing,
        similarity=round(similarity, 4),
        summary="; ".join(parts),
    )
