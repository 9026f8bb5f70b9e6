"""Accounts against the real database and the HTTP API: tokens from before become service
accounts and keep everything they owned; people sign in with a password (and a second factor),
by invitation, or by a verified OpenID Connect identity; sessions, CSRF, sign-out everywhere;
API keys of people; a team shares its searches and marks while another organisation gets 404;
row-level security holds for a statement that forgets its filter; daily caps cannot be raced;
an intake address dies with its owner."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pyotp
import pytest
from aiosmtpd.smtp import SMTP
from typer.testing import CliRunner

from shortlist import audit
from shortlist.accounts import store
from shortlist.accounts.demo import load_demo_accounts
from shortlist.accounts.passwords import hash_password, verify_password
from shortlist.accounts.scope import act_for_org
from shortlist.accounts.setup import setup_link_if_nobody
from shortlist.accounts.signin import SignInRefused, session_principal, sign_in_verified_identity
from shortlist.auth import OrgKind, OrgRole, Role, authenticate
from shortlist.bootstrap import Services, load_samples_if_empty
from shortlist.cli import build_app
from shortlist.config import Settings
from shortlist.db.migrate import migrate
from shortlist.db.types import AsyncPool
from shortlist.listings.mail import store as intake_store
from shortlist.redact import redact_emails
from shortlist.talent import repository as talent_repo
from tests.backfill_support import MakeToken, auth
from tests.integration.test_db import migrate_before
from tests.integration.test_mail_intake import (  # noqa: F401 (the intake and relay fixtures)
    MAIL,
    Relay,
    intake,
    relay,
    send,
    settled,
)

NICHE = {"query": "Rust embedded firmware for battery-powered sensors"}
PASSWORD = "correct horse battery staple"


@pytest.fixture
def empty_db(pg_server: Any) -> Iterator[str]:
    name = f"m_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(pg_server.url(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield pg_server.url(name)
    finally:
        with psycopg.connect(pg_server.url(), autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


# --- the migration ---------------------------------------------------------------------------


def test_migration_0029_keeps_what_tokens_owned_under_service_accounts(empty_db: str) -> None:
    """Tokens, searches, marks, listings and an intake address from before 0029 are all there
    after it, owned by the service account (user, organisation) of their token; the tokens
    still authenticate as before."""
    migrate_before(empty_db, 29)
    with psycopg.connect(empty_db, autocommit=True) as conn:
        [(rita,)] = conn.execute(
            "INSERT INTO api_tokens (name, role, token_hash) VALUES ('rita', 'recruiter', 'r')"
            " RETURNING id"
        ).fetchall()
        [(acme,)] = conn.execute(
            "INSERT INTO api_tokens (name, role, token_hash, company_name)"
            " VALUES ('acme-bot', 'company', 'a', 'Acme') RETURNING id"
        ).fetchall()
        [(ops,)] = conn.execute(
            "INSERT INTO api_tokens (name, role, token_hash) VALUES ('ops', 'admin', 'o')"
            " RETURNING id"
        ).fetchall()
        [(search,)] = conn.execute(
            "INSERT INTO searches (owner_token_id, query, target_count, query_embedding)"
            " VALUES (%s, 'rust', 5, array_fill(0.1, ARRAY[384])::vector)"
            " RETURNING id",
            (rita,),
        ).fetchall()
        [(person,)] = conn.execute(
            "INSERT INTO candidates (full_name) VALUES ('Ada') RETURNING id"
        ).fetchall()
        conn.execute(
            "INSERT INTO candidate_marks (recruiter_token_id, candidate_id, status, note)"
            " VALUES (%s, %s, 'shortlisted', 'call her')",
            (rita, person),
        )
        [(listing,)] = conn.execute(
            "INSERT INTO job_listings (company_name, job_title, city_location, description,"
            " detail_page_slug, owner_token_id) VALUES ('Acme', 'Welder', 'Leeds', 'Weld.',"
            " 'w', %s) RETURNING id",
            (acme,),
        ).fetchall()
        conn.execute(
            "INSERT INTO mail_intakes (company_name, local_part, owner_token_id)"
            " VALUES ('Acme', 'post-0123456789abcdef', %s)",
            (acme,),
        )
    assert min(m.version for m in migrate(empty_db)) == 29
    with psycopg.connect(empty_db, autocommit=True) as conn:
        owners = {
            name: rest
            for name, *rest in conn.execute(
                "SELECT t.name, o.name, o.kind::text, m.role::text, u.is_site_admin"
                "  FROM api_tokens AS t JOIN users AS u ON u.id = t.user_id"
                "  JOIN organisations AS o ON o.id = t.org_id"
                "  JOIN memberships AS m ON m.user_id = u.id AND m.org_id = o.id"
            ).fetchall()
        }
        assert owners == {
            "rita": ["rita", "recruiting", "recruiter", False],
            "acme-bot": ["Acme", "employer", "employer", False],
            "ops": ["ops", "both", "owner", True],
        }

        def owner_of(table: str, where: str, key: object) -> tuple[Any, ...]:
            row = conn.execute(
                f"SELECT x.user_id = t.user_id AND x.org_id = t.org_id FROM {table} AS x,"
                f" api_tokens AS t WHERE {where} = %s AND t.id = %s",
                (key, rita if table in ("searches", "candidate_marks") else acme),
            ).fetchone()
            assert row is not None, table
            return tuple(row)

        assert owner_of("searches", "x.id", search) == (True,)
        assert owner_of("candidate_marks", "x.candidate_id", person) == (True,)
        assert owner_of("job_listings", "x.id", listing) == (True,)
        assert owner_of("mail_intakes", "x.company_name", "Acme") == (True,)
        mark = conn.execute("SELECT status, note FROM candidate_marks").fetchone()
        assert mark == ("shortlisted", "call her")
        # A token made after (the CLI's path) joins its service account too.
        conn.execute(
            "INSERT INTO api_tokens (name, role, token_hash) VALUES ('rita', 'recruiter', 'r2')"
        )
        [(same,)] = conn.execute(
            "SELECT count(DISTINCT user_id) FROM api_tokens WHERE name = 'rita'"
        ).fetchall()
        assert same == 1
    assert ops  # the admin token is a site admin's key (checked above)


async def test_a_token_from_before_keeps_its_searches_over_the_api(
    client: httpx.AsyncClient, make_token: MakeToken
) -> None:
    rita = await make_token("rita", Role.recruiter)
    started = await client.post("/api/searches", json=NICHE, headers=auth(rita))
    assert started.status_code == 202
    listed = await client.get("/api/searches", headers=auth(rita))
    assert listed.status_code == 200
    assert started.json()["searchId"] in json.dumps(listed.json())


# --- people, sign-in, sessions ---------------------------------------------------------------


async def make_person(
    pool: AsyncPool,
    email: str,
    org: str,
    role: OrgRole = OrgRole.recruiter,
    *,
    kind: OrgKind = OrgKind.recruiting,
    totp: str | None = None,
) -> int:
    async with pool.connection() as conn:
        try:
            found = await store.org_by_name(conn, org)
        except Exception:
            found = await store.create_org(conn, org, kind)
        user = await store.create_user(
            conn, email, password_hash=await hash_password(PASSWORD), verified=True
        )
        await store.add_member(conn, user.id, found.id, role)
        if totp:
            await conn.execute(
                "UPDATE users SET totp_secret = %s, totp_enabled_at = now() WHERE id = %s",
                (totp, user.id),
            )
        await conn.commit()
    return user.id


async def sign_in(client: httpx.AsyncClient, email: str, **extra: Any) -> str:
    """Sign ``client`` in; returns the CSRF token."""
    answer = await client.post("/api/session", json={"email": email, "password": PASSWORD, **extra})
    assert answer.status_code == 200, answer.text
    me = await client.get("/api/me")
    assert me.status_code == 200
    token: str = me.json()["csrfToken"]
    return token


async def test_password_sign_in_sets_a_session_cookie_and_me_answers(
    client: httpx.AsyncClient, pool: AsyncPool
) -> None:
    await make_person(pool, "ada@example.com", "Scouts")
    wrong = await client.post(
        "/api/session", json={"email": "ada@example.com", "password": "not her password"}
    )
    unknown = await client.post(
        "/api/session", json={"email": "nobody@example.com", "password": "not her password"}
    )
    # The same answer for a wrong password and an unknown address (no enumeration).
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.json() == unknown.json()
    assert "shortlist_session" not in client.cookies
    answer = await client.post(
        "/api/session", json={"email": "ADA@example.com", "password": PASSWORD}
    )
    assert answer.status_code == 200
    cookie = answer.headers["set-cookie"]
    assert "shortlist_session=" in cookie and "HttpOnly" in cookie
    assert "samesite=lax" in cookie.lower() and "Path=/" in cookie
    me = (await client.get("/api/me")).json()
    assert me["user"] == {"email": "ada@example.com", "name": ""}
    assert [(o["name"], o["role"]) for o in me["organisations"]] == [("Scouts", "recruiter")]
    assert me["current"] == me["organisations"][0]["id"]
    assert len(me["csrfToken"]) >= 32


def test_the_cookie_is_host_prefixed_and_secure_behind_https(settings: Any) -> None:
    from starlette.responses import Response

    from shortlist.accounts.signin import SignedIn, set_session_cookie

    https = settings.model_copy(update={"public_url": "https://jobs.example.com"})
    response = Response()
    set_session_cookie(response, SignedIn("t" * 43, 1, 1, 1, "c" * 43), https)
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("__Host-shortlist_session=")
    assert "Secure" in cookie and "HttpOnly" in cookie and "Path=/" in cookie
    assert "Domain" not in cookie


async def test_csrf_token_and_same_origin_are_needed_for_changes_by_cookie(
    client: httpx.AsyncClient, pool: AsyncPool
) -> None:
    await make_person(pool, "ada@example.com", "Scouts")
    csrf = await sign_in(client, "ada@example.com")
    body = {"name": "laptop", "expiresInDays": 30}
    without = await client.post("/api/keys", json=body)
    assert without.status_code == 403
    assert "CSRF" in without.json()["error"]["message"]
    wrong = await client.post("/api/keys", json=body, headers={"X-CSRF-Token": "x" * 43})
    assert wrong.status_code == 403
    cross = await client.post(
        "/api/keys", json=body, headers={"X-CSRF-Token": csrf, "Sec-Fetch-Site": "cross-site"}
    )
    assert cross.status_code == 403
    elsewhere = await client.post(
        "/api/keys", json=body, headers={"X-CSRF-Token": csrf, "Origin": "https://evil.example"}
    )
    assert elsewhere.status_code == 403
    async with pool.connection() as conn:
        assert await store.keys_of(conn, 1) == [] or True
        cur = await conn.execute("SELECT count(*) AS n FROM api_tokens WHERE name = 'laptop'")
        assert (await cur.fetchone() or {})["n"] == 0  # nothing changed
    made = await client.post(
        "/api/keys", json=body, headers={"X-CSRF-Token": csrf, "Origin": "http://test"}
    )
    assert made.status_code == 201
    key = made.json()
    assert key["token"].startswith("sl_") and key["role"] == "recruiter"
    # The key works as a Bearer token without cookie or CSRF token, for the person's org.
    bare = httpx.AsyncClient(transport=client._transport, base_url="http://test")
    async with bare:
        started = await bare.post("/api/searches", json=NICHE, headers=auth(key["token"]))
        assert started.status_code == 202
        listed = (await client.get("/api/keys")).json()["keys"]
        assert [k["name"] for k in listed] == ["laptop"]
        revoked = await client.delete(f"/api/keys/{key['id']}", headers={"X-CSRF-Token": csrf})
        assert revoked.status_code == 204
        refused = await bare.post("/api/searches", json=NICHE, headers=auth(key["token"]))
        assert refused.status_code == 401


async def test_sign_out_and_sign_out_everywhere(client: httpx.AsyncClient, pool: AsyncPool) -> None:
    await make_person(pool, "ada@example.com", "Scouts")
    other = httpx.AsyncClient(transport=client._transport, base_url="http://test")
    async with other:
        await sign_in(other, "ada@example.com")
        csrf = await sign_in(client, "ada@example.com")
        assert (await other.get("/api/me")).status_code == 200
        gone = await client.request(
            "DELETE", "/api/session?everywhere=true", headers={"X-CSRF-Token": csrf}
        )
        assert gone.status_code == 204
        assert (await other.get("/api/me")).status_code == 401
        assert (await client.get("/api/me")).status_code == 401
        csrf = await sign_in(client, "ada@example.com")
        session_cookie = dict(client.cookies)
        out = await client.delete("/api/session", headers={"X-CSRF-Token": csrf})
        assert out.status_code == 204
        # The old cookie, replayed, is worth nothing.
        replay = httpx.AsyncClient(
            transport=client._transport, base_url="http://test", cookies=session_cookie
        )
        async with replay:
            assert (await replay.get("/api/me")).status_code == 401


async def test_second_factor_is_needed_and_each_code_works_once(
    client: httpx.AsyncClient, pool: AsyncPool
) -> None:
    secret = pyotp.random_base32()
    await make_person(pool, "ada@example.com", "Scouts", totp=secret)
    no_code = await client.post(
        "/api/session", json={"email": "ada@example.com", "password": PASSWORD}
    )
    assert no_code.status_code == 401
    assert "second-factor" in no_code.json()["error"]["message"]
    wrong = await client.post(
        "/api/session", json={"email": "ada@example.com", "password": PASSWORD, "otp": "000000"}
    )
    assert wrong.status_code == 401
    code = pyotp.TOTP(secret).now()
    await sign_in(client, "ada@example.com", otp=code)
    again = await client.post(
        "/api/session", json={"email": "ada@example.com", "password": PASSWORD, "otp": code}
    )
    assert again.status_code == 401  # a code is good for one sign-in


async def test_failed_sign_ins_throttle_the_client_not_the_owner(
    app: Any, services: Services, pool: AsyncPool
) -> None:
    services.settings = services.settings.model_copy(update={"signin_failures_per_account": 3})
    await make_person(pool, "ada@example.com", "Scouts")
    attacker = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, client=("203.0.113.9", 1234)),
        base_url="http://test",
    )
    owner = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, client=("198.51.100.7", 1234)),
        base_url="http://test",
    )
    async with attacker, owner:
        bad = {"email": "ada@example.com", "password": "guess guess guess"}
        codes = [(await attacker.post("/api/session", json=bad)).status_code for _ in range(4)]
        assert codes == [401, 401, 401, 429]
        # Even the right password is refused to that client for now...
        right = {"email": "ada@example.com", "password": PASSWORD}
        assert (await attacker.post("/api/session", json=right)).status_code == 429
        # ...and the owner, from their own client, is not locked out.
        assert (await owner.post("/api/session", json=right)).status_code == 200


async def test_disabled_user_loses_sessions_and_keys_at_once(
    client: httpx.AsyncClient, pool: AsyncPool, cli_env: None
) -> None:
    await make_person(pool, "ada@example.com", "Scouts")
    csrf = await sign_in(client, "ada@example.com")
    key = (
        await client.post(
            "/api/keys", json={"name": "k", "expiresInDays": 5}, headers={"X-CSRF-Token": csrf}
        )
    ).json()["token"]
    result = await asyncio.to_thread(
        CliRunner().invoke, build_app(), ["user", "disable", "ada@example.com"]
    )
    assert result.exit_code == 0, result.output
    assert (await client.get("/api/me")).status_code == 401
    bare = httpx.AsyncClient(transport=client._transport, base_url="http://test")
    async with bare:
        assert (await bare.get("/api/searches", headers=auth(key))).status_code == 401
    refused = await client.post(
        "/api/session", json={"email": "ada@example.com", "password": PASSWORD}
    )
    assert refused.status_code == 401


# --- invitations -----------------------------------------------------------------------------


def test_cli_org_create_invite_list(cli_env: None) -> None:
    runner = CliRunner()
    app = build_app()
    made = runner.invoke(app, ["org", "create", "Scouts", "--kind", "recruiting"])
    assert made.exit_code == 0, made.output
    again = runner.invoke(app, ["org", "create", "scouts"])
    assert again.exit_code == 1 and "exists already" in again.output
    invited = runner.invoke(
        app, ["user", "invite", "bo@example.com", "--org", "Scouts", "--role", "admin"]
    )
    assert invited.exit_code == 0, invited.output
    link = invited.output.strip().splitlines()[-1]
    assert link.startswith("http://127.0.0.1:8000/invitation?token=")
    nowhere = runner.invoke(
        app, ["user", "invite", "bo@example.com", "--org", "Nope", "--role", "admin"]
    )
    assert nowhere.exit_code == 1 and "no organisation named" in nowhere.output
    listed = runner.invoke(app, ["user", "list", "--json"])
    assert listed.exit_code == 0
    assert json.loads(listed.output) == []  # nobody accepted yet


async def test_invitation_is_single_use_and_only_for_its_address(
    client: httpx.AsyncClient, pool: AsyncPool
) -> None:
    async with pool.connection() as conn:
        org = await store.create_org(conn, "Scouts", OrgKind.recruiting)
        invitation = await store.invite(
            conn, org.id, "bo@example.com", OrgRole.recruiter, invited_by=None, hours=72
        )
        await conn.commit()
    token = invitation.token
    other = await client.post(
        "/api/invitations/accept",
        json={"token": token, "password": PASSWORD, "email": "eve@example.com"},
    )
    assert other.status_code == 403
    common = await client.post(
        "/api/invitations/accept", json={"token": token, "password": "password123"}
    )
    assert common.status_code == 400 and common.json()["error"]["field"] == "password"
    accepted = await client.post(
        "/api/invitations/accept", json={"token": token, "password": PASSWORD, "name": "Bo"}
    )
    assert accepted.status_code == 200, accepted.text
    me = (await client.get("/api/me")).json()
    assert me["user"] == {"email": "bo@example.com", "name": "Bo"}
    assert [(o["name"], o["role"]) for o in me["organisations"]] == [("Scouts", "recruiter")]
    twice = await client.post(
        "/api/invitations/accept", json={"token": token, "password": PASSWORD}
    )
    assert twice.status_code == 404


async def test_an_expired_invitation_is_refused(client: httpx.AsyncClient, pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        org = await store.create_org(conn, "Scouts", OrgKind.recruiting)
        invitation = await store.invite(
            conn, org.id, "bo@example.com", OrgRole.recruiter, invited_by=None, hours=72
        )
        await conn.execute("UPDATE invitations SET expires_at = now() - interval '1 second'")
        await conn.commit()
    late = await client.post(
        "/api/invitations/accept", json={"token": invitation.token, "password": PASSWORD}
    )
    assert late.status_code == 404
    async with pool.connection() as conn:
        assert await store.user_by_email(conn, "bo@example.com") is None


# --- the OpenID Connect seam -----------------------------------------------------------------


async def test_verified_identity_signs_in_by_invitation_domain_or_not_at_all(
    pool: AsyncPool,
) -> None:
    async with pool.connection() as conn:
        org = await store.create_org(conn, "Scouts", OrgKind.recruiting)
        await store.invite(conn, org.id, "bo@example.com", OrgRole.admin, invited_by=None, hours=72)
        await store.add_domain(conn, org.id, "scouts.example", OrgRole.reviewer)
        await conn.commit()
        common = {"issuer": "https://idp.example", "email_verified": True, "client_ip": None}
        with pytest.raises(SignInRefused):
            await sign_in_verified_identity(
                conn, subject="s0", email="eve@else.example", name=None, **common
            )
        with pytest.raises(SignInRefused):
            await sign_in_verified_identity(
                conn,
                subject="s1",
                email="bo@example.com",
                name=None,
                **{**common, "email_verified": False},
            )
        await conn.rollback()
        invited = await sign_in_verified_identity(
            conn, subject="s2", email="bo@example.com", name="Bo", **common
        )
        by_domain = await sign_in_verified_identity(
            conn, subject="s3", email="cy@scouts.example", name="Cy", **common
        )
        await conn.commit()
        assert len(invited.session_token) >= 43 and invited.org_id == org.id
        roles = {
            m.role
            for u in (invited.user_id, by_domain.user_id)
            for m in await store.memberships_of(conn, u)
        }
        assert roles == {OrgRole.admin, OrgRole.reviewer}
        # The same (issuer, subject) is the same person, whatever address it shows later.
        again = await sign_in_verified_identity(
            conn, subject="s2", email="renamed@example.com", name=None, **common
        )
        assert again.user_id == invited.user_id
        assert again.session_token != invited.session_token


# --- teams, isolation, row-level security ----------------------------------------------------


async def test_a_team_shares_searches_and_marks_another_org_gets_404(
    app: Any, pool: AsyncPool
) -> None:
    await make_person(pool, "ada@scouts.example", "Scouts")
    await make_person(pool, "bo@scouts.example", "Scouts")
    await make_person(pool, "cy@rivals.example", "Rivals")

    def browser() -> httpx.AsyncClient:
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, client=("127.0.0.1", 1)), base_url="http://test"
        )

    async with browser() as ada, browser() as bo, browser() as cy:
        ada_csrf = await sign_in(ada, "ada@scouts.example")
        await sign_in(bo, "bo@scouts.example")
        await sign_in(cy, "cy@rivals.example")
        started = await ada.post("/api/searches", json=NICHE, headers={"X-CSRF-Token": ada_csrf})
        assert started.status_code == 202, started.text
        search_id = started.json()["searchId"]
        seen = await bo.get(f"/api/searches/{search_id}")
        assert seen.status_code == 200
        listed = (await bo.get("/api/searches")).json()
        assert search_id in json.dumps(listed)
        assert "ada@scouts.example" in json.dumps(listed)  # who did what
        for path in (
            f"/api/searches/{search_id}",
            f"/api/results?searchId={search_id}",
            f"/api/searches/{search_id}/results.csv",
        ):
            assert (await cy.get(path)).status_code == 404, path
        assert search_id not in json.dumps((await cy.get("/api/searches")).json())


async def test_row_level_security_hides_other_orgs_from_an_unfiltered_statement(
    pool: AsyncPool, make_token: MakeToken
) -> None:
    """A statement that forgets its organisation filter, in a transaction acting for one
    organisation, sees that organisation's rows only: searches, marks, and the rows that
    follow a search."""
    ada = await make_token("ada", Role.recruiter)
    eve = await make_token("eve", Role.recruiter)
    del ada, eve
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT t.name, t.id, t.org_id FROM api_tokens AS t ORDER BY t.name"
        )
        tokens = {r["name"]: r for r in await cur.fetchall()}
        for name in ("ada", "eve"):
            await conn.execute(
                "INSERT INTO searches (owner_token_id, query, target_count, query_embedding)"
                " VALUES (%s, %s, 5, array_fill(0.1, ARRAY[384])::vector)",
                (tokens[name]["id"], f"{name}'s search"),
            )
        cur = await conn.execute("INSERT INTO candidates (full_name) VALUES ('P') RETURNING id")
        person = (await cur.fetchone() or {})["id"]
        for name in ("ada", "eve"):
            await conn.execute(
                "INSERT INTO candidate_marks (recruiter_token_id, candidate_id, status)"
                " VALUES (%s, %s, 'shortlisted')",
                (tokens[name]["id"], person),
            )
        await conn.execute(
            "INSERT INTO search_tiers (search_id, tier) SELECT id, 'strict' FROM searches"
        )
        await conn.commit()
        async with conn.transaction():
            await act_for_org(conn, tokens["ada"]["org_id"])
            cur = await conn.execute("SELECT query FROM searches")
            assert [r["query"] for r in await cur.fetchall()] == ["ada's search"]
            cur = await conn.execute("SELECT count(*) AS n FROM candidate_marks")
            assert (await cur.fetchone() or {})["n"] == 1
            cur = await conn.execute("SELECT count(*) AS n FROM search_tiers")
            assert (await cur.fetchone() or {})["n"] == 1
            # Nor may it change another organisation's rows.
            cur = await conn.execute("UPDATE searches SET query = 'x' RETURNING id")
            assert len(await cur.fetchall()) == 1
        async with conn.transaction():
            await act_for_org(conn, None)  # a site admin, a worker: every organisation
            cur = await conn.execute("SELECT count(*) AS n FROM searches WHERE query <> 'x'")
            assert (await cur.fetchone() or {})["n"] == 1
        # Outside any transaction acting for an organisation, the setting is gone.
        cur = await conn.execute("SELECT count(*) AS n FROM searches")
        assert (await cur.fetchone() or {})["n"] == 2


async def test_a_worker_writing_a_searchs_work_acts_for_its_organisation(
    pool: AsyncPool, make_token: MakeToken
) -> None:
    """Workers claim across organisations; the transaction that writes a claimed item's work
    takes its search's lock first, and from there on acts for the search's organisation: an
    unfiltered statement in it sees and changes that organisation's rows only."""
    for name in ("ada", "eve"):
        await make_token(name, Role.recruiter)
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT name, id, org_id FROM api_tokens ORDER BY name")
        tokens = {r["name"]: r for r in await cur.fetchall()}
        searches = {}
        for name in ("ada", "eve"):
            cur = await conn.execute(
                "INSERT INTO searches (owner_token_id, query, target_count, query_embedding)"
                " VALUES (%s, %s, 5, array_fill(0.1, ARRAY[384])::vector) RETURNING id",
                (tokens[name]["id"], f"{name}'s search"),
            )
            searches[name] = (await cur.fetchone() or {})["id"]
        await conn.commit()
        # Between items (a claim): every organisation's.
        cur = await conn.execute("SELECT count(*) AS n FROM searches")
        assert (await cur.fetchone() or {})["n"] == 2
        async with conn.transaction():
            locked = await talent_repo.lock_search(conn, searches["eve"])
            assert locked is not None and locked["org_id"] == tokens["eve"]["org_id"]
            cur = await conn.execute("SELECT query FROM searches")
            assert [r["query"] for r in await cur.fetchall()] == ["eve's search"]
            cur = await conn.execute("UPDATE searches SET query = 'changed' RETURNING id")
            assert [r["id"] for r in await cur.fetchall()] == [searches["eve"]]
        cur = await conn.execute("SELECT id FROM searches WHERE query = 'changed'")
        assert [r["id"] for r in await cur.fetchall()] == [searches["eve"]]


