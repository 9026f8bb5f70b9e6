"""Access control, table-driven: every endpoint × {no token, company, other company, recruiter,
other recruiter, admin} gets exactly the documented status (README, "HTTP API"); plus the
other security properties of SPEC §7: unguessable search ids, hashed tokens, forwarded-for
headers believed only from trusted proxies, and no e-mail address or token in the logs."""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from fastapi import FastAPI

from shortlist.api.app import create_app
from shortlist.auth import Role
from shortlist.bootstrap import Services
from shortlist.config import Settings
from shortlist.db.types import AsyncPool
from shortlist.embedding.spaces import Spaces
from shortlist.queue.notify import Notifier
from tests.chaos.checks import assert_no_leaks, scan_logs
from tests.fakes import FakeEmbedder
from tests.helpers import wait_for_sync

if TYPE_CHECKING:
    from tests.live_server import LiveServer


CLIENT_PEER = ("127.0.0.1", 50000)  # the socket peer of tests.api_fixtures' client
MakeToken = Callable[[str, Role], Awaitable[str]]

WHO = ("none", "company", "other_company", "recruiter", "other_recruiter", "admin")

EMAIL = (
    b"From: Acme Careers <careers@acme.test>\r\n"
    b"Subject: Robotics Engineer at Acme Robotics (Berlin)\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n\r\n"
    b"Write ROS 2 software for our warehouse robots.\r\n"
)
LISTING = {
    "company_name": "Acme",
    "job_title": "Backend Engineer",
    "city_location": "Porto",
    "description": "Python services on PostgreSQL.",
}


@dataclass
class World:
    """Fresh objects for one cell: a listing of ``company``, a stale search of ``recruiter``
    with one failed candidate."""

    listing: str
    slug: str
    search: str
    stub: int
    candidate: str
    source: int
    webhook: int


@dataclass(frozen=True)
class Row:
    method: str
    path: str
    expected: dict[str, int]
    json: Any = None
    content: bytes | None = None
    content_type: str | None = None


def public(status: int = 200) -> dict[str, int]:
    return dict.fromkeys(WHO, status)


def company_writes(owner: int, other: int) -> dict[str, int]:
    return {
        "none": 401,
        "company": owner,
        "other_company": other,
        "recruiter": 403,
        "other_recruiter": 403,
        "admin": owner,
    }


def admin_only(status: int) -> dict[str, int]:
    return {**dict.fromkeys(WHO, 403), "none": 401, "admin": status}


def recruiter_owned(owner: int) -> dict[str, int]:
    return {
        "none": 401,
        "company": 403,
        "other_company": 403,
        "recruiter": owner,
        "other_recruiter": 404,  # someone else's search is indistinguishable from none
        "admin": owner,
    }


def own(status: int) -> dict[str, int]:
    """Anyone with a key answers for their own account; nobody gets 401."""
    return {**public(status), "none": 401}


def managers(status: int) -> dict[str, int]:
    """An organisation's owners and admins (an admin token's service account is one)."""
    return {**dict.fromkeys(WHO, 403), "none": 401, "admin": status}


def recruiter_any(status: int) -> dict[str, int]:
    return {
        "none": 401,
        "company": 403,
        "other_company": 403,
        "recruiter": status,
        "other_recruiter": status,
        "admin": status,
    }


def member_of_org(owner: int, other: int) -> dict[str, int]:
    """Any member who posts jobs or searches people, for the company's organisation."""
    return {**dict.fromkeys(WHO, other), "none": 401, "company": owner, "admin": owner}


