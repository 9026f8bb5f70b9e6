"""The simulator's demo job sources, so ``shortlist sources add`` works offline on the embedded
default: a Greenhouse board and a careers site, in the vendors' documented shapes.

* Greenhouse Job Board API (https://developers.greenhouse.io/job-board.html): "Retrieve job
  board" ``GET /v1/boards/{token}`` and "List jobs" ``GET /v1/boards/{token}/jobs`` for the
  board ``DEMO_BOARD``, whose jobs carry ``content`` (HTML-entity-escaped), ``departments`` and
  ``offices`` only when ``content`` is ``true`` ("If set to ``true``, include the full post
  description, department, and office of each job post"). Any other token: 404 (the document
  names no error; 404 is HTTP's "nothing there"). The board's other documented paths (a job,
  offices, departments, …) are not served: 501, so nothing comes to rely on an answer the
  document does not give.
* A careers site at ``/demo/careers``: a page linking one page per job, each carrying a
  schema.org ``JobPosting`` in JSON-LD (https://developers.google.com/search/docs/appearance/
  structured-data/job-posting) — one of them, as many sites publish it, as the ``mainEntity``
  of the page's ``ItemPage`` in an ``@graph`` (https://schema.org/mainEntity) — a sitemap at
  ``/demo/careers/sitemap.xml``, and a ``/robots.txt`` that disallows
  ``/demo/careers/internal/``.

Every response carries an ``ETag``; a matching ``If-None-Match`` gets a 304.
"""

from __future__ import annotations

import hashlib
import html
import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

DEMO_BOARD = "shortlist-demo"
DEMO_COMPANY = "Vault-Tec Demo Industries"

# Written after the Greenhouse documentation's example job (id, title, location, absolute_url,
# updated_at, content), three of them.
_JOBS: list[dict[str, Any]] = [
    {
        "id": 4012001,
        "title": "Vault Designer",
        "location": "New York, NY",
        "content": "<p>Design <strong>vaults</strong> that last a thousand years.</p>"
        "<ul><li>5+ years of structural design</li><li>Comfort underground</li></ul>",
        "updated_at": "2026-11-02T10:55:28-05:00",
    },
    {
        "id": 4012002,
        "title": "Senior Python Engineer (Remote)",
        "location": "Remote",
        "content": "<p>Build the <em>shelter management</em> platform in Python and "
        "PostgreSQL. Fully remote.</p>",
        "updated_at": "2026-11-05T09:00:00-05:00",
    },
    {
        "id": 4012003,
        "title": "Overseer Assistant",
        "location": "Boston, MA",
        "content": "<p>Keep the vault&#39;s schedules &amp; people on track.</p>",
        "updated_at": "2026-11-07T14:30:00-05:00",
    },
]

# The careers site's own jobs (schema.org JobPosting), one page each.
_POSTINGS: list[dict[str, Any]] = [
    {
        "slug": "data-analyst",
        "title": "Data Analyst",
        "description": "<p>Turn shelter telemetry into decisions. SQL and Python.</p>",
        "datePosted": "2026-11-01",
        "validThrough": "2099-12-31T23:59:59Z",
        "city": "Chicago",
        "salary": {"minValue": 85000, "maxValue": 105000, "unitText": "YEAR"},
    },
    {
        "slug": "support-engineer",
        "title": "Support Engineer",
        "description": "<p>Help dwellers with their terminals, from anywhere.</p>",
        "datePosted": "2026-11-03",
        "validThrough": "2099-12-31T23:59:59Z",
        "city": None,
        "remote": True,
        "salary": {"minValue": 40, "maxValue": 55, "unitText": "HOUR"},
        "as_main_entity": True,
    },
    {
        "slug": "winter-intern",
        "title": "Winter Intern",
        "description": "<p>An internship whose application window has closed.</p>",
        "datePosted": "2025-10-01",
        "validThrough": "2025-12-01T00:00:00Z",
        "city": "Chicago",
    },
]


