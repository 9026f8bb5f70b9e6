"""Job seekers' filters and explanations: work mode (given, inferred, validated), freshness,
facets with counts, and per-hit ``why``; salary in the listing's own currency style."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from email.message import EmailMessage
from pathlib import Path

import httpx
import pytest

from shortlist import places
from shortlist.db.types import AsyncPool
from shortlist.listings.ingest import ListingFileReader, ingest_listings
from shortlist.listings.mail.listing import to_listing
from shortlist.listings.mail.parse import read_message
from shortlist.listings.models import ListingCreate
from shortlist.listings.repository import copy_listings

EmbedPending = Callable[[], Awaitable[int]]


def listing(title: str, city: str, description: str, **kw: object) -> ListingCreate:
    return ListingCreate.model_validate(
        {
            "job_title": title,
            "company_name": "Cedar Labs",
            "city_location": city,
            "description": description,
            **kw,
        }
    )


CORPUS = [
    listing("Backend Engineer", "Berlin", "Python services; fully remote team.", salary_max_ks=90,
            currency_code="EUR"),
    listing("Backend Engineer", "Remote", "Python APIs on PostgreSQL.", salary_max_ks=160,
            currency_code="EUR"),
    listing("Python Developer", "Lisbon", "Hybrid: 2 days a week in the office. R&D <b>Python</b>",
            salary_min_ks=1100, salary_max_ks=1500, currency_code="SEK"),
    listing("Python Engineer", "Berlin", "On site in our lab, Python and C.", work_mode="remote"),
    listing("Nurse", "Boston", "Intensive care unit."),
]  # fmt: skip


async def load(pool: AsyncPool, embed_pending: EmbedPending) -> None:
    async with pool.connection() as conn, conn.transaction():
        await copy_listings(conn, CORPUS, source="file")
    await embed_pending()


async def test_work_mode_is_inferred_unless_given(pool: AsyncPool) -> None:
    async with pool.connection() as conn:
        async with conn.transaction():
            await copy_listings(conn, CORPUS, source="file")
        cur = await conn.execute("SELECT description, work_mode FROM job_listings")
        modes = {r["description"][:20]: r["work_mode"] for r in await cur.fetchall()}
    assert modes == {
        "Python services; ful": "remote",  # "fully remote"
        "Python APIs on Postg": "remote",  # city "Remote"
        "Hybrid: 2 days a wee": "hybrid",
        "On site in our lab, ": "remote",  # given by the producer: never overridden
        "Intensive care unit.": "onsite",
    }


async def test_api_accepts_and_returns_work_mode_and_refuses_unknown(
    client: httpx.AsyncClient, make_token: object, pool: AsyncPool
) -> None:
    from shortlist.auth import Role

    token = await make_token("A", Role.company)  # type: ignore[operator]
    headers = {"Authorization": f"Bearer {token}"}
    body = {"company_name": "A", "job_title": "T", "city_location": "Oslo", "description": "d"}
    bad = await client.post("/api/jobs", json={**body, "work_mode": "beach"}, headers=headers)
    assert bad.status_code == 422
    assert bad.json()["error"]["field"] == "work_mode"
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM job_listings")
        assert (await cur.fetchone() or {})["n"] == 0
    ok = await client.post("/api/jobs", json={**body, "work_mode": "Hybrid"}, headers=headers)
    assert ok.status_code == 201, ok.text
    assert ok.json()["work_mode"] == "hybrid"
    listing_id = ok.json()["id"]
    patched = await client.patch(
        f"/api/jobs/{listing_id}", json={"work_mode": "remote"}, headers=headers
    )
    assert patched.json()["work_mode"] == "remote"
    assert patched.json()["updated_at"] > ok.json()["updated_at"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"work_mode": "beach"}, "work_mode"),
        ({"posted_within_days": "-1"}, "posted_within_days"),
        ({"posted_within_days": "0"}, "posted_within_days"),
        ({"posted_within_days": "soon"}, "posted_within_days"),
    ],
)
async def test_bad_filters_get_422_naming_the_field(
    client: httpx.AsyncClient, params: dict[str, str], field: str
) -> None:
    resp = await client.get("/api/jobs/search", params={"q": "python", **params})
    assert resp.status_code == 422
    assert resp.json()["error"]["field"] == field


async def test_filters_facets_and_why(
    client: httpx.AsyncClient, pool: AsyncPool, embed_pending: EmbedPending
) -> None:
    await load(pool, embed_pending)
    async with pool.connection() as conn:
        await conn.execute(
            "UPDATE job_listings SET created_at = now() - interval '10 days'"
            " WHERE job_title = 'Python Developer'"
        )
    body = (await client.get("/api/jobs/search", params={"q": "python", "size": 10})).json()
    facets = body["facets"]
    # Four listings say "python"; the nurse is only a vector neighbour of the page.
    modes = {f["value"]: f["count"] for f in facets["work_mode"]}
    assert modes["remote"] == 3 and modes["hybrid"] == 1
    posted = {f["days"]: f["count"] for f in facets["posted_within_days"]}
    assert posted[1] == posted[7] == posted[30] - 1
    labels = {f["label"]: f["count"] for f in facets["salary"]}
    assert labels["€50K+"] == 2 and labels["€150K+"] == 1 and labels["SEK 1.5M+"] == 1
    assert facets["city"][0] == {"value": "Berlin", "count": 2}

    hit = next(h for h in body["hits"] if h["listing"]["job_title"] == "Python Developer")
    assert hit["why"]["matched_terms"] == ["python"]
    assert hit["why"]["via"] == "both"
    assert "<mark>Python</mark>" in hit["why"]["snippet"]
    # Markup in a description never reaches the page as markup.
    assert "<b>" not in hit["why"]["snippet"] and "R&amp;D" in hit["why"]["snippet"]

    remote = (
        await client.get("/api/jobs/search", params={"q": "python", "work_mode": "remote"})
    ).json()
    assert {h["listing"]["work_mode"] for h in remote["hits"]} == {"remote"}
    assert len(remote["hits"]) == 3
    fresh = (
        await client.get("/api/jobs/search", params={"q": "python", "posted_within_days": 7})
    ).json()
    assert "Python Developer" not in {h["listing"]["job_title"] for h in fresh["hits"]}


async def test_a_hit_found_only_by_meaning_says_so(
    client: httpx.AsyncClient, pool: AsyncPool, embed_pending: EmbedPending
) -> None:
    await load(pool, embed_pending)
    body = (await client.get("/api/jobs/search", params={"q": "zebra", "size": 10})).json()
    assert body["hits"] and {h["why"]["via"] for h in body["hits"]} == {"meaning"}
    assert all(h["why"]["matched_terms"] == [] for h in body["hits"])


async def test_files_and_e_mail_carry_work_mode(pool: AsyncPool, tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text(
        "title,company,location,description,work_mode\n"
        "QA,Initech,Austin,Tests.,Hybrid\n"
        "QA,Initech,Austin,Tests.,beach\n"
        "QA,Initech,Remote,Tests.,\n",
        encoding="utf-8",
    )
    with ListingFileReader(path) as reader:
        async with pool.connection() as conn:
            report = await ingest_listings(conn, reader)
    assert report.inserted == 2
    assert [(b.line, b.reason.split(":")[0]) for b in report.bad_rows] == [(3, "work_mode")]
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT work_mode FROM job_listings ORDER BY city_location")
        assert [r["work_mode"] for r in await cur.fetchall()] == ["hybrid", "remote"]

    msg = EmailMessage()
    msg["From"] = "Hiring <hr@acme.io>"
    msg["Subject"] = "QA Engineer at Acme (Oslo)"
    msg.set_content("Work mode: Remote\nTest our robots.\n")
    places.load()
    assert to_listing(read_message(bytes(msg)), None).work_mode == "remote"
    msg.set_content("Work mode: sometimes\nTest our robots.\n")
    assert to_listing(read_message(bytes(msg)), None).work_mode is None  # left to the database
