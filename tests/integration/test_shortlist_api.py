"""A recruiter's shortlist: marks (who may set and read them, bad input changes nothing), marks
shown on later searches, people already contacted or rejected hidden from later searches and
their backfill, the CSV export, and ``why`` per result."""

from __future__ import annotations

import csv
import io
import uuid
from typing import Any

import httpx
import pytest

from shortlist.auth import Role
from shortlist.bootstrap import Services
from shortlist.talent import marks
from tests.backfill_support import (
    BACKFILL,
    MakeToken,
    auth,
    get_results,
    python_backend_people,
    seed_corpus,
)
from tests.fakes import FakeEmbedder

BRIEF = {
    "query": "python backend developer",
    "role": "Python Backend Developer",
    "location": "Berlin",
    "min_years_experience": 5,
    "skills": ["Python", "Kafka"],
}


pytestmark = pytest.mark.settings(BACKFILL)


@pytest.fixture
async def tokens(make_token: MakeToken) -> dict[str, str]:
    return {
        "owner": await make_token("rita", Role.recruiter),
        "other": await make_token("otto", Role.recruiter),
        "admin": await make_token("ops", Role.admin),
    }


async def start(client: httpx.AsyncClient, token: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post("/api/searches", json=body, headers=auth(token))
    assert response.status_code == 202, response.text
    page = await get_results(client, token, response.json()["searchId"], limit=500)
    return page


async def put_mark(
    client: httpx.AsyncClient, token: str, candidate_id: str, body: dict[str, Any]
) -> httpx.Response:
    return await client.put(f"/api/candidates/{candidate_id}/mark", json=body, headers=auth(token))


async def count_marks(services: Services) -> int:
    async with services.pool.connection() as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM candidate_marks")
        row = await cur.fetchone()
    return int(row["n"]) if row else 0


@pytest.fixture
async def searched(
    services: Services, embedder: FakeEmbedder, client: httpx.AsyncClient, tokens: dict[str, str]
) -> dict[str, Any]:
    await seed_corpus(services.pool, embedder, python_backend_people(20))
    return await start(client, tokens["owner"], BRIEF)


async def test_results_carry_why_against_the_brief(searched: dict[str, Any]) -> None:
    why = searched["results"][0]["why"]
    assert why["roleMatch"] is True and why["locationMatch"] is True
    assert why["yearsExperience"] == 6 and why["minYearsExperience"] == 5 and why["yearsOk"]
    assert why["skillsMatched"] == ["Python"] and why["skillsMissing"] == ["Kafka"]
    assert why["fit"] == pytest.approx(searched["results"][0]["score"], abs=1e-3)
    assert "skills: Python ✓, Kafka –" in why["summary"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"status": "maybe"}, "status"),
        ({"status": "rejected", "note": "x" * (marks.MAX_NOTE + 1)}, "note"),
        ({"note": "no status"}, "status"),
        ({"status": "contacted", "extra": 1}, "extra"),
    ],
)
async def test_bad_marks_are_422_and_write_nothing(
    client: httpx.AsyncClient,
    services: Services,
    tokens: dict[str, str],
    searched: dict[str, Any],
    body: dict[str, Any],
    field: str,
) -> None:
    person = searched["results"][0]["candidate"]["id"]
    response = await put_mark(client, tokens["owner"], person, body)
    assert response.status_code == 422
    assert response.json()["error"]["field"] == field
    assert await count_marks(services) == 0


async def test_marks_are_the_recruiters_own(
    client: httpx.AsyncClient,
    services: Services,
    tokens: dict[str, str],
    searched: dict[str, Any],
) -> None:
    person = searched["results"][0]["candidate"]["id"]
    # Someone the other recruiter never found, or no one at all: 404, nothing written.
    assert (
        await put_mark(client, tokens["other"], person, {"status": "rejected"})
    ).status_code == 404
    missing = str(uuid.uuid4())
    assert (
        await put_mark(client, tokens["owner"], missing, {"status": "rejected"})
    ).status_code == 404
    assert (
        await put_mark(client, tokens["owner"], "nope", {"status": "rejected"})
    ).status_code == 404
    assert await count_marks(services) == 0

    ok = await put_mark(client, tokens["owner"], person, {"status": "shortlisted", "note": "call"})
    assert ok.status_code == 200, ok.text
    assert ok.json()["status"] == "shortlisted" and ok.json()["note"] == "call"
    again = await put_mark(
        client, tokens["owner"], person, {"status": "contacted", "note": "mailed"}
    )
    assert again.json()["status"] == "contacted"

    mine = (await client.get("/api/shortlist", headers=auth(tokens["owner"]))).json()["marks"]
    assert [(m["candidateId"], m["status"], m["note"]) for m in mine] == [
        (person, "contacted", "mailed")
    ]
    theirs = (await client.get("/api/shortlist", headers=auth(tokens["other"]))).json()["marks"]
    assert theirs == []
    everyone = (await client.get("/api/shortlist", headers=auth(tokens["admin"]))).json()["marks"]
    assert [m["recruiter"] for m in everyone] == ["rita"]
    bad = await client.get("/api/shortlist?status=maybe", headers=auth(tokens["owner"]))
    assert bad.status_code == 422


