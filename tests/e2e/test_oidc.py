"""Sign-in through OpenID Connect against a real OpenID Provider (oidc-provider under Node,
tests/oidc_provider.py), shortlist served on a loopback socket (tests/live_server.py), every
request through real HTTP. Each bad answer is a 4xx with a JSON error, signs nobody in and
leaves the other sign-ins under way alone."""

from __future__ import annotations

import concurrent.futures
import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from shortlist.accounts import store
from shortlist.auth import OrgKind, OrgRole
from tests.helpers import wait_for_sync
from tests.live_server import LiveServer
from tests.oidc_provider import ALICE, MALLORY, OidcProvider

pytestmark = pytest.mark.slow

SSO = tuple[OidcProvider, LiveServer]


@pytest.fixture
def sso(
    oidc_provider_factory: Callable[..., OidcProvider],
    live_server_factory: Callable[..., LiveServer],
) -> Callable[..., SSO]:
    """``start(**provider_options)`` → a running provider and a shortlist server trusting it."""

    def start(**options: Any) -> SSO:
        provider = oidc_provider_factory(**options)
        server = live_server_factory(
            settings_overrides=provider.settings(), use_simulator=False, workers=set()
        )
        provider.start(server.url("/auth/oidc/callback"))
        return provider, server

    return start


class Browser:
    """A user agent driven by hand: cookies kept per site, every redirect looked at."""

    def __init__(self, server: LiveServer) -> None:
        self.server = server
        self.http = httpx.Client(follow_redirects=False, timeout=30)

    def close(self) -> None:
        self.http.close()

    def start(self, next_page: str | None = None) -> str:
        """``GET /auth/oidc/login`` → the authorization request's URL."""
        params = {"next": next_page} if next_page is not None else {}
        answer = self.http.get(self.server.url("/auth/oidc/login"), params=params)
        assert answer.status_code == 302, answer.text
        return answer.headers["location"]

    def authorize(self, url: str, account: str | None = ALICE.sub) -> str:
        """At the provider: sign in as ``account`` (None: Cancel) → the callback URL it sends
        the browser back to (at once, without asking, when it has signed this browser in
        before)."""
        answer = self.http.get(url)
        while answer.status_code in (302, 303):
            url = urllib.parse.urljoin(url, answer.headers["location"])
            if url.startswith(self.server.url("/auth/oidc/callback")):
                return url
            answer = self.http.get(url)
        assert answer.status_code == 200, answer.text
        assert "Test identity provider" in answer.text
        form = {"login": account} if account is not None else {"cancel": "1"}
        answer = self.http.post(url, data=form)
        while answer.status_code in (302, 303):
            url = urllib.parse.urljoin(url, answer.headers["location"])
            if url.startswith(self.server.url("/auth/oidc/callback")):
                return url
            answer = self.http.get(url)
        raise AssertionError(f"the provider did not send the browser back: {answer.text}")

    def callback(self, url: str) -> httpx.Response:
        return self.http.get(url)

    def sign_in(self, account: str = ALICE.sub, next_page: str | None = None) -> httpx.Response:
        return self.callback(self.authorize(self.start(next_page), account))


@pytest.fixture
def browsers() -> Iterator[Callable[[LiveServer], Browser]]:
    made: list[Browser] = []

    def make(server: LiveServer) -> Browser:
        browser = Browser(server)
        made.append(browser)
        return browser

    yield make
    for browser in made:
        browser.close()


def query(url: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))


def with_query(url: str, **changes: str | None) -> str:
    parts = urllib.parse.urlsplit(url)
    params = {**query(url), **changes}
    kept = {k: v for k, v in params.items() if v is not None}
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(kept)))


def welcome(server: LiveServer, domain: str = "example.com") -> None:
    """An organisation whose members are the verified addresses of ``domain`` (SPEC §10), so
    that the provider's people may sign in."""

    async def create() -> None:
        assert server.services is not None
        async with server.services.pool.connection() as conn, conn.transaction():
            org = await store.create_org(conn, "Example", OrgKind.recruiting)
            await store.add_domain(conn, org.id, domain, OrgRole.recruiter)

    server.call(create)


