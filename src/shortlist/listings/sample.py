"""The bundled sample corpus of job listings: ~2,000 synthetic but realistic posts.

Generated, not shipped as a file: a fixed seed makes the corpus identical on every machine and
every run, and the generator and its tables (``data/sample.json``) are far smaller than its
output. Every company is made up.

Variety is deliberate, because search quality is judged on it: 20 role families with their own
titles, skills and duties; descriptions of four to seven sentences from several templates; 44
cities on six continents with their own currency and pay level; salaries advertised as a range,
a minimum, a maximum or not at all.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from typing import Any

from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncConn
from shortlist.listings.models import MAX_SALARY_KS, ListingCreate
from shortlist.listings.repository import copy_listings, listings_exist

QUERIES = load_queries("shortlist.listings")

SEED = 20_260_805
SAMPLE_SIZE = 2_000


@dataclass(frozen=True)
class ListingFamily:
    """Related job titles and what their sample listings are written from."""

    key: str
    titles: tuple[str, ...]
    skills: tuple[str, ...]
    duties: tuple[str, ...]
    teams: tuple[str, ...]
    band_usd_ks: tuple[int, int]
    """Mid-level pay in a high-cost US city, thousands of USD a year."""
    sectors: tuple[str, ...]


@dataclass(frozen=True)
class City:
    name: str
    currency: str
    pay_level: float
    """Local pay relative to the US baseline, in USD terms."""


def _load_tables() -> dict[str, Any]:
    text = resources.files("shortlist.listings").joinpath("data/sample.json").read_text("utf-8")
    tables: dict[str, Any] = json.loads(text)
    return tables


# The tables the listings are written from (data/sample.json): role families, cities with
# their currency and pay level, rough units of local currency per USD (only the shape of the
# numbers matters), what each sector's companies do, the parts of made-up company names, and
# the sentence templates of a description.
_TABLES = _load_tables()
FAMILIES: tuple[ListingFamily, ...] = tuple(
    ListingFamily(
        key=f["key"],
        titles=tuple(f["titles"]),
        skills=tuple(f["skills"]),
        duties=tuple(f["duties"]),
        teams=tuple(f["teams"]),
        band_usd_ks=(int(f["band_usd_ks"][0]), int(f["band_usd_ks"][1])),
        sectors=tuple(f["sectors"]),
    )
    for f in _TABLES["families"]
)
CITIES: tuple[City, ...] = tuple(
    City(c["name"], c["currency"], float(c["pay_level"])) for c in _TABLES["cities"]
)
USD_RATE: dict[str, float] = {k: float(v) for k, v in _TABLES["usd_rate"].items()}
_SECTOR_BLURBS: dict[str, tuple[str, ...]] = {
    sector: tuple(blurbs) for sector, blurbs in _TABLES["sector_blurbs"].items()
}
_NAME_STEMS: tuple[str, ...] = tuple(_TABLES["company_names"]["stems"])
_NAME_TAILS: tuple[str, ...] = tuple(_TABLES["company_names"]["tails"])
_SECTOR_SUFFIXES: dict[str, tuple[str, ...]] = {
    sector: tuple(suffixes)
    for sector, suffixes in _TABLES["company_names"]["sector_suffixes"].items()
}
_SENTENCES: dict[str, tuple[str, ...]] = {
    part: tuple(templates) for part, templates in _TABLES["sentences"].items()
}
_INTRO = _SENTENCES["intro"]
_ROLE = _SENTENCES["role"]
_DUTIES = _SENTENCES["duties"]
_SKILLS = _SENTENCES["skills"]
_EXPERIENCE = _SENTENCES["experience"]
_ARRANGEMENT = _SENTENCES["arrangement"]
_PERKS = _SENTENCES["perks"]


def _seniority(title: str) -> float:
    lowered = title.lower()
    if any(w in lowered for w in ("junior", "associate", "early years")):
        return 0.7
    if any(w in lowered for w in ("staff", "principal", "group", "lead", "controller", "head")):
        return 1.45
    if any(w in lowered for w in ("senior", "architect", "manager", "counsel", "practitioner")):
        return 1.2
    return 1.0


def _round_local(value: float) -> int:
    step = 5 if value < 1_000 else 50 if value < 10_000 else 500
    return int(max(step, min(MAX_SALARY_KS, round(value / step) * step)))


def _companies(rng: random.Random) -> dict[str, list[str]]:
    """About eight made-up companies per sector, unique names."""
    taken: set[str] = set()
    by_sector: dict[str, list[str]] = {}
    for sector, suffixes in _SECTOR_SUFFIXES.items():
        names: list[str] = []
        while len(names) < 8:
            stem = rng.choice(_NAME_STEMS)
            if rng.random() < 0.5:
                stem += rng.choice(_NAME_TAILS)
            name = f"{stem} {rng.choice(suffixes)}"
            if name not in taken:
                taken.add(name)
                names.append(name)
        by_sector[sector] = names
    return by_sector


def _we(blurb: str) -> str:
    """ "builds X" → "build X", for the "At Company, we …" intro."""
    verb, _, rest = blurb.partition(" ")
    base = {"is": "are", "publishes": "publish"}.get(verb)
    if base is None:
        base = verb[:-1] if verb.endswith("s") else verb
    return f"{base} {rest}"


def _salary(
    rng: random.Random, family: ListingFamily, title: str, city: City
) -> tuple[int | None, int | None, str]:
    low_usd, high_usd = family.band_usd_ks
    factor = _seniority(title) * city.pay_level * rng.uniform(0.9, 1.1)
    currency = city.currency
    if currency != "USD" and rng.random() < 0.05:
        currency = "USD"  # international employers sometimes advertise in dollars
    rate = USD_RATE[currency]
    low = _round_local(low_usd * factor * rate)
    high = _round_local(high_usd * factor * rate)
    shape = rng.random()
    if shape < 0.55:
        return low, max(low, high), currency
    if shape < 0.70:
        return low, None, currency
    if shape < 0.80:
        return None, high, currency
    return None, None, currency


def iter_sample_listings(n: int = SAMPLE_SIZE, seed: int = SEED) -> Iterator[ListingCreate]:
    """``n`` listings, the same ones for the same ``seed`` on every machine."""
    rng = random.Random(seed)
    companies = _companies(rng)
    for _ in range(n):
        family = rng.choice(FAMILIES)
        sector = rng.choice(family.sectors)
        company = rng.choice(companies[sector])
        title = rng.choice(family.titles)
        city = rng.choice(CITIES)
        blurb = rng.choice(_SECTOR_BLURBS[sector])
        team = rng.choice(family.teams)
        d1, d2, d3 = rng.sample(family.duties, 3)
        s1, s2, s3, s4 = rng.sample(family.skills, 4)
        city_short = city.name.split(",")[0]
        sentences = [
            rng.choice(_INTRO).format(company=company, blurb=blurb, blurb_we=_we(blurb)),
            rng.choice(_ROLE).format(title=title, team=team, city=city_short),
            rng.choice(_DUTIES).format(d1=d1, d2=d2, d3=d3),
            rng.choice(_SKILLS).format(s1=s1, s2=s2, s3=s3, s4=s4),
        ]
        if rng.random() < 0.8:
            years = {0.7: 1, 1.0: 3, 1.2: 5, 1.45: 8}[_seniority(title)]
            sentences.append(rng.choice(_EXPERIENCE).format(years=years))
        if city.name != "Remote (US)":
            sentences.append(rng.choice(_ARRANGEMENT).format(city=city_short))
        if rng.random() < 0.6:
            sentences.append(rng.choice(_PERKS))
        low, high, currency = _salary(rng, family, title, city)
        yield ListingCreate(
            company_name=company,
            job_title=title,
            city_location=city.name,
            description=" ".join(sentences),
            salary_min_ks=low,
            salary_max_ks=high,
            currency_code=currency,
        )


async def load_sample_listings(conn: AsyncConn) -> int:
    """Insert the sample corpus (``source = 'sample'``) if ``job_listings`` is empty; returns
    how many listings were inserted (0 when there were listings already).

    All or nothing in one transaction, behind an advisory lock, so two processes starting at
    once on an empty database load the corpus exactly once.
    """
    async with conn.transaction():
        await conn.execute(QUERIES["lock_sample_load"])
        if await listings_exist(conn):
            return 0
        return await copy_listings(conn, iter_sample_listings(), source="sample")
