"""Loopback job boards for the crawler's tests, in a background thread: Greenhouse, Lever and
Ashby as their documents describe them, and a careers site with schema.org JSON-LD.

Each fake answers what its vendor's document says and nothing it does not say: a documented
request it does not model answers 501 (so a test that needs it has to model it from the
document first), and no error body imitates a vendor's (none of the three documents one).
A board, site or token it does not hold answers 404, HTTP's "nothing there" (RFC 9110
15.5.5); the documents give no status for that case.

* Greenhouse Job Board API (https://developers.greenhouse.io/job-board.html):
  "Retrieve job board" ``GET /v1/boards/{token}`` → ``{"name", "content"}``; "List jobs"
  ``GET /v1/boards/{token}/jobs`` → ``{"jobs": [...], "meta": {"total"}}``, each job's
  ``content`` (HTML, entity-escaped), ``departments`` and ``offices`` only when ``content`` is
  ``true`` ("If set to ``true``, include the full post description, department, and office of
  each job post"). The board's other paths and JSONP's ``callback``: 501.
* Lever Postings API (https://github.com/lever/postings-api, README): ``GET /v0/postings/
  {site}`` answers JSON (a list of postings) only when asked for it — "You can use the HTTP
  ``Accept: application/json`` header or ``&mode=json`` GET parameter [...] The URL parameter
  has higher precedence" — and otherwise the HTML list (``ul`` inside ``<div
  class='lever'>``); ``skip`` and ``limit`` page it; ``GET /v0/postings/{site}/{id}`` is one
  posting, JSON only. The iframe mode and the filters (``location``, ``commitment``,
  ``team``, ``department``, ``level``, ``group``): 501. Lever's two instances are two hosts:
  a test of ``lever:eu:SITE`` starts a second ``FakeBoards`` for the EU one.
* Ashby posting API (https://developers.ashbyhq.com/docs/public-job-posting-api):
  ``GET /posting-api/job-board/{board}`` → ``{"apiVersion": "1", "jobs": [...]}``, with
  ``compensation`` only when ``includeCompensation=true``.
* Any other path: a page of :attr:`FakeBoards.pages` (``/robots.txt`` among them), else 404.

Every 200 carries an ``ETag`` (a hash of the body); a request whose ``If-None-Match`` matches
gets a 304, as HTTP caches and these vendors' CDNs answer. A test scripts the boards by
mutating the dicts (``greenhouse``, ``lever``, ``ashby``, ``pages``), makes a path fail with
``fail[path] = status``, or slow with ``delay[path] = seconds``; ``requests`` records every
request's path, query and headers.
"""

from __future__ import annotations

import hashlib
import html
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    status: int = 0
    query: dict[str, list[str]] = field(default_factory=dict)


def _not_modelled(what: str) -> tuple[int, str, bytes]:
    return 501, "text/plain", f"{what}: documented, not modelled by this fake".encode()


def _not_found(what: str) -> tuple[int, str, bytes]:
    return 404, "text/plain", f"no {what}".encode()


def _json(body: Any) -> tuple[int, str, bytes]:
    return 200, "application/json", json.dumps(body).encode()