def pending(server: LiveServer) -> int:
    return int(server.sql("SELECT count(*) AS n FROM oidc_logins")[0]["n"])


def assert_refused(answer: httpx.Response, status: int, code: str, *, ended: bool = True) -> None:
    """A JSON error, no session; ``ended``: the sign-in's cookie is removed (it was used up),
    else no cookie is touched at all."""
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("application/json")
    assert answer.json()["error"]["code"] == code, answer.text
    cookies = answer.headers.get_list("set-cookie")
    if not ended:
        assert cookies == []
    for header in cookies:
        assert header.startswith("shortlist_oidc=") and "Max-Age=0" in header, header


# --- signing in ------------------------------------------------------------------------------


def test_sign_in_redirects_to_the_issuer_with_pkce_state_and_nonce(
    sso: Callable[..., SSO], browsers: Callable[[LiveServer], Browser]
) -> None:
    provider, server = sso()
    url = browsers(server).start("/recruit")
    assert url.startswith(f"{provider.issuer}/auth?")
    params = query(url)
    assert params["response_type"] == "code"
    assert params["client_id"] == provider.client_id
    assert params["redirect_uri"] == server.url("/auth/oidc/callback")
    assert params["code_challenge_method"] == "S256"
    assert len(params["code_challenge"]) == 43
    assert set(params["scope"].split()) == {"openid", "email", "profile"}
    assert len(params["state"]) >= 43 and len(params["nonce"]) >= 43
    # Kept server-side by a hash only: the state itself is nowhere in the table.
    rows = server.sql("SELECT state_hash, return_to FROM oidc_logins")
    assert len(rows) == 1 and rows[0]["return_to"] == "/recruit"
    assert params["state"].encode() not in bytes(rows[0]["state_hash"])


def test_return_to_is_a_page_of_this_site_only(
    sso: Callable[..., SSO], browsers: Callable[[LiveServer], Browser]
) -> None:
    _provider, server = sso()
    browser = browsers(server)
    for hostile in ("//evil.example/x", "https://evil.example/", "/\\evil.example", "evil"):
        browser.start(hostile)
    assert {r["return_to"] for r in server.sql("SELECT return_to FROM oidc_logins")} == {"/"}


def test_sign_in_lands_signed_in_at_the_page_asked_for(
    sso: Callable[..., SSO], browsers: Callable[[LiveServer], Browser]
) -> None:
    _provider, server = sso()
    welcome(server)
    browser = browsers(server)
    callback = browser.authorize(browser.start("/account"))
    bound_to = browser.http.cookies["shortlist_oidc"]
    answer = browser.callback(callback)
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == "/account"
    cookies = answer.headers.get_list("set-cookie")
    assert any(c.startswith("shortlist_session=") and "HttpOnly" in c for c in cookies)
    assert any(c.startswith("shortlist_oidc=") and "Max-Age=0" in c for c in cookies)
    me = browser.http.get(server.url("/api/me"))
    assert me.status_code == 200, me.text
    assert me.json()["user"]["email"] == ALICE.email
    assert pending(server) == 0
    # The same answer again, with the cookie it was bound to (a replayed state): used up.
    replay = browsers(server)
    replay.http.cookies.set("shortlist_oidc", bound_to, domain="127.0.0.1")
    assert_refused(replay.callback(callback), 400, "oidc_state_invalid", ended=False)
    assert "shortlist_session" not in replay.http.cookies


# --- bad input ------------------------------------------------------------------------------


def test_forged_state_is_refused_and_leaves_the_real_sign_in_alone(
    sso: Callable[..., SSO], browsers: Callable[[LiveServer], Browser]
) -> None:
    _provider, server = sso()
    browser = browsers(server)
    callback = browser.authorize(browser.start())
    forged = with_query(callback, state="forged-" + "x" * 40)
    assert_refused(browser.callback(forged), 400, "oidc_state_invalid", ended=False)
    assert pending(server) == 1
    welcome(server)
    assert browser.callback(callback).status_code == 303  # the real one still works


