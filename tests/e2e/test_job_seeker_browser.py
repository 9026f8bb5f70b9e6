"""A job seeker's path in a real browser (issue 41): search → job page → "Apply" goes to the
employer's page, for a crawled Greenhouse, Lever, Ashby and JSON-LD listing each (their boards
are loopback fakes: tests.job_boards), and to a mailto for an e-mailed post; the salary in the
chosen currency with its rate's date; similar jobs; the pages pass axe and fit a phone."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from email.message import EmailMessage
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import httpx
import pytest
from playwright.sync_api import BrowserContext, expect

from tests.e2e.test_browser import Tab, audit, browser  # noqa: F401 (fixture)
from tests.helpers import wait_for_sync
from tests.job_boards import (
    FakeBoards,
    ashby_job,
    greenhouse_job,
    job_posting_page,
    lever_posting,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser

    from tests.live_server import LiveServer

pytestmark = pytest.mark.browser


@pytest.fixture
def seeker_server(live_server_factory: Callable[..., LiveServer], boards: FakeBoards) -> LiveServer:
    return live_server_factory(
        settings_overrides={
            "greenhouse_api_url": boards.base_url,
            "lever_api_url": boards.base_url,
            "ashby_api_url": boards.base_url,
            "crawl_host_delay": 0,
            "crawl_allow_private": True,
        }
    )


@pytest.fixture
def new_tab(browser: Browser, seeker_server: LiveServer) -> Iterator[Callable[[], Tab]]:  # noqa: F811
    contexts: list[BrowserContext] = []

    def make() -> Tab:
        context = browser.new_context(viewport={"width": 1200, "height": 900}, locale="pt-PT")
        contexts.append(context)
        return Tab(context, seeker_server)

    yield make
    for context in contexts:
        context.close()


def _employer_pages(boards: FakeBoards) -> dict[str, str]:
    """Each source's apply page, on the fake boards' host (a page the browser can open)."""
    base = boards.base_url
    pages = {
        "greenhouse": f"{base}/gh/acme/jobs/1",
        "lever": f"{base}/lever/acme/l1/apply",
        "ashby": f"{base}/ashby/acme/a1/application",
        "careers": f"{base}/careers/platform/apply",
    }
    for name, url in pages.items():
        boards.pages[url.removeprefix(base)] = (
            "text/html",
            f"<html><head><title>Apply</title></head><body><h1>Apply: {name}</h1></body></html>",
        )
    return pages


def _crawled(server: LiveServer, boards: FakeBoards) -> dict[str, str]:
    pages = _employer_pages(boards)
    text = "Python services on PostgreSQL. Visa sponsorship available."
    boards.greenhouse["acme"] = {
        "name": "Acme Greenhouse",
        "jobs": [
            greenhouse_job(
                1, "Python Backend Engineer", "Berlin", f"<p>{text}</p>",
                absolute_url=pages["greenhouse"],
            )
        ],
    }  # fmt: skip
    boards.lever["acme"] = [
        lever_posting(
            "l1", "Python Platform Engineer",
            hostedUrl=f"{boards.base_url}/lever/acme/l1", applyUrl=pages["lever"],
            descriptionPlain=f"{text} Remote (US only).", workplaceType="remote",
        )
    ]  # fmt: skip
    boards.ashby["acme"] = [
        ashby_job(
            "a1", "Python Data Engineer", applyUrl=pages["ashby"],
            jobUrl=f"{boards.base_url}/ashby/acme/a1", descriptionPlain=text,
        )
    ]  # fmt: skip
    careers = "/careers"
    boards.pages[careers] = ("text/html", '<a href="/careers/platform">Platform</a>')
    boards.pages["/careers/platform"] = (
        "text/html",
        job_posting_page(
            "Python Site Reliability Engineer",
            identifier="sre-1",
            url=pages["careers"],
            directApply=True,
            description=f"<p>{text}</p>",
        ),
    )
    admin = server.token("ops", "admin")
    for spec, company in (
        ("greenhouse:acme", "Acme Greenhouse"),
        ("lever:acme", "Lever Co"),
        ("ashby:acme", "Ashby Co"),
        (f"{boards.base_url}{careers}", "Careers Co"),
    ):
        response = httpx.post(
            server.url("/api/sources"),
            json={"spec": spec, "company": company},
            headers={"Authorization": f"Bearer {admin}"},
        )
        assert response.status_code == 201, response.text
    return pages


def _mailed(server: LiveServer) -> dict[str, Any]:
    token = server.token("Initech", "company")
    msg = EmailMessage()
    msg["From"] = "Hiring <hr@initech.example>"
    msg["To"] = "jobs@shortlist.example"
    msg["Subject"] = "Job post: Python Developer — Lisbon"
    msg["Message-ID"] = "<seeker-1@initech.example>"
    msg.set_content(
        "We are hiring a Python Developer in Lisbon. Python and Django, 3+ years.\n"
        "Salary: €50,000 - €60,000 per year.\n"
        "Send your CV to careers@initech.example\n"
    )
    response = httpx.post(
        server.url("/api/jobs/email"),
        content=bytes(msg),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "message/rfc822"},
        timeout=60,  # the first message starts the parser processes
    )
    assert response.status_code == 201, response.text
    listing: dict[str, Any] = response.json()
    return listing


def _all_embedded(server: LiveServer, n: int) -> None:
    def done() -> bool:
        rows = server.sql(
            "SELECT count(*) AS n FROM job_listings"
            " WHERE embedding_status = 'embedded' AND status = 'open'"
        )
        return bool(rows[0]["n"] >= n)

    wait_for_sync(done, timeout=60, message="the crawl and the indexer")


def test_search_job_page_apply_goes_to_the_employer(
    seeker_server: LiveServer, boards: FakeBoards, new_tab: Callable[[], Tab]
) -> None:
    pages = _crawled(seeker_server, boards)
    mailed = _mailed(seeker_server)
    _all_embedded(seeker_server, 5)
    tab = new_tab()
    page = tab.goto("/")
    problems = audit(tab, "seeker-home")

    page.get_by_label("What").fill("python engineer")
    page.get_by_label("What").press("Enter")
    hits = page.locator("li.hit")
    expect(hits.first).to_be_visible()
    # Salaries in the browser language's currency (pt-PT: euros), the match in words.
    expect(page.get_by_label("Salaries in")).to_have_value("EUR")
    expect(hits.first.locator(".match-labels li").first).to_be_visible()
    problems += audit(tab, "seeker-results")

    titles = {
        "greenhouse": "Python Backend Engineer",
        "lever": "Python Platform Engineer",
        "ashby": "Python Data Engineer",
        "careers": "Python Site Reliability Engineer",
    }
    for kind, title in titles.items():
        page.goto(seeker_server.url("/?q=python+engineer"))
        page.locator("li.hit h2 a", has_text=title).click()
        expect(page.get_by_role("heading", level=1)).to_have_text(title)
        apply = page.locator("a[data-apply]")
        expect(apply).to_have_count(1)
        expect(apply).to_have_attribute("href", pages[kind])
        if kind == "greenhouse":
            expect(page.locator("[data-visa]")).to_have_text("Visa sponsorship offered")
            expect(page.locator("[data-similar]").first).to_be_visible()
            problems += audit(tab, "seeker-detail")
        if kind == "lever":
            expect(page.locator("[data-remote-countries]")).to_have_text("United States")
        apply.click()
        expect(page).to_have_url(pages[kind])
        expect(page.get_by_role("heading", level=1)).to_have_text(f"Apply: {kind}")

    # The e-mailed post: a mailto with the job in the subject; its salary converted as shown.
    page.goto(seeker_server.url(f"/jobs/{mailed['detail_page_slug']}?currency=USD"))
    href = page.locator("a[data-apply]").get_attribute("href") or ""
    assert href.startswith("mailto:careers@initech.example?subject="), href
    assert unquote(href.partition("subject=")[2]) == "Application: Python Developer"
    converted = page.locator("[data-converted]")
    expect(converted).to_contain_text(re.compile(r"≈ \$\d+K – \$\d+K"))
    expect(converted).to_contain_text("30 October 2026")
    problems += audit(tab, "seeker-mailed")
    assert problems == []
