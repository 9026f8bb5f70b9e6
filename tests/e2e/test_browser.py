"""The web UI in a real headless browser (Debian's Chromium driven by Playwright) against a real
server: uvicorn + workers + the talent-API simulator at a small time scale (tests.live_server).

Chromium is never downloaded: without /usr/bin/chromium these tests skip — except in CI
(``CI=true``), where a missing browser is a failure. Screenshots go to ``test-artifacts/``.
Every request the pages make is checked to stay on loopback.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from shortlist.simulator import SimulatorConfig
from tests.backfill_support import Person, seed_corpus
from tests.helpers import wait_for_sync
from tests.live_server import PASSWORD

if TYPE_CHECKING:
    from tests.live_server import LiveServer

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
POLL_MS = 300
TIMEOUT_MS = 60_000
"""How long an expectation waits for its condition (it returns as soon as it holds): a recruiter
search through the simulator took over 30 s to complete once on the loaded 2-core machine (its
vendors' calls timing out and retried)."""
expect.set_options(timeout=TIMEOUT_MS)

# The recruiter's brief, and the internal corpus that answers part of it.
BRIEF = {
    "query": "site reliability engineer kubernetes prometheus on-call",
    "role": "Site Reliability Engineer",
    # A country: the simulated world has SREs all over it (a city's few would not fill 15).
    "location": "United States",
}
INTERNAL = [
    Person(
        full_name=f"Internal Sre{i}",
        role_title="Site Reliability Engineer",
        skills=("Kubernetes", "Prometheus"),
        location="Austin, Texas, United States",
        summary="Site reliability engineer: kubernetes, prometheus, on-call.",
    )
    for i in range(3)
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        reason = f"no browser: {CHROMIUM} is missing (apt-get install chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI=true: browser tests must run)")
        pytest.skip(reason)
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        instance = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


class Tab:
    """A browser page on the live server, with the requests and console errors it produced."""

    def __init__(self, context: BrowserContext, server: LiveServer) -> None:
        self.server = server
        self.page = context.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.errors: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        self.page.on(
            "console",
            lambda msg: self.errors.append(f"console: {msg.text}") if msg.type == "error" else None,
        )

    def goto(self, path: str) -> Page:
        self.page.goto(self.server.url(path))
        return self.page

    def screenshot(self, name: str) -> None:
        self.page.screenshot(path=str(ARTIFACTS / name), full_page=True)


@pytest.fixture
def live_server(
    live_server_factory: Callable[..., LiveServer], request: pytest.FixtureRequest
) -> LiveServer:
    """The live server; a test may pass settings overrides with ``indirect`` parametrization."""
    return live_server_factory(settings_overrides=getattr(request, "param", None))


@pytest.fixture
def tabs(browser: Browser, live_server: LiveServer) -> Iterator[Callable[[], Tab]]:
    """``new_tab()`` → a page in a fresh context (its own sessionStorage); only loopback loads."""
    contexts: list[BrowserContext] = []
    foreign: list[str] = []
    opened: list[Tab] = []

    def guard(route: Any) -> None:
        host = urlsplit(route.request.url).hostname
        if host in ("127.0.0.1", "localhost"):
            route.continue_()
        else:
            foreign.append(route.request.url)
            route.abort()

    def new_tab() -> Tab:
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        context.route("**/*", guard)
        contexts.append(context)
        tab = Tab(context, live_server)
        opened.append(tab)
        return tab

    yield new_tab
    for context in contexts:
        context.close()
    assert foreign == [], f"pages tried to load from outside loopback: {foreign}"
    problems = [e for t in opened for e in t.errors if "Failed to load resource" not in e]
    assert problems == [], problems


def post_listings(server: LiveServer) -> list[dict[str, Any]]:
    token = server.token("ops", "admin")  # posts for several companies
    bodies = [
        ("Northwind Payments", "Senior Python Backend Engineer", "Berlin", 95, 125),
        ("Acme Analytics", "Data Engineer", "Lisbon", 70, None),
        ("Globex", "Frontend Developer", "Berlin", None, None),
        ("Initech", "Python Platform Engineer", "Remote", 100, 140),
    ]
    created = []
    for company, title, city, low, high in bodies:
        body: dict[str, Any] = {
            "company_name": company,
            "job_title": title,
            "city_location": city,
            "description": f"{title} at {company}. Python services, PostgreSQL, on-call.\n\n"
            "A small team that ships every day.",
        }
        if low is not None:
            body["salary_min_ks"] = low
        if high is not None:
            body["salary_max_ks"] = high
        response = httpx.post(
            server.url("/api/jobs"), json=body, headers={"Authorization": f"Bearer {token}"}
        )
        assert response.status_code == 201, response.text
        created.append(response.json())

    def all_embedded() -> bool:
        rows = server.sql(
            "SELECT count(*) AS n FROM job_listings WHERE embedding_status = 'embedded'"
        )
        return rows[0]["n"] == len(created)

    wait_for_sync(all_embedded, timeout=20, message="the indexer embedding the listings")
    return created


def test_job_search_shows_relevant_hits_and_the_detail_page(
    live_server: LiveServer, tabs: Callable[[], Tab]
) -> None:
    listings = post_listings(live_server)
    tab = tabs()
    page = tab.goto("/")
    expect(page).to_have_title("Find jobs | shortlist")

    # An empty query is a message, not a blank page.
    page.get_by_role("button", name="Search").click()
    expect(page.locator("[data-notice=empty-query]")).to_be_visible()

    page.get_by_label("What").fill("python backend engineer")
    page.get_by_label("What").press("Enter")
    hits = page.locator("li.hit")
    expect(hits.first).to_be_visible()
    titles = hits.locator("h2").all_inner_texts()
    assert titles[0] == "Senior Python Backend Engineer", titles
    assert titles.index("Senior Python Backend Engineer") < titles.index("Frontend Developer")
    first = hits.first
    expect(first.locator(".company")).to_have_text("Northwind Payments")
    expect(first.locator(".city")).to_have_text("Berlin")
    expect(first.locator(".salary")).to_have_text("$95K – $125K")
    expect(first.locator(".score")).to_contain_text("% match")
    tab.screenshot("job-search.png")

    # No hits: a message.
    page.get_by_label("Where").fill("Atlantis")
    page.get_by_label("What").press("Enter")
    expect(page.locator("[data-notice=no-hits]")).to_be_visible()
    page.go_back()

    # Keyboard only: focus the first hit's link and follow it.
    expect(hits.first).to_be_visible()
    hits.first.locator("h2 a").focus()
    page.keyboard.press("Enter")
    slug = listings[0]["detail_page_slug"]
    expect(page).to_have_url(live_server.url(f"/jobs/{slug}"))
    expect(page).to_have_title(
        "Senior Python Backend Engineer at Northwind Payments — Berlin | shortlist"
    )
    description = page.locator("meta[name=description]").get_attribute("content") or ""
    assert description.startswith(
        "Northwind Payments is hiring a Senior Python Backend Engineer in Berlin. $95K - $125K USD."
    )
    expect(page.get_by_role("heading", level=1)).to_have_text("Senior Python Backend Engineer")
    tab.screenshot("job-detail.png")

    page.goto(live_server.url("/jobs/no-such-job-00000000-0000-0000-0000-000000000000"))
    expect(page.get_by_role("heading", level=1)).to_have_text("We couldn't find that job")


# The page keeps a log of what it showed: the ranks/ids of the rows and the count, at every
# change. Installed before the search starts.
RECORDER = """() => {
  const rows = () => [...document.querySelectorAll('#results > li')].map(
    (li) => [Number(li.dataset.rank), li.dataset.candidateId]);
  const count = () => Number(document.querySelector('#result-count').dataset.count || 0);
  window.__seen = [];
  const record = () => window.__seen.push({rows: rows(), count: count()});
  new MutationObserver(record).observe(document.querySelector('#results-panel'),
    {subtree: true, childList: true, attributes: true, characterData: true});
}"""


# The must-have skills the brief's free text names (the strict tier asks for them).
BRIEF_SKILLS = ("Kubernetes", "Prometheus")


def first_discovered(server: LiveServer, n: int) -> list[Any]:
    """People the strict and the SERP tier find first for BRIEF (all with an e-mail address):
    whatever the tiers' timing, some of them are attempted."""
    assert server.simulator is not None
    index = server.simulator.app.state.index
    strict = index.search(role=BRIEF["role"], location=BRIEF["location"], skills=BRIEF_SKILLS)
    serp = index.serp(" ".join((BRIEF["query"], BRIEF["role"], BRIEF["location"])), 50)
    chosen = [p for p in strict if p.email][:n] + [p for p in serp if p.email][:n]
    return list({p.username: p for p in chosen}.values())


def meets_brief(person: Any) -> bool:
    """In the brief's country with its must-have skills: a result once enriched (anyone else
    may be judged too weak a fit, and would not be appended after a retry)."""
    skills = {s.casefold() for s in person.skills}
    return person.location.endswith(", " + BRIEF["location"]) and all(
        s.casefold() in skills for s in BRIEF_SKILLS
    )


def sign_in(page: Page, server: LiveServer, email: str, org: str = "Scouts") -> None:
    """From the console's sign-in panel: sign in as ``email`` (made a recruiter of ``org``
    first) on the sign-in page, and land back on the console where the page was."""
    server.person(email, org)
    page.get_by_role("link", name="Sign in", exact=True).click()
    expect(page).to_have_title("Sign in | shortlist")
    page.get_by_label("E-mail address", exact=True).fill(email)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("heading", name="New search")).to_be_visible()


