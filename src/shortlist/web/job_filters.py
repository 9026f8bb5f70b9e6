"""The job search page's filters: work mode and freshness from the query string, and the facet
counts as links, so every filter is a plain URL that works without JavaScript."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

from shortlist.errors import BadInput
from shortlist.listings.facets import Facets
from shortlist.listings.models import WORK_MODES
from shortlist.listings.search import MAX_POSTED_WITHIN_DAYS
from shortlist.validation import small_int

WORK_MODE_LABELS = {"remote": "Remote", "hybrid": "Hybrid", "onsite": "On-site"}
POSTED_LABELS = {1: "Last 24 hours", 7: "Last 7 days", 30: "Last 30 days"}
# The query-string parameters of the page, in the order URLs carry them.
PARAMS = (
    "q",
    "location",
    "salary_min",
    "currency",
    "work_mode",
    "remote_country",
    "visa",
    "posted_within_days",
)


def parse_work_mode(raw: str | None) -> str | None:
    value = (raw or "").strip().lower()
    if not value:
        return None
    if value not in WORK_MODES:
        raise BadInput("Work mode must be remote, hybrid or on-site.", field="work_mode")
    return value


def parse_posted_within(raw: str | None) -> int | None:
    if not (raw or "").strip():
        return None
    days = small_int(raw)
    if days is None or not 1 <= days <= MAX_POSTED_WITHIN_DAYS:
        raise BadInput(
            f"“Posted within” must be a number of days from 1 to {MAX_POSTED_WITHIN_DAYS}.",
            field="posted_within_days",
        )
    return days


def search_url(
    root: str, form: Mapping[str, str], offset: int = 0, changes: Mapping[str, str] | None = None
) -> str:
    """The page's URL for ``form`` with ``changes`` applied (an empty value drops a filter)."""
    values = {**{k: form.get(k, "") for k in PARAMS}, **(changes or {})}
    params = [(k, values[k]) for k in PARAMS if values[k]]
    if offset:
        params.append(("offset", str(offset)))
    return f"{root}/?" + urlencode(params)


@dataclass(frozen=True)
class FacetLink:
    label: str
    count: int
    url: str
    active: bool


@dataclass(frozen=True)
class FacetGroup:
    title: str
    links: list[FacetLink]
    clear_url: str | None
    """Removes this group's filter; None when the filter is not set."""


def facet_groups(root: str, form: Mapping[str, str], facets: Facets) -> list[FacetGroup]:
    def group(title: str, param: str, links: list[FacetLink]) -> FacetGroup:
        clear = search_url(root, form, changes={param: ""}) if form.get(param) else None
        return FacetGroup(title, links, clear)

    def link(param: str, value: str, label: str, count: int) -> FacetLink:
        return FacetLink(
            label, count, search_url(root, form, changes={param: value}), form.get(param) == value
        )

    groups = [
        group(
            "Work mode",
            "work_mode",
            [
                link("work_mode", f.value, WORK_MODE_LABELS[f.value], f.count)
                for f in facets.work_mode
            ],
        ),
        group(
            "Posted",
            "posted_within_days",
            [
                link("posted_within_days", str(f.days), POSTED_LABELS.get(f.days, ""), f.count)
                for f in facets.posted_within_days
                if f.count
            ],
        ),
        group(
            "Salary",
            "salary_min",
            [link("salary_min", str(f.min_ks), f.label, f.count) for f in facets.salary],
        ),
        group(
            "City",
            "location",
            [link("location", f.value, f.value, f.count) for f in facets.city],
        ),
    ]
    return [g for g in groups if g.links or g.clear_url]