def greenhouse_board(token: str) -> dict[str, Any]:
    return {"name": DEMO_COMPANY, "content": f"<p>{DEMO_COMPANY} careers ({token}).</p>"}


def greenhouse_jobs(token: str, content: bool) -> dict[str, Any]:
    jobs = []
    for job in _JOBS:
        item: dict[str, Any] = {
            "id": job["id"],
            "internal_job_id": job["id"] - 4000000,
            "title": job["title"],
            "updated_at": job["updated_at"],
            "requisition_id": str(job["id"] % 1000),
            "location": {"name": job["location"]},
            # The job's page on Greenhouse's hosted board, as in the Job Board API's example
            # ("https://boards.greenhouse.io/vaulttec/jobs/127817"): the same on every start,
            # whatever loopback port this simulator has.
            "absolute_url": f"https://boards.greenhouse.io/{token}/jobs/{job['id']}",
            "language": "en",
            "metadata": None,
        }
        if content:
            # Greenhouse sends the description's HTML entity-escaped.
            item["content"] = html.escape(job["content"])
            item["departments"] = [{"id": 1, "name": "Engineering", "parent_id": None}]
            item["offices"] = [{"id": 1, "name": job["location"], "location": job["location"]}]
        jobs.append(item)
    return {"jobs": jobs, "meta": {"total": len(jobs)}}


def job_posting(base_url: str, posting: dict[str, Any]) -> dict[str, Any]:
    node: dict[str, Any] = {
        "@context": "https://schema.org/",
        "@type": "JobPosting",
        "title": posting["title"],
        "description": posting["description"],
        "identifier": {"@type": "PropertyValue", "name": DEMO_COMPANY, "value": posting["slug"]},
        "datePosted": posting["datePosted"],
        "validThrough": posting["validThrough"],
        "employmentType": "FULL_TIME",
        "url": f"{base_url}/demo/careers/jobs/{posting['slug']}",
        "hiringOrganization": {"@type": "Organization", "name": DEMO_COMPANY},
    }
    if posting.get("city"):
        node["jobLocation"] = {
            "@type": "Place",
            "address": {
                "@type": "PostalAddress",
                "addressLocality": posting["city"],
                "addressCountry": "US",
            },
        }
    if posting.get("remote"):
        node["jobLocationType"] = "TELECOMMUTE"
        node["applicantLocationRequirements"] = {"@type": "Country", "name": "USA"}
    if posting.get("salary"):
        node["baseSalary"] = {
            "@type": "MonetaryAmount",
            "currency": "USD",
            "value": {"@type": "QuantitativeValue", **posting["salary"]},
        }
    return node


def job_posting_graph(base_url: str, posting: dict[str, Any]) -> dict[str, Any]:
    """The posting as the ``mainEntity`` of its page's ``ItemPage``, beside a breadcrumb trail,
    in one ``@graph`` (schema.org: ``mainEntity`` "indicates the primary entity described in
    some page"; the posting names its page back with ``mainEntityOfPage``)."""
    page_url = f"{base_url}/demo/careers/jobs/{posting['slug']}"
    node = job_posting(base_url, posting)
    del node["@context"]
    node["@id"] = f"{page_url}#job"
    node["mainEntityOfPage"] = {"@id": page_url}
    return {
        "@context": "https://schema.org/",
        "@graph": [
            {
                "@type": "ItemPage",
                "@id": page_url,
                "url": page_url,
                "name": f"{posting['title']} at {DEMO_COMPANY}",
                "mainEntity": node,
                "breadcrumb": {"@id": f"{page_url}#breadcrumb"},
            },
            {
                "@type": "BreadcrumbList",
                "@id": f"{page_url}#breadcrumb",
                "itemListElement": [
                    {
                        "@type": "ListItem",
                        "position": 1,
                        "name": "Careers",
                        "item": f"{base_url}/demo/careers",
                    },
                    {"@type": "ListItem", "position": 2, "name": posting["title"]},
                ],
            },
        ],
    }


def _no_board() -> Response:
    # Greenhouse documents no error body; this one does not pretend to be theirs.
    return Response("no such board", status_code=404, media_type="text/plain")


