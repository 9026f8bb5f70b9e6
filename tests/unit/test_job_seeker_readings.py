"""What the job seeker's pages read from a listing, without a database: apply links, remote
countries, visa, the match in words, the bundled rates."""

from __future__ import annotations

from decimal import Decimal
from email.message import EmailMessage

import pytest

from shortlist.listings import eligibility, rates
from shortlist.listings.mail.listing import to_listing
from shortlist.listings.mail.parse import read_message
from shortlist.listings.sources import ashby, careers, greenhouse, lever


@pytest.mark.parametrize(
    ("text", "codes"),
    [
        ("Backend Engineer — Remote (US only)", ["US"]),
        ("This role is remote within the EU.", eligibility.REGIONS["eu"]),
        ("Python Entwickler, Remote – Deutschland", ["DE"]),
        ("Die Stelle ist remote, nur innerhalb Deutschlands möglich.", ["DE"]),
        ("Arbeiten Sie deutschlandweit remote.", ["DE"]),
        ("Fully remote from anywhere in North America.", ["CA", "MX", "US"]),
        ("Remote (DACH)", ["AT", "CH", "DE"]),
        ("You must be based in Portugal or Spain.", ["ES", "PT"]),
        # the company's seat limits nobody
        ("We are a remote-first company based in Berlin.", []),
        ("Our company is based in Germany and loves remote work.", []),
    ],
)
def test_remote_countries_from_english_and_german_text(
    text: str, codes: list[str] | tuple[str, ...]
) -> None:
    assert eligibility.remote_countries_in(text) == sorted(codes)


def _scanned_without_word_checks(text: str) -> tuple[list[str], str]:
    """What eligibility reads when every phrase is scanned (no word check before it)."""
    head = text[:20_000]
    found: set[str] = set()
    for _words, pattern in eligibility._PATTERNS:
        for match in pattern.finditer(head):
            for name in eligibility._names(match.group("places")):
                found.update(eligibility._codes_of_name(name))
    for match in eligibility._WIDE.finditer(head):
        found.update(eligibility._codes_of_name(match.group("place")))
    visa = (
        "not_offered"
        if eligibility._NOT_OFFERED.search(head)
        else "offered"
        if eligibility._OFFERED.search(head)
        else "unknown"
    )
    return sorted(found), visa


ODD_CASES = [
    "REMOTE (US ONLY)",
    "Wor\u212a from home within Canada",  # the Kelvin sign, which re.I takes for a "k"
    "Fully remote – Portugal",
    "Remote (DACH)",
    "Candidates must be ba\u017fed in Portugal",  # a long s, which re.I takes for an "s"
    "Applicants res\u0131d\u0131ng in Spain",  # the dotless i, which re.I takes for an "i"
    "Candidates must be based in the US. VİSA SPONSORSHIP İS AVAİLABLE",
    "We cannot sponsor work permits. Remote aus ganz Deutschland.",
    "Wir bieten Visum-Unterstützung. Homeoffice innerhalb der EU.",
    "We offer work permit support for EU-only applicants.",
    "Visa: nein. Work from home within Canada or the USA.",
    "mobiles Arbeiten, Wohnsitz in Österreich",
    "Visa sponsorship is not available; res\u0131d\u0131ng in Canada required.",
]


def test_the_word_checks_before_the_scans_change_no_answer() -> None:
    """eligibility checks for a word of each phrase before scanning for it: on the sample
    corpus, the test mail and odd letter cases it reads what scanning every phrase reads."""
    from pathlib import Path

    from shortlist.listings.sample import iter_sample_listings

    texts = [f"{x.job_title}\n{x.city_location}\n{x.description}" for x in iter_sample_listings()]
    data = Path(__file__).parent.parent / "data"
    texts += [p.read_text("utf-8", "replace") for p in sorted(data.rglob("*.eml"))]
    texts += ODD_CASES
    for text in texts:
        assert (eligibility.remote_countries_in(text), eligibility.visa_in(text)) == (
            _scanned_without_word_checks(text)
        ), text