def test_recruiter_search_streams_rows_in_rank_order_with_failures_and_retry(
    live_server: LiveServer, tabs: Callable[[], Tab]
) -> None:
    server = live_server
    assert server.services is not None and server.simulator is not None
    services = server.services
    server.call(lambda: seed_corpus(services.pool, server.embedder, INTERNAL))
    # The tiers' first finds have no e-mail (this time): shown as failed, retryable.
    doomed = {p.username: p for p in first_discovered(server, 2)}
    assert any(meets_brief(p) for p in doomed.values())
    server.simulator.set_behaviour(force_enrich=dict.fromkeys(doomed, "no_email"))

    tab = tabs()
    page = tab.goto(f"/recruit?poll={POLL_MS}&transport=poll")
    expect(page).to_have_title("Recruiter console | shortlist")
    # The console works on the session alone: no token field, nothing kept in the tab.
    expect(page.locator("input[type=password]")).to_have_count(0)
    sign_in(page, server, "rita@scouts.example")
    assert page.evaluate("Object.keys(sessionStorage).filter(k => /token/i.test(k))") == []
    page.evaluate(RECORDER)

    page.get_by_label("What are you looking for?").fill(BRIEF["query"])
    page.get_by_label("Role").fill(BRIEF["role"])
    page.get_by_label("Location").fill(BRIEF["location"])
    page.get_by_role("button", name="Search candidates").click()
    expect(page).to_have_url(re.compile(r"/recruit\?.*search=[0-9a-f-]{36}"))
    search_id = page.locator("#recruit").get_attribute("data-search-id")
    assert search_id

    state = page.locator("#search-state")
    expect(state).to_have_text("Complete", timeout=TIMEOUT_MS)
    rows = page.locator("#results > li")
    count = int(page.locator("#result-count").get_attribute("data-count") or 0)
    assert count >= 15 and rows.count() == count
    ranks = [int(r) for r in rows.evaluate_all("els => els.map(e => e.dataset.rank)")]
    assert ranks == list(range(1, count + 1))
    tiers = rows.evaluate_all("els => els.map(e => e.dataset.tier)")
    assert tiers[:3] == ["internal"] * 3 and set(tiers[3:]) <= {"strict", "broad", "serp"}
    expect(rows.first.locator("h3")).to_contain_text("Internal Sre")

    # Seen across time: the count only rose, in several steps, and every earlier view of the
    # list is a prefix of the final one (no row ever moved, vanished or changed its rank).
    seen = page.evaluate("window.__seen")
    final = seen[-1]["rows"]
    counts = [s["count"] for s in seen]
    assert counts == sorted(counts) and len(set(counts)) >= 3, counts
    for snapshot in seen:
        assert snapshot["rows"] == final[: len(snapshot["rows"])]
    assert len({len(s["rows"]) for s in seen}) >= 3  # rows arrived in several batches

    # The failed candidates are shown with their status and a retry button.
    failed = page.locator("#attempts > li[data-status=failed_no_email]")
    expect(failed.first).to_be_visible()
    handles = failed.evaluate_all("els => els.map(e => e.dataset.externalId)")
    retry_person = next(
        doomed[h.split(":", 1)[1]]
        for h in handles
        if h.split(":", 1)[1] in doomed and meets_brief(doomed[h.split(":", 1)[1]])
    )
    target = page.locator(f"#attempts > li[data-external-id='talent:{retry_person.username}']")
    expect(target.locator(".pill")).to_have_text("No e-mail found")
    expect(page.locator("#status-counts [data-status=failed_no_email]")).to_be_visible()
    tab.screenshot("recruiter-search.png")

    # Retry works: the person is enriched again (with an e-mail this time), appended at the
    # next rank; polling resumed and stopped again at complete.
    server.simulator.set_behaviour(force_enrich={retry_person.username: "ok"})
    target.get_by_role("button", name=f"Retry {retry_person.full_name}").click()
    appended = rows.nth(count)
    expect(appended.locator("h3")).to_have_text(retry_person.full_name)
    expect(appended).to_have_attribute("data-rank", str(count + 1))
    expect(target).to_have_count(0)
    expect(state).to_have_text("Complete")
    seen = page.evaluate("window.__seen")
    final = seen[-1]["rows"]
    assert [r[0] for r in final] == list(range(1, count + 2))
    for snapshot in seen:
        assert snapshot["rows"] == final[: len(snapshot["rows"])]
    polled = [r[1] for r in final]
    tab.screenshot("recruiter-search-after-retry.png")

    # The deep link reopens the search — over SSE this time — with the same rows and ranks.
    page.goto(server.url(f"/recruit?search={search_id}&transport=sse"))
    expect(state).to_have_text("Complete")
    expect(rows).to_have_count(count + 1)
    assert page.locator("#recruit").get_attribute("data-transport-used") == "sse"
    streamed = rows.evaluate_all(
        "els => els.map(e => [Number(e.dataset.rank), e.dataset.candidateId])"
    )
    assert [r[1] for r in streamed] == polled
    assert [r[0] for r in streamed] == list(range(1, count + 2))