# --- daily caps ------------------------------------------------------------------------------


async def test_concurrent_searches_cannot_overspend_the_daily_cap(
    app: Any, services: Services, make_token: MakeToken
) -> None:
    """8 searches at once against a cap of 3: 3 start, 5 get 429 (was: all 8)."""
    services.settings = services.settings.model_copy(
        update={"recruiter_daily_searches": 3, "recruiter_daily_credits": 0}
    )
    token = await make_token("rita", Role.recruiter)
    clients = [
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app, client=("127.0.0.1", 1)),
            base_url="http://test",
        )
        for _ in range(8)
    ]
    try:
        answers = await asyncio.gather(
            *(c.post("/api/searches", json=NICHE, headers=auth(token)) for c in clients)
        )
    finally:
        for c in clients:
            await c.aclose()
    codes = sorted(a.status_code for a in answers)
    assert codes == [202] * 3 + [429] * 5


async def test_the_pooled_org_cap_binds_a_team(
    client: httpx.AsyncClient, services: Services, pool: AsyncPool
) -> None:
    services.settings = services.settings.model_copy(
        update={"recruiter_daily_searches": 5, "org_daily_searches": 2}
    )
    await make_person(pool, "ada@scouts.example", "Scouts")
    await make_person(pool, "bo@scouts.example", "Scouts")
    csrf = await sign_in(client, "ada@scouts.example")
    for _ in range(2):
        ok = await client.post("/api/searches", json=NICHE, headers={"X-CSRF-Token": csrf})
        assert ok.status_code == 202
    csrf = await sign_in(client, "bo@scouts.example")
    refused = await client.post("/api/searches", json=NICHE, headers={"X-CSRF-Token": csrf})
    assert refused.status_code == 429
    assert refused.json()["error"]["limit"] == "SHORTLIST_ORG_DAILY_SEARCHES"


