"""Deterministic synthetic population for the talent-API simulator.

Everything here is a pure function of ``(seed, size, no_email_rate)``: the same seed always
yields the same people in the same order. The world it draws from — occupations
(:mod:`shortlist.simulator.taxonomy`, Faker's job titles plus ``data/occupations.json``) and
places and names (:mod:`shortlist.simulator.world`, GeoNames and Faker's per-locale names) —
lives in data; this module only draws people from it. :class:`PopulationIndex` answers the
generic dialect's filtered and free-text searches; the PDL dialect searches through
:mod:`shortlist.simulator.es_query`.
"""

from __future__ import annotations

import heapq
import math
import random
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property, lru_cache
from itertools import accumulate
from operator import attrgetter
from typing import Any, TypeVar

from shortlist.simulator.taxonomy import (
    ROLE_FAMILIES,
    Group,
    Specialisation,
    best_family,
    expand_role_family,
    groups,
    role_family_of,
    role_query_words,
    tokenize,
)
from shortlist.simulator.world import City, Country, city_index, countries
from shortlist.text import fold

__all__ = [
    "ROLE_FAMILIES",
    "Person",
    "PopulationIndex",
    "best_family",
    "build_population",
    "expand_role_family",
    "fold",
    "role_family_of",
    "tokenize",
]

_T = TypeVar("_T")

DEFAULT_SEED = 42
DEFAULT_POPULATION_SIZE = 50_000
PROFILE_BASE_URL = "https://talent.example.com/in/"
HUB_SHARE = 0.45
"""Of an occupation with hubs, the share of people who live in one."""
SPECIALIST_SHARE = 0.4
"""Of an occupation with niches, the share of people who work in one."""
OLD_SLUG_RATE = 0.15
"""People whose LinkedIn profile had another address before (kept in PDL's ``profiles[]``)."""

_STOP_WORDS = frozenset({
    "a", "an", "and", "as", "at", "based", "by", "currently", "day", "experience", "for", "from",
    "in", "is", "mostly", "new", "of", "on", "open", "or", "the", "their", "they", "to", "who",
    "with", "work", "works", "year", "years",
})  # fmt: skip
# A phrase in double quotes (Google: an exact match).
_QUOTED = re.compile(r'"([^"]*)"')
_COMPANY_SUFFIXES = ("Group", "Labs", "Partners", "Systems", "Holdings", "Solutions", "& Co")
_CLOSERS = (
    "Open to new opportunities.",
    "Interested in remote-friendly teams.",
    "Happy to relocate for the right role.",
    "Mentors junior colleagues.",
    "Cares about reliable, well-documented work.",
    "Enjoys working closely with customers.",
)


