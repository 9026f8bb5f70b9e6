"""The recruiter search API's contract without any worker: who may do what, what is refused
(and that a refusal changes nothing), the response shapes, the internal-corpus phase."""

from __future__ import annotations

import dataclasses
from typing import Any

import httpx
import pytest

from shortlist.auth import Role
from shortlist.bootstrap import Services
from tests.backfill_support import (
    BACKFILL,
    MakeToken,
    Person,
    auth,
    get_results,
    python_backend_people,
    seed_corpus,
)
from tests.fakes import FakeEmbedder

NICHE = {
    "query": "Rust embedded firmware for battery-powered sensors",
    "role": "Rust Embedded Firmware Engineer",
    "location": "Berlin",
    "min_years_experience": 3,
    "skills": ["Rust", "Embedded Rust"],
}


# No provider is ever called here: no worker runs.
pytestmark = pytest.mark.settings(BACKFILL)


@pytest.fixture
async def tokens(make_token: MakeToken) -> dict[str, str]:
    return {
        "owner": await make_token("owner", Role.recruiter),
        "other": await make_token("other recruiter", Role.recruiter),
        "company": await make_token("acme", Role.company),
        "admin": await make_token("ops", Role.admin),
    }


async def create(client: httpx.AsyncClient, token: str, body: dict[str, Any]) -> httpx.Response:
    return await client.post("/api/searches", json=body, headers=auth(token))


async def count(services: Services, table: str) -> int:
    async with services.pool.connection() as conn:
        cur = await conn.execute(f"SELECT count(*) AS n FROM {table}")
        row = await cur.fetchone()
    assert row is not None
    return int(row["n"])