def _respond(request: Request, body: bytes, media_type: str) -> Response:
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers={"ETag": etag})
    return Response(body, media_type=media_type, headers={"ETag": etag})


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/")


def create_job_board_app() -> FastAPI:
    """The demo job sources alone (no talent population to build): what a crawl of the demo
    board from the command line needs, up in milliseconds instead of the whole simulator's
    seconds."""
    app = FastAPI(title="shortlist demo job boards", openapi_url=None)
    register_job_board_routes(app)
    return app


def register_job_board_routes(app: FastAPI) -> None:
    @app.get("/v1/boards/{token}")
    async def board(request: Request, token: str) -> Response:
        if token != DEMO_BOARD:
            return _no_board()
        return _respond(request, json.dumps(greenhouse_board(token)).encode(), "application/json")

    @app.get("/v1/boards/{token}/jobs")
    async def board_jobs(request: Request, token: str, content: str | None = None) -> Response:
        if token != DEMO_BOARD:
            return _no_board()
        # "If set to `true`": that value and no other (no "1", "True" or "yes").
        body = json.dumps(greenhouse_jobs(token, content == "true")).encode()
        return _respond(request, body, "application/json")

    @app.get("/v1/boards/{token}/{rest:path}")
    async def board_elsewhere(token: str, rest: str) -> Response:
        if token != DEMO_BOARD:
            return _no_board()
        return JSONResponse(
            {"error": f"/v1/boards/{token}/{rest} is not served by the demo board"}, 501
        )

    @app.get("/robots.txt")
    async def robots(request: Request) -> Response:
        text = "User-agent: *\nDisallow: /demo/careers/internal/\n"
        return _respond(request, text.encode(), "text/plain")

    @app.get("/demo/careers")
    async def careers(request: Request) -> Response:
        links = "".join(
            f'<li><a href="/demo/careers/jobs/{p["slug"]}">{html.escape(p["title"])}</a></li>'
            for p in _POSTINGS
        )
        page = (
            f"<!doctype html><html><head><title>Careers at {DEMO_COMPANY}</title></head>"
            f"<body><h1>Join {DEMO_COMPANY}</h1><ul>{links}"
            '<li><a href="/demo/careers/internal/staff-only">Staff only</a></li></ul>'
            '<a href="/about">About us</a></body></html>'
        )
        return _respond(request, page.encode(), "text/html; charset=utf-8")

    @app.get("/demo/careers/sitemap.xml")
    async def sitemap(request: Request) -> Response:
        base = _base(request)
        urls = "".join(
            f"<url><loc>{base}/demo/careers/jobs/{p['slug']}</loc></url>" for p in _POSTINGS
        )
        xml = (
            '<?xml version="1.0" encoding="UTF-8"?>'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
        )
        return _respond(request, xml.encode(), "application/xml")

    @app.get("/demo/careers/jobs/{slug}")
    async def careers_job(request: Request, slug: str) -> Response:
        posting = next((p for p in _POSTINGS if p["slug"] == slug), None)
        if posting is None:
            return Response("not found", status_code=404, media_type="text/plain")
        node = (job_posting_graph if posting.get("as_main_entity") else job_posting)(
            _base(request), posting
        )
        data = json.dumps(node).replace("</", "<\\/")
        page = (
            f"<!doctype html><html><head><title>{html.escape(posting['title'])}</title>"
            f'<script type="application/ld+json">{data}</script></head>'
            f"<body><h1>{html.escape(posting['title'])}</h1>{posting['description']}</body></html>"
        )
        return _respond(request, page.encode(), "text/html; charset=utf-8")

    @app.get("/demo/careers/internal/{page}")
    async def internal(request: Request, page: str) -> Response:
        node = job_posting(_base(request), {**_POSTINGS[0], "slug": page, "title": "Secret"})
        body = f'<html><head><script type="application/ld+json">{json.dumps(node)}</script>'
        return _respond(request, (body + "</head></html>").encode(), "text/html")