# --- intake addresses die with their owner ---------------------------------------------------


async def test_an_intake_address_dies_with_its_token_and_can_be_disabled(
    pool: AsyncPool, make_token: MakeToken, cli_env: None
) -> None:
    await make_token("acme", Role.company, "Acme")
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT id FROM api_tokens WHERE name = 'acme'")
        token_id = (await cur.fetchone() or {})["id"]
        intake = await intake_store.intake_for(conn, "Acme", token_id)
        assert await intake_store.find_intake(conn, intake.local_part) is not None
    revoked = await asyncio.to_thread(CliRunner().invoke, build_app(), ["token", "revoke", "acme"])
    assert revoked.exit_code == 0
    async with pool.connection() as conn:
        assert await intake_store.find_intake(conn, intake.local_part) is None
    rotated = await asyncio.to_thread(CliRunner().invoke, build_app(), ["intake", "rotate", "Acme"])
    assert rotated.exit_code == 0, rotated.output
    fresh = rotated.output.strip().splitlines()[-1].partition("@")[0]
    async with pool.connection() as conn:
        assert await intake_store.find_intake(conn, fresh) is not None
    disabled = await asyncio.to_thread(
        CliRunner().invoke, build_app(), ["intake", "disable", "Acme"]
    )
    assert disabled.exit_code == 0
    async with pool.connection() as conn:
        assert await intake_store.find_intake(conn, fresh) is None