@pytest.mark.parametrize(
    ("text", "visa"),
    [
        ("Visa sponsorship available for the right candidate.", "offered"),
        ("We offer relocation and visa support.", "offered"),
        ("Wir bieten Unterstützung beim Visum und beim Umzug.", "offered"),
        ("Visa-Sponsoring möglich.", "offered"),
        ("Unfortunately we are unable to sponsor visas.", "not_offered"),
        ("No visa sponsorship.", "not_offered"),
        ("You must be able to work in the UK without sponsorship.", "not_offered"),
        ("Leider können wir keine Visa-Unterstützung anbieten.", "not_offered"),
        ("A great team and a nice office.", "unknown"),
    ],
)
def test_visa_from_english_and_german_text(text: str, visa: str) -> None:
    assert eligibility.visa_in(text) == visa


def test_sources_fields_give_apply_links_and_remote_countries() -> None:
    lever_posting = lever.map_posting(
        {
            "id": "abc",
            "text": "Backend Engineer",
            "descriptionPlain": "Build APIs.",
            "categories": {"location": "Remote"},
            "workplaceType": "remote",
            "country": "US",
            "hostedUrl": "https://jobs.lever.co/acme/abc",
            "applyUrl": "https://jobs.lever.co/acme/abc/apply",
        }
    )
    assert lever_posting is not None
    assert lever_posting.apply_url == "https://jobs.lever.co/acme/abc/apply"
    assert lever_posting.remote_countries == ["US"]

    ashby_job = ashby.map_job(
        {
            "id": "j1",
            "title": "Data Engineer",
            "descriptionPlain": "Pipelines.",
            "isRemote": True,
            "workplaceType": "Remote",
            "address": {"postalAddress": {"addressCountry": "Portugal"}},
            "secondaryLocations": [
                {"location": "Spain", "address": {"postalAddress": {"addressCountry": "Spain"}}}
            ],
            "jobUrl": "https://jobs.ashbyhq.com/acme/j1",
            "applyUrl": "https://jobs.ashbyhq.com/acme/j1/application",
        }
    )
    assert ashby_job is not None
    assert ashby_job.apply_url == "https://jobs.ashbyhq.com/acme/j1/application"
    assert ashby_job.remote_countries == ["ES", "PT"]

    gh = greenhouse.map_job(
        {
            "id": 7,
            "title": "SRE",
            "content": "&lt;p&gt;Remote (EU)&lt;/p&gt;",
            "location": {"name": "Remote"},
            "absolute_url": "https://boards.greenhouse.io/acme/jobs/7",
        }
    )
    assert gh is not None and gh.source_url == "https://boards.greenhouse.io/acme/jobs/7"

    node = {
        "@type": "JobPosting",
        "title": "Platform Engineer",
        "description": "Kubernetes.",
        "url": "/jobs/9",
        "directApply": True,
        "jobLocationType": "TELECOMMUTE",
        "applicantLocationRequirements": [
            {"@type": "Country", "name": "USA"},
            {"@type": "Country", "name": "Canada"},
        ],
    }
    posting = careers.map_job_posting(node, "https://acme.example/careers", 0)
    assert posting is not None
    assert posting.apply_url == "https://acme.example/jobs/9"
    assert posting.remote_countries == ["CA", "US"]


def _mail(body: str, *, html: str | None = None, reply_to: str | None = None) -> bytes:
    msg = EmailMessage()
    msg["From"] = "Hiring Team <hr@initech.example>"
    msg["To"] = "jobs@shortlist.example"
    msg["Subject"] = "Job post: Data Engineer — Berlin"
    msg["Message-ID"] = "<m1@initech.example>"
    if reply_to:
        msg["Reply-To"] = reply_to
    msg.set_content(body)
    if html:
        msg.add_alternative(html, subtype="html")
    return bytes(msg)