async def test_start_search_answers_202_with_the_contract_fields(
    client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    response = await create(client, tokens["owner"], NICHE)
    assert response.status_code == 202
    body = response.json()
    assert set(body) == {"searchId", "status", "resultsUrl"}
    assert body["status"] == "running"
    assert body["resultsUrl"] == f"/api/results?searchId={body['searchId']}"

    results = await client.get(body["resultsUrl"], headers=auth(tokens["owner"]))
    assert results.status_code == 200
    page = results.json()
    assert {
        "searchId",
        "status",
        "isRunning",
        "resultCount",
        "results",
        "candidates",
        "nextAfter",
        "attempts",
    } <= set(page)
    assert page["isRunning"] is True and page["resultCount"] == 0 and page["nextAfter"] == 0
    assert page["candidates"] == {
        "queued": 0,
        "running": 0,
        "succeeded": 0,
        "failed_no_email": 0,
        "failed_transient": 0,
        "failed_permanent": 0,
        "skipped": 0,
        "below_threshold": 0,
    }

    summary = await client.get(f"/api/searches/{body['searchId']}", headers=auth(tokens["owner"]))
    assert summary.status_code == 200
    detail = summary.json()
    assert [t["tier"] for t in detail["tiers"]] == ["strict", "broad", "serp"]
    assert {t["status"] for t in detail["tiers"]} == {"queued"}
    assert detail["backfillStarted"] is True and detail["targetCount"] == 15
    assert detail["skills"] == ["Rust", "Embedded Rust"] and detail["minYearsExperience"] == 3


async def test_who_may_do_what(client: httpx.AsyncClient, tokens: dict[str, str]) -> None:
    # Starting: recruiters and admins only.
    assert (await client.post("/api/searches", json=NICHE)).status_code == 401
    bad_scheme = {"Authorization": "Basic abc"}
    assert (await client.post("/api/searches", json=NICHE, headers=bad_scheme)).status_code == 401
    unknown = auth("sl_not-a-real-token")
    assert (await client.post("/api/searches", json=NICHE, headers=unknown)).status_code == 401
    assert (await create(client, tokens["company"], NICHE)).status_code == 403
    assert (await create(client, tokens["admin"], NICHE)).status_code == 202
    search_id = (await create(client, tokens["owner"], NICHE)).json()["searchId"]

    paths = [
        ("GET", f"/api/results?searchId={search_id}"),
        ("GET", f"/api/searches/{search_id}"),
        ("POST", f"/api/searches/{search_id}/retry"),
        ("POST", f"/api/searches/{search_id}/candidates/1/retry"),
    ]
    for method, path in paths:
        assert (await client.request(method, path)).status_code == 401, path
        company = await client.request(method, path, headers=auth(tokens["company"]))
        assert company.status_code == 403, path
        # Another recruiter cannot tell the search from one that does not exist.
        other = await client.request(method, path, headers=auth(tokens["other"]))
        assert other.status_code == 404, path
        assert other.json()["error"]["code"] == "not_found"
        missing = path.replace(search_id, "00000000-0000-0000-0000-000000000000")
        absent = await client.request(method, missing, headers=auth(tokens["owner"]))
        assert absent.json() == other.json(), path

    # The owner and an admin may read it.
    for who in ("owner", "admin"):
        page = await client.get(f"/api/results?searchId={search_id}", headers=auth(tokens[who]))
        assert page.status_code == 200 and page.json()["searchId"] == search_id
    # Each recruiter lists only their own searches.
    mine = (await client.get("/api/searches", headers=auth(tokens["owner"]))).json()
    assert [s["searchId"] for s in mine["searches"]] == [search_id]
    theirs = (await client.get("/api/searches", headers=auth(tokens["other"]))).json()
    assert theirs["searches"] == []


async def test_malformed_ids_are_404_and_bad_paging_is_422(
    client: httpx.AsyncClient, tokens: dict[str, str]
) -> None:
    owner = auth(tokens["owner"])
    search_id = (await create(client, tokens["owner"], NICHE)).json()["searchId"]
    for bad in ("nope", "1", "' OR 1=1 --", "x" * 99):
        assert (await client.get(f"/api/results?searchId={bad}", headers=owner)).status_code == 404
        assert (await client.get(f"/api/searches/{bad}", headers=owner)).status_code == 404
    for bad_cid in ("abc", "-1", "9" * 30):
        path = f"/api/searches/{search_id}/candidates/{bad_cid}/retry"
        assert (await client.post(path, headers=owner)).status_code == 404
    assert (await client.get("/api/results", headers=owner)).status_code == 422  # no searchId
    for params in ({"after": -1}, {"after": 1_000_001}, {"after": "x"}, {"limit": 0}):
        response = await client.get(
            "/api/results", params={"searchId": search_id, **params}, headers=owner
        )
        assert response.status_code == 422, params
        assert response.json()["error"]["code"] == "invalid_request"
    ok = await client.get(
        "/api/results", params={"searchId": search_id, "after": 1_000_000}, headers=owner
    )
    assert ok.status_code == 200 and ok.json()["results"] == []


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"query": ""},
        {"query": "   "},
        {"query": "x" * 1001},
        {"query": "ok", "role": "r" * 201},
        {"query": "ok", "location": "l" * 201},
        {"query": "ok", "min_years_experience": -1},
        {"query": "ok", "min_years_experience": 81},
        {"query": "ok", "skills": [f"s{i}" for i in range(21)]},
        {"query": "ok", "skills": ["s" * 51]},
        {"query": "ok", "skills": [""]},
        {"query": "ok", "skills": "Rust"},
        {"query": 42},
        {"query": "ok", "unknown_field": 1},
    ],
)
async def test_bad_input_is_422_and_writes_nothing(
    client: httpx.AsyncClient, services: Services, tokens: dict[str, str], body: dict[str, Any]
) -> None:
    response = await create(client, tokens["owner"], body)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "invalid_request"
    assert await count(services, "searches") == 0
    assert await count(services, "search_tiers") == 0


async def test_not_json_is_422(client: httpx.AsyncClient, tokens: dict[str, str]) -> None:
    response = await client.post(
        "/api/searches",
        content=b"{not json",
        headers={**auth(tokens["owner"]), "Content-Type": "application/json"},
    )
    assert response.status_code == 422


async def test_retry_conflicts_while_running_and_for_a_candidate_not_failed(
    client: httpx.AsyncClient, services: Services, tokens: dict[str, str]
) -> None:
    owner = auth(tokens["owner"])
    search_id = (await create(client, tokens["owner"], NICHE)).json()["searchId"]
    running = await client.post(f"/api/searches/{search_id}/retry", headers=owner)
    assert running.status_code == 409
    assert running.json()["error"]["message"] == "search is still running"
    async with services.pool.connection() as conn:
        cur = await conn.execute(
            "INSERT INTO search_candidates (search_id, external_id, tier)"
            " VALUES (%s, 'talent:q', 'strict') RETURNING id",
            (search_id,),
        )
        row = await cur.fetchone()
        await conn.commit()
    assert row is not None
    queued = await client.post(
        f"/api/searches/{search_id}/candidates/{row['id']}/retry", headers=owner
    )
    assert queued.status_code == 409
    assert "queued" in queued.json()["error"]["message"]
    absent = await client.post(
        f"/api/searches/{search_id}/candidates/{row['id'] + 1}/retry", headers=owner
    )
    assert absent.status_code == 404
    # The queued candidate is listed with its state, ready for the UI.
    page = (await client.get(f"/api/results?searchId={search_id}", headers=owner)).json()
    assert page["attempts"] == [
        {
            "candidateId": row["id"],
            "externalId": "talent:q",
            "displayName": None,
            "tier": "strict",
            "status": "queued",
            "lastError": None,
        }
    ]
    assert page["candidates"]["queued"] == 1


