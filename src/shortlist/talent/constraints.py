"""The brief's constraints held against a person: place, minimum years, must-have skills.

Similarity says whether someone does the job the brief describes; it says nothing about where
they live or how long they have done it. Every result — an internal hit or a backfilled person —
is judged here, constraint by constraint, as ``met`` / ``unknown`` / ``not_met``:

- **location** (the gazetteer, :mod:`shortlist.places`, the one the vendor queries use): a city
  brief is met by the same city or another city of its metro area (``places.METRO_KM``); a
  person elsewhere in the same region or country — or whose profile names only the region or
  country — is ``unknown`` (a maybe: they may live there, commute or move, and rank after the
  city's own people); a person in another country is ``not_met``.
  A region brief is met anywhere in the region, a country brief anywhere in the country. A
  remote brief is met by a remote-friendly person (a "remote" location, or a headline or summary
  that says so) and otherwise ``unknown``: a remote role can be done from anywhere. Aliases and
  other languages (München, Lisboa) resolve to the same place.
- **years**: ``15 ≥ 5`` met, ``3 < 5`` not met, ``unknown`` when the profile states none.
- **skills**: each must-have skill listed on the profile (or named in its title or headline),
  compared case- and accent-free; all listed → met, some → unknown, none → not met. A skill
  list is never complete, so skills are soft: they lower the score, never exclude.

Location and years are **hard**: a person failing one does not count toward the search's target
and is not a result (``SHORTLIST_UNMET_BRIEF=exclude``, the only mode built so far).

The score a result carries is the calibrated probability that the person fits the *whole*
brief: the role probability (:data:`shortlist.relevance.CANDIDATE_SCORE`) times one factor per
constraint outcome (:data:`FACTORS`; for skills :data:`SKILL_UNLISTED_FACTOR` per skill not
listed). The factors are priors, stated once here: met 1; unknown — the constraint may well
hold, roughly the share of such people who turn out to meet it; not met — small, the person can
still be worth a look (relocation, a long career under-reported).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from shortlist import places
from shortlist.places import Nearness, Place, PlaceKind
from shortlist.text import fold


class Outcome(StrEnum):
    met = "met"
    unknown = "unknown"
    not_met = "not_met"


MARKS = {Outcome.met: "✓", Outcome.unknown: "~", Outcome.not_met: "✗"}


class ConstraintKind(StrEnum):
    location = "location"
    years = "years"
    skills = "skills"


HARD = frozenset({ConstraintKind.location, ConstraintKind.years})
"""A person failing one of these is not a result and does not count toward the target."""

FACTORS: dict[ConstraintKind, dict[Outcome, float]] = {
    ConstraintKind.location: {Outcome.met: 1.0, Outcome.unknown: 0.6, Outcome.not_met: 0.05},
    ConstraintKind.years: {Outcome.met: 1.0, Outcome.unknown: 0.8, Outcome.not_met: 0.1},
}
"""What each outcome multiplies the role probability by (skills: SKILL_UNLISTED_FACTOR)."""
SKILL_UNLISTED_FACTOR = 0.8
"""Per must-have skill the profile does not list: a list is incomplete, so this is mild."""


# A profile that says it works remotely (location or prose).
_REMOTE_TEXT = re.compile(
    r"\b(?:remote(?!\s+sens)|fully distributed|work(?:ing)? from home|wfh|anywhere)\b"
)


@dataclass(frozen=True)
class Wanted:
    """The brief's constraints: what :func:`judge` holds a person against."""

    place: Place | None
    place_text: str | None
    """The brief's location as written, when the gazetteer knows no such place."""
    min_years: int | None
    skills: tuple[str, ...]

    @classmethod
    def of(cls, location: str | None, min_years: int | None, skills: Sequence[str]) -> Wanted:
        place = places.resolve(location) if location else None
        return cls(
            place=place,
            place_text=None if place is not None else (location or None),
            min_years=min_years,
            skills=tuple(dict.fromkeys(s for s in skills if s.strip())),
        )

    @property
    def empty(self) -> bool:
        return (
            self.place is None
            and self.place_text is None
            and self.min_years is None
            and not self.skills
        )

    def location_terms(self) -> list[str]:
        """Words (folded) of which a person's location text must contain one to be worth
        judging: the corpus search's pre-filter (recall, not the verdict). Empty: no
        pre-filter (no place, or a remote brief, which anyone may meet)."""
        if self.place is None:
            return [fold(self.place_text)] if self.place_text else []
        place = self.place
        if place.kind is PlaceKind.remote:
            return []
        names = [place.name, place.locality, place.region, place.country]
        if place.kind is PlaceKind.city:
            names.extend(places.aliases(place))
        if place.region and place.country_code:
            names.append(_region_label(place))
        # Folded, as the SQL side folds the location (shortlist_fold, migration 0018).
        return list(dict.fromkeys(fold(n) for n in names if n))