TABLE = [
    Row("GET", "/healthz", public()),
    Row("GET", "/readyz", public()),
    Row("GET", "/metrics", public()),
    Row("GET", "/api/jobs/search?q=python", public()),
    Row("GET", "/api/jobs/{listing}", public()),
    Row("GET", "/api/jobs/{slug}", public()),
    Row("GET", "/api/jobs/{listing}/similar", public()),
    # A company token posts as its own company only (LISTING is the first company's).
    Row("POST", "/api/jobs", company_writes(201, 403), json=LISTING),
    Row(
        "POST",
        "/api/jobs/email",
        company_writes(201, 201),
        content=EMAIL,
        content_type="message/rfc822",
    ),
    # A company's secret intake address; an admin token is no company's.
    Row("GET", "/api/intake", {**company_writes(200, 200), "admin": 403}),
    Row("POST", "/api/intake/rotate", {**company_writes(200, 200), "admin": 403}),
    # An employer's listings: those of the organisation the caller acts for (each company's
    # own; an admin's organisation has none, and answers an empty list).
    Row("GET", "/api/org/listings", company_writes(200, 200)),
    Row("PATCH", "/api/jobs/{listing}", company_writes(200, 403), json={"salary_max_ks": 150}),
    Row("DELETE", "/api/jobs/{listing}", company_writes(204, 403)),
    Row("POST", "/api/searches", recruiter_any(202), json={"query": "rust firmware engineer"}),
    Row("GET", "/api/searches", recruiter_any(200)),
    Row("GET", "/api/results?searchId={search}", recruiter_owned(200)),
    Row("GET", "/api/searches/{search}", recruiter_owned(200)),
    Row("GET", "/api/searches/{search}/events", recruiter_owned(200)),
    Row("POST", "/api/searches/{search}/retry", recruiter_owned(200)),
    Row("POST", "/api/searches/{search}/candidates/{stub}/retry", recruiter_owned(200)),
    # A recruiter marks people their own searches found; anyone else's is a 404.
    Row(
        "PUT",
        "/api/candidates/{candidate}/mark",
        recruiter_owned(200),
        json={"status": "shortlisted", "note": "strong"},
    ),
    Row("GET", "/api/shortlist", recruiter_any(200)),
    Row("GET", "/api/searches/{search}/hidden", recruiter_owned(200)),
    Row("GET", "/api/searches/{search}/results.csv", recruiter_owned(200)),
    Row("GET", "/api/candidates/{candidate}", recruiter_owned(200)),
    # A person's erasure and the audit of who saw contact details: admins only.
    Row("DELETE", "/api/candidates/{candidate}", admin_only(200)),
    Row("GET", "/api/audit", admin_only(200)),
    # Job sources to crawl: the operator's.
    Row("GET", "/api/sources", admin_only(200)),
    Row("POST", "/api/sources", admin_only(201), json={"spec": "greenhouse:acme-access"}),
    Row("DELETE", "/api/sources/{source}", admin_only(204)),
    # Webhook endpoints: each organisation's own (the world's is the company's); an admin acts
    # for every organisation. An address literal: no name to resolve.
    Row(
        "POST",
        "/api/webhooks",
        member_of_org(201, 201),
        json={"url": "https://93.184.215.14/hooks", "events": ["job.published"]},
    ),
    Row("GET", "/api/webhooks", member_of_org(200, 200)),
    Row("DELETE", "/api/webhooks/{webhook}", member_of_org(204, 404)),
    Row("POST", "/api/webhooks/{webhook}/rotate", member_of_org(200, 404)),
    Row("POST", "/api/webhooks/{webhook}/enable", member_of_org(200, 404)),
    # Saved searches that alert: anyone may save one (confirmed by e-mail); links carry
    # their own token; listing and ending them is a signed-in person's (an API key's user).
    Row(
        "POST",
        "/api/alerts",
        public(202),
        json={"query": "python developer", "email": "ada@example.com", "frequency": "daily"},
    ),
    Row("GET", "/api/alerts/confirm?token=c.nope", public(404)),
    Row("GET", "/api/alerts/unsubscribe?token=u.nope", public(404)),
    Row("POST", "/api/alerts/unsubscribe?token=u.nope", public(404)),
    Row("GET", "/api/alerts", {**public(200), "none": 401}),
    Row("DELETE", "/api/alerts/{alert}", {**public(404), "none": 401}),
    # A recruiter's saved people search: their team's search only.
    Row("POST", "/api/searches/{search}/alert", recruiter_owned(201)),
    Row("GET", "/api/searches/{search}/alert", recruiter_owned(200)),
    # The web UI: pages are public; what /status withholds without an admin token is its
    # business (tests/integration/test_web_pages.py), not an error.
    Row("GET", "/", public()),
    Row("GET", "/?q=python", public()),
    Row("GET", "/jobs/{slug}", public()),
    Row("GET", "/recruit", public()),
    Row("GET", "/status", public()),
    Row("GET", "/static/app.css", public()),
    # Accounts (SPEC §10). A token is a service account's key (SPEC §10, issue 37 point 4): it
    # has a user, so what is a person's own (/api/me, keys, sessions) answers it as its own;
    # managing the organisation is its managers' (an admin token's service account is one).
    # People signed in by cookie are tests/integration/test_accounts*.py's.
    Row(
        "POST",
        "/api/session",
        # The same address failing a sixth time in a row is throttled (per account).
        {**public(401), "admin": 429},
        json={"email": "x@example.org", "password": "p"},
    ),
    Row("DELETE", "/api/session", {**public(204), "none": 401}),
    # Not a member of organisation 1 (each token's service account has its own).
    Row("POST", "/api/session/organisation", own(400), json={"organisation": 1}),
    Row("GET", "/api/me", own(200)),
    Row("GET", "/api/me/sessions", own(200)),
    Row("DELETE", "/api/me/sessions/{session_id}", own(404)),
    Row("GET", "/api/keys", own(200)),
    Row("POST", "/api/keys", own(201), json={"name": "ci"}),
    Row("DELETE", "/api/keys/{key_id}", own(404)),
    # A service account has no password to change.
    Row("POST", "/api/me/password", public(401), json={"current": "a", "new": "b"}),
    Row("POST", "/api/me/verify", own(202)),
    Row("POST", "/api/me/totp", own(200)),
    Row("POST", "/api/me/totp/confirm", own(400), json={"otp": "123456"}),
    Row("DELETE", "/api/me/totp", own(400), json={"otp": "123456"}),
    Row("GET", "/api/org", own(200)),
    Row("PATCH", "/api/org", managers(200), json={"requireSecondFactor": True}),
    Row(
        "POST",
        "/api/org/invitations",
        managers(201),
        json={"email": "a@b.org", "role": "recruiter"},
    ),
    Row("DELETE", "/api/org/invitations/{invitation_id}", managers(404)),
    Row("PUT", "/api/org/members/{user_id}", managers(404), json={"role": "recruiter"}),
    Row("DELETE", "/api/org/members/{user_id}", managers(204)),
    Row("POST", "/api/org/domains", managers(201), json={"domain": "example.org"}),
    Row("DELETE", "/api/org/domains/{domain}", managers(204)),
    # Single-use links: an unknown token is refused to anyone (none of these takes a token).
    Row("POST", "/api/invitations/accept", public(404), json={"token": "x" * 40}),
    Row("POST", "/api/password/reset-request", public(202), json={"email": "x@example.org"}),
    Row("POST", "/api/password/reset", public(400), json={"token": "x" * 40, "password": "p"}),
    Row("POST", "/api/account/verify", public(404), json={"token": "x" * 40}),
    Row(
        "POST",
        "/api/setup",
        public(400),
        json={"token": "x" * 40, "email": "a@b.org", "password": "p", "organisation": "o"},
    ),
    # Single sign-on is not configured here: both ends say so.
    Row("GET", "/auth/oidc/login", public(404)),
    Row("GET", "/auth/oidc/callback?state=x&code=y", public(404)),
]


