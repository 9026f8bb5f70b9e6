"""A job seeker's path (issue 41): where to apply (every producer), remote jobs' countries and
visa sponsorship (sources' fields, English and German text), salaries in one currency by the
bundled reference rates, and the search filters on them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from shortlist.auth import Role
from shortlist.db.types import AsyncPool
from shortlist.listings import eligibility, rates
from shortlist.listings.ingest import ListingFileReader, ingest_listings
from shortlist.listings.models import ListingCreate
from shortlist.listings.repository import copy_listings

EmbedPending = Callable[[], Awaitable[int]]


def listing(title: str, city: str, description: str, **kw: object) -> ListingCreate:
    return ListingCreate.model_validate(
        {
            "job_title": title,
            "company_name": kw.pop("company_name", "Cedar Labs"),
            "city_location": city,
            "description": description,
            **kw,
        }
    )


# --- who may take the job, from text ------------------------------------------------------


# --- from the sources' documented fields -------------------------------------------------


# --- producers: API, bulk file, e-mail ----------------------------------------------------


async def test_api_takes_apply_fields_validated_and_reads_the_rest_from_text(
    client: httpx.AsyncClient, make_token: Any
) -> None:
    token = await make_token("Acme", Role.company)
    headers = {"Authorization": f"Bearer {token}"}
    body = {
        "company_name": "Acme",
        "job_title": "Backend Engineer",
        "city_location": "Remote",
        "description": "Remote within the EU. Visa sponsorship available.",
    }
    for bad in (
        "ftp://acme.example/apply",
        "https://user:secret@acme.example/apply",
        "javascript:alert(1)",
        "acme.example/apply",
    ):
        resp = await client.post("/api/jobs", json={**body, "apply_url": bad}, headers=headers)
        assert resp.status_code == 422, bad
        assert resp.json()["error"]["field"] == "apply_url"
    resp = await client.post(
        "/api/jobs", json={**body, "apply_email": "not an address"}, headers=headers
    )
    assert resp.status_code == 422 and resp.json()["error"]["field"] == "apply_email"
    resp = await client.post(
        "/api/jobs", json={**body, "remote_countries": ["pt", "USA"]}, headers=headers
    )
    assert resp.status_code == 422

    made = await client.post(
        "/api/jobs",
        json={**body, "apply_url": "https://acme.example/jobs/1/apply", "apply_email": "j@a.io"},
        headers=headers,
    )
    assert made.status_code == 201, made.text
    job = made.json()
    assert job["apply_url"] == "https://acme.example/jobs/1/apply"
    assert job["apply_email"] == "j@a.io"
    assert job["remote_countries"] == sorted(eligibility.REGIONS["eu"])
    assert job["visa_sponsorship"] == "offered"

    given = await client.post(
        "/api/jobs",
        json={**body, "remote_countries": ["pt"], "visa_sponsorship": "not_offered"},
        headers=headers,
    )
    assert (given.json()["remote_countries"], given.json()["visa_sponsorship"]) == (
        ["PT"],
        "not_offered",
    )


async def test_bulk_file_columns(pool: AsyncPool, tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text(
        "title,company,location,description,apply_url,apply_email,remote_countries,"
        "visa_sponsorship\n"
        "QA,Initech,Remote,Tests.,https://initech.example/qa,,US;CA,offered\n"
        "QA,Initech,Remote,Tests.,ftp://initech.example/qa,,,\n"
        "Dev,Initech,Austin,Code.,,jobs@initech.example,,\n",
        encoding="utf-8",
    )
    with ListingFileReader(path) as reader:
        async with pool.connection() as conn:
            report = await ingest_listings(conn, reader)
    assert report.inserted == 2
    assert [(b.line, b.reason.split(":")[0]) for b in report.bad_rows] == [(3, "apply_url")]
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT job_title, apply_url, apply_email, remote_countries, visa_sponsorship"
            " FROM job_listings ORDER BY job_title"
        )
        rows = [tuple(r.values()) for r in await cur.fetchall()]
    assert rows == [
        ("Dev", None, "jobs@initech.example", [], "unknown"),
        ("QA", "https://initech.example/qa", None, ["CA", "US"], "offered"),
    ]


# --- rates ---------------------------------------------------------------------------------


async def test_rates_update_replaces_the_table(pool: AsyncPool) -> None:
    newer = rates.from_file("Date, USD, \n2 November 2026, 1.2000, \n")
    await rates.store(pool, newer)
    table = await rates.load(pool)
    assert table["USD"].per_eur == Decimal("1.2") and str(table["USD"].rate_date) == "2026-11-02"
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT shortlist_convert_ks(120, 'USD', 'EUR') AS eur")
        assert round((await cur.fetchone() or {})["eur"], 6) == 100


# --- search ---------------------------------------------------------------------------------

CORPUS = [
    listing("Backend Engineer", "Remote", "Python services. Remote (US only).",
            salary_min_ks=150, salary_max_ks=180, currency_code="USD"),
    listing("Backend Engineer", "Remote", "Python APIs. Remote within the EU.",
            salary_max_ks=90, currency_code="EUR", company_name="Birch"),
    listing("Python Engineer", "Remote", "Python and Go; we work remotely.",
            salary_max_ks=900, currency_code="SEK", company_name="Aspen"),
    listing("Python Developer", "Lisbon", "On site. Visa sponsorship available.",
            salary_max_ks=60, currency_code="EUR", company_name="Oak"),
    listing("Python Entwickler", "Remote", "Remote – nur innerhalb Deutschlands. Python.",
            company_name="Linde"),
]  # fmt: skip


async def _load(pool: AsyncPool, embed_pending: EmbedPending) -> None:
    async with pool.connection() as conn, conn.transaction():
        await copy_listings(conn, CORPUS, source="file")
    await embed_pending()


async def _titles(client: httpx.AsyncClient, **params: Any) -> list[tuple[str, str]]:
    resp = await client.get("/api/jobs/search", params={"q": "python", "size": 20, **params})
    assert resp.status_code == 200, resp.text
    return sorted(
        (h["listing"]["company_name"], h["listing"]["job_title"]) for h in resp.json()["hits"]
    )


async def test_remote_country_and_visa_filters(
    client: httpx.AsyncClient, pool: AsyncPool, embed_pending: EmbedPending
) -> None:
    await _load(pool, embed_pending)
    # A person in Portugal: the US-only job is not shown, the EU one and the unsaid one are;
    # the on-site Lisbon job is no remote job.
    assert await _titles(client, remote_country="pt") == [
        ("Aspen", "Python Engineer"),
        ("Birch", "Backend Engineer"),
    ]
    assert await _titles(client, remote_country="US") == [
        ("Aspen", "Python Engineer"),
        ("Cedar Labs", "Backend Engineer"),
    ]
    assert ("Linde", "Python Entwickler") in await _titles(client, remote_country="DE")
    assert await _titles(client, visa="offered") == [("Oak", "Python Developer")]
    for params, field in (
        ({"remote_country": "Portugal"}, "remote_country"),
        ({"visa": "maybe"}, "visa"),
        ({"currency": "EURO"}, "currency"),
        ({"currency": "XXX"}, "currency"),
    ):
        resp = await client.get("/api/jobs/search", params={"q": "python", **params})
        assert resp.status_code in (400, 422), params
        assert resp.json()["error"]["field"] == field


async def test_salaries_in_the_chosen_currency(
    client: httpx.AsyncClient, pool: AsyncPool, embed_pending: EmbedPending
) -> None:
    await _load(pool, embed_pending)
    table = await rates.load(pool)
    usd = float(table["USD"].per_eur)
    body = (
        await client.get("/api/jobs/search", params={"q": "python", "size": 20, "currency": "eur"})
    ).json()
    by_company = {h["listing"]["company_name"]: h["listing"] for h in body["hits"]}
    cedar = by_company["Cedar Labs"]
    assert (cedar["salary_min_ks"], cedar["currency_code"]) == (150, "USD")  # its own, kept
    assert cedar["salary_converted"] == {
        "min_ks": round(150 / usd),
        "max_ks": round(180 / usd),
        "currency": "EUR",
        "rate_date": "2026-10-30",
    }
    assert by_company["Linde"]["salary_converted"] is None  # no salary
    bands = body["facets"]["salary"]
    assert 1 <= len(bands) <= 6 and {b["currency"] for b in bands} == {"EUR"}
    # 900K SEK is about 82K EUR: above 80K EUR, below 90K.
    assert ("Aspen", "Python Engineer") in await _titles(client, currency="EUR", salary_min=80)
    assert ("Aspen", "Python Engineer") not in await _titles(client, currency="EUR", salary_min=90)
    # Without a currency, the figure is each listing's own (as before): 900 ≥ 200.
    assert ("Aspen", "Python Engineer") in await _titles(client, salary_min=200)
    plain = (await client.get("/api/jobs/search", params={"q": "python"})).json()
    assert all(h["listing"]["salary_converted"] is None for h in plain["hits"])


# --- similar jobs, the match in words ------------------------------------------------------


async def test_similar_jobs_leave_out_the_same_company_and_duplicates(
    client: httpx.AsyncClient, pool: AsyncPool, embed_pending: EmbedPending
) -> None:
    await _load(pool, embed_pending)
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT id, company_name FROM job_listings WHERE company_name = 'Birch'"
        )
        birch = (await cur.fetchone() or {})["id"]
        # Another post of Birch's, and a duplicate of another listing: neither is suggested.
        async with conn.transaction():
            await copy_listings(
                conn,
                [
                    listing("Backend Engineer", "Porto", "Python APIs. Remote within the EU.",
                            company_name="Birch"),
                    listing("Backend Engineer", "Remote", "Python APIs, the same.",
                            company_name="Elm"),
                ],
                source="file",
            )  # fmt: skip
    await embed_pending()
    async with pool.connection() as conn:
        await conn.execute(
            "UPDATE job_listings SET duplicate_of = %s WHERE company_name = 'Elm'", (birch,)
        )
    resp = await client.get(f"/api/jobs/{birch}/similar", params={"size": 10})
    assert resp.status_code == 200, resp.text
    similar = resp.json()
    companies = [s["listing"]["company_name"] for s in similar]
    assert similar and "Birch" not in companies and "Elm" not in companies
    assert all(s["reason"] for s in similar)
    cedar = next(s for s in similar if s["listing"]["company_name"] == "Cedar Labs")
    assert cedar["reason"].startswith("Also a backend engineer role")
    missing = await client.get("/api/jobs/00000000-0000-0000-0000-000000000000/similar")
    assert missing.status_code == 404


@pytest.mark.slow
async def test_the_default_corpus_salary_facet_for_engineer_is_six_bands_at_most(
    client: httpx.AsyncClient, pool: AsyncPool
) -> None:
    from shortlist.listings.sample import load_sample_listings

    async with pool.connection() as conn:
        assert await load_sample_listings(conn) > 1000
    before = (await client.get("/api/jobs/search", params={"q": "engineer"})).json()
    assert len(before["facets"]["salary"]) > 6  # per listing currency: the wall of chips
    for currency in ("EUR", "USD", "GBP", "SEK", "JPY", "INR"):
        body = (
            await client.get("/api/jobs/search", params={"q": "engineer", "currency": currency})
        ).json()
        bands = body["facets"]["salary"]
        assert 3 <= len(bands) <= 6, (currency, bands)
        assert {b["currency"] for b in bands} == {currency}
        counts = [b["count"] for b in bands]
        assert counts == sorted(counts, reverse=True) and counts[-1] > 0
        # Round figures of the currency (20K EUR or USD, 200K SEK, 2.5M JPY, 2M INR steps).
        step = {"EUR": 20, "USD": 20, "GBP": 10, "SEK": 200, "JPY": 2500, "INR": 2000}[currency]
        assert all(b["min_ks"] % step == 0 for b in bands), bands
        # A band's link filters to what it counts (its listings' converted top reaches it).
        top = bands[-1]
        found = (
            await client.get(
                "/api/jobs/search",
                params={
                    "q": "engineer",
                    "currency": currency,
                    "salary_min": top["min_ks"],
                    "size": 50,
                },
            )
        ).json()
        for hit in found["hits"]:
            converted = hit["listing"]["salary_converted"]
            assert max(converted["max_ks"] or 0, converted["min_ks"] or 0) >= top["min_ks"] - 1


async def test_the_job_page_shows_the_converted_figure_at_the_tables_rate_and_date(
    client: httpx.AsyncClient, pool: AsyncPool
) -> None:
    async with pool.connection() as conn, conn.transaction():
        await copy_listings(
            conn,
            [listing("Backend Engineer", "Stockholm", "Go services.", salary_min_ks=600,
                     salary_max_ks=720, currency_code="SEK")],
            source="file",
        )  # fmt: skip
        cur = await conn.execute("SELECT detail_page_slug FROM job_listings")
        slug = (await cur.fetchone() or {})["detail_page_slug"]
    table = await rates.load(pool)
    factor = float(table["EUR"].per_eur / table["SEK"].per_eur)
    page = await client.get(f"/jobs/{slug}", params={"currency": "EUR"})
    assert page.status_code == 200
    low, high = round(600 * factor), round(720 * factor)
    assert f"≈ €{low}K – €{high}K" in page.text
    assert "30 October 2026" in page.text and 'data-rate-date="2026-10-30"' in page.text
    assert "SEK 600K – 720K" in page.text  # the listing's own figure, kept


def test_rates_commands(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from shortlist.cli import build_app
    from shortlist.config import get_settings

    monkeypatch.setenv("SHORTLIST_DATABASE_URL", db_url)
    monkeypatch.setenv("SHORTLIST_LOG_LEVEL", "WARNING")
    get_settings.cache_clear()
    runner = CliRunner()
    app = build_app()
    shown = runner.invoke(app, ["rates", "show"])
    assert shown.exit_code == 0, shown.output
    assert "USD\t1.1172\t2026-10-30" in shown.stdout
    newer = tmp_path / "eurofxref.csv"
    newer.write_text("Date, USD, GBP, \n3 November 2026, 1.1500, 0.8500, \n", encoding="utf-8")
    updated = runner.invoke(app, ["rates", "update", str(newer)])
    assert updated.exit_code == 0, updated.output
    assert updated.stdout.strip().splitlines()[-1].endswith("of 2026-11-03 stored")
    shown = runner.invoke(app, ["rates", "show"]).stdout
    assert "USD\t1.1500\t2026-11-03" in shown and "AED\t" in shown  # the peg follows the dollar
    bad = tmp_path / "bad.csv"
    bad.write_text("hello\n", encoding="utf-8")
    refused = runner.invoke(app, ["rates", "update", str(bad)])
    assert refused.exit_code == 1 and "ECB" in refused.output
    get_settings.cache_clear()


async def test_a_forgotten_person_is_no_listings_apply_address(pool: AsyncPool) -> None:
    from shortlist.privacy import forget

    async with pool.connection() as conn, conn.transaction():
        await copy_listings(
            conn,
            [
                listing("Nurse", "Lyon", "Night shifts.", apply_email="Anna.Roe@example.org"),
                listing("Cook", "Lyon", "Lunches.", apply_email="jobs@bistro.example"),
            ],
            source="file",
        )
    await forget(pool, "anna.roe@example.org")
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT job_title, apply_email FROM job_listings ORDER BY 1")
        assert [tuple(r.values()) for r in await cur.fetchall()] == [
            ("Cook", "jobs@bistro.example"),
            ("Nurse", None),
        ]