def location_terms(location: str | None) -> list[str]:
    """:meth:`Wanted.location_terms` of a brief's location alone (the corpus pre-filter)."""
    return Wanted.of(location, None, ()).location_terms()


def _region_label(place: Place) -> str:
    # "Bavaria" as displayed (the region's proper name), from the place's own label.
    parts = place.label().split(", ")
    return parts[1] if place.kind is PlaceKind.city and len(parts) >= 3 else place.region or ""


@dataclass(frozen=True)
class Held:
    """What a person's profile says about the constraints."""

    location: str
    years: int | None
    skills: Sequence[str]
    title: str = ""
    """Role title and headline: a skill named there counts as listed."""
    prose: str = ""
    """Headline and summary: where a profile says it works remotely."""


class Profile(Protocol):
    """What :func:`held_of` reads of a person (a corpus row, an enriched record)."""

    @property
    def role_title(self) -> str: ...
    @property
    def headline(self) -> str: ...
    @property
    def summary(self) -> str: ...
    @property
    def location(self) -> str: ...
    @property
    def years_experience(self) -> int | None: ...
    @property
    def skills(self) -> Sequence[str]: ...


def held_of(person: Profile) -> Held:
    """What a profile says about a brief's constraints."""
    return Held(
        location=person.location,
        years=person.years_experience,
        skills=person.skills,
        title=f"{person.role_title}\n{person.headline}",
        prose=f"{person.headline}\n{person.summary}",
    )


@dataclass(frozen=True)
class Constraint:
    kind: ConstraintKind
    label: str
    """What the person has, as shown: "Munich", "Garching (metro Munich)", "15 ≥ 5"."""
    outcome: Outcome
    detail: str
    """One sentence a recruiter reads: "in Lisbon, Portugal: not in Munich"."""
    factor: float

    @property
    def hard_failure(self) -> bool:
        return self.kind in HARD and self.outcome is Outcome.not_met

    def summary(self) -> str:
        if self.kind is ConstraintKind.skills:
            return f"skills: {self.label}"
        return f"{self.kind.value}: {self.label} {MARKS[self.outcome]}"


@dataclass(frozen=True)
class Judgement:
    constraints: tuple[Constraint, ...]

    @property
    def factor(self) -> float:
        return math.prod(c.factor for c in self.constraints)

    @property
    def failure(self) -> Constraint | None:
        """The first hard constraint the person fails, if any."""
        return next((c for c in self.constraints if c.hard_failure), None)

    @property
    def meets_all(self) -> bool:
        return all(c.outcome is Outcome.met for c in self.constraints)

    def fit(self, role_probability: float) -> float:
        """The probability that the person fits the whole brief, in [0, 1]."""
        return min(1.0, max(0.0, role_probability * self.factor))

    def summary(self) -> str:
        return "; ".join(c.summary() for c in self.constraints)

    def as_json(self) -> list[dict[str, object]]:
        """As stored beside a result (``search_results.constraints``, migration 0018)."""
        return [
            {
                "kind": c.kind.value,
                "label": c.label,
                "outcome": c.outcome.value,
                "detail": c.detail,
                "factor": c.factor,
            }
            for c in self.constraints
        ]

    @classmethod
    def from_json(cls, data: object) -> Judgement | None:
        """A stored judgement back; None when none is stored (a result from before 0018) or
        this version cannot read it."""
        if not isinstance(data, list):
            return None
        try:
            return cls(
                tuple(
                    Constraint(
                        ConstraintKind(d["kind"]),
                        str(d["label"]),
                        Outcome(d["outcome"]),
                        str(d["detail"]),
                        float(d["factor"]),
                    )
                    for d in data
                )
            )
        except (KeyError, TypeError, ValueError):
            return None


def judge(wanted: Wanted, held: Held) -> Judgement:
    """Each constraint the brief states, held against the person (none: an empty judgement)."""
    found: list[Constraint] = []
    if wanted.place is not None or wanted.place_text is not None:
        found.append(_location(wanted, held))
    if wanted.min_years is not None:
        found.append(_years(wanted.min_years, held.years))
    if wanted.skills:
        found.append(_skills(wanted.skills, held))
    return Judgement(tuple(found))


def _constraint(kind: ConstraintKind, label: str, outcome: Outcome, detail: str) -> Constraint:
    return Constraint(kind, label, outcome, detail, FACTORS[kind][outcome])


def _remote_friendly(held: Held, place: Place | None) -> bool:
    if place is not None and place.kind is PlaceKind.remote:
        return True
    return bool(_REMOTE_TEXT.search(fold(f"{held.location}\n{held.prose}")))