def test_the_console_saves_a_searchs_alert_and_lists_the_new_people_it_reported(
    live_server: LiveServer, tabs: Callable[[], Tab]
) -> None:
    """Under a search's results: "Alert me to new people" saves its alert; a person who joins
    the corpus later and fits it is listed there (the alerts' periodic check, run here)."""
    from psycopg.types.json import Jsonb

    from shortlist.alerts import people
    from tests.fakes import hash_embed
    from tests.integration.rows import insert_candidate

    server = live_server
    services = server.services
    assert services is not None
    server.token("Scouts", "recruiter")  # the team's key: its organisation is "Scouts"
    [search] = server.sql(
        "INSERT INTO searches (owner_token_id, org_id, query, role, location, query_embedding,"
        " target_count, status, brief)"
        " SELECT t.id, t.org_id, 'rust firmware engineer', 'Firmware Engineer', 'Berlin', %s,"
        " 15, 'stale', %s FROM api_tokens AS t WHERE t.name = 'Scouts' RETURNING id",
        (
            str(hash_embed("rust firmware engineer")),
            Jsonb({"role": "Firmware Engineer", "location": "Berlin"}),
        ),
    )
    tab = tabs()
    page = tab.goto(f"/recruit?search={search['id']}&poll={POLL_MS}&transport=poll")
    sign_in(page, server, "rita@scouts.example")
    box = page.locator("#alert-box")
    expect(box).to_be_visible()
    expect(box).to_have_attribute("data-alert", "none")
    page.get_by_role("button", name="Alert me to new people").click()
    expect(box).to_have_attribute("data-alert", "active")
    expect(page.get_by_role("button", name="Alert me to new people")).to_be_hidden()

    async def newcomer() -> int:
        async with services.pool.connection() as conn:
            await insert_candidate(
                conn,
                "Nova Hand",
                role_title="Rust Firmware Engineer",
                text="rust firmware engineer",
            )
        return await people.check(services.pool, services.spaces, services.settings, None)

    assert server.call(newcomer) == 1
    page.reload()
    expect(page.locator("#alert-matches > li")).to_have_count(1)
    expect(page.locator("#alert-matches > li").first).to_contain_text("Nova Hand")
    expect(page.locator("#alert-state")).to_contain_text("1 new person fits")
    tab.screenshot("recruiter-alert.png")