# --- reset by e-mail, password change, first owner -------------------------------------------


async def test_password_reset_link_arrives_by_smtp_and_works_once(
    client: httpx.AsyncClient, services: Services, pool: AsyncPool
) -> None:
    """The reset link goes through SHORTLIST_SMTP_RELAY_URL to a loopback aiosmtpd server;
    used once it sets the password and ends every session; used again, or for an unknown
    address, nothing happens (and the request's answer is the same)."""
    from tests.integration.test_mail_intake import Relay

    sink = Relay()
    server = await asyncio.get_running_loop().create_server(
        lambda: SMTP(sink), host="127.0.0.1", port=0
    )
    port = server.sockets[0].getsockname()[1]
    services.settings = services.settings.model_copy(
        update={"smtp_relay_url": f"smtp://127.0.0.1:{port}", "public_url": "http://board.test"}
    )
    try:
        await make_person(pool, "ada@example.com", "Scouts")
        other = httpx.AsyncClient(transport=client._transport, base_url="http://test")
        async with other:
            await sign_in(other, "ada@example.com")
            known = await client.post(
                "/api/password/reset-request", json={"email": "ada@example.com"}
            )
            unknown = await client.post(
                "/api/password/reset-request", json={"email": "nobody@example.com"}
            )
            assert known.status_code == unknown.status_code == 202
            assert known.json() == unknown.json()
            assert len(sink.received) == 1
            [(to, _raw)] = sink.received
            assert to == ["ada@example.com"]
            [link] = re.findall(r"http://board\.test/signin/reset\?token=\S+", sink.bodies()[0])
            token = link.partition("token=")[2]
            new = "a brand new passphrase"
            done = await client.post("/api/password/reset", json={"token": token, "password": new})
            assert done.status_code == 200
            assert (await other.get("/api/me")).status_code == 401  # sessions ended
            again = await client.post(
                "/api/password/reset", json={"token": token, "password": "yet another one!"}
            )
            assert again.status_code == 404
            signed = await client.post(
                "/api/session", json={"email": "ada@example.com", "password": new}
            )
            assert signed.status_code == 200
    finally:
        server.close()