async def test_the_internal_corpus_serves_a_broad_brief_and_not_a_niche_one(
    client: httpx.AsyncClient,
    services: Services,
    embedder: FakeEmbedder,
    tokens: dict[str, str],
) -> None:
    # Not in Germany: a Munich brief leaves them out (another German city would be a maybe,
    # shortlist.talent.constraints).
    londoners = [
        dataclasses.replace(p, location="London, United Kingdom") for p in python_backend_people(30)
    ]
    await seed_corpus(services.pool, embedder, londoners)
    await seed_corpus(
        services.pool,
        embedder,
        [Person("Munich Backend", "Python Backend Developer", ("Python",), location="Munich")],
    )
    owner = auth(tokens["owner"])

    broad = (await create(client, tokens["owner"], {"query": "python backend developer"})).json()
    assert broad["status"] == "complete"
    page = await get_results(client, tokens["owner"], broad["searchId"], limit=500)
    assert page["resultCount"] == 31 and page["isRunning"] is False
    scores = [r["score"] for r in page["results"]]
    assert all(s >= services.settings.internal_min_score for s in scores)

    # Filters: location substring (any case), skills overlap, minimum experience.
    munich = (
        await create(client, tokens["owner"], {"query": "python backend", "location": "munich"})
    ).json()
    page = (await client.get(munich["resultsUrl"], headers=owner)).json()
    assert [r["candidate"]["fullName"] for r in page["results"]] == ["Munich Backend"]
    assert page["status"] == "running"  # 1 < 15: backfilling
    veterans = (
        await create(
            client, tokens["owner"], {"query": "python backend", "min_years_experience": 7}
        )
    ).json()
    assert (await client.get(veterans["resultsUrl"], headers=owner)).json()["resultCount"] == 0

    niche = (await create(client, tokens["owner"], NICHE)).json()
    page = (await client.get(niche["resultsUrl"], headers=owner)).json()
    assert page["resultCount"] == 0 and page["status"] == "running"


async def test_results_page_in_rank_order_after_a_cursor(
    client: httpx.AsyncClient,
    services: Services,
    embedder: FakeEmbedder,
    tokens: dict[str, str],
) -> None:
    await seed_corpus(services.pool, embedder, python_backend_people(20))
    started = (await create(client, tokens["owner"], {"query": "python backend developer"})).json()
    seen: list[int] = []
    cursor = 0
    while True:
        page = await get_results(
            client, tokens["owner"], started["searchId"], after=cursor, limit=6
        )
        if not page["results"]:
            break
        seen.extend(r["rank"] for r in page["results"])
        cursor = page["nextAfter"]
    assert seen == list(range(1, 21))
    assert cursor == 20


async def test_embedder_trouble_refuses_the_search_and_writes_nothing(
    client: httpx.AsyncClient,
    services: Services,
    embedder: FakeEmbedder,
    tokens: dict[str, str],
) -> None:
    embedder.fail_transient_times = 1
    down = await create(client, tokens["owner"], NICHE)
    assert down.status_code == 503
    assert down.headers["Retry-After"].isdigit()
    embedder.fail_permanent_on = lambda text: "unembeddable" in text
    rejected = await create(client, tokens["owner"], {"query": "an unembeddable brief"})
    assert rejected.status_code == 400
    assert rejected.json()["error"]["field"] == "query"
    assert await count(services, "searches") == 0
    assert (await create(client, tokens["owner"], NICHE)).status_code == 202


@pytest.mark.parametrize(
    "body",
    [
        {"query": "rust\u0000engineer"},
        {"query": "rust engineer", "role": "dev\u0000ops"},
        {"query": "rust engineer", "skills": ["ok", "bad\u0000skill"]},
    ],
)
async def test_text_the_database_cannot_store_is_a_422_naming_the_field(
    client: httpx.AsyncClient, tokens: dict[str, str], services: Services, body: dict[str, Any]
) -> None:
    response = await create(client, tokens["owner"], body)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["field"] in {"query", "role", "skills"}
    assert await count(services, "searches") == 0
