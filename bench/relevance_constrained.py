"""Constrained recruiter briefs: the relevance benchmark's candidate briefs with a place, a
minimum of years or a must-have skill added, judged relevant only when the person meets the
base brief AND the constraint.

Variants of every brief of ``relevance/candidate_queries.csv`` (its half is the base brief's):

``location``  "<brief> in <city>" — the sample corpus's most common cities in turn; the
              constraint holds for a person in that city or another city of its metro area
              (``shortlist.places``: within 50 km, same country)
``years``     "<brief>, <N>+ years of experience" — N = 5, then 10; holds for years ≥ N
``skill``     "<brief> with <skill>" — the skill most listed by the base brief's relevant
              people; holds when the profile lists it

Each variant runs through the product's own path, ``start_search`` (the internal corpus part:
no provider is called), and is scored on its results in rank order: P@10 (relevant in the top
10 ÷ 10) and whether the search started the backfill (fewer than the target met the brief).
The same code measures any version of the product, so before and after compare like with like.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg

KINDS = ("location", "years", "skill")
CITIES = 4
YEARS = (5, 10)


@dataclass(frozen=True)
class Person:
    family: str
    skills: frozenset[str]
    location: str
    years: int | None


@dataclass(frozen=True)
class Constrained:
    kind: str
    half: str
    text: str
    is_relevant: Callable[[str], bool]
    relevant_count: int


def _people(url: str) -> dict[str, Person]:
    with psycopg.connect(url) as conn:
        return {
            str(i): Person(family, frozenset(s.casefold() for s in skills), location or "", years)
            for i, family, skills, location, years in conn.execute(
                "SELECT id, role_family, skills, location, years_experience FROM candidates"
            )
        }


def variants(url: str, base: Sequence[Any]) -> list[Constrained]:
    """Three constrained variants of every base brief (``bench_relevance.Query``)."""
    from shortlist.places import Nearness, nearness, resolve

    people = _people(url)
    cities = [
        city
        for city, _ in Counter(
            p.location.split(",")[0].strip() for p in people.values()
        ).most_common()
        if city and resolve(city) is not None
    ][:CITIES]
    where = {key: resolve(p.location) for key, p in people.items()}
    out: list[Constrained] = []
    for i, q in enumerate(base):
        city = cities[i % len(cities)]
        place = resolve(city)
        assert place is not None

        def in_city(key: str, place: Any = place) -> bool:
            return nearness(place, where.get(key)) in (Nearness.city, Nearness.metro)

        years = YEARS[i % len(YEARS)]

        def senior(key: str, years: int = years) -> bool:
            held = people[key].years if key in people else None
            return held is not None and held >= years

        skills = Counter(
            s for key, p in people.items() if q.is_relevant(key) for s in p.skills
        ).most_common(1)
        skill = skills[0][0] if skills else "python"

        def listed(key: str, skill: str = skill) -> bool:
            return key in people and skill in people[key].skills

        for kind, text, holds in (
            ("location", f"{q.text} in {city}", in_city),
            ("years", f"{q.text}, {years}+ years of experience", senior),
            ("skill", f"{q.text} with {skill}", listed),
        ):

            def relevant(key: str, q: Any = q, holds: Callable[[str], bool] = holds) -> bool:
                return bool(q.is_relevant(key)) and holds(key)

            out.append(Constrained(kind, q.half, text, relevant, sum(map(relevant, people))))
    return out


async def _run(url: str, embedder: Any, briefs: Sequence[Constrained]) -> list[dict[str, Any]]:
    from bench.talent_support import recruiter
    from shortlist.bootstrap import open_services
    from shortlist.config import Settings
    from shortlist.talent.models import SearchCreate
    from shortlist.talent.service import start_search

    settings = Settings(
        database_url=url,
        load_sample_data=False,
        log_level="WARNING",
        # One recruiter runs every brief: the daily caps would stop the benchmark.
        recruiter_daily_searches=0,
        recruiter_daily_credits=0,
    )
    rows: list[dict[str, Any]] = []
    async with open_services(settings, url, embedder=embedder) as services:
        principal = await recruiter(services.pool)
        for brief in briefs:
            started = await start_search(services, principal, SearchCreate(query=brief.text))
            async with services.pool.connection() as conn:
                cur = await conn.execute(
                    "SELECT candidate_id::text AS key FROM search_results"
                    " WHERE search_id = %s ORDER BY rank LIMIT 10",
                    (started.search_id,),
                )
                top = [str(r["key"]) for r in await cur.fetchall()]
            rows.append(
                {
                    "kind": brief.kind,
                    "half": brief.half,
                    "query": brief.text,
                    "relevant_in_corpus": brief.relevant_count,
                    "hits_top10": len(top),
                    "relevant_top10": sum(map(brief.is_relevant, top)),
                    "backfill_started": bool(started.backfill_started),
                }
            )
    return rows


def evaluate(url: str, embedder: Any, base: Sequence[Any]) -> list[dict[str, Any]]:
    return asyncio.run(_run(url, embedder, variants(url, base)))


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """P@10 per half and kind, and how many constrained briefs started the backfill."""
    out: dict[str, Any] = {}
    for half in ("tune", "held-out"):
        for kind in (*KINDS, "all"):
            mine = [r for r in rows if r["half"] == half and kind in (r["kind"], "all")]
            if mine:
                out[f"{half} {kind} P@10"] = sum(r["relevant_top10"] for r in mine) / (
                    10 * len(mine)
                )
    out["backfill started"] = sum(r["backfill_started"] for r in rows)
    out["briefs"] = len(rows)
    return out
