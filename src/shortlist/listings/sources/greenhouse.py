"""Greenhouse Job Board API (https://developers.greenhouse.io/job-board.html).

``GET {base}/v1/boards/{token}`` → ``{"name", "content"}`` (the board: the company's name);
``GET {base}/v1/boards/{token}/jobs?content=true`` → ``{"jobs": [...], "meta": {"total"}}``,
each job ``{"id", "internal_job_id", "title", "updated_at", "requisition_id", "location":
{"name"}, "absolute_url", "language", "metadata", "content", "departments", "offices"}`` —
``content`` is the description as HTML that is itself HTML-entity-escaped (``&lt;p&gt;``).
Pay is not in the list: only "Retrieve a job" (``/jobs/{id}?pay_transparency=true``) carries
``pay_input_ranges``, one request per job, not made here (listings from Greenhouse have no
salary unless the description states one). ``metadata`` is the board's custom fields
(``{"id", "name", "value", "value_type"}``); the work mode is read from one a board names for
the workplace ("Workplace Type", "Location Type", "Remote"), else the location's name.
Prospect posts (``internal_job_id: null``) are no
jobs and are skipped. The document gives no status for an unknown board token; a 404 (or 410)
is read as HTTP defines it (RFC 9110 15.5.5: nothing there), the source gone.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from shortlist.errors import TransientError
from shortlist.listings import jobpost
from shortlist.listings.models import WorkMode
from shortlist.listings.sources import mapping
from shortlist.listings.sources.context import CrawlContext
from shortlist.listings.sources.fetch import Fetched, PageGone
from shortlist.listings.sources.models import Board, Posting, SourceGone
from shortlist.listings.sources.wire import json_body


def board_urls(base: str, token: str) -> tuple[str, str]:
    root = f"{base.rstrip('/')}/v1/boards/{quote(token, safe='')}"
    return root, f"{root}/jobs?content=true"


# The board's custom fields (the job's ``metadata``: ``{"id", "name", "value", "value_type"}``,
# Job Board API, List jobs) that say where the work is done: boards name them as they like.
_WORKPLACE_FIELD = re.compile(
    r"workplace|work\s?place|location\s?type|remote|work\s(?:mode|model|type|arrangement|style)"
    r"|office\s(?:policy|requirement)|on[-\s]?site",
    re.IGNORECASE,
)


def work_mode_of(job: dict[str, Any], location: str | None) -> WorkMode | None:
    """The work mode a job's own fields give: a workplace custom field ("Remote", "Hybrid",
    "On-site"; a yes/no "Remote" field), else the location's name ("Remote - US", "Hybrid -
    London"). None: the description may state it (shortlist.listings.sources.sync)."""
    for field in job.get("metadata") or []:
        if not isinstance(field, dict) or not _WORKPLACE_FIELD.search(str(field.get("name", ""))):
            continue
        value = field.get("value")
        if isinstance(value, bool):
            if value and "remote" in str(field.get("name", "")).lower():
                return "remote"
            continue
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, str) and item.strip():
                mode = jobpost.named_work_mode(item) or jobpost.find_work_mode(item[:200])
                if mode is not None:
                    return mode
    return jobpost.find_work_mode(location[:200]) if location else None


def map_job(job: dict[str, Any]) -> Posting | None:
    """One job of the jobs list as a posting; None if it has no id or title."""
    job_id, title = job.get("id"), mapping.text_of(job.get("title"), 300)
    if job_id is None or isinstance(job_id, bool) or not title:
        return None
    if "internal_job_id" in job and job["internal_job_id"] is None:
        # A prospect post ("Prospect posts include a null value for internal_job_id", Job
        # Board API, List jobs): an invitation to apply in general, no job.
        return None
    location = mapping.obj(job.get("location"))
    where = mapping.text_of(location.get("name"), 200)
    return Posting(
        external_id=str(job_id),
        job_title=title,
        description=mapping.plain_text(job.get("content"), escaped=True) or title,
        city_location=where,
        work_mode=work_mode_of(job, where),
        source_url=mapping.text_of(job.get("absolute_url"), 2000),
        posted_at=mapping.timestamp(job.get("first_published") or job.get("updated_at")),
    )


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