@pytest.fixture
async def tokens(make_token: MakeToken) -> dict[str, str | None]:
    return {
        "none": None,
        "company": await make_token("acme", Role.company),
        "other_company": await make_token("globex", Role.company),
        "recruiter": await make_token("rita", Role.recruiter),
        "other_recruiter": await make_token("otto", Role.recruiter),
        "admin": await make_token("root", Role.admin),
    }


async def token_id(pool: AsyncPool, token: str) -> int:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT id FROM api_tokens WHERE token_hash = %s",
            (hashlib.sha256(token.encode()).digest(),),
        )
        row = await cur.fetchone()
    assert row is not None
    return int(row["id"])


@pytest.fixture
def make_world(pool: AsyncPool, tokens: dict[str, str | None]) -> Callable[[], Awaitable[World]]:
    async def make() -> World:
        assert tokens["company"] and tokens["recruiter"]
        company = await token_id(pool, tokens["company"])
        recruiter = await token_id(pool, tokens["recruiter"])
        tag = uuid.uuid4().hex[:8]
        async with pool.connection() as conn:
            cur = await conn.execute(
                "INSERT INTO job_listings (company_name, job_title, city_location, description,"
                " detail_page_slug, owner_token_id) VALUES ('Acme', 'Engineer', 'Porto',"
                " 'Builds things.', %s, %s) RETURNING id",
                (tag, company),
            )
            row = await cur.fetchone()
            assert row is not None
            # The slug shape of the API (it ends in the id, which is how it is looked up).
            cur = await conn.execute(
                "UPDATE job_listings SET detail_page_slug = 'acme-engineer-porto-' || id"
                " WHERE id = %s RETURNING id, detail_page_slug",
                (row["id"],),
            )
            listing = await cur.fetchone()
            cur = await conn.execute(
                "INSERT INTO searches (owner_token_id, query, query_embedding, target_count,"
                " status) VALUES (%s, 'rust firmware', array_fill(0.05, ARRAY[384])::vector,"
                " 15, 'stale') RETURNING id",
                (recruiter,),
            )
            search = await cur.fetchone()
            assert listing is not None and search is not None
            cur = await conn.execute(
                "INSERT INTO search_candidates (search_id, external_id, tier, status,"
                " last_error) VALUES (%s, 'talent:ada', 'serp', 'failed_transient', 'timeout')"
                " RETURNING id",
                (search["id"],),
            )
            stub = await cur.fetchone()
            assert stub is not None
            # One result: a person the recruiter's search found (and may mark).
            cur = await conn.execute(
                "INSERT INTO candidates (full_name) VALUES ('Ada Lovelace') RETURNING id"
            )
            person = await cur.fetchone()
            assert person is not None
            await conn.execute(
                "INSERT INTO search_results (search_id, rank, candidate_id, tier, score)"
                " VALUES (%s, 1, %s, 'internal', 0.9)",
                (search["id"], person["id"]),
            )
            await conn.execute(
                "UPDATE searches SET result_count = 1 WHERE id = %s", (search["id"],)
            )
            cur = await conn.execute(
                "INSERT INTO job_sources (spec, kind) VALUES (%s, 'greenhouse') RETURNING id",
                (f"greenhouse:acme-{tag}",),
            )
            source = await cur.fetchone()
            assert source is not None
            cur = await conn.execute(
                "INSERT INTO webhook_endpoints (org_id, url, events, secret)"
                " SELECT org_id, 'https://93.184.215.14/hooks', '{job.published}',"
                " 'whsec_QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3'"
                " FROM api_tokens WHERE id = %s RETURNING id",
                (company,),
            )
            webhook = await cur.fetchone()
            assert webhook is not None
            await conn.commit()
        return World(
            str(listing["id"]),
            listing["detail_page_slug"],
            str(search["id"]),
            stub["id"],
            str(person["id"]),
            int(source["id"]),
            int(webhook["id"]),
        )

    return make


