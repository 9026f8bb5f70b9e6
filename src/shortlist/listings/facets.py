"""Facet counts of a job search: work mode, freshness, salary bands, top cities.

Counted over the query's matches — its full-text matches plus the vector candidates the search
ranked — under the request's filters, so every count says how many listings a click on it
would leave. Counted by the search's own candidates statement (search.sql), on the rows its
full-text list reads anyway; the cost against search p50 is measured by bench/bench_search.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from shortlist.db.types import Row
from shortlist.listings.models import WORK_MODES, WorkMode
from shortlist.listings.money import BAND_SCALE, BAND_STEPS, format_amount

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


def facet_params(with_facets: bool) -> dict[str, Any]:
    """The candidates statement's facet parameters."""
    return {
        "facets": with_facets,
        "scale_codes": list(BAND_SCALE),
        "scale_factors": list(BAND_SCALE.values()),
        "band_steps": list(BAND_STEPS),
        "top_cities": TOP_CITIES,
    }


def facets_from_rows(rows: Sequence[Row]) -> Facets:
    """From the counts the candidates statement returns (``facet``, ``value``, ``low_ks``,
    ``n`` each)."""
    modes = {r["value"]: int(r["n"]) for r in rows if r["facet"] == "work_mode"}
    posted = {int(r["value"]): int(r["n"]) for r in rows if r["facet"] == "posted_within_days"}
    salary = [(r["value"], int(r["low_ks"]), int(r["n"])) for r in rows if r["facet"] == "salary"]
    cities = [CityCount(value=r["value"], count=int(r["n"])) for r in rows if r["facet"] == "city"]
    return Facets(
        work_mode=[WorkModeCount(value=m, count=modes[m]) for m in WORK_MODES if modes.get(m)],
        posted_within_days=[PostedCount(days=d, count=posted.get(d, 0)) for d in POSTED_WITHIN],
        salary=[
            SalaryBandCount(
                currency=code, min_ks=low, label=f"{format_amount(low, code)}+", count=n
            )
            for code, low, n in sorted(salary)
        ],
        city=sorted(cities, key=lambda c: (-c.count, c.value)),
    )


EMPTY = Facets(work_mode=[], posted_within_days=[], salary=[], city=[])