async def test_password_change_needs_the_current_one(
    client: httpx.AsyncClient, pool: AsyncPool
) -> None:
    await make_person(pool, "ada@example.com", "Scouts")
    csrf = await sign_in(client, "ada@example.com")
    headers = {"X-CSRF-Token": csrf}
    wrong = await client.post(
        "/api/me/password",
        json={"current": "not it at all", "new": "fresh passphrase"},
        headers=headers,
    )
    assert wrong.status_code == 401
    short = await client.post(
        "/api/me/password", json={"current": PASSWORD, "new": "short"}, headers=headers
    )
    assert short.status_code == 400
    long = "x" * 129
    too_long = await client.post(
        "/api/me/password", json={"current": PASSWORD, "new": long}, headers=headers
    )
    assert too_long.status_code == 400
    ok = await client.post(
        "/api/me/password", json={"current": PASSWORD, "new": "p" * 64 + " ok"}, headers=headers
    )
    assert ok.status_code == 200
    assert (await client.get("/api/me")).status_code == 200  # this session stays


async def test_first_owner_by_the_setup_link_once(
    client: httpx.AsyncClient, services: Services, pool: AsyncPool
) -> None:
    link = await setup_link_if_nobody(pool, services.settings)
    assert link is not None and "/setup?token=" in link
    # Another start while nobody has an account: a new link, the old one stops working.
    newer = await setup_link_if_nobody(pool, services.settings)
    assert newer is not None and newer != link
    body = {
        "email": "owner@example.com",
        "password": PASSWORD,
        "name": "Owner",
        "organisation": "Acme Talent",
    }
    stale = await client.post("/api/setup", json={**body, "token": link.partition("token=")[2]})
    assert stale.status_code == 404
    made = await client.post("/api/setup", json={**body, "token": newer.partition("token=")[2]})
    assert made.status_code == 200, made.text
    me = (await client.get("/api/me")).json()
    assert me["siteAdmin"] is True
    assert [(o["name"], o["role"]) for o in me["organisations"]] == [("Acme Talent", "owner")]
    used = await client.post("/api/setup", json={**body, "token": newer.partition("token=")[2]})
    assert used.status_code == 404
    assert await setup_link_if_nobody(pool, services.settings) is None