def path_of(row: Row, world: World) -> str:
    return row.path.format(
        listing=world.listing,
        slug=world.slug,
        search=world.search,
        stub=world.stub,
        candidate=world.candidate,
        source=world.source,
        webhook=world.webhook,
        # Ids of nothing: a person's own objects are not the table's (see the accounts rows).
        key_id=999999,
        session_id=999999,
        invitation_id=999999,
        user_id=999999,
        domain="example.org",
        alert="00000000-0000-4000-8000-000000000000",
    )


async def call(client: httpx.AsyncClient, row: Row, world: World, token: str | None) -> int:
    path = path_of(row, world)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if row.content_type:
        headers["Content-Type"] = row.content_type
    if path.endswith("/events"):
        # A stream: the status line is what is checked; the search must not be running.
        async with client.stream(row.method, path, headers=headers) as response:
            return response.status_code
    response = await client.request(
        row.method, path, headers=headers, json=row.json, content=row.content
    )
    if response.status_code >= 400 and path.startswith("/api/"):
        assert response.json()["error"]["code"], response.text
    if response.status_code == 401:
        assert response.headers.get("www-authenticate") == "Bearer"
    return response.status_code


def row_id(row: Row) -> str:
    return f"{row.method} {row.path}"


@pytest.mark.parametrize("row", TABLE, ids=row_id)
async def test_every_endpoint_answers_each_caller_as_documented(
    client: httpx.AsyncClient,
    pool: AsyncPool,
    tokens: dict[str, str | None],
    make_world: Callable[[], Awaitable[World]],
    row: Row,
) -> None:
    got = {}
    for who in WHO:
        world = await make_world()  # each caller acts on objects of its own
        if row.path.endswith("/events"):
            await _finish_search(pool, world)
        got[who] = await call(client, row, world, tokens[who])
    assert got == row.expected