def _last(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[-1] if values else None


# Lever's list parameters this fake does not model (README, "Get a list of job postings").
_LEVER_UNMODELLED = (
    "location",
    "commitment",
    "team",
    "department",
    "level",
    "group",
    "css",
    "resize",
)
# Greenhouse's job fields sent only with content=true (Job Board API, "List jobs").
_GREENHOUSE_CONTENT = ("content", "departments", "offices")


@dataclass
class FakeBoards:
    greenhouse: dict[str, dict[str, Any]] = field(default_factory=dict)
    """token → {"name": board name, "jobs": [job, …]} (job content as plain HTML)."""
    lever: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    ashby: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    pages: dict[str, tuple[str, str]] = field(default_factory=dict)
    """path → (content type, body)."""
    fail: dict[str, int] = field(default_factory=dict)
    delay: dict[str, float] = field(default_factory=dict)
    requests: list[Seen] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeBoards:
        boards = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:
                pass

            def do_GET(self) -> None:
                boards._serve(self)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def served(self, prefix: str) -> list[Seen]:
        with self._lock:
            return [r for r in self.requests if r.path.startswith(prefix)]

    # -- the vendors -----------------------------------------------------------------------

    def _route(
        self, path: str, query: dict[str, list[str]], headers: dict[str, str]
    ) -> tuple[int, str, bytes]:
        parts = [p for p in path.split("/") if p]
        if len(parts) >= 3 and parts[:2] == ["v1", "boards"]:
            return self._greenhouse(parts[2], parts[3:], query)
        if len(parts) in (3, 4) and parts[:2] == ["v0", "postings"]:
            return self._lever(parts[2], parts[3:], query, headers)
        if len(parts) == 3 and parts[:2] == ["posting-api", "job-board"]:
            return self._ashby(parts[2], query)
        page = self.pages.get(path)
        if page is None:
            return _not_found("page")
        return 200, page[0], page[1].encode()

    def _greenhouse(
        self, token: str, rest: list[str], query: dict[str, list[str]]
    ) -> tuple[int, str, bytes]:
        board = self.greenhouse.get(token)
        if board is None:
            return _not_found("board")
        if "callback" in query:
            return _not_modelled("JSONP callback")
        if not rest:
            return _json({"name": board["name"], "content": board.get("content", "")})
        if rest != ["jobs"]:
            return _not_modelled("/v1/boards/{token}/" + "/".join(rest))
        # "If set to `true`": that value and no other.
        with_content = _last(query, "content") == "true"
        jobs = []
        for job in board["jobs"]:
            item = {k: v for k, v in job.items() if k not in _GREENHOUSE_CONTENT}
            if with_content:
                item["content"] = html.escape(job.get("content", ""))
                item["departments"] = job.get("departments", [])
                item["offices"] = job.get("offices", [])
            jobs.append(item)
        return _json({"jobs": jobs, "meta": {"total": len(jobs)}})

    def _lever(
        self,
        site: str,
        rest: list[str],
        query: dict[str, list[str]],
        headers: dict[str, str],
    ) -> tuple[int, str, bytes]:
        postings = self.lever.get(site)
        if postings is None:
            return _not_found("site")
        if rest:
            # "This API only returns the named job posting in JSON format."
            found = next((p for p in postings if p.get("id") == rest[0]), None)
            return _json(found) if found is not None else _not_found("posting")
        for name in _LEVER_UNMODELLED:
            if name in query:
                return _not_modelled(f"the {name} parameter")
        mode = _last(query, "mode")
        if mode is None:
            mode = "json" if "application/json" in headers.get("accept", "") else "html"
        if mode not in ("json", "html"):
            return _not_modelled(f"mode={mode}")
        try:
            skip = int(_last(query, "skip") or 0)
            limit = int(_last(query, "limit") or len(postings))
        except ValueError:
            return _not_modelled("a skip or limit that is no number")
        shown = postings[max(skip, 0) :][: max(limit, 0)]
        if mode == "json":
            return _json(shown)
        items = "".join(
            f'<li><a href="{html.escape(str(p.get("hostedUrl", "")))}">'
            f"{html.escape(str(p.get('text', '')))}</a></li>"
            for p in shown
        )
        return (
            200,
            "text/html; charset=utf-8",
            f"<div class='lever'><ul>{items}</ul></div>".encode(),
        )

    def _ashby(self, board: str, query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        jobs = self.ashby.get(board)
        if jobs is None:
            return _not_found("job board")
        with_pay = _last(query, "includeCompensation") == "true"
        shown = [{k: v for k, v in j.items() if with_pay or k != "compensation"} for j in jobs]
        return _json({"apiVersion": "1", "jobs": shown})

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        url = urlsplit(handler.path)
        query = parse_qs(url.query, keep_blank_values=True)
        seen = Seen(url.path, {k.lower(): v for k, v in handler.headers.items()}, query=query)
        with self._lock:
            self.requests.append(seen)
        wait = self.delay.get(url.path)
        if wait:
            time.sleep(wait)
        failing = self.fail.get(url.path)
        if failing is not None:
            status, ctype, body = failing, "text/plain", b"trouble"
        else:
            status, ctype, body = self._route(url.path, query, seen.headers)
        etag = '"' + hashlib.sha256(body).hexdigest()[:24] + '"'
        if status == 200 and seen.headers.get("if-none-match") == etag:
            status, body = 304, b""
        seen.status = status
        handler.send_response(status)
        if status in (200, 304):
            handler.send_header("ETag", etag)
        if status != 304:
            handler.send_header("Content-Type", ctype)
            handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if status != 304:
            handler.wfile.write(body)


# -- documented example shapes -------------------------------------------------------------


def greenhouse_job(
    job_id: int, title: str, location: str, content: str, **extra: Any
) -> dict[str, Any]:
    """A job of the Greenhouse jobs list (the documentation's example fields)."""
    return {
        "id": job_id,
        "internal_job_id": job_id + 1000,
        "title": title,
        "updated_at": "2026-01-14T10:55:28-05:00",
        "requisition_id": "50",
        "location": {"name": location},
        "absolute_url": f"https://boards.greenhouse.io/vaulttec/jobs/{job_id}",
        "language": "en",
        "metadata": None,
        "content": content,
        "departments": [{"id": 13583, "name": "Engineering", "parent_id": None, "child_ids": []}],
        "offices": [
            {"id": 8787, "name": location, "location": location, "parent_id": None, "child_ids": []}
        ],
        **extra,
    }


def lever_posting(posting_id: str, title: str, **extra: Any) -> dict[str, Any]:
    """A posting of the Lever postings list (the README's fields)."""
    return {
        "id": posting_id,
        "text": title,
        "categories": {
            "location": "San Francisco",
            "commitment": "Full-time",
            "team": "Engineering",
            "department": "R&D",
            "allLocations": ["San Francisco"],
        },
        "country": "US",
        "description": "<div>Build the <b>thing</b>.</div>",
        "descriptionPlain": "Build the thing.",
        "lists": [{"text": "Requirements", "content": "<li>Python</li><li>SQL</li>"}],
        "additional": "<div>Benefits &amp; more.</div>",
        "additionalPlain": "Benefits & more.",
        "hostedUrl": f"https://jobs.lever.co/leverdemo/{posting_id}",
        "applyUrl": f"https://jobs.lever.co/leverdemo/{posting_id}/apply",
        "createdAt": 1767225600000,
        "workplaceType": "on-site",
        **extra,
    }


def ashby_job(job_id: str, title: str, **extra: Any) -> dict[str, Any]:
    """A job of Ashby's job-board response (the posting API's fields)."""
    return {
        "id": job_id,
        "title": title,
        "department": "Engineering",
        "team": "Platform",
        "employmentType": "FullTime",
        "location": "Berlin",
        "secondaryLocations": [],
        "address": {
            "postalAddress": {
                "addressLocality": "Berlin",
                "addressRegion": "Berlin",
                "addressCountry": "Germany",
            }
        },
        "isRemote": False,
        "workplaceType": "Hybrid",
        "publishedAt": "2026-02-01T09:00:00.000+00:00",
        "isListed": True,
        "jobUrl": f"https://jobs.ashbyhq.com/ashbydemo/{job_id}",
        "applyUrl": f"https://jobs.ashbyhq.com/ashbydemo/{job_id}/application",
        "descriptionHtml": "<p>Run the platform.</p>",
        "descriptionPlain": "Run the platform.",
        "shouldDisplayCompensationOnJobPostings": True,
        "compensation": {
            "compensationTierSummary": "€70K – €90K",
            "summaryComponents": [
                {
                    "compensationType": "Salary",
                    "interval": "1 YEAR",
                    "currencyCode": "EUR",
                    "minValue": 70000,
                    "maxValue": 90000,
                },
                {"compensationType": "EquityPercentage", "interval": "NONE", "minValue": 0.1},
            ],
        },
        **extra,
    }


def job_posting_page(title: str, **fields: Any) -> str:
    """An HTML page carrying one schema.org JobPosting in JSON-LD (Google's example shape)."""
    node = {
        "@context": "https://schema.org/",
        "@type": "JobPosting",
        "title": title,
        "description": "<p>Google aspires to be an organization that reflects the globally"
        " diverse audience that our products and technology serve.</p>",
        "datePosted": "2026-01-18",
        "validThrough": "2099-03-18T00:00",
        "employmentType": "CONTRACTOR",
        "hiringOrganization": {
            "@type": "Organization",
            "name": "Google",
            "sameAs": "https://www.google.com",
        },
        "jobLocation": {
            "@type": "Place",
            "address": {
                "@type": "PostalAddress",
                "streetAddress": "1600 Amphitheatre Pkwy",
                "addressLocality": "Mountain View",
                "addressRegion": "CA",
                "postalCode": "94043",
                "addressCountry": "US",
            },
        },
        "baseSalary": {
            "@type": "MonetaryAmount",
            "currency": "USD",
            "value": {"@type": "QuantitativeValue", "value": 40.00, "unitText": "HOUR"},
        },
        **fields,
    }
    data = json.dumps({k: v for k, v in node.items() if v is not None})
    return (
        f"<html><head><title>{html.escape(title)}</title>"
        f'<script type="application/ld+json">{data}</script></head>'
        f"<body><h1>{html.escape(title)}</h1></body></html>"
    )


@pytest.fixture
def boards() -> Iterator[FakeBoards]:
    """An empty :class:`FakeBoards` on a loopback port for one test."""
    fake = FakeBoards().start()
    try:
        yield fake
    finally:
        fake.stop()


def board_env(db_url: str, boards: FakeBoards) -> dict[str, str]:
    """A ``shortlist`` process's environment that crawls ``boards`` (a loopback address)."""
    return {
        "SHORTLIST_DATABASE_URL": db_url,
        "SHORTLIST_LOG_LEVEL": "WARNING",
        "SHORTLIST_GREENHOUSE_API_URL": boards.base_url,
        "SHORTLIST_LEVER_API_URL": boards.base_url,
        "SHORTLIST_ASHBY_API_URL": boards.base_url,
        "SHORTLIST_CRAWL_HOST_DELAY": "0",
        "SHORTLIST_CRAWL_ALLOW_PRIVATE": "true",
    }