@lru_cache(maxsize=65536)
def _ascii_handle(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", fold(text))


def _page_tokens(p: Person) -> tuple[str, ...]:
    """The words of a person's public profile page as a search engine reads it: name, headline,
    title and company, place, about, skills."""
    return tuple(
        tokenize(
            " . ".join(
                (p.full_name, p.headline, p.job_title, p.company, p.location, p.summary,
                 " . ".join(p.skills))
            )
        )
    )  # fmt: skip


def _seniority(years: int, title: str) -> str:
    if title.split(" ")[0] in {"Chief", "Head", "Senior", "Lead", "Principal", "Junior"}:
        return ""
    if years < 2:
        return "Junior "
    if years < 5:
        return ""
    if years < 10:
        return "Senior "
    return "Lead "


@lru_cache(maxsize=8192)
def _levels(job_title: str) -> tuple[str, ...]:
    """PDL ``job_title_levels`` (the spec's enum) a title implies."""
    low = job_title.lower()
    levels: list[str] = []
    if low.startswith(("junior", "trainee", "graduate")):
        levels.append("entry")
    if low.startswith(("senior", "lead", "principal")):
        levels.append("senior")
    if "manager" in low:
        levels.append("manager")
    if "director" in low or low.startswith("head of"):
        levels.append("director")
    if low.startswith("chief"):
        levels.append("cxo")
    return tuple(levels)


def _years_phrase(years: int) -> str:
    if years == 0:
        return "less than a year of experience"
    if years == 1:
        return "1 year of experience"
    return f"{years} years of experience"


def _join(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


@dataclass(frozen=True, slots=True)
class Person:
    """One synthetic profile as the talent APIs know it."""

    username: str  # the LinkedIn slug
    full_name: str
    headline: str
    role_title: str  # the occupation's title ("FPGA Verification Engineer")
    role_family: str  # the occupation group ("hardware")
    skills: tuple[str, ...]
    years_experience: int
    location: str  # "Munich, Bavaria, Germany"
    email: str | None
    summary: str
    profile_url: str
    first_name: str = ""
    last_name: str = ""
    job_title: str = ""  # as held, with seniority ("Senior FPGA Verification Engineer")
    job_title_levels: tuple[str, ...] = ()
    job_title_role: str | None = None
    job_title_sub_role: str | None = None
    company: str = ""
    city: City | None = None
    work_email: str | None = None
    personal_email: str | None = None
    mobile_phone: str | None = None
    old_slugs: tuple[str, ...] = ()
    popularity: float = 0.0

    # Pickled as a tuple of its fields, read with attrgetter: the dataclass's own pair for a
    # frozen class with slots calls fields() for every person (a third of loading 50,000).
    def __getstate__(self) -> tuple[Any, ...]:
        state: tuple[Any, ...] = _person_state(self)
        return state

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        for name, value in zip(_PERSON_FIELDS, state, strict=True):
            object.__setattr__(self, name, value)

    def to_dict(self) -> dict[str, Any]:
        """The generic dialect's enrichment payload (``email`` possibly None)."""
        return {
            "username": self.username,
            "full_name": self.full_name,
            "headline": self.headline,
            "role_title": self.role_title,
            "role_family": self.role_family,
            "skills": list(self.skills),
            "years_experience": self.years_experience,
            "location": self.location,
            "email": self.email,
            "summary": self.summary,
            "profile_url": self.profile_url,
        }


_PERSON_FIELDS = tuple(f.name for f in fields(Person))
_person_state = attrgetter(*_PERSON_FIELDS)


@dataclass(frozen=True)
class _Draw:
    """Cumulative weights, drawn once per population rather than per person."""

    groups: tuple[Group, ...]
    countries: tuple[Country, ...]
    group_cum: list[float]
    title_cum: dict[str, list[float]]
    country_cum: list[float]
    city_cum: dict[str, list[float]]
    hubs: dict[str, list[City]]
    by_code: dict[str, Country]


def _draw_tables() -> _Draw:
    gs = groups()
    cs = countries()
    cities = city_index()
    return _Draw(
        groups=gs,
        countries=cs,
        group_cum=list(accumulate(g.weight for g in gs)),
        title_cum={g.id: list(accumulate(g.title_weights)) for g in gs},
        country_cum=list(accumulate(c.weight for c in cs)),
        city_cum={c.code: list(accumulate(c.city_weights)) for c in cs},
        hubs={
            g.id: [cities[(cc, fold(name))] for name, cc in g.hubs if (cc, fold(name)) in cities]
            for g in gs
        },
        by_code={c.code: c for c in cs},
    )


def _weighted(rng: random.Random, items: Sequence[_T], cum: list[float]) -> _T:
    return items[bisect_right(cum, rng.random() * cum[-1], 0, len(cum) - 1)]


def _one(rng: random.Random, items: Sequence[_T]) -> _T:
    return items[int(rng.random() * len(items))]


def _make_person(rng: random.Random, draw: _Draw, taken: set[str], no_email_rate: float) -> Person:
    group = _weighted(rng, draw.groups, draw.group_cum)
    title = _weighted(rng, group.titles, draw.title_cum[group.id])
    spec: Specialisation | None = None
    if group.specialisations and rng.random() < SPECIALIST_SHARE:
        spec = _one(rng, group.specialisations)
        title = spec.title or title

    hubs = draw.hubs[group.id]
    if hubs and rng.random() < HUB_SHARE:
        city = _one(rng, hubs)
        country = draw.by_code[city.country_code]
    else:
        country = _weighted(rng, draw.countries, draw.country_cum)
        city = _weighted(rng, country.cities, draw.city_cum[country.code])

    first = _one(rng, country.first_names)
    last = _one(rng, country.last_names)
    base = f"{_ascii_handle(first)}-{_ascii_handle(last)}"
    username = f"{base}-{rng.getrandbits(24):06x}"
    while username in taken:
        username = f"{base}-{rng.getrandbits(32):08x}"
    taken.add(username)
    old_slugs: tuple[str, ...] = ()
    if rng.random() < OLD_SLUG_RATE:
        old = f"{_ascii_handle(first)}{_ascii_handle(last)}{rng.randint(1, 999)}"
        if old not in taken:
            taken.add(old)
            old_slugs = (old,)

    core = list(group.title_skills.get(title, ())) + list(spec.skills if spec else ())
    pool = [s for s in group.skills if s not in core]
    extra = rng.sample(pool, k=min(len(pool), rng.randint(2, 5)))
    skills = tuple(dict.fromkeys(core + extra))

    # Triangular: most people have 3-10 years, a few have none, a few are veterans.
    years = min(35, max(0, round(rng.triangular(0, 35, 5))))
    job_title = f"{_seniority(years, title)}{title}"
    company = f"{_one(rng, country.last_names)} {_one(rng, _COMPANY_SUFFIXES)}"
    handle = _ascii_handle(company) or "company"
    work_email = personal_email = None
    if rng.random() >= no_email_rate:
        if rng.random() < 0.7:
            work_email = f"{_ascii_handle(first)}.{_ascii_handle(last)}@{handle}.example.com"
        if work_email is None or rng.random() < 0.6:
            n = rng.randint(1, 99)
            personal_email = f"{_ascii_handle(first)}{_ascii_handle(last)}{n}@example.org"
    phone = f"+1555{rng.randint(1_000_000, 9_999_999)}" if rng.random() < 0.5 else None
    top = list(skills[:3])
    summary = (
        f"{first} is a {title} based in {city.name} with {_years_phrase(years)}. "
        f"Works mostly with {_join(top)}. {_one(rng, _CLOSERS)}"
    )
    return Person(
        username=username,
        full_name=f"{first} {last}",
        headline=f"{job_title} at {company}",
        role_title=title,
        role_family=group.id,
        skills=skills,
        years_experience=years,
        location=city.label,
        email=work_email or personal_email,
        summary=summary,
        profile_url=f"{PROFILE_BASE_URL}{username}",
        first_name=first,
        last_name=last,
        job_title=job_title,
        job_title_levels=_levels(job_title),
        job_title_role=group.role,
        job_title_sub_role=group.sub_role,
        company=company,
        city=city,
        work_email=work_email,
        personal_email=personal_email,
        mobile_phone=phone,
        old_slugs=old_slugs,
        popularity=rng.random(),
    )


@lru_cache(maxsize=8)
def build_population(
    seed: int = DEFAULT_SEED, size: int = DEFAULT_POPULATION_SIZE, no_email_rate: float = 0.12
) -> tuple[Person, ...]:
    """The synthetic population: a pure function of its arguments (cached)."""
    if size < 0:
        raise ValueError("size must be >= 0")
    rng = random.Random(f"shortlist-simulator-population|{seed}")
    draw = _draw_tables()
    taken: set[str] = set()
    return tuple(_make_person(rng, draw, taken, no_email_rate) for _ in range(size))


@lru_cache(maxsize=1)
def _locations() -> tuple[str, ...]:
    """ "City, Country" of each country's biggest cities (bench briefs are drawn from them)."""
    return tuple(
        f"{city.name}, {country.cities[0].country_name}"
        for country in countries()
        for city in country.cities[:3]
    )


def __getattr__(name: str) -> Any:
    # LOCATIONS is built from the world on first use, not when the module is imported.
    if name == "LOCATIONS":
        return _locations()
    raise AttributeError(name)


@lru_cache(maxsize=65536)
def _words(text: str) -> tuple[str, ...]:
    """``tokenize(text)``, kept: skills, titles, families and places repeat across 50,000
    people (tokenizing them again was a third of building the index)."""
    return tuple(tokenize(text))


@lru_cache(maxsize=65536)
def _folded(text: str) -> str:
    return fold(text)


def role_words(person: Person) -> frozenset[str]:
    """Words a person's role answers to: its title and its family's name."""
    return frozenset(_words(person.role_title)) | frozenset(_words(person.role_family))


def skill_words(person: Person) -> frozenset[str]:
    return frozenset(w for skill in person.skills for w in _words(skill))


def role_match_score(
    wanted: frozenset[str], roles: frozenset[str], skills: frozenset[str]
) -> float:
    """Fraction of the significant role words a person answers to; a match needs >= 0.75.

    Skill words count too ("quantitative developer kdb+"), but only once the title or family
    matched at least one word: otherwise "rust engineer" would match every Rust user.
    """
    if not wanted:
        return 1.0
    in_role = wanted & roles
    if not in_role:
        return 0.0
    return (len(in_role) + len((wanted - in_role) & skills)) / len(wanted)


ROLE_MATCH_THRESHOLD = 0.75


@dataclass(frozen=True)
class _Entry:
    person: Person
    role_words: frozenset[str]
    skill_words: frozenset[str]
    skills: frozenset[str]
    location: str
    weighted_words: Mapping[str, float]
    popularity: float


@dataclass(repr=False, eq=False)
class PopulationIndex:
    """Search structures over a population: role words, folded skills, IDF-weighted text.
    Compared and hashed by identity: an index is read-only once built, and what is derived
    from it is cached per index (comparing two by value would walk 50,000 people)."""

    people: tuple[Person, ...]
    seed: int = DEFAULT_SEED
    by_username: dict[str, Person] = field(init=False)

    def __post_init__(self) -> None:
        self.by_username = {p.username: p for p in self.people}

    def __repr__(self) -> str:
        # Short: asyncio's debug mode and pytest format arguments with repr, and the generated
        # repr of 50,000 people takes seconds.
        return f"PopulationIndex({len(self.people)} people, seed={self.seed})"

    def warm(self) -> None:
        """Build the free-text and role structures now rather than on the first search."""
        _ = self._postings, self._by_role_word

    @cached_property
    def _by_role_word(self) -> dict[str, list[int]]:
        """Role word → the entries whose title or family has it (in entry order). A role search
        reads only the people who answer to one of its words (a person who answers to none
        scores 0, role_match_score): scanning all 50,000 cost ~90 ms of CPU a search."""
        postings: dict[str, list[int]] = {}
        for i, e in enumerate(self._entries):
            for word in e.role_words:
                postings.setdefault(word, []).append(i)
        return postings

    @cached_property
    def _idf(self) -> dict[str, float]:
        return self._built[1]

    @cached_property
    def _entries(self) -> list[_Entry]:
        return self._built[0]

    @cached_property
    def _postings(self) -> dict[str, tuple[list[int], list[float]]]:
        """Word → the entries whose text has it (in entry order) and its weight in each: a
        free-text search reads the people who have one of its words, not all 50,000 (~250 ms
        a search, holding the GIL of the process it runs in, was enough to time out a loaded
        test's SERP calls)."""
        postings: dict[str, tuple[list[int], list[float]]] = {}
        for i, e in enumerate(self._entries):
            for word, weight in e.weighted_words.items():
                ids, weights = postings.setdefault(word, ([], []))
                ids.append(i)
                weights.append(weight)
        return postings

    @cached_property
    def _by_popularity(self) -> list[Person]:
        """Everyone, most popular first (ties by username): the page for a query nobody
        matches."""
        ranked = sorted(self._entries, key=lambda e: (-e.popularity, e.person.username))
        return [e.person for e in ranked]

    def _scores(self, words: set[str]) -> dict[int, float]:
        """Entry → its IDF-weighted overlap with ``words``: each entry's terms added in the
        order of ``words``, as a sum over them would."""
        scores: dict[int, float] = {}
        get = scores.get
        for word in words:
            posting = self._postings.get(word)
            if posting is None:
                continue
            idf = self._idf[word]
            for i, weight in zip(*posting, strict=True):
                scores[i] = get(i, 0.0) + weight * idf
        return scores

    @cached_property
    def _built(self) -> tuple[list[_Entry], dict[str, float]]:
        """Built on the first generic search (the PDL dialect never needs it)."""
        docs: list[dict[str, float]] = []
        df: Counter[str] = Counter()
        for p in self.people:
            weights: dict[str, float] = {}
            # Title and skills say more about a person than the prose summary does.
            # Tokens never span a space, so the skills' words are those of each skill (and
            # the role's those of its title and family), taken from _words.
            for words, weight in (
                (tokenize(p.summary), 1.0),
                (tokenize(p.headline), 1.5),
                ([w for skill in p.skills for w in _words(skill)], 2.0),
                ((*_words(p.role_title), *_words(p.role_family)), 2.0),
            ):
                for word in words:
                    if word not in _STOP_WORDS:
                        weights[word] = max(weights.get(word, 0.0), weight)
            docs.append(weights)
            df.update(weights.keys())
        n = max(1, len(self.people))
        idf = {w: math.log(1 + n / c) for w, c in df.items()}
        entries = [
            _Entry(
                person=p,
                role_words=role_words(p),
                skill_words=skill_words(p),
                skills=frozenset(_folded(s) for s in p.skills),
                location=_folded(p.location),
                weighted_words=docs[i],
                popularity=p.popularity,
            )
            for i, p in enumerate(self.people)
        ]
        return entries, idf

    def search(
        self,
        *,
        role: str | None = None,
        location: str | None = None,
        min_years: int | None = None,
        skills: Sequence[str] = (),
    ) -> list[Person]:
        """Filtered discovery, best role match first, then a stable popularity order."""
        wanted_skills = {fold(s.strip()) for s in skills if s.strip()}
        loc = fold(location.strip()) if location and location.strip() else None
        role = role.strip() if role and role.strip() else None
        wanted = role_query_words(role) if role else frozenset()
        hits: list[tuple[float, float, str, Person]] = []
        entries = self._entries
        if wanted:
            # Only people who answer to a word of the role can match it; the order of hits is
            # the sort's below (username breaks every tie), not this one.
            found = sorted({i for w in wanted for i in self._by_role_word.get(w, ())})
            candidates = [entries[i] for i in found]
        else:
            candidates = entries
        for e in candidates:
            p = e.person
            if min_years is not None and p.years_experience < min_years:
                continue
            if loc is not None and loc not in e.location:
                continue
            if not wanted_skills <= e.skills:
                continue
            score = 1.0
            if role is not None:
                score = role_match_score(wanted, e.role_words, e.skill_words)
                if score < ROLE_MATCH_THRESHOLD:
                    continue
                # Title words beat skill words; the exact title beats both.
                score += 0.5 * len(wanted & e.role_words) / max(1, len(wanted))
                if p.role_title.lower() == role.lower():
                    score += 1.0
            hits.append((-score, -e.popularity, p.username, p))
        hits.sort(key=lambda h: h[:3])
        return [h[3] for h in hits]

    def serp(self, query: str, limit: int) -> list[Person]:
        """Free-text ranking by IDF-weighted word overlap; popular profiles if nothing matches."""
        words = {w for w in tokenize(query) if w not in _STOP_WORDS}
        entries = self._entries
        scored = [
            (-score, -entries[i].popularity, entries[i].person.username, entries[i].person)
            for i, score in self._scores(words).items()
            if score > 0
        ]
        if not scored:
            # Like a real search engine, never an empty page: fall back to popular profiles.
            return self._by_popularity[:limit]
        return [h[3] for h in heapq.nsmallest(limit, scored, key=lambda h: h[:3])]

    @lru_cache(maxsize=16384)  # noqa: B019 (an index lives as long as its simulator)
    def _page(self, i: int) -> tuple[str, ...]:
        return _page_tokens(self._entries[i].person)

    def web(
        self, query: str, limit: int, origin: Callable[[Person], bool] | None = None
    ) -> list[Person]:
        """People's profile pages as Google answers ``query`` (support.google.com/websearch/
        answer/2466433, "Refine web searches": a word or phrase inside quotes is an exact
        match, so a page without it is no result; the other words are looked for, and a page
        lacking one still comes after those that have them all — Google's "Missing: …").
        ``origin`` says who is where the search is made from (SerpApi's ``location`` / ``gl``):
        among equal matches they come first; it never leaves anyone out. Operators (``site:``)
        are the caller's."""
        phrases = [tokenize(p) for p in _QUOTED.findall(query)]
        phrases = [p for p in phrases if p]
        loose = {w for w in tokenize(_QUOTED.sub(" ", query)) if w not in _STOP_WORDS}
        needed = {w for p in phrases for w in p if w not in _STOP_WORDS}
        if phrases:
            # A page holds a quoted word in its text: only those people can hold the phrase.
            ids: set[int] | None = None
            for word in needed:
                posting = set(self._postings.get(word, ((), ()))[0])
                ids = posting if ids is None else ids & posting
            candidates = sorted(ids or ())
        else:
            candidates = sorted(self._scores(loose))
        weights = self._scores(needed | loose)
        hits: list[tuple[int, bool, float, float, str, Person]] = []
        for i in candidates:
            e = self._entries[i]
            page = self._page(i)
            text = f" {' '.join(page)} "
            if any(f" {' '.join(p)} " not in text for p in phrases):
                continue
            held = set(page)
            missing = sum(1 for w in loose if w not in held)
            if missing == len(loose) and not phrases:
                continue
            local = origin(e.person) if origin is not None else False
            hits.append(
                (
                    missing,
                    not local,
                    -weights.get(i, 0.0),
                    -e.popularity,
                    e.person.username,
                    e.person,
                )
            )
        return [h[-1] for h in heapq.nsmallest(limit, hits, key=lambda h: h[:5])]

    def relevant(self, query: str, limit: int, min_coverage: float = 0.5) -> list[Person]:
        """Free-text ranking as a search engine answers: only people whose profile covers at
        least ``min_coverage`` of the query's weight (IDF; a word nobody uses weighs the most),
        so a query nobody matches gets nothing rather than popular strangers."""
        words = {w for w in tokenize(query) if w not in _STOP_WORDS}
        if not words:
            return []
        top_idf = max(self._idf.values(), default=1.0)
        total = sum(self._idf.get(w, top_idf) for w in words)
        scored: list[tuple[float, float, str, Person]] = []
        if min_coverage * total > 0:
            # Nobody without one of the words covers any of the query's weight.
            entries = [self._entries[i] for i in sorted(self._scores(words))]
        else:
            entries = self._entries
        for e in entries:
            covered = sum(self._idf[w] for w in words if w in e.weighted_words)
            if covered < min_coverage * total:
                continue
            score = sum(e.weighted_words[w] * self._idf[w] for w in words if w in e.weighted_words)
            scored.append((-score, -e.popularity, e.person.username, e.person))
        return [h[3] for h in heapq.nsmallest(limit, scored, key=lambda h: h[:3])]