async def _finish_search(pool: AsyncPool, world: World) -> None:
    """stale → running → complete, so its event stream ends after the snapshot."""
    async with pool.connection() as conn:
        await conn.execute("UPDATE searches SET status = 'running' WHERE id = %s", (world.search,))
        await conn.execute(
            "UPDATE searches SET status = 'complete', finished_at = now() WHERE id = %s",
            (world.search,),
        )


def test_the_table_covers_every_endpoint(app: FastAPI) -> None:
    documented = {
        (method.upper(), path)
        for path, operations in app.openapi()["paths"].items()
        for method in operations
    }
    covered = {(r.method, r.path.split("?")[0]) for r in TABLE}
    normalised = {
        (m, p.replace("{listing}", "{id_or_slug}").replace("{slug}", "{id_or_slug}"))
        for m, p in covered
    }
    normalised = {
        (
            m,
            p.replace("{search}", "{search_id}")
            .replace("{stub}", "{candidate_id}")
            .replace("{candidate}", "{candidate_id}")
            .replace("{source}", "{source_id}")
            .replace("{webhook}", "{webhook_id}")
            .replace("{alert}", "{alert_id}"),
        )
        for m, p in normalised
    }
    missing = documented - normalised
    assert not missing, f"endpoints without an access-control row: {sorted(missing)}"


async def test_a_bad_token_is_401_everywhere_a_token_is_read(
    client: httpx.AsyncClient, make_world: Callable[[], Awaitable[World]]
) -> None:
    world = await make_world()
    bad = [
        {"Authorization": "Bearer sl_not-a-real-token"},
        {"Authorization": "Bearer "},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer " + "x" * 5000},
    ]
    for row in TABLE:
        if row.expected["none"] != 401:
            continue
        for headers in bad:
            path = path_of(row, world)
            response = await client.request(row.method, path, headers=headers, json=row.json)
            assert response.status_code == 401, (row_id(row), headers, response.text)


# --- ids, tokens ------------------------------------------------------------------------------


async def test_search_ids_are_random_uuid4_and_a_strangers_id_is_404(
    client: httpx.AsyncClient, tokens: dict[str, str | None]
) -> None:
    ids = []
    for i in range(10):
        response = await client.post(
            "/api/searches",
            json={"query": f"rust firmware engineer {i}"},
            headers={"Authorization": f"Bearer {tokens['recruiter']}"},
        )
        assert response.status_code == 202, response.text
        ids.append(uuid.UUID(response.json()["searchId"]))
    assert all(i.version == 4 for i in ids)
    assert len(set(ids)) == len(ids)
    stranger = {"Authorization": f"Bearer {tokens['other_recruiter']}"}
    theirs = await client.get(f"/api/results?searchId={ids[0]}", headers=stranger)
    nobody = await client.get(f"/api/results?searchId={uuid.uuid4()}", headers=stranger)
    assert theirs.status_code == nobody.status_code == 404
    # Same answer either way: a stranger learns nothing about which ids exist.
    assert theirs.json() == nobody.json()


async def test_tokens_are_stored_only_as_hashes(
    pool: AsyncPool, tokens: dict[str, str | None]
) -> None:
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT * FROM api_tokens")
        rows = await cur.fetchall()
    assert len(rows) == 5
    stored = repr(rows)
    hashes = {bytes(r["token_hash"]) for r in rows}
    for who, token in tokens.items():
        if token is None:
            continue
        assert token not in stored and token[3:] not in stored, who
        assert hashlib.sha256(token.encode()).digest() in hashes, who


# --- client IPs and the rate limiter ------------------------------------------------------------


