"""Producers other than the API: bulk import (JSONL/CSV), e-mail posts, the sample corpus."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import typer
from psycopg.rows import dict_row
from typer.testing import CliRunner

from shortlist import places
from shortlist.auth import Role
from shortlist.cli import build_app
from shortlist.config import get_settings
from shortlist.db.types import AsyncPool
from shortlist.listings.ingest import BadRow, ListingFileReader, ingest_listings
from shortlist.listings.sample import (
    SAMPLE_SIZE,
    load_sample_listings,
)

ROW = {
    "company_name": "Acme",
    "job_title": "Backend Engineer",
    "city_location": "Berlin",
    "description": "Python and PostgreSQL.",
}


async def listings(pool: AsyncPool) -> list[dict[str, Any]]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT company_name, job_title, city_location, description, salary_min_ks,"
            " salary_max_ks, currency_code, source, embedding_status::text AS status"
            " FROM job_listings ORDER BY created_at, company_name"
        )
        return await cur.fetchall()


async def run_ingest(pool: AsyncPool, path: Path, **kw: Any) -> Any:
    with ListingFileReader(path) as reader:
        async with pool.connection() as conn:
            return await ingest_listings(conn, reader, **kw)


# --- JSONL -----------------------------------------------------------------------------------


async def test_jsonl_good_rows_kept_bad_rows_reported_by_line(
    pool: AsyncPool, tmp_path: Path
) -> None:
    lines = [
        json.dumps(ROW),  # 1
        "",  # 2: blank, skipped
        "{not json",  # 3
        json.dumps([ROW]),  # 4
        json.dumps({**ROW, "company_name": ""}),  # 5
        json.dumps({**ROW, "salary_min_ks": 9, "salary_max_ks": 5}),  # 6
        json.dumps({**ROW, "company": "Globex", "company_name": None} | {"currency_code": "eur"}),
        json.dumps({"title": "QA Engineer", "company": "Initech", "location": "Austin, TX",
                    "description": "Tests.", "salary_min_ks": "120", "extra": 1}),  # 8
    ]  # fmt: skip
    path = tmp_path / "jobs.jsonl"
    path.write_bytes(("\n".join(lines) + "\n").encode() + b'{"company_name": "\xff"}\n')
    bad: list[BadRow] = []
    report = await run_ingest(pool, path, on_bad_row=bad.append)

    assert report.format == "jsonl"
    assert report.inserted == 2
    assert report.rows == 8
    assert bad == report.bad_rows
    assert report.bad_count == 6
    by_line = {b.line: b.reason for b in report.bad_rows}
    assert set(by_line) == {3, 4, 5, 6, 7, 9}
    assert by_line[3].startswith("not valid JSON")
    assert "expected a JSON object" in by_line[4]
    assert by_line[5].startswith("company_name:")
    assert "salary_min_ks (9) must not be greater than salary_max_ks (5)" in by_line[6]
    assert by_line[7].startswith("company_name:")  # the canonical name wins over "company"
    assert by_line[9] == "not valid UTF-8"
    assert report.ignored_columns == {"extra"}

    rows = await listings(pool)
    assert [(r["company_name"], r["source"], r["status"]) for r in rows] == [
        ("Acme", "file", "pending"),
        ("Initech", "file", "pending"),
    ]
    assert rows[1]["job_title"] == "QA Engineer" and rows[1]["salary_min_ks"] == 120


async def test_batches_commit_separately_and_report_progress(
    pool: AsyncPool, tmp_path: Path
) -> None:
    path = tmp_path / "many.ndjson"
    path.write_text("".join(json.dumps({**ROW, "job_title": f"Job {i}"}) + "\n" for i in range(7)))
    seen: list[tuple[int, int]] = []
    report = await run_ingest(
        pool, path, batch_size=3, on_progress=lambda r, n: seen.append((r.bytes_read, n))
    )
    assert report.inserted == 7
    assert seen[-1] == (path.stat().st_size, 7)
    assert [n for _, n in seen] == [3, 6, 7]
    async with pool.connection() as conn:
        # One transaction per batch: three distinct insert transactions.
        cur = await conn.execute("SELECT count(DISTINCT xmin::text) AS n FROM job_listings")
        assert await cur.fetchone() == {"n": 3}


# --- CSV -------------------------------------------------------------------------------------


async def test_csv_with_multiline_fields_aliases_and_bad_rows(
    pool: AsyncPool, tmp_path: Path
) -> None:
    csv_text = (
        "\ufeffcompany,Title,city_location,description,salary_min_ks,salary_max_ks,currency,notes\n"
        'Acme,Engineer,Berlin,"Line one\nline two, with a comma",100,120,,x\n'  # lines 2-3
        "Globex,Designer,Paris,Figma,,90,EUR,\n"  # 4
        ",Nurse,Boston,Care,,,,\n"  # 5: no company
        "Initech,Tester,Austin,QA,150,100,USD,\n"  # 6: min > max
        "Hooli,Analyst,London,SQL,50,60,GBP,,surplus\n"  # 7: too many values
        "\n"  # 8: blank
        "Umbrella,Chemist,Raccoon City,Lab work,abc,,,\n"  # 9
    )
    path = tmp_path / "jobs.csv"
    path.write_text(csv_text, encoding="utf-8")
    report = await run_ingest(pool, path)
    assert report.format == "csv"
    assert report.inserted == 2
    assert [b.line for b in report.bad_rows] == [5, 6, 7, 9]
    reasons = {b.line: b.reason for b in report.bad_rows}
    assert reasons[5].startswith("company_name:")
    assert "must not be greater than" in reasons[6]
    assert "9 values but the header names 8 columns" in reasons[7]
    assert reasons[9].startswith("salary_min_ks:")
    assert report.ignored_columns == {"notes"}

    rows = await listings(pool)
    acme = next(r for r in rows if r["company_name"] == "Acme")
    assert acme["description"] == "Line one\nline two, with a comma"
    assert (acme["salary_min_ks"], acme["salary_max_ks"], acme["currency_code"]) == (
        100,
        120,
        "USD",
    )
    globex = next(r for r in rows if r["company_name"] == "Globex")
    assert (globex["salary_min_ks"], globex["salary_max_ks"], globex["currency_code"]) == (
        None,
        90,
        "EUR",
    )


async def test_csv_semicolons_and_sniffed_format(pool: AsyncPool, tmp_path: Path) -> None:
    semicolons = tmp_path / "export.txt"  # no telling extension: sniffed as CSV
    semicolons.write_text(
        "company_name;job_title;city_location;description\nAcme;Cook;Lyon;Soups, sauces\n"
    )
    jsonl = tmp_path / "export.data"  # sniffed as JSON Lines
    jsonl.write_text("\n" + json.dumps(ROW) + "\n")
    first = await run_ingest(pool, semicolons)
    second = await run_ingest(pool, jsonl)
    assert (first.format, first.inserted, second.format, second.inserted) == ("csv", 1, "jsonl", 1)
    assert {r["description"] for r in await listings(pool)} == {"Soups, sauces", ROW["description"]}


# --- the CLI ----------------------------------------------------------------------------------


@pytest.fixture
def cli(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[CliRunner, typer.Typer]]:
    """The listing commands on a command tree of their own, against this test's database."""
    monkeypatch.setenv("SHORTLIST_DATABASE_URL", db_url)
    monkeypatch.setenv("SHORTLIST_LOG_LEVEL", "WARNING")
    get_settings.cache_clear()
    app = build_app()
    yield CliRunner(), app
    get_settings.cache_clear()


