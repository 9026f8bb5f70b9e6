"""People in a real browser (Debian's Chromium driven by Playwright, as tests/e2e/test_browser.py)
against a live server: password sign-in with a TOTP second factor, sign out everywhere, an
invitation accepted, a password reset by a real e-mail delivered to an aiosmtpd sink, a team of
two recruiters sharing searches and marks (who did what shown) while a third organisation gets
404 on all of them; every account page axe-clean at 1280 and 390 px.

Single sign-on through the real OpenID Provider is tests/e2e/test_oidc_browser.py."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import pyotp
import pytest
from aiosmtpd.smtp import SMTP
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.backfill_support import seed_corpus
from tests.e2e.test_browser import (  # noqa: F401 (the browser fixture)
    BRIEF,
    INTERNAL,
    POLL_MS,
    Tab,
    audit,
    browser,
    sign_in,
)
from tests.helpers import wait_for_sync
from tests.integration.test_mail_intake import Relay
from tests.live_server import PASSWORD, LiveServer

pytestmark = pytest.mark.browser


class SmtpSink:
    """A loopback aiosmtpd server on a thread of its own: the relay the server sends through
    (``SHORTLIST_SMTP_RELAY_URL``), keeping every message it is given."""

    def __init__(self) -> None:
        self.relay = Relay()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

        async def serve() -> asyncio.Server:
            return await asyncio.get_running_loop().create_server(
                lambda: SMTP(self.relay), host="127.0.0.1", port=0
            )

        self.server = asyncio.run_coroutine_threadsafe(serve(), self.loop).result(10)
        self.port = int(self.server.sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        return f"smtp://127.0.0.1:{self.port}"

    def wait_for_mail(self, to: str, timeout: float = 30.0) -> str:
        """The text (subject and plain body) of the first message to ``to``."""

        def mail() -> str | None:
            for (rcpt, _raw), text in zip(
                list(self.relay.received), self.relay.bodies(), strict=False
            ):
                if to in rcpt:
                    return text
            return None

        return wait_for_sync(mail, timeout=timeout, message=f"a mail to {to}")

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def smtp_sink() -> Iterator[SmtpSink]:
    sink = SmtpSink()
    try:
        yield sink
    finally:
        sink.close()


@pytest.fixture
def contexts(browser: Browser) -> Iterator[Callable[[LiveServer], Tab]]:  # noqa: F811
    """``tab(server)`` → a page in a fresh browser context (its own cookies); at the end, no
    page logged an error (a failed load, such as a 401 from /api/me, is not one)."""
    opened: list[tuple[BrowserContext, Tab]] = []

    def tab(server: LiveServer) -> Tab:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        made = Tab(context, server)
        opened.append((context, made))
        return made

    yield tab
    for context, _ in opened:
        context.close()
    problems = [e for _, t in opened for e in t.errors if "Failed to load resource" not in e]
    assert problems == [], problems


def password_sign_in(page: Page, email: str, otp: str | None = None) -> None:
    """On the sign-in page: address and password (then the code, when asked for one)."""
    page.get_by_label("E-mail address", exact=True).fill(email)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    if otp is not None:
        code = page.get_by_label("Code from your authenticator app")
        expect(code).to_be_visible()
        expect(page.locator("#signin-error")).to_contain_text("second-factor")
        code.fill(otp)
        page.get_by_role("button", name="Sign in", exact=True).click()


SEARCH_DONE_MS = 120_000
"""A whole search with its backfill, on a machine other tests load too: waited for, not timed."""


def run_brief(page: Page) -> None:
    page.get_by_label("What are you looking for?").fill(BRIEF["query"])
    page.get_by_label("Role").fill(BRIEF["role"])
    page.get_by_label("Location").fill(BRIEF["location"])
    page.get_by_role("button", name="Search candidates").click()
    expect(page.locator("#search-state")).to_have_text("Complete", timeout=SEARCH_DONE_MS)


def csrf_of(page: Page, server: LiveServer) -> str:
    me = page.request.get(server.url("/api/me"))
    assert me.status == 200, me.text()
    token: str = me.json()["csrfToken"]
    return token


def quiet_server(live_server_factory: Callable[..., LiveServer], **settings: Any) -> LiveServer:
    """A live server without workers or the talent simulator (the account pages need none)."""
    return live_server_factory(settings_overrides=settings, use_simulator=False, workers=set())


def test_password_and_second_factor_then_sign_out_everywhere(
    live_server_factory: Callable[..., LiveServer], contexts: Callable[[LiveServer], Tab]
) -> None:
    server = quiet_server(live_server_factory)
    secret = pyotp.random_base32()
    server.person("ada@scouts.example", "Scouts", "owner", totp_secret=secret)
    totp = pyotp.TOTP(secret)

    laptop = contexts(server)
    page = laptop.goto("/signin?next=/account")
    expect(page).to_have_title("Sign in | shortlist")
    problems = audit(laptop, "signin")
    # A wrong password: one answer, no hint whether the address exists.
    page.get_by_label("E-mail address", exact=True).fill("ada@scouts.example")
    page.get_by_label("Password", exact=True).fill("not her password at all")
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.locator("#signin-error")).to_have_text("wrong e-mail address or password")
    # The right one asks for the code; a code signs in, once.
    password_sign_in(page, "ada@scouts.example", otp=totp.now())
    expect(page).to_have_url(server.url("/account"))
    expect(page.locator("#who")).to_contain_text("ada@scouts.example")
    expect(page.locator("#totp-state")).to_contain_text("authenticator app is required")
    expect(page.locator("#sessions tr")).to_have_count(1)
    expect(page.locator("#sessions")).to_contain_text("password+totp")
    problems += audit(laptop, "account")
    laptop.screenshot("account.png")

    # The same person on a phone (the next time step's code: each code works once).
    phone = contexts(server)
    other = phone.goto("/signin?next=/account")
    password_sign_in(other, "ada@scouts.example", otp=totp.at(time.time() + 30))
    expect(other).to_have_url(server.url("/account"))
    page.reload()
    expect(page.locator("#sessions tr")).to_have_count(2)

    # Sign out everywhere from the laptop: the phone's session ends too.
    page.get_by_role("button", name="Sign out everywhere").click()
    expect(page).to_have_title("Sign in | shortlist")
    assert page.request.get(server.url("/api/me")).status == 401
    assert other.request.get(server.url("/api/me")).status == 401
    other.goto(server.url("/account"))
    expect(other).to_have_title("Sign in | shortlist")
    assert problems == []


def test_an_invitation_is_accepted_in_the_browser(
    live_server_factory: Callable[..., LiveServer], contexts: Callable[[LiveServer], Tab]
) -> None:
    server = quiet_server(live_server_factory)
    server.person("bo@scouts.example", "Scouts", "owner")

    owner = contexts(server)
    page = owner.goto("/signin?next=/org")
    password_sign_in(page, "bo@scouts.example")
    expect(page).to_have_url(server.url("/org"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Scouts")
    invite = page.locator("#invite-form")
    invite.get_by_label("E-mail address").fill("cy@scouts.example")
    invite.get_by_label("Role").select_option("recruiter")
    page.get_by_role("button", name="Invite").click()
    # No relay set: the link is shown to pass on.
    link = page.get_by_label("Invitation link")
    expect(link).to_have_value(re.compile(r"/invitation\?token="))
    expect(page.locator("#invitations")).to_contain_text("cy@scouts.example")
    problems = audit(owner, "org")
    owner.screenshot("org.png")
    url = link.input_value()

    invitee = contexts(server)
    accept = invitee.goto(urlsplit(url).path + "?" + urlsplit(url).query)
    expect(accept).to_have_title("Accept your invitation | shortlist")
    expect(accept.get_by_label("E-mail address")).to_have_value("cy@scouts.example")
    problems += audit(invitee, "invitation")
    accept.get_by_label("Your name").fill("Cy Recruiter")
    accept.get_by_label(re.compile("^Password")).fill("a long enough passphrase")
    accept.get_by_role("button", name="Accept and sign in").click()
    expect(accept).to_have_url(server.url("/account"))
    expect(accept.locator("#who")).to_contain_text("cy@scouts.example")
    expect(accept.get_by_label("Act for")).to_contain_text("Scouts (recruiter)")

    # Used once: the same link again changes nothing and says why.
    again = contexts(server).goto(urlsplit(url).path + "?" + urlsplit(url).query)
    again.get_by_label(re.compile("^Password")).fill("a long enough passphrase")
    again.get_by_role("button", name="Accept and sign in").click()
    expect(again.locator("#form-error")).not_to_be_empty()
    page.reload()
    expect(page.locator("#members")).to_contain_text("cy@scouts.example")
    assert problems == []


def test_password_reset_by_a_real_email(
    live_server_factory: Callable[..., LiveServer],
    contexts: Callable[[LiveServer], Tab],
    smtp_sink: SmtpSink,
) -> None:
    server = quiet_server(live_server_factory, smtp_relay_url=smtp_sink.url)
    server.person("dee@scouts.example", "Scouts", "recruiter")

    tab = contexts(server)
    page = tab.goto("/signin")
    page.get_by_text("Forgot your password?").click()
    page.get_by_label("Your account's e-mail address").fill("dee@scouts.example")
    page.get_by_role("button", name="Send a reset link").click()
    expect(page.locator("#page-message")).to_contain_text("a link to reset its password")
    mail = smtp_sink.wait_for_mail("dee@scouts.example")
    [link] = re.findall(r"https?://\S+/signin/reset\?token=\S+", mail)
    parts = urlsplit(link)

    page.goto(server.url(f"{parts.path}?{parts.query}"))
    expect(page).to_have_title("Choose a new password | shortlist")
    problems = audit(tab, "reset")
    page.get_by_role("textbox", name="New password").fill(
        "password"
    )  # among the most common: refused
    page.get_by_role("button", name="Set password").click()
    expect(page.locator("#form-error")).to_contain_text("common")
    page.get_by_role("textbox", name="New password").fill("a new and longer passphrase")
    page.get_by_role("button", name="Set password").click()
    expect(page).to_have_title("Sign in | shortlist")

    # The new password signs in; the old one no longer does; the link is used up.
    page.get_by_label("E-mail address", exact=True).fill("dee@scouts.example")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.locator("#signin-error")).to_have_text("wrong e-mail address or password")
    page.get_by_label("Password", exact=True).fill("a new and longer passphrase")
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page).to_have_url(server.url("/account"))
    used = page.request.post(
        server.url("/api/password/reset"),
        data={"token": parts.query.partition("token=")[2], "password": "yet another passphrase"},
        headers={"X-CSRF-Token": csrf_of(page, server)},
    )
    assert used.status == 404, used.text()
    assert problems == []


def test_a_team_shares_searches_and_marks_and_another_organisation_gets_404(
    live_server_factory: Callable[..., LiveServer], contexts: Callable[[LiveServer], Tab]
) -> None:
    server = live_server_factory()
    assert server.services is not None
    services = server.services
    server.call(lambda: seed_corpus(services.pool, server.embedder, INTERNAL))
    console = f"/recruit?poll={POLL_MS}&transport=poll"

    # Rita searches and shortlists the first person, with a note.
    rita = contexts(server)
    page = rita.goto(console)
    sign_in(page, server, "rita@scouts.example")
    run_brief(page)
    search_id = page.locator("#recruit").get_attribute("data-search-id")
    assert search_id
    first = page.locator("#results > li").first
    first_id = first.get_attribute("data-candidate-id")
    first_name = first.locator("h3").inner_text()
    first.get_by_label(f"Mark {first_name}").select_option("shortlisted")
    first.get_by_label(f"Note on {first_name}").fill("Strong on-call record")
    first.get_by_role("button", name="Save mark").click()
    expect(first.locator(".mark-state")).to_have_text("Saved: Shortlisted")

    # Bo, of the same team, sees her search (started by her) and her mark (made by her).
    bo = contexts(server)
    mine = bo.goto(console)
    sign_in(mine, server, "bo@scouts.example")
    shared = mine.locator(f"#team-searches li[data-search-id='{search_id}']")
    expect(shared).to_contain_text("started by rita@scouts.example")
    problems = audit(bo, "recruit-team")
    bo.screenshot("recruit-team.png")
    shared.get_by_role("link").click()
    expect(mine.locator("#search-state")).to_have_text("Complete", timeout=SEARCH_DONE_MS)
    row = mine.locator(f"#results > li[data-candidate-id='{first_id}']")
    expect(row.locator(".mark-state")).to_have_text("Shortlisted by rita@scouts.example")
    expect(row.get_by_label(f"Note on {first_name}")).to_have_value("Strong on-call record")
    # Bo marks the second person; Rita sees it, with his name.
    second = mine.locator("#results > li").nth(1)
    second_id = second.get_attribute("data-candidate-id")
    second_name = second.locator("h3").inner_text()
    second.get_by_label(f"Mark {second_name}").select_option("contacted")
    second.get_by_role("button", name="Save mark").click()
    expect(second.locator(".mark-state")).to_have_text("Saved: Contacted")
    problems += audit(bo, "recruit-team-results")
    page.reload()
    expect(page.locator("#search-state")).to_have_text("Complete", timeout=SEARCH_DONE_MS)
    expect(
        page.locator(f"#results > li[data-candidate-id='{second_id}'] .mark-state")
    ).to_have_text("Contacted by bo@scouts.example")
    marks = mine.request.get(server.url("/api/shortlist")).json()
    by = {m["candidateId"]: m["recruiter"] for m in marks["marks"]}
    assert by == {first_id: "rita@scouts.example", second_id: "bo@scouts.example"}

    # Cy, of another organisation: the link says not found, the list does not show it, and
    # every read and change of the search, its results and marks is a 404.
    cy = contexts(server)
    theirs = cy.goto(f"/recruit?search={search_id}")
    sign_in(theirs, server, "cy@rivals.example", org="Rivals")
    expect(theirs.locator("[data-notice=search-not-found]")).to_contain_text("Search not found")
    expect(theirs.locator("#team-empty")).to_be_visible()
    expect(theirs.locator(f"#team-searches li[data-search-id='{search_id}']")).to_have_count(0)
    csrf = csrf_of(theirs, server)
    for path in (
        f"/api/searches/{search_id}",
        f"/api/results?searchId={search_id}",
        f"/api/searches/{search_id}/results.csv",
        f"/api/searches/{search_id}/hidden",
    ):
        answer = theirs.request.get(server.url(path))
        assert answer.status == 404, (path, answer.status)
    for path in (f"/api/searches/{search_id}/retry",):
        answer = theirs.request.post(server.url(path), headers={"X-CSRF-Token": csrf})
        assert answer.status == 404, (path, answer.status)
    for candidate in (first_id, second_id):
        answer = theirs.request.put(
            server.url(f"/api/candidates/{candidate}/mark"),
            data={"status": "rejected"},
            headers={"X-CSRF-Token": csrf},
        )
        assert answer.status == 404, answer.text()
    assert theirs.request.get(server.url("/api/shortlist")).json()["marks"] == []
    listed = theirs.request.get(server.url("/api/searches")).json()["searches"]
    assert search_id not in {s["searchId"] for s in listed}
    assert problems == []


def test_an_employer_posts_edits_and_closes_jobs_and_sees_the_intake_address(
    live_server_factory: Callable[..., LiveServer], contexts: Callable[[LiveServer], Tab]
) -> None:
    server = live_server_factory(use_simulator=False, workers={"indexer"})
    server.person("erin@acme.example", "Acme Robotics", "employer", kind="employer")
    server.person("finn@acme.example", "Acme Robotics", "employer", kind="employer")
    server.person("gus@globex.example", "Globex", "employer", kind="employer")

    tab = contexts(server)
    page = tab.goto("/employer")
    expect(page).to_have_title("Sign in | shortlist")
    password_sign_in(page, "erin@acme.example")
    expect(page).to_have_url(server.url("/employer"))
    expect(page.locator("#listings-empty")).to_be_visible()
    expect(page.get_by_label("Company")).to_have_value("Acme Robotics")
    intake = page.get_by_label("Your intake address")
    expect(intake).to_have_value(re.compile(r"^post-[0-9a-f]{32}@"))
    problems = audit(tab, "employer-empty")

    page.get_by_label("Job title").fill("Robotics Engineer")
    page.get_by_label("City").fill("Berlin")
    page.get_by_label("Salary from").fill("80")
    page.get_by_label("Salary to").fill("100")
    page.get_by_label("Description").fill("Write ROS 2 software for our warehouse robots.")
    page.get_by_role("button", name="Post the job").click()
    expect(page.locator("#page-message")).to_contain_text("Posted: Robotics Engineer")
    row = page.locator("#listings tr").first
    expect(row).to_contain_text("Robotics Engineer · Berlin")
    expect(row).to_contain_text("by erin@acme.example")
    expect(row.locator("td").nth(1)).to_have_text("Open")
    # Indexed by the indexer: job search finds it.
    expect(row.locator("td").nth(2)).to_have_text(re.compile("Being indexed|Yes"))
    page.reload()
    expect(page.locator("#listings tr").first.locator("td").nth(2)).to_have_text("Yes")

    # Edit: the title changes, the listing stays the organisation's.
    page.get_by_role("button", name="Edit Robotics Engineer").click()
    expect(page.get_by_label("Job title")).to_have_value("Robotics Engineer")
    page.get_by_label("Job title").fill("Senior Robotics Engineer")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator("#page-message")).to_contain_text("Saved: Senior Robotics Engineer")
    expect(page.locator("#listings tr").first).to_contain_text("Senior Robotics Engineer")
    listing_id = page.locator("#listings tr").first.get_attribute("data-listing-id")
    problems += audit(tab, "employer")
    tab.screenshot("employer.png")

    # A colleague of the same organisation sees and may change it; another employer may not.
    colleague = contexts(server)
    theirs = colleague.goto("/signin?next=/employer")
    password_sign_in(theirs, "finn@acme.example")
    expect(theirs.locator(f"#listings tr[data-listing-id='{listing_id}']")).to_be_visible()
    expect(theirs.get_by_label("Your intake address")).to_have_value(intake.input_value())
    rival = contexts(server)
    other = rival.goto("/signin?next=/employer")
    password_sign_in(other, "gus@globex.example")
    expect(other.locator("#listings-empty")).to_be_visible()
    patched = other.request.patch(
        server.url(f"/api/jobs/{listing_id}"),
        data={"job_title": "Hijacked"},
        headers={"X-CSRF-Token": csrf_of(other, server)},
    )
    assert patched.status == 403, patched.text()

    # Close it: it leaves search, its row says so.
    page.get_by_role("button", name="Close Senior Robotics Engineer").click()
    expect(page.locator("#page-message")).to_contain_text("is closed")
    expect(page.locator("#listings tr").first.locator("td").nth(1)).to_have_text("Closed")

    # A new intake address: the old one is replaced.
    old = intake.input_value()
    page.get_by_role("button", name="Make a new address").click()
    expect(intake).not_to_have_value(old)
    assert problems == []


def test_the_job_search_alert_form_saves_signed_out_and_signed_in(
    live_server_factory: Callable[..., LiveServer], contexts: Callable[[LiveServer], Tab]
) -> None:
    """ "Alert me" on the job search page (alerts.js on the shared api.js): signed out it needs
    the e-mailed confirmation (which a server without a relay cannot send: it says so); signed
    in, to one's own address, the save carries the session's CSRF token and the alert is on at
    once; the account page lists it and stops it."""
    server = quiet_server(live_server_factory)
    server.person("ada@scouts.example", "Scouts", "owner")
    tab = contexts(server)
    page = tab.goto("/?q=fpga+verification+engineer")
    form = page.locator("[data-alert-form]")
    form.get_by_label("E-mail").fill("someone@example.com")
    form.get_by_role("button", name="Alert me").click()
    # This server has no mail relay: the page says the link could not be sent (and not that
    # it was).
    expect(form.locator("[data-alert-status]")).to_contain_text(
        "no confirmation e-mail could be sent"
    )

    page = tab.goto("/signin?next=/account")
    password_sign_in(page, "ada@scouts.example")
    expect(page).to_have_url(server.url("/account"))
    page = tab.goto("/?q=fpga+verification+engineer")
    form = page.locator("[data-alert-form]")
    form.get_by_label("E-mail").fill("ada@scouts.example")
    form.get_by_role("button", name="Alert me").click()
    expect(form.locator("[data-alert-status]")).to_contain_text("Your alert is on")
    saved = page.request.get(server.url("/api/alerts"))
    assert saved.status == 200, saved.text()
    assert [a["status"] for a in saved.json()["alerts"]] == ["active"]
    # Listed on the account page, where it can be stopped.
    page = tab.goto("/account")
    rows = page.locator("#alerts tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("fpga verification engineer")
    expect(rows.first).to_contain_text("ada@scouts.example")
    expect(rows.first).to_contain_text("active")
    assert audit(tab, "account-alerts") == []
    rows.first.get_by_role("button", name="Stop").click()
    expect(page.locator("#page-message")).to_contain_text("Stopped")
    expect(rows).to_have_count(0)
    expect(page.locator("#alerts-empty")).to_be_visible()
    assert page.request.get(server.url("/api/alerts")).json()["alerts"] == []