def test_state_from_another_browser_is_refused(
    sso: Callable[..., SSO], browsers: Callable[[LiveServer], Browser]
) -> None:
    """Login CSRF: a victim's browser is sent to the attacker's callback URL; the state is bound
    to the browser that started the sign-in."""
    _provider, server = sso()
    attacker, victim = browsers(server), browsers(server)
    callback = attacker.authorize(attacker.start())
    victim.start()  # the victim's browser has a sign-in of its own under way (its cookie)
    assert_refused(victim.callback(callback), 400, "oidc_state_invalid", ended=False)
    assert pending(server) == 2  # neither sign-in is used up


def test_callback_without_state_or_cookie_is_refused(
    sso: Callable[..., SSO], browsers: Callable[[LiveServer], Browser]
) -> None:
    _provider, server = sso()
    browser = browsers(server)
    answer = browser.http.get(server.url("/auth/oidc/callback"), params={"code": "x"})
    assert_refused(answer, 400, "oidc_state_invalid", ended=False)


def test_wrong_nonce_is_refused(
    sso: Callable[..., SSO], browsers: Callable[[LiveServer], Browser]
) -> None:
    """The authorization request is altered on its way (another nonce): the ID token the
    provider signs carries it, not the one this sign-in expects."""
    _provider, server = sso()
    browser = browsers(server)
    url = with_query(browser.start(), nonce="injected-" + "n" * 40)
    answer = browser.callback(browser.authorize(url))
    assert_refused(answer, 400, "oidc_id_token_invalid")
    assert "nonce" in answer.json()["error"]["message"]
    assert pending(server) == 0


def test_answer_from_another_issuer_is_refused(
    sso: Callable[..., SSO], browsers: Callable[[LiveServer], Browser]
) -> None:
    """A provider whose discovery names one issuer (the configured one) and whose answers come
    from another: refused on the response's ``iss`` (RFC 9207) and, without it, on the ID
    token's."""
    provider, server = sso(host="127.0.0.1", discovery_host="localhost")
    assert provider.issuer != provider.advertised_issuer
    browser = browsers(server)
    callback = browser.authorize(browser.start())
    assert query(callback)["iss"] == provider.issuer
    assert_refused(browser.callback(callback), 400, "oidc_provider_error")

    callback = browser.authorize(browser.start())
    answer = browser.callback(with_query(callback, iss=None))
    assert_refused(answer, 400, "oidc_id_token_invalid")
    assert "iss" in answer.json()["error"]["message"]


def test_id_token_signed_by_another_key_is_refused(
    sso: Callable[..., SSO], browsers: Callable[[LiveServer], Browser]
) -> None:
    _provider, server = sso(publish_other_key=True)
    browser = browsers(server)
    answer = browser.sign_in()
    assert_refused(answer, 400, "oidc_id_token_invalid")
    assert "signature" in answer.json()["error"]["message"]


def test_expired_code_is_refused(
    sso: Callable[..., SSO], browsers: Callable[[LiveServer], Browser]
) -> None:
    _provider, server = sso(code_ttl=1)
    browser = browsers(server)
    callback = browser.authorize(browser.start())
    issued = time.monotonic()
    # The code lives one second at the provider (whole seconds: wait for two to pass).
    while time.monotonic() - issued < 2.1:
        time.sleep(0.1)
    answer = browser.callback(callback)
    assert_refused(answer, 400, "oidc_code_refused")
    assert "invalid_grant" in answer.json()["error"]["message"]


def test_code_used_before_is_refused(
    sso: Callable[..., SSO], browsers: Callable[[LiveServer], Browser]
) -> None:
    """Someone redeemed the code first (it leaked from the browser's history): the provider
    refuses it the second time (RFC 6749 §4.1.2), and so does the callback."""
    provider, server = sso()
    browser = browsers(server)
    callback = browser.authorize(browser.start())
    (row,) = server.sql("SELECT code_verifier, redirect_uri FROM oidc_logins")
    first = httpx.post(
        f"{provider.issuer}/token",
        data={
            "grant_type": "authorization_code",
            "code": query(callback)["code"],
            "redirect_uri": row["redirect_uri"],
            "code_verifier": row["code_verifier"],
        },
        auth=(provider.client_id, provider.client_secret),
    )
    assert first.status_code == 200, first.text
    answer = browser.callback(callback)
    assert_refused(answer, 400, "oidc_code_refused")
    assert "invalid_grant" in answer.json()["error"]["message"]


