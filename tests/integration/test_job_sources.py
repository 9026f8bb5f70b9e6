"""Job sources crawled into listings: real PostgreSQL, loopback boards built from the vendors'
documents (tests/job_boards.py), the crawl queue and the admin API."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from shortlist.auth import Role
from shortlist.config import Settings
from shortlist.db.types import AsyncPool
from shortlist.errors import BadInput, Conflict
from shortlist.indexer import LISTINGS, EmbeddingQueue
from shortlist.listings import service as listings_service
from shortlist.listings.models import ListingCreate
from shortlist.listings.sources import service
from shortlist.queue import run_batch
from tests.api_fixtures import EmbedPending, MakeToken
from tests.fakes import FakeEmbedder
from tests.helpers import FromFixture
from tests.job_boards import (
    FakeBoards,
    ashby_job,
    greenhouse_job,
    job_posting_page,
    lever_posting,
)

BOARDS = FromFixture("boards", lambda boards: boards.base_url)
pytestmark = pytest.mark.settings(
    greenhouse_api_url=BOARDS,
    lever_api_url=BOARDS,
    ashby_api_url=BOARDS,
    crawl_host_delay=0,
    # The careers sites of these tests are on loopback too.
    crawl_allow_private=True,
)


async def rows(pool: AsyncPool, source: str) -> dict[str, dict[str, Any]]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT id, external_id, company_name, job_title, city_location, description,"
            " salary_min_ks, salary_max_ks, currency_code, work_mode, source, source_url,"
            " status, valid_through, last_seen_at, updated_at, embedded_at,"
            " embedding_status::text AS embedding_status"
            " FROM job_listings WHERE source = %s",
            (source,),
        )
        return {r["external_id"]: r for r in await cur.fetchall()}


async def index_all(pool: AsyncPool) -> int:
    """What the indexer does with everything claimable (pending and edited rows)."""
    queue = EmbeddingQueue(pool, FakeEmbedder(), LISTINGS)
    done = 0
    while claimed := await queue.claim("test-indexer", 100, 30.0):
        await run_batch(queue, "test-indexer", claimed)
        done += len(claimed)
    return done


async def crawl(pool: AsyncPool, settings: Settings, source_id: int) -> Any:
    [result] = await service.crawl_now(pool, settings, [source_id])
    return result


def queries(boards: FakeBoards, path: str) -> list[dict[str, list[str]]]:
    """The query of every request a fake board got for exactly ``path``."""
    return [r.query for r in boards.requests if r.path == path]


GH_JOBS = [
    greenhouse_job(1, "Vault Designer", "New York, NY", "<p>Design <b>vaults</b> &amp; doors.</p>"),
    greenhouse_job(2, "Overseer", "Boston, MA", "<p>Keep order.</p>"),
    greenhouse_job(3, "Remote Engineer", "Remote", "<p>Python, fully remote.</p>"),
]


async def test_greenhouse_crawl_is_a_diff(
    pool: AsyncPool, settings: Settings, boards: FakeBoards
) -> None:
    boards.greenhouse["vaulttec"] = {"name": "Vault-Tec", "jobs": [dict(j) for j in GH_JOBS]}
    source = await service.add_source(pool, settings, "greenhouse:vaulttec")
    first = await crawl(pool, settings, source.id)
    assert first.outcome.new == 3 and first.error is None
    # What the Job Board API documents: the board ("Retrieve job board", no parameters), then
    # its jobs with the descriptions ("List jobs", content=true).
    assert queries(boards, "/v1/boards/vaulttec") == [{}]
    assert queries(boards, "/v1/boards/vaulttec/jobs") == [{"content": ["true"]}]
    listed = await rows(pool, "greenhouse:vaulttec")
    assert set(listed) == {"1", "2", "3"}
    designer = listed["1"]
    assert designer["company_name"] == "Vault-Tec"  # the board's name: the job names none
    assert designer["job_title"] == "Vault Designer"
    assert designer["city_location"] == "New York, NY"
    assert designer["description"] == "Design vaults & doors."
    assert designer["source_url"] == "https://boards.greenhouse.io/vaulttec/jobs/1"
    assert designer["status"] == "open" and designer["embedding_status"] == "pending"
    assert designer["last_seen_at"] is not None
    assert listed["3"]["work_mode"] == "remote"
    assert await index_all(pool) == 3
    embedded = await rows(pool, "greenhouse:vaulttec")

    # Edit one, remove one, leave one alone.
    boards.greenhouse["vaulttec"]["jobs"] = [
        {**GH_JOBS[0], "content": "<p>Design vaults for a thousand years.</p>"},
        GH_JOBS[2],
    ]
    second = await crawl(pool, settings, source.id)
    assert (second.outcome.new, second.outcome.changed, second.outcome.unchanged) == (0, 1, 1)
    assert second.outcome.closed == 1
    after = await rows(pool, "greenhouse:vaulttec")
    assert after["1"]["description"] == "Design vaults for a thousand years."
    assert after["1"]["updated_at"] > after["1"]["embedded_at"]  # queued for a re-embed
    assert after["2"]["status"] == "closed"
    assert after["3"]["updated_at"] == embedded["3"]["updated_at"]
    assert after["3"]["embedded_at"] == embedded["3"]["embedded_at"]
    assert after["3"]["last_seen_at"] > embedded["3"]["last_seen_at"]
    assert await index_all(pool) == 1  # the edited one alone
    assert (await rows(pool, "greenhouse:vaulttec"))["1"]["embedded_at"] > embedded["1"][
        "embedded_at"
    ]

    # Unchanged board: a conditional request, a 304, nothing rewritten, nothing doubled.
    before_third = await rows(pool, "greenhouse:vaulttec")
    third = await crawl(pool, settings, source.id)
    jobs_requests = boards.served("/v1/boards/vaulttec/jobs")
    assert jobs_requests[-1].headers.get("if-none-match")
    assert jobs_requests[-1].status == 304
    assert third.outcome.unchanged == 2 and third.outcome.closed == 0
    final = await rows(pool, "greenhouse:vaulttec")
    assert len(final) == 3  # three crawls, no duplicates
    assert final["1"]["embedded_at"] == before_third["1"]["embedded_at"]
    assert final["2"]["status"] == "closed"
    assert [s.listings_open for s in await service.list_sources(pool)] == [2]


async def test_lever_and_ashby_boards(
    pool: AsyncPool, settings: Settings, boards: FakeBoards
) -> None:
    boards.lever["leverdemo"] = [
        lever_posting(
            "p-1",
            "Data Engineer",
            workplaceType="hybrid",
            salaryRange={
                "currency": "USD",
                "interval": "per-year-salary",
                "min": 140000,
                "max": 160000,
            },
        )
    ]
    boards.ashby["ashbydemo"] = [
        ashby_job("a-1", "Platform Engineer"),
        # The organisation keeps this one's pay off the posting; the API sends it anyway.
        ashby_job("a-2", "Quiet Pay", shouldDisplayCompensationOnJobPostings=False),
    ]
    lever_source = await service.add_source(pool, settings, "lever:leverdemo", "Lever Demo Inc")
    ashby_source = await service.add_source(pool, settings, "ashby:ashbydemo", "Ashby Demo")
    results = await service.crawl_now(pool, settings, None)
    assert {r.source.id for r in results} == {lever_source.id, ashby_source.id}
    lever_row = (await rows(pool, "lever:leverdemo"))["p-1"]
    assert lever_row["company_name"] == "Lever Demo Inc"
    assert lever_row["work_mode"] == "hybrid"
    assert (lever_row["salary_min_ks"], lever_row["salary_max_ks"]) == (140, 160)
    assert "Requirements" in lever_row["description"] and "<" not in lever_row["description"]
    ashby_row = (await rows(pool, "ashby:ashbydemo"))["a-1"]
    assert (ashby_row["city_location"], ashby_row["work_mode"]) == ("Berlin", "hybrid")
    assert (ashby_row["salary_min_ks"], ashby_row["currency_code"]) == (70, "EUR")
    assert ashby_row["source_url"] == "https://jobs.ashbyhq.com/ashbydemo/a-1"
    quiet = (await rows(pool, "ashby:ashbydemo"))["a-2"]
    assert (quiet["salary_min_ks"], quiet["salary_max_ks"]) == (None, None)
    # Each asked as its document says: Lever for JSON (else it answers HTML), Ashby for the
    # compensation (else no job has one), and nothing else.
    assert queries(boards, "/v0/postings/leverdemo") == [{"mode": ["json"]}]
    assert queries(boards, "/posting-api/job-board/ashbydemo") == [
        {"includeCompensation": ["true"]}
    ]


async def test_lever_eu_site_is_read_from_the_eu_instance(
    pool: AsyncPool, settings: Settings, boards: FakeBoards
) -> None:
    # Lever's two instances are two hosts, each with its own sites (README: "global (default)
    # and EU", api.lever.co and api.eu.lever.co): the EU one is a second loopback board.
    eu = FakeBoards().start()
    try:
        boards.lever["acme"] = [lever_posting("g-1", "Global Role")]
        eu.lever["acme"] = [
            lever_posting("e-1", "EU Role", hostedUrl="https://jobs.eu.lever.co/acme/e-1")
        ]
        both = settings.model_copy(update={"lever_eu_api_url": eu.base_url})
        # Added as its job site's address, as the EU instance's companies know it.
        in_eu = await service.add_source(pool, both, "https://jobs.eu.lever.co/acme", "Acme Europe")
        in_global = await service.add_source(pool, both, "lever:acme", "Acme")
        assert (in_eu.spec, in_eu.kind) == ("https://jobs.eu.lever.co/acme", "lever")
        results = {r.source.id: r for r in await service.crawl_now(pool, both, None)}
        assert results[in_eu.id].outcome.new == 1 and results[in_global.id].outcome.new == 1
        eu_row = (await rows(pool, "https://jobs.eu.lever.co/acme"))["e-1"]
        assert (eu_row["job_title"], eu_row["company_name"]) == ("EU Role", "Acme Europe")
        assert eu_row["source_url"] == "https://jobs.eu.lever.co/acme/e-1"
        assert set(await rows(pool, "lever:acme")) == {"g-1"}
        assert [(r.path, r.query) for r in eu.requests] == [
            ("/v0/postings/acme", {"mode": ["json"]})
        ]
        assert [r.path for r in boards.requests] == ["/v0/postings/acme"]

        # A site the EU instance does not have fails its source, which says where it looked.
        missing = await service.add_source(pool, both, "https://jobs.eu.lever.co/nosuchsite")
        result = await crawl(pool, both, missing.id)
        assert result.permanent and "no Lever EU site 'nosuchsite'" in (result.error or "")
        assert not boards.served("/v0/postings/nosuchsite")
    finally:
        eu.stop()


async def test_careers_site_expired_and_robots_disallowed_never_listed(
    pool: AsyncPool, settings: Settings, boards: FakeBoards
) -> None:
    boards.pages["/robots.txt"] = ("text/plain", "User-agent: *\nDisallow: /careers/secret/\n")
    boards.pages["/careers"] = (
        "text/html",
        '<a href="/careers/jobs/1">One</a><a href="/careers/jobs/2">Old</a>'
        '<a href="/careers/secret/3">Hidden</a><a href="/blog">Blog</a>',
    )
    boards.pages["/careers/jobs/1"] = (
        "text/html",
        job_posting_page("Site Engineer", identifier="se-1", jobLocationType="TELECOMMUTE"),
    )
    boards.pages["/careers/jobs/2"] = (
        "text/html",
        job_posting_page("Expired Role", identifier="old-2", validThrough="2020-01-01"),
    )
    boards.pages["/careers/secret/3"] = ("text/html", job_posting_page("Secret", identifier="s-3"))
    spec = f"{boards.base_url}/careers"
    source = await service.add_source(pool, settings, spec)
    result = await crawl(pool, settings, source.id)
    assert result.error is None
    listed = await rows(pool, spec)
    assert set(listed) == {"se-1"}
    row = listed["se-1"]
    # No company configured: the site's host, never the page's hiringOrganization ("Google").
    assert (row["company_name"], row["work_mode"], row["currency_code"]) == (
        urlsplit(boards.base_url).netloc,
        "remote",
        "USD",
    )
    assert row["salary_min_ks"] == 83  # 40 USD an hour
    assert result.outcome.expired == 1 and result.outcome.skipped == 1
    assert not boards.served("/careers/secret/")  # never even fetched
    assert not boards.served("/blog")

    # The posting's validThrough passes: closed at the next crawl.
    boards.pages["/careers/jobs/1"] = (
        "text/html",
        job_posting_page("Site Engineer", identifier="se-1", validThrough="2021-01-01"),
    )
    await crawl(pool, settings, source.id)
    assert (await rows(pool, spec))["se-1"]["status"] == "closed"


async def test_a_careers_site_publishes_in_its_configured_company_name_only(
    pool: AsyncPool, settings: Settings, boards: FakeBoards
) -> None:
    # The page claims to be Google's (hiringOrganization.name); the operator added the site as
    # Site Co's: every listing of it is Site Co's.
    boards.pages["/careers"] = ("text/html", '<a href="/careers/jobs/1">One</a>')
    boards.pages["/careers/jobs/1"] = (
        "text/html",
        job_posting_page("Site Engineer", identifier="se-1"),
    )
    spec = f"{boards.base_url}/careers"
    source = await service.add_source(pool, settings, spec, "Site Co")
    assert (await crawl(pool, settings, source.id)).outcome.new == 1
    assert (await rows(pool, spec))["se-1"]["company_name"] == "Site Co"


async def test_a_sitemap_lists_pages_of_its_own_host_only(
    pool: AsyncPool, settings: Settings, boards: FakeBoards
) -> None:
    base = boards.base_url
    elsewhere = base.replace("127.0.0.1", "localhost")  # the same server, another host name
    boards.pages["/sitemap.xml"] = (
        "application/xml",
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{base}/jobs/a</loc></url><url><loc>{elsewhere}/jobs/other</loc></url>"
        "</urlset>",
    )
    for key in ("a", "other"):
        boards.pages[f"/jobs/{key}"] = ("text/html", job_posting_page(f"Job {key}", identifier=key))
    source = await service.add_source(pool, settings, f"{base}/sitemap.xml", "Sitemap Co")
    assert (await crawl(pool, settings, source.id)).outcome.new == 1
    assert not boards.served("/jobs/other")


async def test_sitemap_source_and_partial_outage(
    pool: AsyncPool, settings: Settings, boards: FakeBoards
) -> None:
    base = boards.base_url
    boards.pages["/sitemap.xml"] = (
        "application/xml",
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{base}/jobs/a</loc></url><url><loc>{base}/jobs/b</loc></url></urlset>",
    )
    for key in ("a", "b"):
        boards.pages[f"/jobs/{key}"] = ("text/html", job_posting_page(f"Job {key}", identifier=key))
    spec = f"{base}/sitemap.xml"
    source = await service.add_source(pool, settings, spec, "Sitemap Co")
    assert (await crawl(pool, settings, source.id)).outcome.new == 2
    # One page answers 503 this time: its posting is neither seen nor closed.
    boards.fail["/jobs/b"] = 503
    result = await crawl(pool, settings, source.id)
    assert result.outcome.closed == 0
    assert {r["status"] for r in (await rows(pool, spec)).values()} == {"open"}
    # Sitemap unchanged (304), page a unchanged (304), b back: its page is read again.
    del boards.fail["/jobs/b"]
    third = await crawl(pool, settings, source.id)
    assert boards.served("/sitemap.xml")[-1].status == 304
    assert third.outcome.unchanged == 2 and len(await rows(pool, spec)) == 2


async def test_missing_board_fails_and_outage_backs_off(
    pool: AsyncPool, settings: Settings, boards: FakeBoards
) -> None:
    missing = await service.add_source(pool, settings, "greenhouse:nosuchboard")
    result = await crawl(pool, settings, missing.id)
    assert result.permanent
    shown = await service.get_source(pool, missing.id)
    assert shown.status == "failed" and "nosuchboard" in (shown.last_error or "")

    boards.greenhouse["flaky"] = {"name": "Flaky", "jobs": [greenhouse_job(7, "Cook", "Rome", "x")]}
    flaky = await service.add_source(pool, settings, "greenhouse:flaky")
    await crawl(pool, settings, flaky.id)
    boards.fail["/v1/boards/flaky/jobs"] = 502
    result = await crawl(pool, settings, flaky.id)
    assert not result.permanent and "502" in (result.error or "")
    shown = await service.get_source(pool, flaky.id)
    assert (
        shown.status == "active" and shown.last_error and shown.next_crawl_at > shown.last_crawl_at
    )
    # A board that cannot be reached closes nothing.
    assert (await rows(pool, "greenhouse:flaky"))["7"]["status"] == "open"


async def test_source_specs_are_checked(pool: AsyncPool, settings: Settings) -> None:
    strict = settings.model_copy(update={"crawl_allow_private": False})
    for spec in ("http://127.0.0.1:9/careers", "http://169.254.169.254/latest", "gopher://x"):
        with pytest.raises(BadInput):
            await service.add_source(pool, strict, spec)
    await service.add_source(pool, settings, "greenhouse:twice")
    with pytest.raises(Conflict):
        await service.add_source(pool, settings, "greenhouse:twice")
    assert [s.spec for s in await service.list_sources(pool)] == ["greenhouse:twice"]


async def test_one_job_one_listing_across_sources(
    pool: AsyncPool, settings: Settings, boards: FakeBoards
) -> None:
    job = greenhouse_job(11, "Welder", "Leeds", "<p>Weld.</p>")
    job["absolute_url"] = f"{boards.base_url}/careers/jobs/welder"
    boards.greenhouse["acme"] = {"name": "Acme", "jobs": [job]}
    boards.pages["/careers/jobs/welder"] = (
        "text/html",
        job_posting_page("Welder", identifier="w-11", url=f"{boards.base_url}/careers/jobs/welder"),
    )
    gh = await service.add_source(pool, settings, "greenhouse:acme")
    site = await service.add_source(pool, settings, f"{boards.base_url}/careers/jobs/welder")
    await crawl(pool, settings, gh.id)
    result = await crawl(pool, settings, site.id)
    assert result.outcome.duplicates == 1 and result.outcome.new == 0
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM job_listings WHERE status = 'open'")
        assert (await cur.fetchone())["n"] == 1  # type: ignore[index]


async def test_api_post_is_claimed_ahead_of_a_bulk_backlog(
    pool: AsyncPool, settings: Settings, boards: FakeBoards
) -> None:
    boards.greenhouse["huge"] = {
        "name": "Huge",
        "jobs": [greenhouse_job(i, f"Role {i}", "Paris", "x") for i in range(300)],
    }
    boards.greenhouse["small"] = {
        "name": "Small",
        "jobs": [greenhouse_job(1000 + i, f"Small role {i}", "Lyon", "y") for i in range(5)],
    }
    huge = await service.add_source(pool, settings, "greenhouse:huge")
    small = await service.add_source(pool, settings, "greenhouse:small")
    await crawl(pool, settings, huge.id)
    await crawl(pool, settings, small.id)
    async with pool.connection() as conn:
        posted = await listings_service.create_listing(
            conn,
            ListingCreate(
                company_name="Own Co",
                job_title="Our own post",
                city_location="Nice",
                description="Posted through the API after the crawls.",
            ),
            source="api",
        )
    interactive = EmbeddingQueue(pool, FakeEmbedder(), LISTINGS, interactive_only=True)
    [mine] = await interactive.claim("w0", 10, 30.0)  # the interactive lane's own worker
    assert mine.id == posted.id
    assert await interactive.claim("w0", 10, 30.0) == []  # never a bulk row
    await interactive.leases.release(pool, "w0", [posted.id])
    queue = EmbeddingQueue(pool, FakeEmbedder(), LISTINGS)
    # First, though created last, and in a batch of its own (embedded in a fraction of the
    # time a bulk batch takes).
    assert [c.id for c in await queue.claim("w1", 10, 30.0)] == [posted.id]
    ids = [c.id for c in await queue.claim("w1", 10, 30.0)]
    assert len(ids) == 10
    # Fair between sources: the small board's postings interleave with the huge one's.
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT source, count(*) AS n FROM job_listings WHERE id = ANY(%s) GROUP BY source",
            (ids,),
        )
        by_source = {r["source"]: r["n"] for r in await cur.fetchall()}
    assert by_source.get("greenhouse:small", 0) >= 4


async def test_sources_admin_api_and_closed_listings(
    client: httpx.AsyncClient,
    make_token: MakeToken,
    pool: AsyncPool,
    boards: FakeBoards,
    settings: Settings,
    embed_pending: EmbedPending,
) -> None:
    admin = {"Authorization": f"Bearer {await make_token('ops', Role.admin)}"}
    company = {"Authorization": f"Bearer {await make_token('acme', Role.company)}"}
    assert (await client.get("/api/sources")).status_code == 401
    assert (await client.get("/api/sources", headers=company)).status_code == 403
    bad = await client.post("/api/sources", json={"spec": "nonsense"}, headers=admin)
    assert bad.status_code == 400 and "greenhouse:TOKEN" in bad.text
    boards.greenhouse["apiboard"] = {
        "name": "API Board",
        "jobs": [greenhouse_job(5, "Quantum Gardener", "Oslo", "<p>Grow qubits.</p>")],
    }
    created = await client.post("/api/sources", json={"spec": "greenhouse:apiboard"}, headers=admin)
    assert created.status_code == 201, created.text
    source_id = created.json()["id"]
    assert (
        await client.post("/api/sources", json={"spec": "greenhouse:apiboard"}, headers=admin)
    ).status_code == 409
    await service.crawl_now(pool, settings, [source_id])
    await embed_pending()
    [listed] = (await client.get("/api/sources", headers=admin)).json()
    assert listed["listings_open"] == 1 and listed["last_crawl_at"]
    hits = (await client.get("/api/jobs/search", params={"q": "quantum gardener"})).json()["hits"]
    assert [h["listing"]["source"] for h in hits] == ["greenhouse:apiboard"]
    job = hits[0]["listing"]
    assert job["status"] == "open" and job["source_url"].endswith("/jobs/5")

    # Removing the source closes its listing: out of search, still answering by id.
    assert (await client.delete(f"/api/sources/{source_id}", headers=admin)).status_code == 204
    assert (await client.delete(f"/api/sources/{source_id}", headers=admin)).status_code == 404
    closed = (await client.get(f"/api/jobs/{job['id']}")).json()
    assert closed["status"] == "closed"
    hits = (await client.get("/api/jobs/search", params={"q": "quantum gardener"})).json()
    assert hits["hits"] == []
    page = await client.get(f"/jobs/{job['detail_page_slug']}")
    assert "This job is closed" in page.text


@pytest.fixture
def demo_boards() -> Iterator[str]:
    """The simulator's demo job sources alone (the full simulator builds its population of
    people first, which this test does not need), on a loopback port."""
    import socket
    import threading

    import uvicorn
    from fastapi import FastAPI

    from shortlist.runtime import QuietServer
    from shortlist.simulator.job_boards import register_job_board_routes

    app = FastAPI()
    register_job_board_routes(app)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = QuietServer(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    for _ in range(200):
        if server.started:
            break
        threading.Event().wait(0.02)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


async def test_simulator_demo_board_and_careers_site(
    pool: AsyncPool, settings: Settings, demo_boards: str
) -> None:
    from shortlist.simulator.job_boards import DEMO_BOARD, DEMO_COMPANY

    demo = settings.model_copy(update={"greenhouse_api_url": demo_boards})
    board = await service.add_source(pool, demo, f"greenhouse:{DEMO_BOARD}")
    site = await service.add_source(pool, demo, f"{demo_boards}/demo/careers")
    results = {r.source.id: r for r in await service.crawl_now(pool, demo, None)}
    assert results[board.id].outcome.new == 3
    assert {r["company_name"] for r in (await rows(pool, f"greenhouse:{DEMO_BOARD}")).values()} == {
        DEMO_COMPANY
    }
    careers = results[site.id].outcome
    # The expired internship and the robots-disallowed staff page are not listed.
    assert (careers.new, careers.expired, careers.skipped) == (2, 1, 1)
    # One job page nests its JobPosting as the mainEntity of its ItemPage, in an @graph.
    nested = (await rows(pool, f"{demo_boards}/demo/careers"))["support-engineer"]
    assert (nested["job_title"], nested["work_mode"]) == ("Support Engineer", "remote")