# A discovery call that hangs is waited for (until teardown releases it), not timed out: the
# search stays running throughout.
@pytest.mark.parametrize("live_server", [{"discovery_timeout": 120.0}], indirect=True)
def test_another_recruiter_cannot_open_the_search_and_status_hides_queries(
    live_server: LiveServer, tabs: Callable[[], Tab]
) -> None:
    assert live_server.simulator is not None
    live_server.simulator.set_behaviour(force_search="hang", force_serp="hang")
    owner = live_server.token("owner", "recruiter")
    started = httpx.post(
        live_server.url("/api/searches"),
        json={"query": "rust firmware engineer"},
        headers={"Authorization": f"Bearer {owner}"},
    )
    search_id = started.json()["searchId"]

    tab = tabs()
    page = tab.goto(f"/recruit?search={search_id}")
    expect(page.locator("[data-notice=sign-in-to-open]")).to_be_visible()
    # Signing in comes back to the deep link, which opens at once: another organisation's.
    sign_in(page, live_server, "someone@elsewhere.example", org="Elsewhere")
    expect(page).to_have_url(re.compile(rf"/recruit\?search={search_id}"))
    message = page.locator("[data-notice=search-not-found]")
    expect(message).to_contain_text("Search not found")
    expect(page.locator("#results-panel")).to_be_hidden()
    expect(page.locator("#results > li")).to_have_count(0)
    expect(page.locator(f"#team-searches li[data-search-id='{search_id}']")).to_have_count(0)

    # Signing out ends the session: the console asks to sign in again.
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_title("Sign in | shortlist")
    assert page.request.get(live_server.url("/api/me")).status == 401

    # The status page: public without the queries, complete with an admin token.
    status = tab.goto("/status")
    expect(status).to_have_title("Status | shortlist")
    running = status.locator("tr.running-search")
    expect(running).to_have_count(1)
    expect(running).not_to_contain_text("rust firmware")
    status.get_by_text("Operator sign-in").click()
    status.get_by_label("Admin token").fill(live_server.token("ops", "admin"))
    status.get_by_role("button", name="Sign in").click()
    expect(running).to_contain_text("rust firmware engineer")
    expect(running).to_contain_text(search_id)
    expect(status.locator("#status-auth-label")).to_have_text("Admin view")
    tab.screenshot("status.png")