def test_access_denied_at_the_provider_is_refused(
    sso: Callable[..., SSO], browsers: Callable[[LiveServer], Browser]
) -> None:
    _provider, server = sso()
    browser = browsers(server)
    callback = browser.authorize(browser.start(), account=None)
    assert query(callback)["error"] == "access_denied"
    answer = browser.callback(callback)
    assert_refused(answer, 400, "oidc_provider_error")
    assert "access_denied" in answer.json()["error"]["message"]
    assert pending(server) == 0


def test_unverified_email_is_refused(
    sso: Callable[..., SSO], browsers: Callable[[LiveServer], Browser]
) -> None:
    _provider, server = sso()
    answer = browsers(server).sign_in(MALLORY.sub)
    assert answer.status_code == 401, answer.text
    assert "not verified" in answer.json()["error"]["message"]
    assert not [h for h in answer.headers.get_list("set-cookie") if "session" in h]


# --- configuration ---------------------------------------------------------------------------


def test_sso_not_configured_is_a_clear_404(
    live_server_factory: Callable[..., LiveServer],
) -> None:
    server = live_server_factory(use_simulator=False, workers=set())
    answer = httpx.get(server.url("/auth/oidc/login"), follow_redirects=False)
    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "sso_not_configured"


def test_unreachable_issuer_pauses_sso_without_stopping_the_server(
    oidc_provider_factory: Callable[..., OidcProvider],
    live_server_factory: Callable[..., LiveServer],
    caplog: pytest.LogCaptureFixture,
) -> None:
    provider = oidc_provider_factory()
    provider.close()  # nothing listens at the issuer's address any more
    server = live_server_factory(
        settings_overrides=provider.settings(), use_simulator=False, workers=set()
    )
    answer = httpx.get(server.url("/auth/oidc/login"), follow_redirects=False)
    assert answer.status_code == 503, answer.text
    body = answer.json()["error"]
    assert body["code"] == "sso_unavailable"
    assert provider.issuer in body["message"]
    assert httpx.get(server.url("/healthz")).status_code == 200
    # Said once, in one line, by the discovery started with the server (no traceback).
    paused = wait_for_sync(
        lambda: [r for r in caplog.records if "sign-on paused" in r.getMessage()],
        message="a line about the unreachable issuer",
    )
    assert len(paused) == 1 and paused[0].exc_info is None
    assert provider.issuer in paused[0].getMessage()


def test_waiting_on_the_issuer_holds_no_database_connection(
    oidc_provider_factory: Callable[..., OidcProvider],
    live_server_factory: Callable[..., LiveServer],
) -> None:
    """A server with one pooled connection: while a sign-in waits on an issuer that accepted
    the connection and does not answer, the database is still there for everyone else."""
    provider = oidc_provider_factory()  # its socket listens; nothing answers on it: the test
    provider.sock.settimeout(30)  # accepts the server's connections to the issuer itself
    server = live_server_factory(
        settings_overrides=provider.settings(), use_simulator=False, workers=set(), pool_max=1
    )
    warm_up, _ = provider.sock.accept()  # the discovery started with the server
    warm_up.close()  # fails at once: the next sign-in asks the issuer again
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        login = pool.submit(httpx.get, server.url("/auth/oidc/login"), timeout=60)
        waiting, _ = provider.sock.accept()  # the sign-in is waiting on the issuer now
        try:
            ready = httpx.get(server.url("/readyz"), timeout=30)
            assert ready.status_code == 200, ready.text
            assert not login.done()
        finally:
            waiting.close()
        answer = login.result(60)
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "sso_unavailable"