def db_rows(db_url: str) -> list[dict[str, Any]]:
    with psycopg.connect(db_url, row_factory=dict_row) as conn:
        return conn.execute(
            "SELECT company_name, source FROM job_listings ORDER BY company_name"
        ).fetchall()


def test_cli_ingest_jobs_exit_codes_and_report(
    cli: tuple[CliRunner, typer.Typer], db_url: str, tmp_path: Path
) -> None:
    runner, app = cli
    good = tmp_path / "jobs.jsonl"
    good.write_text(json.dumps(ROW) + "\n" + json.dumps({**ROW, "currency_code": "dollars"}) + "\n")
    result = runner.invoke(app, ["ingest", "jobs", str(good)])
    assert result.exit_code == 0, result.output
    assert "line 2: currency_code:" in result.stderr
    assert "2 rows read" in result.stdout and "1 listings imported" in result.stdout
    assert "1 bad rows" in result.stdout
    assert db_rows(db_url) == [{"company_name": "Acme", "source": "file"}]

    all_bad = tmp_path / "bad.jsonl"
    all_bad.write_text("[]\n")
    assert runner.invoke(app, ["ingest", "jobs", str(all_bad)]).exit_code == 1
    missing = runner.invoke(app, ["ingest", "jobs", str(tmp_path / "nope.csv")])
    assert missing.exit_code == 1
    assert "cannot read" in missing.stderr
    assert len(db_rows(db_url)) == 1