def _place_name(place: Place) -> str:
    """The person's place as shown: "Munich", "Hamburg, Germany", "Germany"."""
    if place.kind is PlaceKind.city and place.country_code:
        return f"{place.name}, {place.label().split(', ')[-1]}"
    return place.label()


def _location(wanted: Wanted, held: Held) -> Constraint:
    kind = ConstraintKind.location
    text = held.location.strip()
    if wanted.place is None:
        # A place the gazetteer does not know: the brief's words, found in the profile or not.
        assert wanted.place_text is not None
        if text and fold(wanted.place_text) in fold(text):
            return _constraint(kind, text, Outcome.met, f"in {text}")
        return _constraint(
            kind,
            text or "not stated",
            Outcome.unknown,
            f"'{wanted.place_text}' is not a place the gazetteer knows",
        )
    want = wanted.place
    place = places.resolve(text) if text else None
    if want.kind is PlaceKind.remote:
        if _remote_friendly(held, place):
            return _constraint(kind, "Remote", Outcome.met, "works remotely")
        shown = _place_name(place) if place is not None else (text or "not stated")
        return _constraint(
            kind, shown, Outcome.unknown, "a remote role; the profile does not say remote"
        )
    if place is None:
        detail = (
            f"'{text}' is not a place the gazetteer knows" if text else "no location on the profile"
        )
        return _constraint(kind, text or "not stated", Outcome.unknown, detail)
    near = places.nearness(want, place)
    shown = _place_name(place)
    if near is Nearness.unknown:  # a remote person, for a brief with a place
        return _constraint(kind, "Remote", Outcome.unknown, "works remotely; not said where")
    if near is Nearness.elsewhere:
        return _constraint(kind, shown, Outcome.not_met, f"in {shown}: not in {want.label()}")
    if near is Nearness.city:
        return _constraint(kind, place.name, Outcome.met, f"in {place.label()}")
    if near is Nearness.metro:
        return _constraint(
            kind,
            f"{place.name} (metro {want.name})",
            Outcome.met,
            f"in {place.label()}, within {places.METRO_KM:.0f} km of {want.name}",
        )
    # Same region or country: the place the brief names, widened (city → metro/region →
    # country). Inside a region or country brief that is a match; for a city brief it is a
    # maybe — the person may commute or move within the country — ranked after the city's own
    # people, and it never fails the brief as another country does.
    if want.kind is PlaceKind.country or (
        want.kind is PlaceKind.region and near is Nearness.region
    ):
        return _constraint(kind, place.name, Outcome.met, f"in {place.label()}")
    level = "region" if near is Nearness.region else "country"
    area = want.label().split(", ")[1 if level == "region" and want.region else -1]
    if place.kind is PlaceKind.city:
        return _constraint(
            kind,
            f"{shown} (same {level})",
            Outcome.unknown,
            f"in {place.label()}: not {want.name}, but in {area}",
        )
    return _constraint(
        kind,
        f"{place.name} ({level})",
        Outcome.unknown,
        f"the profile names only the {level}, {place.label()}",
    )


def _years(minimum: int, years: int | None) -> Constraint:
    kind = ConstraintKind.years
    if years is None:
        return _constraint(
            kind, f"? ≥ {minimum}", Outcome.unknown, "the profile states no years of experience"
        )
    if years >= minimum:
        return _constraint(kind, f"{years} ≥ {minimum}", Outcome.met, f"{years} years")
    return _constraint(
        kind, f"{years} < {minimum}", Outcome.not_met, f"{years} years, fewer than {minimum}"
    )


def _phrase_in(key: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(key)}(?!\w)", text) is not None


def skills_listed(wanted: Sequence[str], held: Held) -> list[bool]:
    """For each wanted skill, whether the profile lists it (or its title or headline names it),
    case- and accent-free."""
    listed = {fold(s).strip() for s in held.skills}
    title = fold(held.title)
    return [fold(s).strip() in listed or _phrase_in(fold(s).strip(), title) for s in wanted]


def _skills(wanted: Sequence[str], held: Held) -> Constraint:
    has = skills_listed(wanted, held)
    label = ", ".join(f"{s} {'✓' if ok else '–'}" for s, ok in zip(wanted, has, strict=True))
    missing = [s for s, ok in zip(wanted, has, strict=True) if not ok]
    outcome = Outcome.met if not missing else Outcome.not_met if not any(has) else Outcome.unknown
    detail = "every must-have skill listed" if not missing else "not listed: " + ", ".join(missing)
    return Constraint(
        ConstraintKind.skills, label, outcome, detail, SKILL_UNLISTED_FACTOR ** len(missing)
    )