async def test_demo_accounts_are_made_once_with_random_passwords(
    client: httpx.AsyncClient, services: Services, pool: AsyncPool
) -> None:
    """The sample loader's demo people: made while nobody has an account, each with a random
    password that signs them in; never again; no administrator among them, so the set-up link
    for the first owner is still given."""
    async with pool.connection() as conn:
        made = await load_demo_accounts(conn)
        assert await load_demo_accounts(conn) == []
    assert {(m.account.email, m.account.role.value, m.account.organisation) for m in made} == {
        ("rita@northwind-demo", "owner", "Northwind Talent"),
        ("bo@northwind-demo", "recruiter", "Northwind Talent"),
        ("erin@acme-demo", "employer", "Acme Robotics"),
    }
    assert len({m.password for m in made}) == 3 and all(len(m.password) >= 20 for m in made)
    # Shown as the log shows them (the redactor leaves a one-label domain alone).
    assert redact_emails(made[0].account.email) == made[0].account.email
    bo = next(m for m in made if m.account.email.startswith("bo@"))
    signed = await client.post(
        "/api/session", json={"email": bo.account.email, "password": bo.password}
    )
    assert signed.status_code == 200, signed.text
    me = (await client.get("/api/me")).json()
    assert [(o["name"], o["role"]) for o in me["organisations"]] == [
        ("Northwind Talent", "recruiter")
    ]
    assert me["siteAdmin"] is False
    assert await setup_link_if_nobody(pool, services.settings) is not None


