"""The web UI on the server side (httpx over ASGI, no browser): the job search and detail pages,
the recruiter console shell, the status page, static files, and the SSE stream of a search."""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import AsyncIterator
from html.parser import HTMLParser
from typing import Any

import httpx
import psycopg
import pytest

from shortlist.api.ratelimit import RateLimiter
from shortlist.api.routes.events import search_event_stream
from shortlist.api.routes.pages import static_files
from shortlist.auth import Role
from shortlist.bootstrap import Services
from shortlist.db import channels
from shortlist.embedding.spaces import Spaces
from shortlist.queue.notify import Notifier
from shortlist.talent import repository as repo
from shortlist.talent.models import Tier
from tests.backfill_support import MakeToken, Person, auth, seed_corpus
from tests.fakes import FakeEmbedder
from tests.helpers import wait_for

EmbedPending = Any  # the ``embed_pending`` fixture: ``await embed_pending()``


class Page(HTMLParser):
    """Just enough of an HTML page to assert on: title, metas, links, elements by attribute."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.title = ""
        self.metas: dict[str, str] = {}
        self.links: list[dict[str, str]] = []
        self.anchors: list[dict[str, str]] = []
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.scripts: list[tuple[dict[str, str], str]] = []
        self._in: str | None = None
        self._script_attrs: dict[str, str] = {}
        self._text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.elements.append((tag, a))
        if tag == "title":
            self._in, self._text = "title", []
        elif tag == "script":
            self._in, self._text, self._script_attrs = "script", [], a
        elif tag == "meta":
            key = a.get("name") or a.get("property")
            if key:
                self.metas[key] = a.get("content", "")
        elif tag == "link":
            self.links.append(a)
        elif tag == "a":
            self.anchors.append(a)

    def handle_data(self, data: str) -> None:
        if self._in:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self._in == "title":
            self.title = "".join(self._text).strip()
            self._in = None
        elif tag == "script" and self._in == "script":
            self.scripts.append((self._script_attrs, "".join(self._text)))
            self._in = None

    def having(self, attr: str, value: str | None = None) -> list[tuple[str, dict[str, str]]]:
        return [
            (t, a) for t, a in self.elements if attr in a and (value is None or a[attr] == value)
        ]


def notice(html: str) -> str | None:
    match = re.search(r'data-notice="([^"]*)"', html)
    return match.group(1) if match else None


LISTINGS = [
    {
        "company_name": "Northwind Payments",
        "job_title": "Senior Python Backend Engineer",
        "city_location": "Berlin",
        "description": "Build payment APIs in Python and PostgreSQL.\n\nYou own services "
        "end to end, on call included. </script><b>not bold</b>",
        "salary_min_ks": 90,
        "salary_max_ks": 120,
        "currency_code": "EUR",
    },
    {
        "company_name": "Acme Analytics",
        "job_title": "Data Engineer",
        "city_location": "Lisbon",
        "description": "Pipelines in Spark and dbt for our analytics platform.",
        "salary_min_ks": 70,
    },
    {
        "company_name": "Globex",
        "job_title": "Frontend Developer",
        "city_location": "Berlin",
        "description": "React and TypeScript on our customer portal.",
    },
]


@pytest.fixture
async def listings(
    client: httpx.AsyncClient, make_token: MakeToken, embed_pending: EmbedPending
) -> list[dict[str, Any]]:
    # A board operator posts for several companies: an admin token (a company's posts as it).
    token = await make_token("ops", Role.admin)
    created = []
    for body in LISTINGS:
        response = await client.post("/api/jobs", json=body, headers=auth(token))
        assert response.status_code == 201, response.text
        created.append(response.json())
    await embed_pending()
    return created


# --- job search ------------------------------------------------------------------------------


async def test_home_is_a_search_form_with_labels_and_a_strict_csp(
    client: httpx.AsyncClient,
) -> None:
    response = await client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'self'" in csp
    page = Page(response.text)
    assert page.title == "Find jobs | shortlist"
    assert page.metas["description"]
    # every input has a label
    inputs = [a["id"] for t, a in page.elements if t == "input"]
    labelled = {a["for"] for t, a in page.elements if t == "label"}
    assert set(inputs) == {"q", "location", "salary_min", "visa"} <= labelled
    # nothing from another origin, no inline script or style
    assert not re.search(r'(src|href)="(https?:)?//', response.text)
    assert not page.having("style")
    assert all(attrs.get("src") for attrs, _ in page.scripts)
    assert notice(response.text) is None


async def test_search_shows_hits_with_title_company_city_salary_score_and_links(
    client: httpx.AsyncClient, listings: list[dict[str, Any]]
) -> None:
    response = await client.get("/", params={"q": "python backend payments"})
    assert response.status_code == 200
    html = response.text
    hits = Page(html).having("data-rank")
    assert len(hits) == 3
    first = listings[0]
    assert html.index("Senior Python Backend Engineer") < html.index("Frontend Developer")
    assert f'href="/jobs/{first["detail_page_slug"]}"' in html
    assert "Northwind Payments" in html and "Berlin" in html
    assert "€90K – €120K" in html and "From $70K" in html
    assert "Salary not listed" in html
    assert re.search(r"\d+% match", html)
    # user text is never markup; the snippet marks the query's words
    assert "</script><b>" not in html and "<b>not bold</b>" not in html
    assert "<mark>Python</mark>" in html
    assert Page(html).title == "python backend payments jobs | shortlist"


async def test_search_filters_by_location_and_salary(
    client: httpx.AsyncClient, listings: list[dict[str, Any]]
) -> None:
    html = (await client.get("/", params={"q": "engineer", "location": "lisbon"})).text
    assert "Acme Analytics" in html and "Northwind" not in html
    html = (await client.get("/", params={"q": "engineer", "salary_min": "100"})).text
    assert "Northwind Payments" in html and "Acme Analytics" not in html


async def test_empty_query_no_hits_and_bad_input_are_messages(
    client: httpx.AsyncClient, listings: list[dict[str, Any]]
) -> None:
    empty = await client.get("/", params={"q": "   "})
    assert empty.status_code == 200 and notice(empty.text) == "empty-query"

    none = await client.get("/", params={"q": "python", "location": "Atlantis"})
    assert none.status_code == 200 and notice(none.text) == "no-hits"
    assert "Atlantis" in none.text and "remove the location" in none.text

    bad = await client.get("/", params={"q": "python", "salary_min": "lots"})
    assert bad.status_code == 400 and notice(bad.text) == "bad-input"
    assert "whole number" in bad.text
    assert 'value="lots"' in bad.text  # the form keeps what was typed

    long = await client.get("/", params={"q": "x" * 600})
    assert long.status_code == 400 and notice(long.text) == "bad-input"


async def test_search_pages_with_offset(
    client: httpx.AsyncClient, make_token: MakeToken, embed_pending: EmbedPending
) -> None:
    token = await make_token("ops", Role.admin)
    for i in range(13):
        body = {
            "company_name": f"Company {i:02d}",
            "job_title": "Platform Engineer",
            "city_location": "Berlin",
            "description": "Kubernetes platform engineering.",
        }
        assert (await client.post("/api/jobs", json=body, headers=auth(token))).status_code == 201
    await embed_pending()

    first = await client.get("/", params={"q": "platform engineer"})
    page1 = Page(first.text)
    assert len(page1.having("data-rank")) == 10
    nexts = [a for a in page1.anchors if a.get("rel") == "next"]
    assert [a["href"] for a in nexts] == ["/?q=platform+engineer&offset=10"]
    assert not [a for a in page1.anchors if a.get("rel") == "prev"]

    second = await client.get(nexts[0]["href"])
    page2 = Page(second.text)
    assert [a["data-rank"] for _, a in page2.having("data-rank")] == ["11", "12", "13"]
    assert [a["href"] for a in page2.anchors if a.get("rel") == "prev"] == ["/?q=platform+engineer"]
    assert not [a for a in page2.anchors if a.get("rel") == "next"]
    companies = set(re.findall(r"Company \d\d", first.text)) | set(
        re.findall(r"Company \d\d", second.text)
    )
    assert len(companies) == 13  # no listing on two pages, none missing

    beyond = await client.get("/", params={"q": "platform engineer", "offset": "20"})
    assert notice(beyond.text) == "no-more"


async def test_search_page_is_rate_limited_like_the_api(
    client: httpx.AsyncClient, app: Any, listings: list[dict[str, Any]]
) -> None:
    app.state.search_limiter = RateLimiter(1)
    assert (await client.get("/", params={"q": "python"})).status_code == 200
    limited = await client.get("/", params={"q": "python"})
    assert limited.status_code == 429 and notice(limited.text) == "rate-limited"
    # the bare form is not a search and is never limited
    assert (await client.get("/")).status_code == 200


# --- job detail ------------------------------------------------------------------------------


async def test_detail_page_has_title_meta_canonical_and_job_posting(
    client: httpx.AsyncClient, listings: list[dict[str, Any]]
) -> None:
    listing = listings[0]
    response = await client.get(f"/jobs/{listing['detail_page_slug']}")
    assert response.status_code == 200
    page = Page(response.text)
    assert page.title == "Senior Python Backend Engineer at Northwind Payments — Berlin | shortlist"
    description = page.metas["description"]
    assert description.startswith(
        "Northwind Payments is hiring a Senior Python Backend Engineer in Berlin. $90K - $120K EUR."
    )
    assert len(description) <= 160
    canonical = [link["href"] for link in page.links if link.get("rel") == "canonical"]
    assert canonical == [f"http://test/jobs/{listing['detail_page_slug']}"]
    [(_attrs, body)] = [(a, b) for a, b in page.scripts if a.get("type") == "application/ld+json"]
    assert "</" not in body  # the description's "</script>" cannot end the element
    data = json.loads(body)
    assert data["@type"] == "JobPosting"
    assert data["hiringOrganization"]["name"] == "Northwind Payments"
    assert data["baseSalary"]["value"] == {
        "@type": "QuantitativeValue",
        "unitText": "YEAR",
        "minValue": 90000,
        "maxValue": 120000,
    }
    assert "</script><b>not bold</b>" in data["description"]
    # paragraphs of the description, escaped
    assert "<p>Build payment APIs in Python and PostgreSQL.</p>" in response.text
    assert "&lt;b&gt;not bold&lt;/b&gt;" in response.text


async def test_detail_by_id_or_old_slug_redirects_to_the_canonical_url(
    client: httpx.AsyncClient, listings: list[dict[str, Any]]
) -> None:
    listing = listings[1]
    for ref in (listing["id"], f"old-title-{listing['id']}"):
        response = await client.get(f"/jobs/{ref}")
        assert response.status_code == 301
        assert response.headers["location"] == f"/jobs/{listing['detail_page_slug']}"


async def test_unknown_or_malformed_slug_is_a_friendly_404_page(
    client: httpx.AsyncClient, listings: list[dict[str, Any]]
) -> None:
    for ref in (f"gone-{uuid.uuid4()}", "no-uuid-here", "%00", "a" * 3000):
        response = await client.get(f"/jobs/{ref}")
        assert response.status_code == 404, ref
        assert response.headers["content-type"].startswith("text/html")
        page = Page(response.text)
        assert page.title == "We couldn't find that job | shortlist"
        assert page.metas["robots"] == "noindex"
        assert any(a.get("href") == "/" for a in page.anchors)


# --- static files ----------------------------------------------------------------------------


async def test_static_files_have_types_and_cache_headers(client: httpx.AsyncClient) -> None:
    home = (await client.get("/")).text
    css_url = re.search(r'href="(/static/app\.css\?v=[0-9a-f]+)"', home)
    assert css_url
    response = await client.get(css_url.group(1))
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/css; charset=utf-8"
    assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
    etag = response.headers["etag"]
    assert (await client.get(css_url.group(1), headers={"If-None-Match": etag})).status_code == 304

    js = await client.get("/static/recruit.js")
    assert js.headers["content-type"] == "text/javascript; charset=utf-8"
    assert js.headers["cache-control"] == "public, max-age=0, must-revalidate"
    assert js.headers["x-content-type-options"] == "nosniff"
    head = await client.head("/static/favicon.svg")
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-type"] == "image/svg+xml"
    assert set(static_files()) == {
        "account.js",
        "api.js",
        "alerts.js",
        "app.css",
        "employer.js",
        "favicon.svg",
        "recruit.js",
        "status.js",
    }


TRAVERSALS = [
    "/static/../pages.py",
    "/static/..%2Fpages.py",
    "/static/%2e%2e%2fpages.py",
    "/static/..%5Cpages.py",
    "/static//etc/passwd",
    "/static/%2Fetc%2Fpasswd",
    "/static/templates/base.html",
    "/static/nope.css",
    "/static/.hidden.js",
    "/static/app.css%00.js",
]


async def test_static_files_never_leave_the_static_folder(client: httpx.AsyncClient) -> None:
    for path in TRAVERSALS:
        response = await client.get(path)
        assert response.status_code == 404, path
        assert b"import" not in response.content and b"root:" not in response.content


# --- recruiter console shell -----------------------------------------------------------------


async def test_recruit_page_carries_poll_interval_transport_and_deep_link(
    client: httpx.AsyncClient,
) -> None:
    default = Page((await client.get("/recruit")).text)
    [(_, root)] = default.having("id", "recruit")
    assert root["data-poll-ms"] == "5000" and root["data-transport"] == "auto"
    assert root["data-search-id"] == ""
    assert [a.get("src", "").split("?")[0] for a, _ in default.scripts] == ["/static/recruit.js"]
    # the result count is announced to screen readers
    [(_, count)] = default.having("id", "result-count")
    assert count["aria-live"] == "polite"

    sid = str(uuid.uuid4())
    tuned = Page((await client.get(f"/recruit?search={sid}&poll=300&transport=poll")).text)
    [(_, root)] = tuned.having("id", "recruit")
    assert (root["data-poll-ms"], root["data-transport"], root["data-search-id"]) == (
        "300",
        "poll",
        sid,
    )
    clamped = Page((await client.get("/recruit?poll=1&transport=carrier-pigeon")).text)
    [(_, root)] = clamped.having("id", "recruit")
    assert root["data-poll-ms"] == "100" and root["data-transport"] == "auto"


async def test_recruit_page_with_a_broken_link_says_so(client: httpx.AsyncClient) -> None:
    response = await client.get("/recruit?search=not-a-search")
    assert response.status_code == 200
    assert notice(response.text) == "bad-link"
    [(_, root)] = Page(response.text).having("id", "recruit")
    assert root["data-search-id"] == ""


# --- status page -----------------------------------------------------------------------------


async def test_status_page_is_public_without_queries_and_complete_for_admins(
    client: httpx.AsyncClient, make_token: MakeToken, services: Services
) -> None:
    recruiter = await make_token("r", Role.recruiter)
    admin = await make_token("ops", Role.admin)
    secret_query = "Rust firmware, ask jane.doe@example.com"
    started = await client.post(
        "/api/searches", json={"query": secret_query}, headers=auth(recruiter)
    )
    search_id = started.json()["searchId"]

    public = await client.get("/status")
    assert public.status_code == 200
    assert "Embedding queues" in public.text and "Running searches" in public.text
    assert 'data-searches="running">1<' in public.text
    assert 'data-vector-index="job_listings_embedding_halfvec_idx"' in public.text
    assert 'data-fits="true"' in public.text and 'data-fits="false"' not in public.text
    assert "Rust firmware" not in public.text and search_id not in public.text
    assert "shown to admins only" in public.text

    as_recruiter = await client.get("/status?fragment=1", headers=auth(recruiter))
    assert "Rust firmware" not in as_recruiter.text and 'data-role="recruiter"' in as_recruiter.text

    as_admin = await client.get("/status?fragment=1", headers=auth(admin))
    assert as_admin.status_code == 200
    assert "<html" not in as_admin.text  # a fragment, swapped in by status.js
    assert "Rust firmware, ask [e-mail]" in as_admin.text and search_id in as_admin.text
    assert "jane.doe" not in as_admin.text
    assert 'data-admin="true"' in as_admin.text

    bad = await client.get("/status?fragment=1", headers=auth("sl_nope"))
    assert bad.status_code == 401


# --- SSE: GET /api/searches/{id}/events -----------------------------------------------------

SRE = [
    Person(
        full_name=f"Sre Person{i}",
        role_title="Site Reliability Engineer",
        skills=("Kubernetes", "Prometheus"),
        summary="Site reliability engineer running kubernetes and prometheus.",
    )
    for i in range(4)
]
SRE_QUERY = {"query": "site reliability engineer kubernetes prometheus"}


def parse_sse(text: str) -> list[tuple[str, Any]]:
    """``[(event, data)]`` of an SSE body (comments and ``retry:`` skipped)."""
    out = []
    for frame in text.split("\n\n"):
        fields = dict(
            line.split(": ", 1) for line in frame.splitlines() if line and not line.startswith(":")
        )
        if "data" in fields:
            out.append((fields.get("event", "message"), json.loads(fields["data"])))
    return out


# A target the four internal hits reach, so a search completes without any backfill.
pytestmark = pytest.mark.settings(backfill_min_results=4)


@pytest.fixture
async def complete_search(
    client: httpx.AsyncClient, services: Services, embedder: FakeEmbedder, make_token: MakeToken
) -> tuple[str, str]:
    await seed_corpus(services.pool, embedder, SRE)
    token = await make_token("owner", Role.recruiter)
    started = await client.post("/api/searches", json=SRE_QUERY, headers=auth(token))
    assert started.json()["status"] == "complete"
    return started.json()["searchId"], token


async def test_events_stream_the_same_rows_as_results_then_complete(
    client: httpx.AsyncClient, complete_search: tuple[str, str]
) -> None:
    search_id, token = complete_search
    response = await client.get(f"/api/searches/{search_id}/events", headers=auth(token))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert "no-cache" in response.headers["cache-control"]
    assert response.text.startswith("retry: ")
    events_ = parse_sse(response.text)
    kinds = [e for e, _ in events_]
    assert kinds == ["result"] * 4 + ["status", "complete"]
    assert re.findall(r"^id: (\d+)$", response.text, re.MULTILINE) == ["1", "2", "3", "4"]

    polled = (await client.get(f"/api/results?searchId={search_id}", headers=auth(token))).json()
    assert [d for e, d in events_ if e == "result"] == polled["results"]
    status = events_[4][1]
    assert status["status"] == "complete" and status["resultCount"] == 4
    assert status["candidates"] == polled["candidates"]
    assert events_[5][1]["resultCount"] == 4


async def test_events_resume_after_a_rank(
    client: httpx.AsyncClient, complete_search: tuple[str, str]
) -> None:
    search_id, token = complete_search
    url = f"/api/searches/{search_id}/events"
    after = parse_sse((await client.get(url + "?after=2", headers=auth(token))).text)
    assert [d["rank"] for e, d in after if e == "result"] == [3, 4]
    headers = {**auth(token), "Last-Event-ID": "3"}
    resumed = parse_sse((await client.get(url, headers=headers)).text)
    assert [d["rank"] for e, d in resumed if e == "result"] == [4]
    assert (await client.get(url + "?after=-1", headers=auth(token))).status_code == 422


async def test_events_are_for_the_owner_and_admins_only(
    client: httpx.AsyncClient, complete_search: tuple[str, str], make_token: MakeToken
) -> None:
    search_id, _ = complete_search
    url = f"/api/searches/{search_id}/events"
    assert (await client.get(url)).status_code == 401
    other = await make_token("other", Role.recruiter)
    response = await client.get(url, headers=auth(other))
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"
    company = await make_token("acme", Role.company)
    assert (await client.get(url, headers=auth(company))).status_code == 403
    # the token is never accepted from the URL
    owner_token = complete_search[1]
    assert (await client.get(f"{url}?token={owner_token}")).status_code == 401
    admin = await make_token("ops", Role.admin)
    assert (await client.get(url, headers=auth(admin))).status_code == 200
    for bad in ("nope", str(uuid.uuid4())):
        missing = await client.get(f"/api/searches/{bad}/events", headers=auth(admin))
        assert missing.status_code == 404


async def test_stream_wakes_on_notify_and_sends_rows_as_they_are_appended(
    client: httpx.AsyncClient,
    services: Services,
    embedder: FakeEmbedder,
    make_token: MakeToken,
    db_url: str,
) -> None:
    # Two internal hits of a target of 4: the search stays running (no workers here).
    await seed_corpus(services.pool, embedder, SRE[:2])
    token = await make_token("owner", Role.recruiter)
    started = await client.post("/api/searches", json=SRE_QUERY, headers=auth(token))
    search_id = uuid.UUID(started.json()["searchId"])
    await seed_corpus(services.pool, embedder, SRE[2:])  # not in the results yet
    async with services.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT id FROM candidates WHERE full_name IN ('Sre Person2', 'Sre Person3')"
            " ORDER BY full_name"
        )
        later = [r["id"] for r in await cur.fetchall()]

    notifier = Notifier(db_url)
    live = Services(
        services.settings,
        db_url,
        services.pool,
        notifier,
        Spaces.of_embedder(services.pool, embedder),
    )
    principal = await _principal(services, token)
    # A resync interval far beyond the test's deadlines: only NOTIFY can deliver in time.
    stream = search_event_stream(live, principal, search_id, 0, resync=60.0, heartbeat=60.0)
    received: list[tuple[str, Any]] = []
    reader = asyncio.create_task(_read_into(stream, received))
    notifier.start()
    try:
        await wait_for(lambda: _ranks(received, 2), timeout=10, message="the backlog")

        for expected, candidate_id in enumerate(later, start=3):
            async with services.pool.connection() as conn, conn.transaction():
                await repo.append_result(
                    conn,
                    search_id=search_id,
                    candidate_id=candidate_id,
                    search_candidate_id=None,
                    tier=Tier.strict,
                    score=0.9,
                )
            await _until_delivered(db_url, search_id, received, expected)

        async with services.pool.connection() as conn, conn.transaction():
            await repo.complete_search_if_done(conn, search_id)
        await wait_for(lambda: _kinds(received, "complete"), timeout=10, message="complete")
        await asyncio.wait_for(reader, 5)  # the stream ends after complete
    finally:
        reader.cancel()
        await notifier.stop()
    ranks = [d["rank"] for e, d in received if e == "result"]
    assert ranks == [1, 2, 3, 4]
    assert received[-1][0] == "complete"


async def test_an_idle_stream_sends_heartbeats(
    client: httpx.AsyncClient,
    services: Services,
    make_token: MakeToken,
) -> None:
    token = await make_token("owner", Role.recruiter)
    started = await client.post("/api/searches", json=SRE_QUERY, headers=auth(token))
    search_id = uuid.UUID(started.json()["searchId"])  # running: no corpus, no workers
    principal = await _principal(services, token)
    stream = search_event_stream(services, principal, search_id, 0, heartbeat=0.2, resync=0.05)
    chunks: list[str] = []
    try:
        async with asyncio.timeout(10):
            async for chunk in stream:
                chunks.append(chunk)
                if chunk.startswith(":"):
                    break
    finally:
        await stream.aclose()
    assert chunks[-1] == ": keep-alive\n\n"
    kinds = [e for c in chunks for e, _ in parse_sse(c)]
    assert kinds == ["status"]  # the state once, then nothing new: only the heartbeat


async def _principal(services: Services, token: str) -> Any:
    from shortlist.auth import authenticate

    async with services.pool.connection() as conn:
        principal = await authenticate(conn, token)
    assert principal is not None
    return principal


async def _read_into(stream: AsyncIterator[str], into: list[tuple[str, Any]]) -> None:
    async for chunk in stream:
        into.extend(parse_sse(chunk))


async def _ranks(received: list[tuple[str, Any]], n: int) -> bool:
    return [d["rank"] for e, d in received if e == "result"] == list(range(1, n + 1))


async def _kinds(received: list[tuple[str, Any]], kind: str) -> bool:
    return any(e == kind for e, _ in received)


async def _until_delivered(
    db_url: str, search_id: uuid.UUID, received: list[tuple[str, Any]], rank: int
) -> None:
    """Wait for ``rank`` to arrive. The listener LISTENs asynchronously after the stream
    subscribes; until it does, a NOTIFY is missed — so re-send the search's notification
    (harmless: it only makes the stream re-read) until one lands."""
    deadline = time.monotonic() + 10
    while not await _ranks(received, rank):
        assert time.monotonic() < deadline, f"rank {rank} was not delivered: {received}"
        async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
            await conn.execute("SELECT pg_notify(%s, %s)", (channels.SEARCH_EVENTS, str(search_id)))
        try:
            await wait_for(lambda: _ranks(received, rank), timeout=0.5, message=f"rank {rank}")
        except AssertionError:
            continue


async def test_absurd_numbers_are_defaults_or_messages_never_errors(
    client: httpx.AsyncClient, complete_search: tuple[str, str]
) -> None:
    huge = "9" * 5000
    assert (await client.get("/", params={"q": "python", "offset": huge})).status_code == 200
    for odd in (huge, "²", "-5", "1e3"):
        bad = await client.get("/", params={"q": "python", "salary_min": odd})
        assert bad.status_code == 400 and notice(bad.text) == "bad-input", odd
        page = Page((await client.get("/recruit", params={"poll": odd})).text)
        [(_, root)] = page.having("id", "recruit")
        assert root["data-poll-ms"] == "5000", odd
    search_id, token = complete_search
    headers = {**auth(token), "Last-Event-ID": huge}
    response = await client.get(f"/api/searches/{search_id}/events", headers=headers)
    assert response.status_code == 200
    assert [d["rank"] for e, d in parse_sse(response.text) if e == "result"] == [1, 2, 3, 4]