def test_e_mail_gives_an_application_link_or_address() -> None:
    text = (
        "We are hiring a Data Engineer in Berlin. Python and SQL, 3+ years.\n"
        "Read about us at https://initech.example/about\n"
        "Apply here: https://initech.example/careers/data-engineer\n"
    )
    reading = read_message(_mail(text))
    listing_in = to_listing(reading, "Initech")
    assert listing_in.apply_url == "https://initech.example/careers/data-engineer"

    html = (
        "<p>We are hiring a Data Engineer in Berlin. Python and SQL.</p>"
        '<p><a href="https://initech.example/">Home</a> '
        '<a href="https://jobs.initech.example/r/77">Jetzt bewerben</a></p>'
    )
    assert to_listing(read_message(_mail("Data Engineer in Berlin.", html=html)), "Initech")

    by_mail = (
        "We are hiring a Data Engineer in Berlin. Python and SQL, 3+ years.\n"
        "Send your CV to careers@initech.example\n"
    )
    assert to_listing(read_message(_mail(by_mail)), "Initech").apply_email == (
        "careers@initech.example"
    )
    invited = (
        "We are hiring a Data Engineer in Berlin. Python and SQL, 3+ years.\n"
        "Apply by replying to this e-mail.\n"
    )
    replied = to_listing(read_message(_mail(invited, reply_to="anna@initech.example")), "I")
    assert replied.apply_email == "anna@initech.example"
    # Not invited: the sender's address is not made an application address.
    plain = "We are hiring a Data Engineer in Berlin. Python and SQL, 3+ years.\n"
    assert to_listing(read_message(_mail(plain)), "Initech").apply_email is None


def test_html_mail_link_text_says_apply() -> None:
    html = (
        "<p>We are hiring a Data Engineer in Berlin. Python and SQL, 3+ years.</p>"
        '<p><a href="https://initech.example/">Home</a> '
        '<a href="https://initech.example/r/77">Jetzt bewerben</a></p>'
    )
    reading = read_message(_mail("We are hiring a Data Engineer in Berlin.", html=html))
    assert reading.apply_url == "https://initech.example/r/77"


def test_bundled_rates_are_the_ecb_file_with_pegs() -> None:
    table = {r.currency_code: r for r in rates.bundled()}
    assert table["EUR"].per_eur == 1
    assert table["USD"].per_eur == Decimal("1.1172")
    assert str(table["USD"].rate_date) == "2026-10-30"
    assert table["AED"].per_eur == Decimal("1.1172") * Decimal("3.6725")
    assert table["AED"].rate_date == table["USD"].rate_date
    hist = "Date,USD,JPY,CYP,\n2026-10-30,1.1,170,N/A,\n2026-10-29,1.0,160,N/A,\n"
    parsed = {r.currency_code: r for r in rates.parse_ecb(hist)}
    assert parsed["USD"].per_eur == Decimal("1.1") and "CYP" not in parsed


def test_match_in_words_and_when_the_percentage_shows() -> None:
    from shortlist.listings.why import match_labels
    from shortlist.web.seeker import score_note

    assert match_labels(1.0, "Backend Engineer", ["backend", "engineer"], "both") == [
        "Title matches"
    ]
    assert match_labels(
        0.5, "Senior Backend Engineer", ["backend", "python", "kotlin"], "both"
    ) == [
        "Title matches in part",
        "Mentions Python, Kotlin",
    ]
    assert match_labels(0.0, "Platform Engineer", [], "meaning") == ["Similar in meaning"]
    # Ten equal figures: no figure, but why they are equal.
    shown, note = score_note([0.27] * 10, [["Title matches"]] * 10)
    assert not shown and "equally well" in note and "every word you typed" in note
    shown, note = score_note([0.9, 0.27], [["Title matches"], ["Similar in meaning"]])
    assert shown and note == ""