def test_stale_search_offers_retry_and_resumes(
    live_server_factory: Callable[..., LiveServer], browser: Browser
) -> None:
    # Discovery hangs; the reaper marks the search stale after 3 s without progress, before its
    # hung calls time out (5 s) and fail the tiers. After the retry a loaded machine's answers
    # must come within those 3 s (1 s was reached).
    server = live_server_factory(
        settings_overrides={
            "stale_after": 3.0,
            "discovery_timeout": 5.0,
            "reaper_interval": 0.2,
            "lease_seconds": 0.6,
            "heartbeat_interval": 0.2,
        },
        simulator=SimulatorConfig(time_scale=0.02),
    )
    assert server.simulator is not None
    server.simulator.set_behaviour(force_search="hang", force_serp="hang")
    token = server.token("stale team", "recruiter")  # a program's key, of the team below
    started = httpx.post(
        server.url("/api/searches"),
        json={"query": "rust firmware engineer"},
        headers={"Authorization": f"Bearer {token}"},
    )
    search_id = started.json()["searchId"]

    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(server.url(f"/recruit?search={search_id}&poll={POLL_MS}&transport=poll"))
        sign_in(page, server, "sam@stale.example", org="stale team")
        state = page.locator("#search-state")
        expect(state).to_have_text("Stale")
        retry = page.get_by_role("button", name="Retry search")
        expect(retry).to_be_visible()
        tab_path = ARTIFACTS / "recruiter-stale.png"
        page.screenshot(path=str(tab_path), full_page=True)

        server.simulator.set_behaviour(force_search=None, force_serp=None)
        retry.click()
        expect(page.locator("#stale-box")).to_be_hidden()
        expect(state).to_have_text("Complete")
        expect(page.locator("#results > li").first).to_have_attribute("data-rank", "1")
    finally:
        context.close()


