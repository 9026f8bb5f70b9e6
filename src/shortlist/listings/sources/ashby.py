"""Ashby job postings API (https://developers.ashbyhq.com/docs/public-job-posting-api).

"Optionally, you can add includeCompensation=true as a query parameter to include
compensation data in the response": without it no job has a ``compensation``.
``GET {base}/posting-api/job-board/{board}?includeCompensation=true`` → ``{"apiVersion",
"jobs": [...]}``, the whole board in one response, each job ``{"id", "title", "department",
"team", "employmentType", "location", "secondaryLocations", "address": {"postalAddress":
{"addressLocality", "addressRegion", "addressCountry"}}, "isRemote", "workplaceType"
(OnSite | Remote | Hybrid), "publishedAt", "isListed", "jobUrl", "applyUrl",
"descriptionHtml", "descriptionPlain", "compensation": {"compensationTierSummary",
"summaryComponents": [{"compensationType": "Salary", "interval": "1 YEAR", "currencyCode",
"minValue", "maxValue"}]}}, "shouldDisplayCompensationOnJobPostings"}``. Unlisted jobs
(``isListed: false``) are not public postings.

Pay is the organisation's to show: Ashby's compensation settings decide "if compensation is
present on the Job or Job Posting, [...] if it should be visible on the posting"
(https://docs.ashbyhq.com/compensation, "Display on Job Postings?"), and the job carries that
choice as ``shouldDisplayCompensationOnJobPostings``. The API returns the figures either way;
a listing shows a salary only from a job whose flag is ``true`` (absent: no choice to show it
is known, so none is shown).

The document gives no status for an unknown board; a 404 (or 410) is read as HTTP defines it
(RFC 9110 15.5.5), the source gone.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from shortlist.errors import TransientError
from shortlist.listings import eligibility, jobpost
from shortlist.listings.sources import mapping
from shortlist.listings.sources.context import CrawlContext
from shortlist.listings.sources.fetch import Fetched
from shortlist.listings.sources.models import Board, Posting
from shortlist.listings.sources.wire import json_body


def board_url(base: str, org: str) -> str:
    return (
        f"{base.rstrip('/')}/posting-api/job-board/{quote(org, safe='')}?includeCompensation=true"
    )


def _salary(job: dict[str, Any]) -> tuple[int | None, int | None, str | None]:
    """The yearly salary range the organisation displays on the posting, if any."""
    compensation = job.get("compensation")
    if job.get("shouldDisplayCompensationOnJobPostings") is not True:
        return None, None, None
    if not isinstance(compensation, dict):
        return None, None, None
    for part in compensation.get("summaryComponents") or []:
        if isinstance(part, dict) and str(part.get("compensationType", "")).lower() == "salary":
            low, high = jobpost.salary_pair(
                part.get("minValue"), part.get("maxValue"), jobpost.period_of(part.get("interval"))
            )
            return low, high, jobpost.currency_code(part.get("currencyCode"))
    return None, None, None


def _city(job: dict[str, Any]) -> str | None:
    """The posting's place, and its ``secondaryLocations`` (``{"location", "address"}``) when it
    names more ("; " between them: one listing in each place, shortlist.listings.sources.sync)."""
    first = _primary(job)
    others = [
        text
        for item in job.get("secondaryLocations") or []
        if isinstance(item, dict) and (text := mapping.text_of(item.get("location"), 200))
    ]
    if first and others:
        return "; ".join(dict.fromkeys([first, *others]))[:1000]
    return first


def _primary(job: dict[str, Any]) -> str | None:
    address = job.get("address")
    postal = address.get("postalAddress") if isinstance(address, dict) else None
    if isinstance(postal, dict) and mapping.text_of(postal.get("addressLocality"), 200):
        return mapping.text_of(postal.get("addressLocality"), 200)
    return mapping.text_of(job.get("location"), 200)


def map_job(job: dict[str, Any]) -> Posting | None:
    job_id, title = job.get("id"), mapping.text_of(job.get("title"), 300)
    if not isinstance(job_id, str) or not job_id or not title or job.get("isListed") is False:
        return None
    mode = jobpost.named_work_mode(job.get("workplaceType"))
    if mode is None and job.get("isRemote") is True:
        mode = "remote"
    low, high, code = _salary(job)
    return Posting(
        external_id=job_id,
        job_title=title,
        description=mapping.plain_text(job.get("descriptionPlain"))
        or mapping.plain_text(job.get("descriptionHtml"))
        or title,
        city_location=_city(job),
        work_mode=mode,
        salary_min_ks=low,
        salary_max_ks=high,
        currency_code=code,
        source_url=mapping.text_of(job.get("jobUrl") or job.get("applyUrl"), 2000),
        posted_at=mapping.timestamp(job.get("publishedAt")),
        apply_url=mapping.text_of(job.get("applyUrl"), 2000),
        remote_countries=_remote_countries(job) if mode == "remote" else None,
    )


def _remote_countries(job: dict[str, Any]) -> list[str] | None:
    """A remote job's countries: ``address.postalAddress.addressCountry`` of it and of its
    ``secondaryLocations`` (Ashby job postings API, developers.ashbyhq.com "Job Postings API":
    a country name, "United States")."""
    addresses = [job.get("address")] + [
        item.get("address")
        for item in job.get("secondaryLocations") or []
        if isinstance(item, dict)
    ]
    names = [
        mapping.obj(mapping.obj(a).get("postalAddress")).get("addressCountry") for a in addresses
    ]
    return eligibility.codes_of(names) or None


async def crawl(ctx: CrawlContext, org: str) -> Board:
    url = board_url(ctx.bases.ashby, org)
    return await ctx.read_board(
        url, lambda page: parse_board(page, org), gone=f"no Ashby job board {org!r}"
    )


def parse_board(page: Fetched, key: str) -> Board:
    """The board's postings (CPU: JSON and every description's markup; off the loop)."""
    body = json_body(page)
    jobs = body.get("jobs") if isinstance(body, dict) else None
    if not isinstance(jobs, list):
        raise TransientError(f"Ashby board {key!r}: the response has no jobs list")
    return Board.of(jobs, map_job)
