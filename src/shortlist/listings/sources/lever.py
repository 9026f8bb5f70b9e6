"""Lever Postings API (https://github.com/lever/postings-api, README "Get a list of job
postings").

``GET {base}/v0/postings/{site}?mode=json`` → a JSON list of postings, each ``{"id", "text"
(the title), "categories": {"location", "commitment", "team", "department", "allLocations"},
"country", "workplaceType" (on-site | remote | hybrid | unspecified), "description" /
"descriptionPlain", "lists": [{"text", "content" (HTML)}], "additional" / "additionalPlain",
"hostedUrl", "applyUrl", "createdAt" (epoch milliseconds), "salaryRange": {"currency",
"interval" (per-year-salary, per-month-salary, per-hour-wage…), "min", "max"}}``. The API
names no company: the source's ``--company`` or the site name stands in. An unknown site
answers 404.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from shortlist.errors import TransientError
from shortlist.listings.sources import mapping
from shortlist.listings.sources.context import CrawlContext
from shortlist.listings.sources.fetch import Fetched
from shortlist.listings.sources.models import Board, Posting
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


def map_posting(posting: dict[str, Any]) -> Posting | None:
    posting_id, title = posting.get("id"), mapping.text_of(posting.get("text"), 300)
    if not isinstance(posting_id, str) or not posting_id or not title:
        return None
    categories = mapping.obj(posting.get("categories"))
    salary = mapping.obj(posting.get("salaryRange"))
    low, high = mapping.salary_pair(
        salary.get("min"), salary.get("max"), mapping.period_of(salary.get("interval"))
    )
    return Posting(
        external_id=posting_id,
        job_title=title,
        description=_description(posting) or title,
        city_location=mapping.text_of(categories.get("location"), 200),
        work_mode=mapping.work_mode(posting.get("workplaceType")),
        salary_min_ks=low,
        salary_max_ks=high,
        currency_code=mapping.currency(salary.get("currency")) if salary else None,
        source_url=mapping.text_of(posting.get("hostedUrl") or posting.get("applyUrl"), 2000),
        posted_at=mapping.timestamp(posting.get("createdAt")),
    )


async def crawl(ctx: CrawlContext, site: str) -> Board:
    url = postings_url(ctx.bases.lever, site)
    return await ctx.read_board(
        url, lambda page: parse_postings(page, site), gone=f"no Lever site {site!r}"
    )


def parse_postings(page: Fetched, key: str) -> Board:
    """The board's postings (CPU: JSON and every description's markup; off the loop)."""
    body = json_body(page)
    if not isinstance(body, list):
        raise TransientError(f"Lever site {key!r}: the postings response is not a list")
    return Board.of(body, map_posting)