# --- accessibility, phones, and the job seeker's and recruiter's newer tools ---------------------

AXE = Path(__file__).resolve().parents[1] / "axe" / "node_modules" / "axe-core" / "axe.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]
PHONE = {"width": 390, "height": 844}


def axe_violations(page: Page) -> list[tuple[str, list[Any]]]:
    """axe-core's WCAG 2.1 AA + best-practice violations on the page as it is now: (rule, the
    elements). axe is evaluated through the driver, so the page's CSP stays as it is."""
    if not AXE.exists():
        reason = f"no axe-core: {AXE} is missing (make axe)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI=true: the audit must run)")
        pytest.skip(reason)
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text(encoding="utf-8"))
    # resultTypes: every node of a violation is reported, as without it; the passing,
    # inapplicable and incomplete results (never read here) get one node each instead of a
    # unique selector for every node, most of axe's time on these pages (axe-core API.md,
    # "resultTypes"). Only the violations come back through the driver.
    found: list[tuple[str, list[Any]]] = page.evaluate(
        """tags => axe.run(document, {
            runOnly: {type: 'tag', values: tags}, resultTypes: ['violations'],
        }).then(r => r.violations.map(v => [v.id, v.nodes.map(n => n.target)]))""",
        AXE_TAGS,
    )
    return [(rule, nodes) for rule, nodes in found]


def test_the_audit_reports_each_element_of_each_violation(browser: Browser) -> None:
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_content(
            '<!doctype html><html lang="en"><head><title>Audit</title></head><body><main>'
            '<h1>Audit</h1><img src="data:,"><img src="data:,"><input id="q"></main></body></html>'
        )
        found = dict(axe_violations(page))
    finally:
        context.close()
    assert len(found["image-alt"]) == 2 and len(found["label"]) == 1, found


def horizontal_overflow(page: Page) -> int:
    """How many pixels the page is wider than the viewport (0: no horizontal scrolling)."""
    overflow: int = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    return overflow


def widest_elements(page: Page) -> list[str]:
    """The innermost elements reaching past the viewport's right edge (what to fix)."""
    found: list[str] = page.evaluate(
        """() => {
            const width = document.documentElement.clientWidth;
            const out = [];
            for (const el of document.querySelectorAll("body *")) {
                const box = el.getBoundingClientRect();
                if (box.right > width + 1 && ![...el.children].some(
                        (c) => c.getBoundingClientRect().right > width + 1)) {
                    const name = `${el.tagName.toLowerCase()}.${el.className}`;
                    out.push(`${name} ${Math.round(box.right)}px`);
                }
            }
            return out.slice(0, 5);
        }"""
    )
    return found


def audit(tab: Tab, label: str) -> list[str]:
    """What is wrong with the page as it is now: axe violations at desktop width and at a
    phone's, and horizontal scrolling on the phone (empty: nothing)."""
    page = tab.page
    problems = [f"{label}: {rule} {nodes}" for rule, nodes in axe_violations(page)]
    page.set_viewport_size(PHONE)
    if (overflow := horizontal_overflow(page)) > 0:
        problems.append(
            f"{label}: scrolls sideways by {overflow} px at 390 px ({widest_elements(page)})"
        )
    problems += [f"{label} at 390 px: {rule} {nodes}" for rule, nodes in axe_violations(page)]
    tab.screenshot(f"phone-{label}.png")
    page.set_viewport_size({"width": 1200, "height": 900})
    return problems