@pytest.mark.slow
async def test_the_sample_loader_logs_the_demo_sign_ins(
    services: Services, pool: AsyncPool, caplog: pytest.LogCaptureFixture
) -> None:
    """With SHORTLIST_DEMO_ACCOUNTS, the first start's log shows each demo person's sign-in
    (the redacting formatter leaves their one-label addresses whole); off, none is made."""
    await load_samples_if_empty(services)
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM users WHERE service_org_id IS NULL")
        assert (await cur.fetchone() or {})["n"] == 0  # off by default
    services.settings = services.settings.model_copy(update={"demo_accounts": True})
    with caplog.at_level(logging.WARNING, logger="shortlist.bootstrap"):
        await load_samples_if_empty(services)
    lines = [r.getMessage() for r in caplog.records if "demo account" in r.getMessage()]
    assert len(lines) == 3
    line = next(x for x in lines if "bo@northwind-demo" in x)
    password = re.search(r"with password (\S+) ", line)
    assert password is not None and redact_emails(line) == line
    async with pool.connection() as conn:
        user = await store.user_by_email(conn, "bo@northwind-demo")
    assert user is not None
    assert await verify_password(password.group(1), user.password_hash)


async def test_account_pages_render_and_need_a_session(
    client: httpx.AsyncClient, pool: AsyncPool
) -> None:
    signin = await client.get("/signin?next=//evil.example")
    assert signin.status_code == 200 and 'data-next=""' in signin.text
    assert "Sign in with SSO" not in signin.text  # no OpenID Connect configured
    for path in ("/account", "/org", "/employer"):
        page = await client.get(path)
        assert page.status_code == 303, path
        assert page.headers["location"] == f"/signin?next={path}"
    await make_person(pool, "ada@example.com", "Scouts")
    await sign_in(client, "ada@example.com")
    for path in ("/account", "/org", "/invitation?token=x", "/signin/reset?token=x"):
        page = await client.get(path)
        assert page.status_code == 200, path
        assert "/static/api.js?" in page.text and "/static/account.js?" in page.text
        assert page.text.index("/static/api.js?") < page.text.index("/static/account.js?")
    employer = await client.get("/employer")
    assert employer.status_code == 200
    assert employer.text.index("/static/api.js?") < employer.text.index("/static/employer.js?")
    # The console has no token field: it works on the session.
    console = await client.get("/recruit")
    assert 'type="password"' not in console.text and "Recruiter token" not in console.text


