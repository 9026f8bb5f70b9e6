"""The free-form e-mail parser on messages written as employers write them
(tests/data/mail/*.eml), and on hostile input: every one read fast, none raising anything but
``BadInput``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from shortlist import places
from shortlist.errors import BadInput
from shortlist.listings.jobpost import clean_title, find_work_mode, parse_salary
from shortlist.listings.mail.listing import to_listing
from shortlist.listings.mail.parse import MAX_HEADER_FIELD, NoJob, read_message

MAIL = Path(__file__).parent.parent / "data" / "mail"


@pytest.fixture(scope="module", autouse=True)
def gazetteer() -> None:
    places.load()


def listing(name: str, company: str | None = None) -> dict[str, object]:
    data = to_listing(read_message((MAIL / name).read_bytes()), company)
    return data.model_dump()


def test_english_message_with_html_alternative() -> None:
    got = listing("english.eml")
    assert got["job_title"] == "Senior Data Engineer"
    assert got["company_name"] == "Northwind"  # the sender's domain and name agree
    assert got["city_location"] == "Lisbon"
    assert (got["salary_min_ks"], got["salary_max_ks"], got["currency_code"]) == (70, 90, "EUR")
    assert got["work_mode"] == "hybrid"
    description = str(got["description"])
    assert "streaming pipelines" in description and "5+ years" in description
    assert "+351" not in description  # the signature is not the job


def test_german_message() -> None:
    got = listing("german.eml")
    assert got["job_title"] == "Senior Backend-Entwickler Java"  # "(m/w/d)" kept out
    assert got["city_location"] == "Munich"
    assert got["company_name"] == "Lindwurm Software"
    assert (got["salary_min_ks"], got["salary_max_ks"], got["currency_code"]) == (65, 80, "EUR")
    assert got["work_mode"] == "hybrid"  # "Remote-Anteil bis zu 3 Tage"
    assert "Viele Grüße" not in str(got["description"])


def test_html_only_forwarded_message() -> None:
    got = listing("html_forwarded.eml")
    assert got["job_title"] == "Backend Engineer (Python)"
    assert got["city_location"] == "London"
    assert got["company_name"] == "Brightlane"  # the forwarded sender, not the gmail user
    assert (got["salary_min_ks"], got["salary_max_ks"], got["currency_code"]) == (55, 65, "GBP")
    assert got["work_mode"] == "hybrid"
    description = str(got["description"])
    assert "alert(1)" not in description and "color:red" not in description
    assert "Forwarded message" not in description and "priya.raman" not in description


def test_description_in_a_pdf_attachment() -> None:
    got = listing("pdf_description.eml")
    assert got["job_title"] == "Product Designer"
    assert got["city_location"] == "Amsterdam"
    assert got["company_name"] == "Canalside Labs"
    assert (got["salary_min_ks"], got["salary_max_ks"], got["currency_code"]) == (60, 75, "EUR")
    assert "guest booking flow" in str(got["description"])


def test_a_bound_company_wins_over_what_the_message_says() -> None:
    assert listing("german.eml", company="Northwind")["company_name"] == "Northwind"


def test_a_message_without_a_job_gets_a_reason() -> None:
    with pytest.raises(NoJob, match="does not describe a job"):
        to_listing(read_message((MAIL / "no_job.eml").read_bytes()), "Northwind")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("£55,000 - £65,000 per annum", (55, 65, "GBP")),
        ("65.000 – 80.000 € brutto im Jahr", (65, 80, "EUR")),
        ("€70K–€90K", (70, 90, "EUR")),
        ("Salary: 70-90k EUR", (70, 90, "EUR")),
        ("4.500 € brutto pro Monat", (54, 54, "EUR")),
        ("CHF 120'000", (120, 120, "CHF")),
        ("up to $150K", (None, 150, "USD")),
    ],
)
def test_salaries_as_written(text: str, expected: tuple[object, ...]) -> None:
    salary = parse_salary(text)
    assert salary is not None
    assert (salary.min_ks, salary.max_ks, salary.currency) == expected


@pytest.mark.parametrize(
    ("text", "mode"),
    [
        ("The role is hybrid.", "hybrid"),
        ("2 days a week in the office", "hybrid"),
        ("Remote-Anteil bis zu 3 Tage", "hybrid"),
        ("This is a fully remote role", "remote"),
        ("Work on-site in our lab", "onsite"),
        ("Arbeit vor Ort in Hamburg", "onsite"),
        ("A backend role", None),
    ],
)
def test_work_modes(text: str, mode: str | None) -> None:
    assert find_work_mode(text) == mode


@pytest.mark.parametrize(
    ("subject", "title"),
    [
        ("Senior Data Engineer — Lisbon (hybrid) €70K–€90K", "Senior Data Engineer"),
        ("Projektmanager (m/w/d) Vollzeit", "Projektmanager Vollzeit"),
        ("Sales Lead (f/m/x) | Berlin", "Sales Lead"),
        ("Nurse (all genders) - Night shifts", "Nurse"),
    ],
)
def test_titles_without_markers(subject: str, title: str) -> None:
    assert clean_title(subject).startswith(title)


def hostile_messages() -> dict[str, bytes]:
    head = b"From: a@b.example\r\nTo: post-x@jobs.example\r\nSubject: Job: Engineer in Berlin\r\n"
    return {
        "salary spaces": head + b"\r\nSalary: 1" + b" " * 20_000 + b"\r\nEngineer in Berlin\r\n",
        "folded from": b"From: "
        + b"\r\n ".join([b"a" * 20] * 8000)
        + b"\r\nSubject: x\r\n\r\nEngineer role in Berlin\r\n",
        "html anchors": head + b"Content-Type: text/html\r\n\r\n" + b"<a" * 40_000,
        "huge salary": head + b"\r\nSalary: \xe2\x82\xac" + b"9" * 309 + b"\r\nEngineer role\r\n",
        "html cdata": head + b"Content-Type: text/html\r\n\r\n<![<![ Engineer role in Berlin",
        "one megabyte": head
        + b"\r\n"
        + (b"Engineer role in Berlin. Salary: \xe2\x82\xac 1" + b" " * 60 + b"\r\n") * 11_000,
        "nested multiparts": b"".join(
            b'Content-Type: multipart/mixed; boundary="b%d"\r\n\r\n--b%d\r\n' % (i, i)
            for i in range(200)
        ),
        "many headers": b"".join(b"X-H%d: v\r\n" % i for i in range(5000)) + b"\r\nbody",
    }


@pytest.mark.parametrize("name", sorted(hostile_messages()))
def test_hostile_input_is_read_fast_and_refused_or_read(name: str) -> None:
    raw = hostile_messages()[name]
    started = time.perf_counter()
    try:
        reading = read_message(raw)
        to_listing(reading, "Acme")
    except BadInput:
        pass  # a clear reason: fine
    # Linear: about 0.4 s for the megabyte on an idle core. The quadratic paths these replace
    # took minutes to hours on such input; the bound leaves room for a loaded machine.
    assert time.perf_counter() - started < 5.0, name


def test_the_reading_names_every_sender_address_forwarded_ones_too() -> None:
    # What the parse queue checks against the suppression list before answering or keeping.
    assert read_message((MAIL / "english.eml").read_bytes()).addresses == ["jobs@northwind.example"]
    assert read_message((MAIL / "html_forwarded.eml").read_bytes()).addresses == [
        "priya.raman@gmail.com",
        "tom@brightlane.example",
    ]


def test_a_reason_quotes_a_header_fields_name_never_a_stray_line() -> None:
    # The reason outlives the message's erasure (shortlist.privacy): it must not carry a line
    # of the message, which may hold an address.
    long = b"x" * (MAX_HEADER_FIELD + 1)
    with pytest.raises(BadInput, match="header field 'X-Long' is longer"):
        read_message(b"X-Long: " + long + b"\r\nSubject: Engineer\r\n\r\nbody\r\n")
    stray = b"Subject: x\r\nJane Doe jane.doe@example.com " + long + b"\r\n\r\nbody\r\n"
    with pytest.raises(BadInput) as refused:
        read_message(stray)
    assert "header line is longer" in str(refused.value)
    assert "jane" not in str(refused.value).lower()