def test_job_pages_filter_by_facet_highlight_and_pass_the_audit(
    live_server: LiveServer, tabs: Callable[[], Tab]
) -> None:
    listings = post_listings(live_server)
    tab = tabs()
    page = tab.goto("/")
    problems = audit(tab, "home")

    page.get_by_label("What").fill("python backend engineer")
    page.get_by_label("What").press("Enter")
    hits = page.locator("li.hit")
    expect(hits.first).to_be_visible()
    expect(hits.first.locator(".snippet mark").first).to_have_text(re.compile("python", re.I))
    expect(hits.first.locator(".why")).to_contain_text("matched")
    expect(hits.first.locator(".salary")).to_have_text("$95K – $125K")
    problems += audit(tab, "results")

    # A facet is a link: following it filters (no JavaScript involved).
    remote = page.locator(".facets a[data-facet='Work mode']", has_text="Remote")
    expect(remote).to_contain_text("(1)")
    remote.click()
    expect(page).to_have_url(re.compile(r"work_mode=remote"))
    expect(hits).to_have_count(1)
    expect(hits.first.locator("h2")).to_have_text("Python Platform Engineer")
    expect(page.get_by_label("Work mode")).to_have_value("remote")
    page.get_by_role("link", name="Clear Work mode filter").click()
    expect(hits).not_to_have_count(1)

    tab.goto(f"/jobs/{listings[0]['detail_page_slug']}")
    problems += audit(tab, "detail")
    tab.goto("/jobs/no-such-job-00000000-0000-0000-0000-000000000000")
    problems += audit(tab, "not-found")
    tab.goto("/status")
    problems += audit(tab, "status")
    assert problems == []


def run_brief(page: Page) -> None:
    page.get_by_label("What are you looking for?").fill(BRIEF["query"])
    page.get_by_label("Role").fill(BRIEF["role"])
    page.get_by_label("Location").fill(BRIEF["location"])
    page.get_by_role("button", name="Search candidates").click()
    expect(page.locator("#search-state")).to_have_text("Complete", timeout=TIMEOUT_MS)


def test_recruiter_marks_a_candidate_sees_it_again_exports_and_passes_the_audit(
    live_server: LiveServer, tabs: Callable[[], Tab]
) -> None:
    server = live_server
    assert server.services is not None
    services = server.services
    server.call(lambda: seed_corpus(services.pool, server.embedder, INTERNAL))
    tab = tabs()
    page = tab.goto(f"/recruit?poll={POLL_MS}&transport=poll")
    problems = audit(tab, "recruit-sign-in")
    sign_in(page, server, "rita@scouts.example")
    run_brief(page)
    rows = page.locator("#results > li")
    first = rows.first
    expect(first.locator(".why")).to_contain_text("location: ")
    person = first.get_attribute("data-candidate-id")
    name = first.locator("h3").inner_text()
    first.get_by_label(f"Mark {name}").select_option("shortlisted")
    first.get_by_label(f"Note on {name}").fill("Strong on-call record")
    first.get_by_role("button", name="Save mark").click()
    expect(first.locator(".mark-state")).to_have_text("Saved: Shortlisted")
    problems += audit(tab, "recruiter-results")

    with page.expect_download() as download_info:
        page.get_by_role("button", name="Download CSV").click()
    download = download_info.value
    assert download.suggested_filename.endswith(".csv")
    with Path(download.path()).open(encoding="utf-8", newline="") as f:
        raw = f.read()
    table = list(csv.reader(io.StringIO(raw)))
    # Every cell quoted (a spreadsheet never reads a formula out of a provider's text).
    assert raw.startswith('"rank","name","role","location"')
    assert len(table) == 1 + rows.count()
    header, first_row = table[0], table[1]
    assert first_row[header.index("mark")] == "shortlisted"
    assert first_row[header.index("note")] == "Strong on-call record"

    # A second search shows the mark on the person's row.
    page.goto(server.url(f"/recruit?poll={POLL_MS}&transport=poll"))
    run_brief(page)
    again = page.locator(f"#results > li[data-candidate-id='{person}']")
    expect(again.get_by_label(f"Mark {name}")).to_have_value("shortlisted")
    expect(again.get_by_label(f"Note on {name}")).to_have_value("Strong on-call record")
    assert problems == []
