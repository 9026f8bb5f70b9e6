"""The simulated world's occupations: groups of titles with their PDL role, sub role and skills.

Read from ``data/occupations.json`` (curated titles, skills and niches) and completed with
Faker's list of real job titles (``faker.providers.job.Provider.jobs``), each claimed by the
first group whose keywords it contains — or by ``other``. A group's ``role``/``sub_role`` are
canonical values of ``job_title_role``/``job_title_sub_role`` as PDL's "Job Title Roles" and
"Job Title Subroles" pages list them (v28.0 on; the legacy taxonomy of ``pdl-specs.json`` is no
longer in PDL's data since v29.1): the data file's comment says where each pair is from. The
group ids double as the "role families" of the generic dialect (:data:`ROLE_FAMILIES`,
:func:`expand_role_family`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Any

from faker.providers.job import Provider as FakerJobs

from shortlist.text import fold

_TOKEN_RE = re.compile(r"[a-z0-9+#]+")

# Faker's list carries comma-inverted duplicates ("Engineer, civil") and a few fragments.
_FAKER_SKIP = frozenset(
    {"copy", "make", "sub", "land", "best boy", "gaffer", "press sub", "contractor", "dealer",
     "publishing copy"}
)  # fmt: skip

# Words too common in job titles to say anything about the role on their own.
GENERIC_ROLE_WORDS = frozenset({
    "a", "an", "and", "dev", "developer", "developers", "engineer", "engineering", "engineers",
    "experienced", "expert", "for", "head", "ii", "iii", "in", "jr", "junior", "lead", "level",
    "mid", "of", "principal", "professional", "programmer", "remote", "senior", "software",
    "specialist", "sr", "staff", "the", "with", "manager", "officer", "assistant",
})  # fmt: skip


def tokenize(text: str) -> list[str]:
    """Words of ``text`` (folded); hyphenated words are joined ("front-end" -> "frontend")."""
    return _TOKEN_RE.findall(fold(text).replace("-", ""))


@dataclass(frozen=True)
class Specialisation:
    title: str | None
    skills: tuple[str, ...]


@dataclass(frozen=True)
class Group:
    """One occupation group: its titles (with weights), PDL role and sub role, skills."""

    id: str
    role: str | None
    sub_role: str | None
    weight: float
    aliases: tuple[str, ...]
    titles: tuple[str, ...]
    title_weights: tuple[float, ...]
    skills: tuple[str, ...]
    title_skills: Mapping[str, tuple[str, ...]]
    specialisations: tuple[Specialisation, ...]
    hubs: tuple[tuple[str, str], ...]


def _faker_titles() -> list[str]:
    out: list[str] = []
    for job in FakerJobs.jobs:
        if "," in job:
            continue  # "Engineer, civil (consulting)": the list also has "Civil engineer"
        title = job.split("/")[0].strip()
        title = re.sub(r"\s*\(.*?\)", "", title).strip()
        if title.lower() in _FAKER_SKIP or len(title) < 3:
            continue
        out.append(title_case(title))
    return list(dict.fromkeys(out))


_SMALL_WORDS = frozenset({"and", "of", "in", "the", "for", "to", "a", "as"})


def title_case(title: str) -> str:
    """ "Adult nurse" -> "Adult Nurse"; words with capitals of their own ("iOS") are kept."""
    return " ".join(
        w if (w != w.lower() or (i and w in _SMALL_WORDS)) else w[:1].upper() + w[1:]
        for i, w in enumerate(title.split(" "))
    )


def _groups_from(data: Iterable[Mapping[str, Any]]) -> tuple[Group, ...]:
    raw = list(data)
    claimed: dict[str, list[str]] = {str(g["id"]): [] for g in raw}
    curated = {fold(t) for g in raw for t in g.get("titles", ())}
    for title in _faker_titles():
        if fold(title) in curated:
            continue
        low = title.lower()
        owner = next(
            (str(g["id"]) for g in raw if any(k in low for k in g.get("faker", ()))), "other"
        )
        claimed[owner].append(title)
    groups = []
    for g in raw:
        drawn = [*g.get("titles", ()), *claimed[str(g["id"])]]
        specs = [sp["title"] for sp in g.get("specialisations", ()) if sp.get("title")]
        titles = list(dict.fromkeys([*drawn, *specs]))
        weights_by_title: Mapping[str, float] = g.get("title_weights", {})
        niche = set(g.get("niche", ()))
        # A specialist's title is reached through its specialisation, never drawn directly.
        weights = tuple(
            float(weights_by_title.get(t, 0.25 if t in niche else 1.0)) if t in drawn else 0.0
            for t in titles
        )
        groups.append(
            Group(
                id=str(g["id"]),
                role=g.get("role"),
                sub_role=g.get("sub_role"),
                weight=float(g["weight"]),
                aliases=tuple(g.get("aliases", ())),
                titles=tuple(titles),
                title_weights=weights,
                skills=tuple(g.get("skills", ())),
                title_skills=MappingProxyType(
                    {t: tuple(s) for t, s in g.get("title_skills", {}).items()}
                ),
                specialisations=tuple(
                    Specialisation(s.get("title"), tuple(s["skills"]))
                    for s in g.get("specialisations", ())
                ),
                hubs=tuple((str(c), str(cc)) for c, cc in g.get("hubs", ())),
            )
        )
    return tuple(g for g in groups if g.titles)


@cache
def groups() -> tuple[Group, ...]:
    """Every occupation group (data file + Faker's titles), in the data file's order."""
    text = resources.files("shortlist.simulator").joinpath("data/occupations.json").read_text()
    return _groups_from(json.loads(text)["groups"])


def group(group_id: str) -> Group:
    return _by_id()[group_id]


@cache
def _by_id() -> dict[str, Group]:
    return {g.id: g for g in groups()}


ROLE_FAMILIES: Mapping[str, tuple[str, ...]] = MappingProxyType({g.id: g.titles for g in groups()})
"""Role family (occupation group) -> job titles in it (read-only)."""


def _significant(words: Iterable[str]) -> set[str]:
    """Role words minus the generic ones; falls back to all words when only generic remain."""
    words = set(words)
    kept = words - GENERIC_ROLE_WORDS
    return kept or words


@cache
def _vocabulary() -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """(strong words, weak words) per group: names/titles/aliases vs. its skills."""
    out: dict[str, tuple[frozenset[str], frozenset[str]]] = {}
    for g in groups():
        strong = set(tokenize(g.id.replace("_", " "))) | set(g.aliases)
        for title in g.titles:
            strong |= set(tokenize(title))
        for spec in g.specialisations:
            if spec.title:
                strong |= set(tokenize(spec.title))
        weak: set[str] = set()
        for skill in (*g.skills, *(s for ss in g.title_skills.values() for s in ss)):
            weak |= set(tokenize(skill))
        out[g.id] = (
            frozenset(strong - GENERIC_ROLE_WORDS),
            frozenset(weak - GENERIC_ROLE_WORDS - strong),
        )
    return out


@cache
def _title_to_group() -> dict[str, str]:
    out: dict[str, str] = {}
    for g in groups():
        for t in (*g.titles, *(s.title for s in g.specialisations if s.title)):
            out.setdefault(fold(t), g.id)
    return out


def best_family(role: str) -> str | None:
    """The group whose vocabulary overlaps the free-text ``role`` most, or None."""
    key = fold(role.strip())
    exact = _title_to_group().get(key)
    if exact is not None:
        return exact
    if key in _by_id():
        return key
    words = _significant(tokenize(role))
    best: tuple[float, str] | None = None
    for family, (strong, weak) in _vocabulary().items():  # data order breaks ties
        score = len(words & strong) + 0.5 * len(words & weak)
        if family in words:
            score += 1.0  # the family's own name ("data", "ml") is the strongest hint
        if score > 0 and (best is None or score > best[0]):
            best = (score, family)
    return best[1] if best else None


def role_family_of(title: str) -> str | None:
    """Family of a job title: exact (case-insensitive) title match first, else by word overlap."""
    return best_family(title)


def expand_role_family(role: str) -> list[str]:
    """All titles of the family that best matches the free-text ``role`` ([] if none does)."""
    family = best_family(role)
    return list(ROLE_FAMILIES[family]) if family else []


def role_query_words(role: str) -> frozenset[str]:
    """The significant words of a free-text role ("senior backend engineer" -> {"backend"})."""
    return frozenset(_significant(tokenize(role)))