def test_cli_ingest_email(cli: tuple[CliRunner, typer.Typer], db_url: str, tmp_path: Path) -> None:
    runner, app = cli
    eml = tmp_path / "post.eml"
    eml.write_bytes(
        b"From: Jobs <jobs@initech.com>\nSubject: QA Lead - Initech - Austin, TX\n\n"
        b"Salary: up to 140k\n\nLead our QA team.\n"
    )
    result = runner.invoke(app, ["ingest", "email", str(eml)])
    assert result.exit_code == 0, result.output
    assert "Up to $140K USD" in result.stdout
    assert db_rows(db_url) == [{"company_name": "Initech", "source": "email"}]
    broken = tmp_path / "broken.eml"
    broken.write_bytes(b"Subject: hello\n\nno details here\n")
    result = runner.invoke(app, ["ingest", "email", str(broken)])
    assert result.exit_code == 1
    assert "does not describe a job" in result.stderr


# --- e-mail parsing (free-form; realistic messages: tests/unit/test_mail_parse.py) ------------


@pytest.fixture(scope="module", autouse=True)
def _gazetteer() -> None:
    places.load()


def message(
    subject: str | None, body: str, *, sender: str = "Hiring <hr@acme-robotics.io>"
) -> bytes:
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = "post@shortlist.example"
    if subject is not None:
        msg["Subject"] = subject
    msg.set_content(body)
    return bytes(msg)


async def test_email_addresses_never_reach_the_logs(
    client: httpx.AsyncClient, make_token: Any, caplog: pytest.LogCaptureFixture
) -> None:
    token = await make_token("Acme", Role.company)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "message/rfc822"}
    with caplog.at_level(logging.DEBUG):
        for raw in (
            message("Engineer at Acme (Berlin)", "Reach jane.doe@acme.io.\n"),
            message("Engineer", "No city.\n", sender="Jane <jane.doe@acme.io>"),
        ):
            resp = await client.post("/api/jobs/email", content=raw, headers=headers)
            assert resp.status_code in (201, 400)
    assert not [r for r in caplog.records if "jane.doe@" in r.getMessage()]


# --- the sample corpus ------------------------------------------------------------------------


@pytest.mark.slow
async def test_load_sample_listings_once_even_when_raced(pool: AsyncPool) -> None:
    async def load() -> int:
        async with pool.connection() as conn:
            return await load_sample_listings(conn)

    counts = await asyncio.gather(load(), load(), load())
    assert sorted(counts) == [0, 0, SAMPLE_SIZE]
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n, count(*) FILTER (WHERE source = 'sample') AS sample,"
            " count(DISTINCT detail_page_slug) AS slugs FROM job_listings"
        )
        assert await cur.fetchone() == {
            "n": SAMPLE_SIZE,
            "sample": SAMPLE_SIZE,
            "slugs": SAMPLE_SIZE,
        }
        assert await load_sample_listings(conn) == 0


async def test_load_sample_candidates_once_even_when_raced(pool: AsyncPool) -> None:
    from shortlist.talent import sample

    async def load() -> int:
        async with pool.connection() as conn:
            return await sample.load_sample_candidates(conn)

    counts = await asyncio.gather(load(), load())
    assert sorted(counts) == [0, sample.SAMPLE_SIZE]
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n, count(*) FILTER (WHERE source = 'sample'"
            " AND profile_url IS NULL AND external_id IS NULL) AS sample FROM candidates"
        )
        assert await cur.fetchone() == {"n": sample.SAMPLE_SIZE, "sample": sample.SAMPLE_SIZE}


async def test_imported_candidates_are_refreshed_by_external_id(pool: AsyncPool) -> None:
    from shortlist.talent.ingest import CandidateCreate, insert_candidates

    first = [
        CandidateCreate(full_name="Ada", external_id="x-1", skills="python; sql"),  # type: ignore[arg-type]
        CandidateCreate(full_name="Bob"),
    ]
    renamed = [CandidateCreate(full_name="Ada Lovelace", external_id="x-1", years_experience=9)]
    async with pool.connection() as conn:
        async with conn.transaction():
            assert await insert_candidates(conn, first) == 2
        async with conn.transaction():
            assert await insert_candidates(conn, renamed) == 1
        cur = await conn.execute(
            "SELECT full_name, skills, years_experience, source::text AS source"
            " FROM candidates ORDER BY full_name"
        )
        assert await cur.fetchall() == [
            {"full_name": "Ada Lovelace", "skills": [], "years_experience": 9, "source": "import"},
            {"full_name": "Bob", "skills": [], "years_experience": None, "source": "import"},
        ]
