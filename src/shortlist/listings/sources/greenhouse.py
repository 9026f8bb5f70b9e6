"""Greenhouse Job Board API (https://developers.greenhouse.io/job-board.html).

``GET {base}/v1/boards/{token}`` → ``{"name", "content"}`` (the board: the company's name);
``GET {base}/v1/boards/{token}/jobs?content=true`` → ``{"jobs": [...], "meta": {"total"}}``,
each job ``{"id", "internal_job_id", "title", "updated_at", "requisition_id", "location":
{"name"}, "absolute_url", "language", "metadata", "content", "departments", "offices"}`` —
``content`` is the description as HTML that is itself HTML-entity-escaped (``&lt;p&gt;``).
A job fetched with ``pay_transparency=true`` also carries ``pay_input_ranges`` (``min_cents``,
``max_cents``, ``currency_type``), read when present. An unknown board token answers 404.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from shortlist.errors import TransientError
from shortlist.listings.sources import mapping
from shortlist.listings.sources.context import CrawlContext
from shortlist.listings.sources.fetch import Fetched, PageGone
from shortlist.listings.sources.models import Board, Posting, SourceGone
from shortlist.listings.sources.wire import json_body


def board_urls(base: str, token: str) -> tuple[str, str]:
    root = f"{base.rstrip('/')}/v1/boards/{quote(token, safe='')}"
    return root, f"{root}/jobs?content=true"


def map_job(job: dict[str, Any]) -> Posting | None:
    """One job of the jobs list as a posting; None if it has no id or title."""
    job_id, title = job.get("id"), mapping.text_of(job.get("title"), 300)
    if job_id is None or isinstance(job_id, bool) or not title:
        return None
    location = mapping.obj(job.get("location"))
    low = high = None
    code = None
    ranges = job.get("pay_input_ranges")
    if isinstance(ranges, list) and ranges and isinstance(ranges[0], dict):
        first = ranges[0]
        low, high = mapping.salary_pair(
            _cents(first.get("min_cents")), _cents(first.get("max_cents")), "year"
        )
        code = mapping.currency(first.get("currency_type"))
    return Posting(
        external_id=str(job_id),
        job_title=title,
        description=mapping.plain_text(job.get("content"), escaped=True) or title,
        city_location=mapping.text_of(location.get("name"), 200),
        salary_min_ks=low,
        salary_max_ks=high,
        currency_code=code,
        source_url=mapping.text_of(job.get("absolute_url"), 2000),
        posted_at=mapping.timestamp(job.get("first_published") or job.get("updated_at")),
    )


def _cents(value: Any) -> float | None:
    return value / 100 if isinstance(value, int | float) and not isinstance(value, bool) else None


async def crawl(ctx: CrawlContext, token: str) -> Board:
    board_url, jobs_url = board_urls(ctx.bases.greenhouse, token)
    gone = f"no Greenhouse board {token!r}"
    board = Board()
    try:
        about = json_body(await ctx.fetcher.get(board_url))
    except PageGone as exc:
        raise SourceGone(f"{gone} ({exc})") from exc
    if isinstance(about, dict):
        board.company_name = mapping.text_of(about.get("name"), 200)
    return await ctx.read_board(
        jobs_url, lambda page: parse_jobs(page, token), gone=gone, into=board
    )


def parse_jobs(page: Fetched, token: str) -> Board:
    """The jobs list of a board (CPU: JSON and every description's markup; off the loop)."""
    body = json_body(page)
    jobs = body.get("jobs") if isinstance(body, dict) else None
    if not isinstance(jobs, list):
        raise TransientError(f"Greenhouse board {token!r}: the jobs response has no jobs list")
    return Board.of(jobs, map_job)