def limited_app(settings: Settings, db_url: str, pool: AsyncPool, trusted: str) -> FastAPI:
    limited = settings.model_copy(update={"search_rate_limit": 3, "trusted_proxies": trusted})
    services = Services(
        limited, db_url, pool, Notifier(db_url), Spaces.of_embedder(pool, FakeEmbedder())
    )
    return create_app(services)


async def searches(app: FastAPI, headers: list[dict[str, str]]) -> list[int]:
    transport = httpx.ASGITransport(app=app, client=CLIENT_PEER)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        return [
            (await c.get("/api/jobs/search", params={"q": "python"}, headers=h)).status_code
            for h in headers
        ]


SPOOFED = [
    {"X-Forwarded-For": f"203.0.113.{i}", "X-Real-IP": f"198.51.100.{i}"} for i in range(1, 7)
]


async def test_forwarded_headers_from_an_untrusted_peer_do_not_escape_the_rate_limit(
    settings: Settings, db_url: str, pool: AsyncPool
) -> None:
    # The peer (127.0.0.1) is no proxy of ours: every request is the peer's, whatever it claims.
    for trusted in ("", "10.0.0.0/8"):
        statuses = await searches(limited_app(settings, db_url, pool, trusted), SPOOFED)
        assert statuses == [200, 200, 200, 429, 429, 429], trusted


async def test_forwarded_headers_from_a_trusted_proxy_name_the_client(
    settings: Settings, db_url: str, pool: AsyncPool
) -> None:
    app = limited_app(settings, db_url, pool, "127.0.0.1")
    # Six different clients behind the proxy: each has its own budget.
    assert await searches(app, SPOOFED) == [200] * 6
    # One client: its budget runs out, whichever hop list the proxy forwards.
    same = [{"X-Forwarded-For": f"10.9.9.{i}, 192.0.2.7"} for i in range(4)]
    assert await searches(app, same) == [200, 200, 200, 429]


# --- logs ----------------------------------------------------------------------------------------


def test_no_email_address_or_token_in_the_logs_of_a_full_backfill(
    live_server_factory: Callable[..., LiveServer], caplog: pytest.LogCaptureFixture
) -> None:
    """A whole backfill (discovery, enrichment of people with e-mail addresses, ingest,
    results), failed logins and a 404, with every logger at DEBUG: the captured log holds no
    e-mail address of the simulator's population and no token."""
    caplog.set_level(logging.DEBUG)
    server = live_server_factory()
    recruiter = server.token("rita", Role.recruiter)
    admin = server.token("root", Role.admin)
    auth = {"Authorization": f"Bearer {recruiter}"}
    with httpx.Client(base_url=server.base_url, timeout=30.0) as client:
        started = client.post(
            "/api/searches",
            json={"query": "FPGA verification with UVM", "role": "FPGA Verification Engineer"},
            headers=auth,
        )
        assert started.status_code == 202, started.text
        search_id = started.json()["searchId"]

        def complete() -> dict[str, Any] | None:
            body = client.get(
                "/api/results", params={"searchId": search_id, "limit": 500}, headers=auth
            ).json()
            return body if body["status"] == "complete" else None

        body = wait_for_sync(complete, timeout=60, interval=0.2, message="backfill complete")
        emails = [r["candidate"]["email"] for r in body["results"] if r["candidate"]["email"]]
        assert emails, "the backfill found nobody with an e-mail address"
        # Failed logins (a mistyped token is still most of a token) and a stranger's probe.
        for bad in (recruiter[:-1] + "x", admin + "0", "sl_" + "a" * 40):
            response = client.get("/api/searches", headers={"Authorization": f"Bearer {bad}"})
            assert response.status_code == 401
        client.get(f"/api/results?searchId={uuid.uuid4()}", headers=auth)
        client.get("/status", headers={"Authorization": f"Bearer {admin}"})
    server.stop()
    texts = [caplog.text] + [
        logging.Formatter().formatException(r.exc_info) for r in caplog.records if r.exc_info
    ]
    scan = scan_logs(texts, tokens=[recruiter, admin])
    assert len(caplog.records) > 20, "nothing was logged: the scan proves nothing"
    assert not set(emails) & set(scan["emails"]), "a backfilled person's e-mail was logged"
    assert_no_leaks(scan)
