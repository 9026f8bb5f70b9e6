"""Single sign-on in a real browser (Debian's Chromium driven by Playwright, as
tests/e2e/test_browser.py): the sign-in page's SSO button → the OpenID Provider (oidc-provider
under Node on another site, ``localhost``) → back at shortlist (``127.0.0.1``) signed in.
Chromium is never downloaded: without /usr/bin/chromium this skips, except in CI."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect, sync_playwright

from tests.e2e.test_browser import Tab, audit
from tests.e2e.test_oidc import welcome
from tests.live_server import LiveServer
from tests.oidc_provider import ALICE, OidcProvider

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
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


def test_sso_sign_in_from_the_sign_in_page(
    chromium: Browser,
    oidc_provider_factory: Callable[..., OidcProvider],
    live_server_factory: Callable[..., LiveServer],
) -> None:
    provider = oidc_provider_factory()
    server = live_server_factory(
        settings_overrides=provider.settings(), use_simulator=False, workers=set()
    )
    provider.start(server.url("/auth/oidc/callback"))
    welcome(server)
    context = chromium.new_context()
    try:
        tab = Tab(context, server)
        page = tab.page
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(server.url("/signin?next=/recruit"))
        # The sign-in page with its SSO button: axe-clean at 1280 and 390 px.
        page.set_viewport_size({"width": 1280, "height": 900})
        assert audit(tab, "signin-sso") == []
        page.get_by_role("link", name="Sign in with SSO").click()
        # At the provider, another site.
        page.wait_for_url(f"{provider.issuer}/interaction/**")
        page.screenshot(path=str(ARTIFACTS / "oidc-provider.png"), full_page=True)
        page.get_by_role("button", name=f"Sign in as {ALICE.email}").click()
        # Back at shortlist, signed in: the session cookie was set on the way back.
        page.wait_for_url(f"{server.base_url}/**")
        assert not page.url.startswith(server.url("/auth/oidc/callback"))
        me = page.request.get(server.url("/api/me"))
        assert me.status == 200, me.text()
        assert me.json()["user"]["email"] == ALICE.email
        # New here: her verified address's domain is the organisation's, which she joined with
        # its default role; she lands on the console she asked for, signed in.
        assert [(o["name"], o["role"]) for o in me.json()["organisations"]] == [
            ("Example", "recruiter")
        ]
        expect(page).to_have_url(server.url("/recruit"))
        expect(page.locator("#signed-in-as")).to_have_text(f"Signed in as {ALICE.email}")
        expect(page.get_by_role("heading", name="New search")).to_be_visible()
        cookies = {c["name"]: c for c in context.cookies(server.base_url)}
        assert cookies["shortlist_session"]["httpOnly"]
        assert "shortlist_oidc" not in cookies
        page.screenshot(path=str(ARTIFACTS / "oidc-signed-in.png"), full_page=True)
        assert [e for e in tab.errors if "Failed to load resource" not in e] == []
    finally:
        context.close()
