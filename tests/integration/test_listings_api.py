"""/api/jobs writes and reads: auth matrix, bad input (4xx JSON, database unchanged), slugs and
salary ranges."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from shortlist.auth import Role
from shortlist.db.types import AsyncPool

MakeToken = Callable[[str, Role], Awaitable[str]]

GOOD = {
    "company_name": "  Acme Robotics ",
    "job_title": "Senior Backend Engineer (Python)",
    "city_location": "Zürich",
    "description": "Build the APIs behind our warehouse robots. PostgreSQL, Python, Kafka.",
    "salary_min_ks": 120,
    "salary_max_ks": 150,
    "currency_code": "chf",
}


# --- pure functions -------------------------------------------------------------------------


# --- API helpers ----------------------------------------------------------------------------


async def snapshot(pool: AsyncPool) -> list[tuple[Any, ...]]:
    """Everything a write could change, to prove a refused request changed nothing."""
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT id, company_name, job_title, city_location, description, salary_min_ks,"
            " salary_max_ks, currency_code, detail_page_slug, updated_at, owner_token_id"
            " FROM job_listings ORDER BY id"
        )
        return [tuple(r.values()) for r in await cur.fetchall()]


def assert_error(resp: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    err = resp.json()["error"]
    assert err["message"]
    if code is not None:
        assert err["code"] == code
    return dict(err)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
async def tokens(make_token: MakeToken) -> dict[str, str]:
    return {
        "acme": await make_token("Acme Robotics", Role.company),
        "globex": await make_token("Globex", Role.company),
        "recruiter": await make_token("Rita Recruiter", Role.recruiter),
        "admin": await make_token("Ops", Role.admin),
    }


async def create(client: httpx.AsyncClient, token: str, **overrides: Any) -> dict[str, Any]:
    resp = await client.post("/api/jobs", json={**GOOD, **overrides}, headers=bearer(token))
    assert resp.status_code == 201, resp.text
    body: dict[str, Any] = resp.json()
    return body


# --- create and read ------------------------------------------------------------------------


async def test_create_returns_listing_with_location_slug_and_salary_range(
    client: httpx.AsyncClient, pool: AsyncPool, tokens: dict[str, str]
) -> None:
    resp = await client.post("/api/jobs", json=GOOD, headers=bearer(tokens["acme"]))
    assert resp.status_code == 201, resp.text
    body = resp.json()
    assert resp.headers["location"] == f"/api/jobs/{body['id']}"
    assert body["company_name"] == "Acme Robotics"
    assert body["currency_code"] == "CHF"
    assert body["salary_range"] == "$120K - $150K CHF"
    assert body["detail_page_slug"] == (
        f"acme-robotics-senior-backend-engineer-python-zurich-{body['id']}"
    )
    assert body["embedding_status"] == "pending"
    assert body["embedded_at"] is None and body["embedding_error"] is None
    assert set(body) == {
        "id", "company_name", "job_title", "city_location", "description", "salary_min_ks",
        "salary_max_ks", "currency_code", "salary_range", "detail_page_slug", "created_at",
        "updated_at", "embedding_status", "embedded_at", "embedding_error", "work_mode",
        "source", "source_url", "status", "valid_through", "last_seen_at", "duplicate_of",
        "apply_url", "apply_email", "remote_countries", "visa_sponsorship", "salary_converted",
    }  # fmt: skip
    assert (body["source"], body["status"], body["source_url"]) == ("api", "open", None)
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT l.source, t.name FROM job_listings l JOIN api_tokens t"
            " ON t.id = l.owner_token_id WHERE l.id = %s",
            (body["id"],),
        )
        assert await cur.fetchone() == {"source": "api", "name": "Acme Robotics"}


async def test_get_by_id_and_by_slug_is_public(
    client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    created = await create(client, tokens["acme"], salary_min_ks=None)
    for ref in (created["id"], created["detail_page_slug"], created["id"].upper()):
        resp = await client.get(f"/api/jobs/{ref}")
        assert resp.status_code == 200, ref
        assert resp.json()["id"] == created["id"]
        assert resp.json()["salary_range"] == "Up to $150K CHF"


@pytest.mark.parametrize(
    "ref",
    [
        "5b1413a9-b917-4226-99e3-8600c836d6b2",  # fixed ids: parallel workers collect alike
        "acme-engineer-92b9bae7-0dcd-4e1f-aa60-5134b00d8441",
        "not-a-uuid",
        "12345",
        "%00",
        "x" * 5000,
        "0b6f3a52-7c1e-4d7a-9f55-2f1f0e0c9a1z",
    ],
)
async def test_unknown_or_malformed_reference_is_404_json(
    client: httpx.AsyncClient, ref: str
) -> None:
    assert_error(await client.get(f"/api/jobs/{ref}"), 404, "not_found")


# --- auth matrix ------------------------------------------------------------------------------


async def test_writes_need_a_company_or_admin_token(
    client: httpx.AsyncClient, pool: AsyncPool, tokens: dict[str, str]
) -> None:
    before = await snapshot(pool)
    assert_error(await client.post("/api/jobs", json=GOOD), 401, "unauthorized")
    assert_error(
        await client.post("/api/jobs", json=GOOD, headers=bearer("sl_not-a-real-token")), 401
    )
    assert_error(
        await client.post("/api/jobs", json=GOOD, headers={"Authorization": "Basic abc"}), 401
    )
    assert_error(
        await client.post("/api/jobs", json=GOOD, headers=bearer(tokens["recruiter"])),
        403,
        "forbidden",
    )
    assert await snapshot(pool) == before
    await create(client, tokens["acme"])
    await create(client, tokens["admin"])
    assert len(await snapshot(pool)) == 2


async def test_patch_by_owner_recomputes_slug_bumps_updated_at_and_queues_re_embed(
    client: httpx.AsyncClient,
    embed_pending: Callable[[], Awaitable[int]],
    tokens: dict[str, str],
) -> None:
    created = await create(client, tokens["acme"])
    assert await embed_pending() == 1
    embedded = (await client.get(f"/api/jobs/{created['id']}")).json()
    assert embedded["embedding_status"] == "embedded"

    resp = await client.patch(
        f"/api/jobs/{created['id']}",
        json={"job_title": "Staff Engineer", "salary_max_ks": None},
        headers=bearer(tokens["acme"]),
    )
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["job_title"] == "Staff Engineer"
    assert body["salary_range"] == "From $120K CHF"
    assert body["detail_page_slug"] == f"acme-robotics-staff-engineer-zurich-{created['id']}"
    assert body["updated_at"] > embedded["updated_at"]
    assert body["updated_at"] > body["embedded_at"]  # the indexer's re-embed condition
    # The old slug still resolves (by its id), to the renamed listing.
    old = await client.get(f"/api/jobs/{created['detail_page_slug']}")
    assert old.status_code == 200 and old.json()["job_title"] == "Staff Engineer"


async def test_patch_and_delete_permissions(
    client: httpx.AsyncClient, pool: AsyncPool, tokens: dict[str, str]
) -> None:
    created = await create(client, tokens["acme"])
    url = f"/api/jobs/{created['id']}"
    change = {"description": "Changed."}
    before = await snapshot(pool)
    assert_error(await client.patch(url, json=change), 401)
    assert_error(await client.patch(url, json=change, headers=bearer(tokens["recruiter"])), 403)
    assert_error(await client.patch(url, json=change, headers=bearer(tokens["globex"])), 403)
    assert_error(await client.delete(url), 401)
    assert_error(await client.delete(url, headers=bearer(tokens["recruiter"])), 403)
    assert_error(await client.delete(url, headers=bearer(tokens["globex"])), 403)
    assert await snapshot(pool) == before

    resp = await client.patch(url, json=change, headers=bearer(tokens["admin"]))
    assert resp.status_code == 200 and resp.json()["description"] == "Changed."
    resp = await client.delete(url, headers=bearer(tokens["acme"]))
    assert resp.status_code == 204 and resp.content == b""
    # DELETE closes: the listing answers with its status, and closing again changes nothing.
    closed = await client.get(url)
    assert closed.status_code == 200 and closed.json()["status"] == "closed"
    assert (await client.delete(url, headers=bearer(tokens["acme"]))).status_code == 204

    other = await create(client, tokens["globex"], company_name="Globex")
    resp = await client.delete(f"/api/jobs/{other['id']}", headers=bearer(tokens["admin"]))
    assert resp.status_code == 204
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT DISTINCT status FROM job_listings")
        assert [r["status"] for r in await cur.fetchall()] == ["closed"]


async def test_unchanged_patch_does_not_bump_updated_at(
    client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    created = await create(client, tokens["acme"])
    resp = await client.patch(
        f"/api/jobs/{created['id']}",
        json={"job_title": created["job_title"]},
        headers=bearer(tokens["acme"]),
    )
    assert resp.status_code == 200
    assert resp.json()["updated_at"] == created["updated_at"]


# --- bad input: 4xx JSON, nothing changed -------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({k: v for k, v in GOOD.items() if k != "company_name"}, 422),
        ({k: v for k, v in GOOD.items() if k != "description"}, 422),
        ({**GOOD, "salary_min_ks": 200}, 422),
        ({**GOOD, "currency_code": "dollars"}, 422),
        ({**GOOD, "currency_code": "U$D"}, 422),
        ({**GOOD, "salary_max_ks": -5}, 422),
        ({**GOOD, "salary_max_ks": 10**9}, 422),
        ({**GOOD, "salary_max_ks": "lots"}, 422),
        ({**GOOD, "job_title": "t" * 301}, 422),
        ({**GOOD, "description": "nul \u0000 inside"}, 422),
        ({**GOOD, "owner_token_id": 1}, 422),
        ({**GOOD, "company_name": None}, 422),
        ([GOOD], 422),
        ("just a string", 422),
    ],
)
async def test_bad_create_bodies_are_refused(
    client: httpx.AsyncClient,
    pool: AsyncPool,
    tokens: dict[str, str],
    body: Any,
    status: int,
) -> None:
    before = await snapshot(pool)
    resp = await client.post("/api/jobs", json=body, headers=bearer(tokens["acme"]))
    assert_error(resp, status)
    assert await snapshot(pool) == before


async def test_salary_order_error_names_the_problem(
    client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    resp = await client.post(
        "/api/jobs", json={**GOOD, "salary_min_ks": 200}, headers=bearer(tokens["acme"])
    )
    err = assert_error(resp, 422, "invalid_request")
    assert "salary_min_ks (200) must not be greater than salary_max_ks (150)" in err["message"]


@pytest.mark.parametrize(
    ("content", "content_type"),
    [
        (b"{not json", "application/json"),
        (b"", "application/json"),
        (b"company_name=Acme", "application/x-www-form-urlencoded"),
        (b"\xff\xfe\x00garbage", "application/json"),
    ],
)
async def test_non_json_bodies_are_refused(
    client: httpx.AsyncClient,
    pool: AsyncPool,
    tokens: dict[str, str],
    content: bytes,
    content_type: str,
) -> None:
    resp = await client.post(
        "/api/jobs",
        content=content,
        headers={**bearer(tokens["acme"]), "Content-Type": content_type},
    )
    assert_error(resp, 422)
    assert await snapshot(pool) == []


async def test_bad_patches_are_refused_and_change_nothing(
    client: httpx.AsyncClient, pool: AsyncPool, tokens: dict[str, str]
) -> None:
    created = await create(client, tokens["acme"])
    url = f"/api/jobs/{created['id']}"
    auth = bearer(tokens["acme"])
    before = await snapshot(pool)
    for body in ({}, {"company_name": None}, {"nope": 1}, {"currency_code": "EURO"}):
        assert_error(await client.patch(url, json=body, headers=auth), 422)
    # Valid alone, invalid against the stored salary_max_ks (150).
    err = assert_error(await client.patch(url, json={"salary_min_ks": 151}, headers=auth), 400)
    assert err["field"] == "salary_min_ks"
    assert_error(
        await client.patch(f"/api/jobs/{uuid.uuid4()}", json={"description": "x"}, headers=auth),
        404,
    )
    assert_error(
        await client.patch("/api/jobs/not-an-id", json={"description": "x"}, headers=auth), 404
    )
    assert_error(await client.delete("/api/jobs/not-an-id", headers=auth), 404)
    assert await snapshot(pool) == before


# --- e-mail submissions -------------------------------------------------------------------------

EMAIL = (
    b"From: Acme Careers <jobs@acme-robotics.io>\r\n"
    b"To: post@shortlist.example\r\n"
    b"Subject: Robotics Software Engineer at Acme Robotics (Berlin)\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"\r\n"
    b"Salary: EUR 70k - 90k\r\n"
    b"\r\n"
    b"Write ROS 2 software for our warehouse robots.\r\n"
)


async def test_email_post_creates_a_listing(
    client: httpx.AsyncClient, pool: AsyncPool, tokens: dict[str, str]
) -> None:
    resp = await client.post(
        "/api/jobs/email",
        content=EMAIL,
        headers={**bearer(tokens["acme"]), "Content-Type": "message/rfc822"},
    )
    assert resp.status_code == 201, resp.text
    body = resp.json()
    assert resp.headers["location"] == f"/api/jobs/{body['id']}"
    assert (body["job_title"], body["company_name"], body["city_location"]) == (
        "Robotics Software Engineer",
        "Acme Robotics",
        "Berlin",
    )
    assert body["salary_range"] == "$70K - $90K EUR"
    assert "Write ROS 2 software for our warehouse robots." in body["description"]
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT source FROM job_listings WHERE id = %s", (body["id"],))
        assert await cur.fetchone() == {"source": "email"}


async def test_the_same_message_posted_again_is_the_same_listing(
    client: httpx.AsyncClient, pool: AsyncPool, tokens: dict[str, str]
) -> None:
    async def post(raw: bytes, token: str = tokens["acme"]) -> httpx.Response:
        headers = {**bearer(token), "Content-Type": "message/rfc822"}
        return await client.post("/api/jobs/email", content=raw, headers=headers)

    async def listings() -> int:
        async with pool.connection() as conn:
            cur = await conn.execute("SELECT count(*) AS n FROM job_listings")
            row = await cur.fetchone()
        assert row is not None
        return int(row["n"])

    first = await post(EMAIL)
    assert first.status_code == 201, first.text
    again = await post(EMAIL)  # the same bytes, no Message-ID
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    assert again.headers["location"] == first.headers["location"]
    assert await listings() == 1
    # A Message-ID names the message whatever else a resend changed (a Received line, a Date).
    with_id = b"Message-ID: <post-42@acme-robotics.io>\r\n" + EMAIL
    resent = b"Received: from relay.example by mx.example; Tue, 1 Dec 2026 10:00:00 +0000\r\n"
    answers = await asyncio.gather(post(with_id), post(with_id), post(resent + with_id))
    assert sorted(r.status_code for r in answers) == [200, 200, 201], [r.text for r in answers]
    assert len({r.json()["id"] for r in answers}) == 1
    assert first.json()["id"] not in {r.json()["id"] for r in answers}
    assert await listings() == 2
    # Another company posting the same message gets a listing of its own, never Acme's.
    globex = await post(EMAIL, tokens["globex"])
    assert globex.status_code == 201, globex.text
    assert globex.json()["company_name"] == "Globex"
    assert await listings() == 3
    # A changed message is a new post.
    changed = await post(EMAIL.replace(b"warehouse robots", b"delivery robots"))
    assert changed.status_code == 201, changed.text
    assert await listings() == 4


async def test_email_post_refusals(
    client: httpx.AsyncClient, pool: AsyncPool, tokens: dict[str, str]
) -> None:
    rfc822 = {"Content-Type": "message/rfc822"}
    assert_error(await client.post("/api/jobs/email", content=EMAIL, headers=rfc822), 401)
    assert_error(
        await client.post(
            "/api/jobs/email", content=EMAIL, headers={**rfc822, **bearer(tokens["recruiter"])}
        ),
        403,
    )
    for content_type in ("text/plain", "application/json", "message/rfc8222"):
        resp = await client.post(
            "/api/jobs/email",
            content=EMAIL,
            headers={**bearer(tokens["acme"]), "Content-Type": content_type},
        )
        assert_error(resp, 415, "unsupported_media_type")
    no_city = EMAIL.replace(b" (Berlin)", b"")
    err = assert_error(
        await client.post(
            "/api/jobs/email", content=no_city, headers={**rfc822, **bearer(tokens["acme"])}
        ),
        400,
        "bad_input",
    )
    assert "city" in err["message"]
    assert_error(
        await client.post(
            "/api/jobs/email", content=b"", headers={**rfc822, **bearer(tokens["acme"])}
        ),
        400,
    )
    assert await snapshot(pool) == []
    # Content-Type parameters are fine.
    resp = await client.post(
        "/api/jobs/email",
        content=EMAIL,
        headers={**bearer(tokens["acme"]), "Content-Type": "Message/RFC822; charset=utf-8"},
    )
    assert resp.status_code == 201


async def test_fixed_paths_are_not_taken_for_listing_references(
    client: httpx.AsyncClient,
) -> None:
    # GET /email names no listing (only POST is an endpoint there); /search is the search.
    assert_error(await client.get("/api/jobs/email"), 404)
    assert_error(await client.get("/api/jobs/search"), 422)
    resp = await client.get("/api/jobs/search", params={"q": "anything"})
    assert resp.status_code == 200 and resp.json()["hits"] == []