async def test_marks_show_on_later_searches_and_handled_people_are_hidden(
    client: httpx.AsyncClient, tokens: dict[str, str], searched: dict[str, Any]
) -> None:
    first, second, third = (r["candidate"]["id"] for r in searched["results"][:3])
    await put_mark(client, tokens["owner"], first, {"status": "shortlisted", "note": "great"})
    await put_mark(client, tokens["owner"], second, {"status": "contacted"})
    await put_mark(client, tokens["owner"], third, {"status": "rejected", "note": "no"})

    later = await start(client, tokens["owner"], BRIEF)
    ids = [r["candidate"]["id"] for r in later["results"]]
    assert first in ids and second not in ids and third not in ids
    assert later["resultCount"] == searched["resultCount"] - 2
    assert [r["rank"] for r in later["results"]] == list(range(1, len(ids) + 1))
    assert later["hiddenCount"] == 2
    shown = next(r for r in later["results"] if r["candidate"]["id"] == first)
    assert shown["mark"]["status"] == "shortlisted" and shown["mark"]["note"] == "great"

    hidden = await client.get(
        f"/api/searches/{later['searchId']}/hidden", headers=auth(tokens["owner"])
    )
    assert {(h["candidate"]["id"], h["mark"]["status"]) for h in hidden.json()["hidden"]} == {
        (second, "contacted"),
        (third, "rejected"),
    }
    # The other recruiter's search is not affected by these marks.
    theirs = await start(client, tokens["other"], BRIEF)
    assert theirs["hiddenCount"] == 0 and theirs["resultCount"] == searched["resultCount"]
    assert all(r["mark"] is None for r in theirs["results"])


async def test_backfill_skips_people_the_recruiter_handled(
    services: Services, client: httpx.AsyncClient, tokens: dict[str, str], searched: dict[str, Any]
) -> None:
    from shortlist.talent import repository as repo

    person = searched["results"][0]["candidate"]["id"]
    async with services.pool.connection() as conn:
        await conn.execute(
            "UPDATE candidates SET external_id = 'talent:ada' WHERE id = %s", (person,)
        )
    await put_mark(client, tokens["owner"], person, {"status": "rejected"})
    niche = await client.post(
        "/api/searches", json={"query": "rust firmware"}, headers=auth(tokens["owner"])
    )
    search_id = uuid.UUID(niche.json()["searchId"])
    assert "talent:ada" in await repo.known_external_ids(services.pool, search_id)
    await marks.record_hidden_discovered(
        services.pool, search_id, ["talent:ada", "talent:bob"], services.spaces.active().space
    )
    page = await get_results(client, tokens["owner"], str(search_id))
    assert page["hiddenCount"] == 1


async def test_csv_export_in_rank_order_with_why_and_escaped_formulas(
    services: Services, client: httpx.AsyncClient, tokens: dict[str, str], searched: dict[str, Any]
) -> None:
    person = searched["results"][0]["candidate"]["id"]
    async with services.pool.connection() as conn:
        await conn.execute(
            "UPDATE candidates SET full_name = '=HYPERLINK(\"x\")', location = '+Berlin'"
            " WHERE id = %s",
            (person,),
        )
    await put_mark(client, tokens["owner"], person, {"status": "shortlisted", "note": "-ok ☕"})
    url = f"/api/searches/{searched['searchId']}/results.csv"
    assert (await client.get(url, headers=auth(tokens["other"]))).status_code == 404
    response = await client.get(url, headers=auth(tokens["owner"]))
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/csv; charset=utf-8"
    assert "attachment" in response.headers["content-disposition"]
    rows = list(csv.reader(io.StringIO(response.content.decode("utf-8"))))
    assert rows[0] == list(marks.CSV_HEADER)
    assert [int(r[0]) for r in rows[1:]] == list(range(1, searched["resultCount"] + 1))
    top = dict(zip(rows[0], rows[1], strict=True))
    assert top["name"] == '\'=HYPERLINK("x")' and top["location"] == "'+Berlin"
    assert top["mark"] == "shortlisted" and top["note"] == "'-ok ☕"
    assert top["why"].startswith(
        "location: Berlin ✓; years: 6 ≥ 5 ✓; skills: Python ✓, Kafka –; role ✓"
    )
