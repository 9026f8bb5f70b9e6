"""Lever Postings API (https://github.com/lever/postings-api, README "Get a list of job
postings").

Two instances, "global (default) and EU", each with its own postings base URL: a site of the
global instance (``lever:SITE``) is read from ``SHORTLIST_LEVER_API_URL``
(``https://api.lever.co``), one of the EU instance (``https://jobs.eu.lever.co/SITE``) from
``SHORTLIST_LEVER_EU_API_URL`` (``https://api.eu.lever.co``).
"The API will output HTML or JSON based on the ``Accept:`` header and the ``?mode=`` query
parameter [...] the query parameter has a higher precedence": the list is asked for with
``mode=json`` (no ``skip``/``limit``: one response holds every published posting).

``GET {base}/v0/postings/{site}?mode=json`` → a JSON list of postings, each ``{"id", "text"
(the title), "categories": {"location", "commitment", "team", "department", "allLocations"},
"country", "workplaceType" (on-site | remote | hybrid | unspecified), "description" /
"descriptionPlain", "lists": [{"text", "content" (HTML)}], "additional" / "additionalPlain",
"hostedUrl", "applyUrl", "createdAt" (epoch milliseconds), "salaryRange": {"currency",
"interval" (per-year-salary, per-month-salary, per-hour-wage…), "min", "max"}}``. The API
names no company: the source's ``--company`` or the site name stands in. The README gives
no status for an unknown site; a 404 (or 410) is read as HTTP defines it (RFC 9110 15.5.5:
nothing there), the source gone.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from shortlist.errors import TransientError
from shortlist.listings import eligibility, jobpost
from shortlist.listings.sources import mapping
from shortlist.listings.sources.context import CrawlContext
from shortlist.listings.sources.fetch import Fetched
from shortlist.listings.sources.models import Board, LeverInstance, Posting
from shortlist.listings.sources.wire import json_body


def postings_url(base: str, site: str) -> str:
    return f"{base.rstrip('/')}/v0/postings/{quote(site, safe='')}?mode=json"


def _description(posting: dict[str, Any]) -> str:
    parts = [
        mapping.plain_text(posting.get("descriptionPlain"))
        or mapping.plain_text(posting.get("description"))
    ]
    for item in posting.get("lists") or []:
        if isinstance(item, dict):
            heading = mapping.text_of(item.get("text"), 300)
            body = mapping.plain_text(item.get("content"))
            parts.append("\n".join(p for p in (heading, body) if p))
    parts.append(
        mapping.plain_text(posting.get("additionalPlain"))
        or mapping.plain_text(posting.get("additional"))
    )
    return "\n\n".join(p for p in parts if p)


def _locations(categories: dict[str, Any]) -> str | None:
    """``categories.location``, or every one of ``allLocations`` when the posting names
    several ("; " between them: one listing in each place, shortlist.listings.sources.sync)."""
    every = [
        text
        for item in categories.get("allLocations") or []
        if (text := mapping.text_of(item, 200)) is not None
    ]
    if len(every) > 1:
        return "; ".join(dict.fromkeys(every))[:1000]
    return mapping.text_of(categories.get("location"), 200)


def map_posting(posting: dict[str, Any]) -> Posting | None:
    posting_id, title = posting.get("id"), mapping.text_of(posting.get("text"), 300)
    if not isinstance(posting_id, str) or not posting_id or not title:
        return None
    categories = mapping.obj(posting.get("categories"))
    salary = mapping.obj(posting.get("salaryRange"))
    low, high = jobpost.salary_pair(
        salary.get("min"), salary.get("max"), jobpost.period_of(salary.get("interval"))
    )
    return Posting(
        external_id=posting_id,
        job_title=title,
        description=_description(posting) or title,
        city_location=_locations(categories),
        work_mode=jobpost.named_work_mode(posting.get("workplaceType")),
        salary_min_ks=low,
        salary_max_ks=high,
        currency_code=jobpost.currency_code(salary.get("currency")) if salary else None,
        source_url=mapping.text_of(posting.get("hostedUrl") or posting.get("applyUrl"), 2000),
        posted_at=mapping.timestamp(posting.get("createdAt")),
        apply_url=mapping.text_of(posting.get("applyUrl"), 2000),
        remote_countries=_remote_countries(posting),
    )


def _remote_countries(posting: dict[str, Any]) -> list[str] | None:
    """A remote posting's ``country`` ("ISO 3166-1 alpha-2 code for a country / territory",
    github.com/lever/postings-api, "Job posting fields"): where the remote worker is hired."""
    if posting.get("workplaceType") != "remote":
        return None
    return eligibility.codes_of([posting.get("country")]) or None


async def crawl(ctx: CrawlContext, site: str, instance: LeverInstance = "global") -> Board:
    """The postings of ``site`` on Lever's ``instance``."""
    base = ctx.bases.lever_eu if instance == "eu" else ctx.bases.lever
    where = "Lever EU site" if instance == "eu" else "Lever site"
    return await ctx.read_board(
        postings_url(base, site),
        lambda page: parse_postings(page, site),
        gone=f"no {where} {site!r}",
    )


def parse_postings(page: Fetched, key: str) -> Board:
    """The board's postings (CPU: JSON and every description's markup; off the loop)."""
    body = json_body(page)
    if not isinstance(body, list):
        raise TransientError(f"Lever site {key!r}: the postings response is not a list")
    return Board.of(body, map_posting)
