"""Is this a job post? Automatic mail, known by its headers and structure, is never posted
(each kind below carries a complete job post in its text, so only its headers can stop it);
scams and mail that merely mentions a job are not job posts; real job posts still are."""

from __future__ import annotations

from pathlib import Path

import pytest

from shortlist import places
from shortlist.listings.mail.listing import to_listing
from shortlist.listings.mail.parse import NoJob, read_message

LABELLED = Path(__file__).parent.parent / "data" / "mail" / "labelled"

JOB_TEXT = """We're hiring a Senior Data Engineer to join our team in Lisbon.

Responsibilities: build and run our data pipelines. Requirements: 5+ years of Python and SQL.
Salary: EUR 70,000 - 90,000 per year. Apply by replying with your CV.
"""


@pytest.fixture(scope="module", autouse=True)
def gazetteer() -> None:
    places.load()


def message(headers: str, subject: str = "Senior Data Engineer - Lisbon", body: str = JOB_TEXT,
            sender: str = "Jobs at Northwind <jobs@northwind.example>") -> bytes:  # fmt: skip
    head = (
        f"From: {sender}\nTo: post-0123456789abcdef@jobs.example\nSubject: {subject}\n"
        "Message-ID: <m1@northwind.example>\nDate: Tue, 01 Dec 2026 10:00:00 +0000\n"
    )
    if "Content-Type" not in headers:
        headers += "Content-Type: text/plain; charset=utf-8\n"
    return f"{head}{headers}\n{body}".encode()


def test_the_job_post_itself_is_posted() -> None:
    got = to_listing(read_message(message("")), "Northwind")
    assert got.job_title == "Senior Data Engineer" and got.city_location == "Lisbon"


DSN = """MIME-Version: 1.0
Content-Type: multipart/report; report-type=delivery-status; boundary="b1"
"""
DSN_BODY = f"""--b1
Content-Type: text/plain

{JOB_TEXT}
--b1
Content-Type: message/delivery-status

Reporting-MTA: dns; mail.example.com

Final-Recipient: rfc822; someone@example.org
Action: failed
Status: 5.1.1

--b1--
"""
ARF = """MIME-Version: 1.0
Content-Type: multipart/report; report-type=feedback-report; boundary="b2"
"""
ARF_BODY = f"""--b2
Content-Type: text/plain

{JOB_TEXT}
--b2
Content-Type: message/feedback-report

Feedback-Type: abuse
User-Agent: SomeGenerator/1.0
Version: 1

--b2--
"""
# A qmail bounce: no DSN, only its text (flufl.bounce's qmail detector knows it).
QMAIL_BODY = f"""Hi. This is the qmail-send program at mail.example.com.
I'm afraid I wasn't able to deliver your message to the following addresses.
This is a permanent error; I've given up. Sorry it didn't work out.

<someone@example.org>:
Sorry, no mailbox here by that name. (#5.1.1)

--- Below this line is a copy of the message.

{JOB_TEXT}
"""

AUTOMATIC = {
    "dsn (RFC 3464)": (DSN, None, DSN_BODY, None),
    "arf abuse report (RFC 5965)": (ARF, None, ARF_BODY, None),
    "auto-submitted auto-replied (RFC 3834)": ("Auto-Submitted: auto-replied\n", None, None, None),
    "auto-submitted auto-generated": ("Auto-Submitted: auto-generated\n", None, None, None),
    "precedence bulk": ("Precedence: bulk\n", None, None, None),
    "precedence list": ("Precedence: list\n", None, None, None),
    "precedence junk": ("Precedence: junk\n", None, None, None),
    "list-id (RFC 2919)": ("List-Id: Jobs <jobs.lists.example>\n", None, None, None),
    "list-unsubscribe (RFC 2369)": (
        "List-Unsubscribe: <https://lists.example/u/1>\n",
        None,
        None,
        None,
    ),
    "out-of-office subject": ("", "Automatic reply: Senior Data Engineer - Lisbon", None, None),
    "vacation subject": ("", "Out of Office: back on Monday", None, None),
    "x-autoreply": ("X-Autoreply: yes\n", None, None, None),
    "mailer-daemon": ("", None, None, "Mail Delivery System <MAILER-DAEMON@mail.example.com>"),
    "qmail bounce (flufl.bounce)": ("", "failure notice", QMAIL_BODY, None),
}


@pytest.mark.parametrize("kind", list(AUTOMATIC))
def test_automatic_mail_is_never_posted(kind: str) -> None:
    headers, subject, body, sender = AUTOMATIC[kind]
    raw = message(
        headers,
        subject or "Senior Data Engineer - Lisbon",
        body or JOB_TEXT,
        sender or "Jobs at Northwind <jobs@northwind.example>",
    )
    with pytest.raises(NoJob) as caught:
        read_message(raw)
    assert caught.value.kind == "automatic", str(caught.value)
    assert caught.value.extra == {"rejected_as": "automatic"}


def test_a_qmail_bounce_is_found_by_flufl_bounce_alone() -> None:
    # Neither its sender nor its subject gives it away: only the bounce's text.
    raw = message("", "Re: your message", QMAIL_BODY, "qmail <qmail@mail.example.com>")
    with pytest.raises(NoJob, match="a bounce") as caught:
        read_message(raw)
    assert caught.value.kind == "automatic"


SCAMS = {
    "work from home": "WORK FROM HOME. WE ARE HIRING! Earn $5,000 a month from the comfort of"
    " your own home. No experience required. Pay a small registration fee for your starter kit.",
    "pay to apply": "Data Entry Clerk wanted. Earn $45 per hour, no experience required. Send"
    " the $60 training fee to get started. Apply now, positions in Chicago.",
    "money transfer": "Payment Agent needed in London. Receive payments into your bank account,"
    " keep 10% commission and forward the balance by Western Union.",
}


@pytest.mark.parametrize("kind", list(SCAMS))
def test_scams_are_not_job_posts(kind: str) -> None:
    with pytest.raises(NoJob) as caught:
        read_message(message("", "Job opening - apply now", SCAMS[kind]))
    assert caught.value.kind == "scam"


def test_news_about_hiring_is_not_a_job_post() -> None:
    raw = (LABELLED / "not_job" / "news-hospital-hiring-event.eml").read_bytes()
    with pytest.raises(NoJob) as caught:
        read_message(raw)
    assert caught.value.kind == "not_a_job_post"


def test_a_personal_letter_with_a_salary_is_not_a_job_post() -> None:
    raw = (LABELLED / "not_job" / "personal-letter-salary.eml").read_bytes()
    with pytest.raises(NoJob) as caught:
        read_message(raw)
    assert caught.value.kind == "not_a_job_post"


def test_a_job_post_without_a_city_is_incomplete_not_rejected_as_no_job() -> None:
    raw = message("", "Senior Data Engineer", JOB_TEXT.replace(" in Lisbon", ""))
    with pytest.raises(NoJob) as caught:
        to_listing(read_message(raw), "Northwind")
    assert caught.value.kind == "incomplete"
