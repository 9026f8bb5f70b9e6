"""The server's step of the e-mail intake: a :class:`Reading` (what the sandboxed parser found
in a message) becomes a listing. The city is resolved here, with the gazetteer a server has
loaded, on a few short, bounded strings; the company the message was sent for applies."""

from __future__ import annotations

import re

from pydantic import ValidationError

from shortlist.listings import jobpost
from shortlist.listings.mail.parse import NOT_A_JOB, NoJob, Reading
from shortlist.listings.models import (
    ListingCreate,
    bad_input_from,
    valid_apply_email,
    valid_apply_url,
)

_AT_COMPANY = re.compile(
    r"^(?P<title>.{2,200}?)\s(?:at|@|bei)\s(?P<company>[A-Z][\w&.,' -]{1,80})$"
)


def to_listing(reading: Reading, company: str | None) -> ListingCreate:
    """The listing a reading describes, posted as ``company`` when the message was sent for
    one (a company's intake address or token: whatever the message says); BadInput if a
    required field is missing."""
    hints = reading.place_hints
    city = jobpost.city_of(
        hints[0] if hints else None, [*hints[1:], reading.title, reading.text_head]
    )
    if city is None and reading.work_mode == "remote":
        city = "Remote"
    if city is None and not reading.signals:
        raise NoJob(NOT_A_JOB)
    if city is None:
        raise NoJob(
            "the message names no city: put it in the subject (e.g. 'Data Engineer — Berlin')"
            " or a line 'Location: …'",
            "incomplete",
        )
    title = jobpost.title_without_place(reading.title)
    # "Senior Data Engineer at Copper Analytics": the company is not part of the title.
    at = _AT_COMPANY.match(title)
    named = reading.company or (at.group("company") if at else None) or reading.sender_company
    posting_as = company or named
    if not posting_as:
        raise NoJob("the message names no company: add a line 'Company: …'", "incomplete")
    if at:
        title = at.group("title")
    salary = reading.salary
    try:
        return ListingCreate(
            company_name=posting_as,
            job_title=title,
            city_location=city,
            description=reading.description,
            salary_min_ks=salary.min_ks if salary else None,
            salary_max_ks=salary.max_ks if salary else None,
            currency_code=(salary.currency if salary and salary.currency else None)
            or jobpost.default_currency(city),
            work_mode=reading.work_mode,
            apply_url=valid_apply_url(reading.apply_url),
            apply_email=valid_apply_email(reading.apply_email),
        )
    except ValidationError as exc:
        raise bad_input_from(exc, prefix="e-mail job post: ") from None
