"""Facet counts of a job search: work mode, freshness, salary bands, top cities.

Counted over the query's matches — its full-text matches (of a broad word, only its newest:
``shortlist.listings.search.BROAD_WINDOW``) plus the vector candidates the search ranked —
under the request's filters, so every count says how many listings a click on it
would leave. Counted by the search's own candidates statement (search.sql), on the rows its
full-text list reads anyway; the cost against search p50 is measured by bench/bench_search.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from shortlist.listings.models import WORK_MODES, WorkMode
from shortlist.listings.money import BAND_UNIT, BANDS, MAX_BANDS, band_scale, format_amount

POSTED_WITHIN = (1, 7, 30)
TOP_CITIES = 5


class WorkModeCount(BaseModel):
    value: WorkMode
    count: int


class PostedCount(BaseModel):
    days: int
    count: int


class SalaryBandCount(BaseModel):
    currency: str
    min_ks: int
    """Thousands of ``currency``: the band holds listings whose top figure reaches this."""
    label: str
    count: int


class CityCount(BaseModel):
    value: str
    count: int


class Facets(BaseModel):
    work_mode: list[WorkModeCount]
    posted_within_days: list[PostedCount]
    salary: list[SalaryBandCount]
    city: list[CityCount]


# The candidates statement's parameters for the facet counts.
FACET_PARAMS: dict[str, Any] = {
    "band_unit": BAND_UNIT,
    "top_cities": TOP_CITIES,
}
CONVERTED_BAND_UNIT = 10
"""The steps (thousands of each listing's currency) a search in a chosen currency counts in:
fine enough that converting a step's middle misplaces a listing by at most 5K."""


def converted_bands(
    groups: list[Mapping[str, Any]], currency: str, step: int, factors: Mapping[str, float]
) -> list[SalaryBandCount]:
    """At most :data:`MAX_BANDS` salary bands in ``currency``, multiples of ``step`` thousand:
    where the listings' top figures (converted by ``factors``, each currency's unit in
    ``currency``; counted in steps of :data:`CONVERTED_BAND_UNIT`) split into about equal
    sevenths (no band holds them all), so each band tells them apart whatever the spread; each
    counts the listings at or above it. Listings of a currency without a rate are in none."""
    at: Counter[int] = Counter()
    for g in groups:
        factor = factors.get(g["currency_code"])
        if factor is None or g["units"] is None:
            continue
        middle = (g["units"] + 0.5) * CONVERTED_BAND_UNIT * factor
        if middle >= step:
            at[int(middle // step)] += int(g["n"])
    total = sum(at.values())
    chosen: list[int] = []
    below = 0
    for units in sorted(at):
        # the first unit holding the listing at each seventh of the ascending order
        while len(chosen) < MAX_BANDS and below + at[units] > total * (len(chosen) + 1) / (
            MAX_BANDS + 1
        ):
            if not chosen or chosen[-1] != units:
                chosen.append(units)
            else:
                break
        below += at[units]
    return [
        SalaryBandCount(
            currency=currency,
            min_ks=k * step,
            label=f"{format_amount(k * step, currency)}+",
            count=sum(n for units, n in at.items() if units >= k),
        )
        for k in chosen
    ]


def facets_from_counts(
    counts: Mapping[str, Any],
    *,
    currency: str | None = None,
    step: int | None = None,
    factors: Mapping[str, float] | None = None,
) -> Facets:
    """From the candidates statement's ``facets`` value: ``groups`` (``work_mode``,
    ``currency_code``, ``units``, ``fresh``, ``n``) and ``cities`` (``city_location``, ``n``).
    With ``currency`` (its ``step`` and the ``factors`` into it; counted in steps of
    :data:`CONVERTED_BAND_UNIT`), the salary bands are in it; without, per listing
    currency."""
    modes: Counter[str] = Counter()
    fresh: Counter[int] = Counter()
    bands: Counter[tuple[str, int]] = Counter()
    for g in counts.get("groups") or ():
        n = int(g["n"])
        modes[g["work_mode"]] += n
        if g["fresh"] is not None:
            for days in POSTED_WITHIN:
                fresh[days] += n if g["fresh"] <= days else 0
        # units of BAND_UNIT thousand → bands of BAND_UNIT × the currency's factor
        band = min(BANDS, (g["units"] or 0) // band_scale(g["currency_code"]))
        for reached in range(1, band + 1):
            bands[(g["currency_code"], reached)] += n
    return Facets(
        work_mode=[WorkModeCount(value=m, count=modes[m]) for m in WORK_MODES if modes[m]],
        posted_within_days=[PostedCount(days=d, count=fresh[d]) for d in POSTED_WITHIN],
        salary=converted_bands(counts.get("groups") or [], currency, step, factors)
        if currency is not None and step is not None and factors is not None
        else [
            SalaryBandCount(
                currency=code,
                min_ks=(low := band * BAND_UNIT * band_scale(code)),
                label=f"{format_amount(low, code)}+",
                count=n,
            )
            for (code, band), n in sorted(bands.items())
        ],
        city=[
            CityCount(value=c["city_location"], count=int(c["n"]))
            for c in counts.get("cities") or ()
        ],
    )


EMPTY = Facets(work_mode=[], posted_within_days=[], salary=[], city=[])
