"""Reading a job post without a database: e-mail parsing (realistic messages:
tests/unit/test_mail_parse.py), salaries, bulk files refused, the sample."""

from __future__ import annotations

import contextlib
from collections import Counter
from email.message import EmailMessage
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shortlist import places
from shortlist.errors import BadInput
from shortlist.listings.ingest import ListingFileReader
from shortlist.listings.jobpost import parse_salary
from shortlist.listings.mail.listing import to_listing
from shortlist.listings.mail.parse import read_message
from shortlist.listings.models import ListingCreate
from shortlist.listings.sample import (
    CITIES,
    FAMILIES,
    SAMPLE_SIZE,
    iter_sample_listings,
)
from tests.integration.test_ingest import message


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
