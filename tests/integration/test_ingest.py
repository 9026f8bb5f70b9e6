"""Producers other than the API: bulk import (JSONL/CSV), e-mail posts, the sample corpus."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import Counter
from collections.abc import Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg.rows import dict_row
from typer.testing import CliRunner

from shortlist import places
from shortlist.auth import Role
from shortlist.cli import build_app
from shortlist.config import get_settings
from shortlist.db.types import AsyncPool
from shortlist.errors import BadInput
from shortlist.listings.ingest import BadRow, ListingFileReader, ingest_listings
from shortlist.listings.jobpost import parse_salary
from shortlist.listings.mail.listing import to_listing
from shortlist.listings.mail.parse import read_message
from shortlist.listings.models import ListingCreate
from shortlist.listings.sample import (
    CITIES,
    FAMILIES,
    SAMPLE_SIZE,
    iter_sample_listings,
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


def test_unreadable_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="cannot read"):
        ListingFileReader(tmp_path / "missing.jsonl").open()
    with pytest.raises(BadInput, match="cannot read"):
        ListingFileReader(tmp_path).open()  # a directory
    binary = tmp_path / "image.csv"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    with pytest.raises(BadInput, match="not a text file"):
        ListingFileReader(binary).open()
    headless = tmp_path / "headless.csv"
    headless.write_text("Acme,Engineer,Berlin,Python\n")
    with ListingFileReader(headless) as reader, pytest.raises(BadInput, match="name the columns"):
        list(reader)


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


def parse_job_email(raw: bytes, company: str | None = None) -> ListingCreate:
    return to_listing(read_message(raw), company)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$120K - $150K USD", (120, 150, "USD")),
        ("120-150k", (120, 150, None)),
        ("From $90K", (90, None, "USD")),
        ("up to 150k EUR", (None, 150, "EUR")),
        ("€60,000–€80,000", (60, 80, "EUR")),
        ("£45k+", (45, None, "GBP")),
        ("CHF 110'000", (110, 110, "CHF")),
        ("at least 70k gbp", (70, None, "GBP")),
        ("95k", (95, 95, None)),
    ],
)
def test_parse_salary(text: str, expected: tuple[int | None, int | None, str | None]) -> None:
    s = parse_salary(text)
    assert s is not None and (s.min_ks, s.max_ks, s.currency) == expected


@pytest.mark.parametrize("text", ["competitive, DOE", "", "founded in 2015"])
def test_no_salary(text: str) -> None:
    assert parse_salary(text) is None


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


def test_subject_at_company_city() -> None:
    data = parse_job_email(
        message("Fwd: Senior Data Engineer at Copper Analytics (São Paulo)", "Pipelines.\n")
    )
    assert (data.job_title, data.company_name, data.city_location) == (
        "Senior Data Engineer",
        "Copper Analytics",
        "São Paulo",
    )
    assert data.description == "Pipelines."
    assert (data.salary_min_ks, data.salary_max_ks) == (None, None)


def test_subject_with_dashes_and_a_signature() -> None:
    body = (
        "Salary: 70k - 90k EUR\n"
        "\n"
        "We build robots.\n"
        "\n\n\n"
        "Apply today.\n"
        "-- \n"
        "Jane Doe, jane@acme-robotics.io, +49 30 1234567\n"
    )
    data = parse_job_email(message("Full-Stack Engineer – Acme Robotics – Berlin", body))
    assert (data.job_title, data.company_name, data.city_location) == (
        "Full-Stack Engineer",
        "Acme Robotics",
        "Berlin",
    )
    assert (data.salary_min_ks, data.salary_max_ks, data.currency_code) == (70, 90, "EUR")
    assert "We build robots." in data.description and "Apply today." in data.description
    assert "jane@" not in data.description


def test_labelled_lines_and_company_from_sender() -> None:
    body = "Title: Pharmacist\nCity: Nairobi\nCurrency: KES\nSalary: 3,000,000\n\nDispense.\n"
    data = parse_job_email(message(None, body, sender="Careers <careers@harbor-health.co.ke>"))
    assert (data.job_title, data.company_name, data.city_location) == (
        "Pharmacist",
        "Harbor Health",
        "Nairobi",
    )
    assert (data.salary_min_ks, data.salary_max_ks, data.currency_code) == (3000, 3000, "KES")
    # A public mail service says nothing about the company: a "Company:" line does.
    data = parse_job_email(
        message("Cook (Lyon)", "Company: Chez Nous\nSoups.\n", sender="Chef <chef@gmail.com>")
    )
    assert data.company_name == "Chez Nous"
    # A company the message is sent for wins over what it says.
    assert (
        parse_job_email(
            message("Cook (Lyon)", "Company: Chez Nous\nSoups.\n"), "Bistro"
        ).company_name
        == "Bistro"
    )


def test_html_only_body_is_rendered_and_plain_is_preferred() -> None:
    msg = EmailMessage()
    msg["Subject"] = "Designer at Lumen Studios (Lisbon)"
    msg.set_content(
        "<html><head><style>p{}</style></head><body><p>Design <b>great</b> things.</p>"
        "<script>alert(1)</script><ul><li>Figma</li><li>Prototyping &amp; research</li></ul>"
        "</body></html>",
        subtype="html",
    )
    data = parse_job_email(bytes(msg))
    assert data.description.split("\n") == [
        "Design great things.",
        "Figma",
        "Prototyping & research",
    ]

    both = EmailMessage()
    both["Subject"] = "Designer at Lumen Studios (Lisbon)"
    both.set_content("Plain wins.")
    both.add_alternative("<p>HTML loses.</p>", subtype="html")
    assert parse_job_email(bytes(both)).description == "Plain wins."


def test_non_utf8_charsets_are_decoded() -> None:
    raw = (
        "Subject: =?iso-8859-1?q?Ing=E9nieur_at_Soci=E9t=E9_G=E9n=E9rale_(Paris)?=\n"
        "Content-Type: text/plain; charset=iso-8859-1\n"
        "Content-Transfer-Encoding: quoted-printable\n\n"
        "D=E9veloppement.\n"
    ).encode("ascii")
    data = parse_job_email(raw)
    assert (data.job_title, data.company_name, data.description) == (
        "Ingénieur",
        "Société Générale",
        "Développement.",
    )


@pytest.mark.parametrize(
    ("raw", "complaint"),
    [
        (b"", "empty"),
        (b"   \r\n", "empty"),
        (message(None, "Just some text.\n", sender="x@gmail.com"), "does not describe a job"),
        (message("Engineer", "Text.\n", sender="x@gmail.com"), "no city"),
        (message("Engineer at Acme", "Text.\n"), "no city"),
        (b"Subject: Engineer at Acme\nContent-Type: image/png\n\n\x89PNG\n", "describe a job"),
        (b"\x00\x01\x02 binary junk \xff\xfe", "does not describe a job"),
    ],
)
def test_malformed_posts_say_what_is_missing(raw: bytes, complaint: str) -> None:
    with pytest.raises(BadInput, match=complaint):
        parse_job_email(raw)


_CONTENT_TYPES = st.sampled_from(
    [
        b"text/plain",
        b"text/html",
        b"text/plain; charset=utf-16",
        b"text/plain; charset=x-unknown",
        b"multipart/alternative; boundary=XX",
        b"application/octet-stream",
        b"application/pdf",
    ]
)
_ENCODINGS = st.sampled_from([b"base64", b"quoted-printable", b"8bit", b"x-uuencode"])


@settings(max_examples=200, deadline=None)
@given(
    _CONTENT_TYPES,
    _ENCODINGS,
    st.sampled_from([b"Dev at Acme (Berlin)", b"=?utf-8?b?inv@lid?=", b"", b"a - b - c"]),
    st.binary(max_size=200),
)
def test_any_message_parses_or_is_refused_as_bad_input(
    content_type: bytes, encoding: bytes, subject: bytes, body: bytes
) -> None:
    """Whatever the bytes, the e-mail route answers 201 or 400: never another exception."""
    raw = (
        b"Subject: " + subject + b"\nContent-Type: " + content_type
        + b"\nContent-Transfer-Encoding: " + encoding + b"\n\nTitle: a\n" + body
    )  # fmt: skip
    with contextlib.suppress(BadInput):
        parse_job_email(raw)


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


def test_sample_is_deterministic_and_varied() -> None:
    first = list(iter_sample_listings())
    assert first == list(iter_sample_listings())
    assert len(first) == SAMPLE_SIZE
    assert len(FAMILIES) >= 15 and len(CITIES) >= 40
    titles = {x.job_title for x in first}
    assert all(any(t in titles for t in f.titles) for f in FAMILIES)
    assert len({x.city_location for x in first}) >= 40
    assert len({x.company_name for x in first}) >= 80
    assert len({x.currency_code for x in first}) >= 8
    shapes = Counter((x.salary_min_ks is not None, x.salary_max_ks is not None) for x in first)
    assert set(shapes) == {(True, True), (True, False), (False, True), (False, False)}
    assert min(shapes.values()) >= 100
    assert all(len(x.description.split(". ")) >= 4 for x in first)
    assert len({x.description for x in first}) == SAMPLE_SIZE


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
