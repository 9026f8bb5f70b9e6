"""Loopback job boards for the crawler's tests, in a background thread: Greenhouse, Lever and
Ashby as their documents describe them, and a careers site with schema.org JSON-LD.

* Greenhouse Job Board API (https://developers.greenhouse.io/job-board.html):
  ``GET /v1/boards/{token}`` → ``{"name", "content"}``; ``GET /v1/boards/{token}/jobs`` →
  ``{"jobs": [...], "meta": {"total"}}``, with ``content`` (HTML, entity-escaped) only when
  ``content=true``; an unknown token answers 404.
* Lever Postings API (https://github.com/lever/postings-api): ``GET /v0/postings/{site}
  ?mode=json`` → a list of postings; an unknown site answers 404.
* Ashby posting API (https://developers.ashbyhq.com/docs/public-job-posting-api):
  ``GET /posting-api/job-board/{board}`` → ``{"apiVersion": "1", "jobs": [...]}``, with
  ``compensation`` only when ``includeCompensation=true``; an unknown board answers 404.
* Any other path: a page of :attr:`FakeBoards.pages` (``/robots.txt`` among them), else 404.

Every 200 carries an ``ETag`` (a hash of the body); a request whose ``If-None-Match`` matches
gets a 304, as HTTP caches and these vendors' CDNs answer. A test scripts the boards by
mutating the dicts (``greenhouse``, ``lever``, ``ashby``, ``pages``), makes a path fail with
``fail[path] = status``, or slow with ``delay[path] = seconds``; ``requests`` records every
request's path and headers.
"""

from __future__ import annotations

import hashlib
import html
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    status: int = 0


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

    def _route(self, path: str, query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        parts = [p for p in path.split("/") if p]
        flag = lambda name: query.get(name, ["false"])[0].lower() == "true"  # noqa: E731
        if len(parts) in (3, 4) and parts[:2] == ["v1", "boards"]:
            board = self.greenhouse.get(parts[2])
            if board is None:
                return 404, "application/json", b'{"status":404,"error":"Job not found"}'
            if len(parts) == 3:
                body: Any = {"name": board["name"], "content": board.get("content", "")}
            else:
                jobs = []
                for job in board["jobs"]:
                    item = {k: v for k, v in job.items() if k != "content"}
                    if flag("content"):
                        item["content"] = html.escape(job.get("content", ""))
                    jobs.append(item)
                body = {"jobs": jobs, "meta": {"total": len(jobs)}}
            return 200, "application/json", json.dumps(body).encode()
        if len(parts) == 3 and parts[:2] == ["v0", "postings"]:
            postings = self.lever.get(parts[2])
            if postings is None:
                return 404, "application/json", b'{"ok":false,"error":"Document not found"}'
            return 200, "application/json", json.dumps(postings).encode()
        if len(parts) == 3 and parts[:2] == ["posting-api", "job-board"]:
            jobs = self.ashby.get(parts[2])
            if jobs is None:
                return 404, "application/json", b'{"success":false}'
            with_pay = flag("includeCompensation")
            shown = [{k: v for k, v in j.items() if with_pay or k != "compensation"} for j in jobs]
            return 200, "application/json", json.dumps({"apiVersion": "1", "jobs": shown}).encode()
        page = self.pages.get(path)
        if page is None:
            return 404, "text/plain", b"not found"
        return 200, page[0], page[1].encode()

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        url = urlsplit(handler.path)
        seen = Seen(url.path, {k.lower(): v for k, v in handler.headers.items()})
        with self._lock:
            self.requests.append(seen)
        wait = self.delay.get(url.path)
        if wait:
            time.sleep(wait)
        failing = self.fail.get(url.path)
        if failing is not None:
            status, ctype, body = failing, "text/plain", b"trouble"
        else:
            status, ctype, body = self._route(url.path, parse_qs(url.query))
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