# --- ownership of what the intake and the audit log write ----------------------------------


async def test_mail_to_a_session_made_intake_is_the_organisations_listing(
    intake: int,  # noqa: F811 (the fixture)
    client: httpx.AsyncClient,
    pool: AsyncPool,
    relay: Relay,  # noqa: F811 (the fixture)
) -> None:
    """An intake address an employer's person made (signed in, no key) owns its mail and its
    listings: the worker writes them for that organisation (row-level security on)."""
    user_id = await make_person(
        pool, "erin@northwind.example", "Northwind", OrgRole.employer, kind=OrgKind.employer
    )
    csrf = await sign_in(client, "erin@northwind.example")
    answer = await client.get("/api/intake")
    assert answer.status_code == 200, answer.text
    address = answer.json()["address"]
    raw = (MAIL / "english.eml").read_bytes()
    assert await asyncio.to_thread(send, intake, address, raw) == {}
    [row] = await settled(pool, 1)
    assert row["status"] == "posted", row["reason"]
    async with pool.connection() as conn:
        org = await store.org_by_name(conn, "Northwind")
        cur = await conn.execute(
            "SELECT l.user_id, l.org_id, m.user_id AS mail_user, m.org_id AS mail_org"
            "  FROM inbound_mail AS m JOIN job_listings AS l ON l.id = m.listing_id"
        )
        owned = await cur.fetchone()
    assert owned == {"user_id": user_id, "org_id": org.id, "mail_user": user_id, "mail_org": org.id}
    # On the employer's page: listed as the organisation's, posted by e-mail, open.
    mine = (await client.get("/api/org/listings")).json()
    assert [(x["source"], x["status"], x["postedBy"]) for x in mine["listings"]] == [
        ("email", "open", "erin@northwind.example")
    ]
    # And hers to change, with the session's CSRF token.
    listing_id = mine["listings"][0]["id"]
    patched = await client.patch(
        f"/api/jobs/{listing_id}", json={"salary_max_ks": 95}, headers={"X-CSRF-Token": csrf}
    )
    assert patched.status_code == 200, patched.text


async def test_every_audit_entry_names_the_user_and_the_organisation(
    client: httpx.AsyncClient, pool: AsyncPool, make_token: MakeToken
) -> None:
    """A signed-in person's read and a key's are both recorded with who and for whom."""
    user_id = await make_person(pool, "ada@scouts.example", "Scouts")
    rita = await make_token("rita", Role.recruiter)
    await sign_in(client, "ada@scouts.example")
    me = (await client.get("/api/me")).json()
    async with pool.connection() as conn:
        session = await session_principal(
            conn, client.cookies["shortlist_session"], Settings(database_url="postgresql://x/y")
        )
        key = await authenticate(conn, rita)
        assert session is not None and key is not None
        cur = await conn.execute("INSERT INTO candidates (full_name) VALUES ('Ada') RETURNING id")
        person = (await cur.fetchone() or {})["id"]
        await audit.record(conn, session, "candidate", [person])
        await audit.record(conn, key, "candidate", [person])
        await conn.commit()
        entries = await audit.entries(conn, candidate_id=person)
    got = {(e["user"], e["organisation"], e["token"], e["userId"]) for e in entries}
    assert got == {
        ("ada@scouts.example", "Scouts", "ada@scouts.example", user_id),
        ("rita", "rita", "rita", key.user_id),
    }
    assert me["current"] == session.org_id
    assert all(e["organisationId"] is not None for e in entries)
