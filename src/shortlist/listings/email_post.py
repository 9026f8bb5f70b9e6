"""A job post submitted as an e-mail message (RFC 5322 bytes, as ``message/rfc822``).

What we read, most explicit first:

* header-like lines anywhere in the body — ``Company:``, ``Title:`` (or ``Job title:``,
  ``Position:``, ``Role:``), ``Location:`` (or ``City:``), ``Salary:`` (or ``Compensation:``,
  ``Pay:``), ``Currency:``; the first of each kind is taken out of the text, the rest of the
  body is the description (a signature after a ``-- `` line is dropped);
* the Subject — ``Job title at Company (City)`` or ``Job title - Company - City`` (``–``,
  ``—`` and ``|`` work as separators too; reply/forward prefixes are ignored);
* the sender — as a last resort for the company: the From domain (``jobs@acme-robotics.io``
  → "Acme Robotics") unless it is a public mail service, else the From display name.

The text/plain part is preferred; a message with only HTML has its tags stripped. Nothing here
logs: a message carries e-mail addresses, and those never go to logs.
"""

from __future__ import annotations

import email
import email.policy
import re
from dataclasses import dataclass
from email.message import EmailMessage
from html.parser import HTMLParser
from typing import Any

from pydantic import ValidationError

from shortlist.errors import BadInput
from shortlist.listings.models import ListingCreate, bad_input_from

_PREFIX = re.compile(r"^\s*(?:(?:re|fwd?|aw|wg|job(?:\s+post)?|hiring)\s*:\s*)+", re.IGNORECASE)
_SUBJECT_CITY = re.compile(r"^(?P<rest>.*?)\s*\((?P<city>[^()]+)\)\s*$")
# The last " at " splits: titles contain "at" less often than company names contain nothing.
_SUBJECT_AT = re.compile(r"^(?P<title>.+)\s+at\s+(?P<company>.+)$", re.IGNORECASE)
_SUBJECT_SEP = re.compile(r"\s+[-–—|]\s+")

_FIELD_LINE = re.compile(
    r"^\s*(?P<key>company(?:\s+name)?|employer|job\s+title|title|position|role|location|city"
    r"|salary|compensation|pay|currency|work\s+mode)\s*:\s*(?P<value>.*?)\s*$",
    re.IGNORECASE,
)
_FIELD_OF_KEY = {
    "company": "company",
    "company name": "company",
    "employer": "company",
    "job title": "title",
    "title": "title",
    "position": "title",
    "role": "title",
    "location": "city",
    "city": "city",
    "salary": "salary",
    "compensation": "salary",
    "pay": "salary",
    "work mode": "work_mode",
    "currency": "currency",
}

# Codes recognised in free text. A fixed list, not "any three letters": "per", "all" and
# "DOE" (depending on experience) must not be read as currencies.
KNOWN_CURRENCIES = frozenset({
    "USD", "EUR", "GBP", "CAD", "AUD", "NZD", "CHF", "SEK", "NOK", "DKK", "ISK", "PLN",
    "CZK", "HUF", "RON", "JPY", "CNY", "HKD", "TWD", "KRW", "SGD", "INR", "IDR", "MYR",
    "THB", "PHP", "VND", "BRL", "MXN", "ARS", "CLP", "COP", "PEN", "ZAR", "NGN", "KES",
    "EGP", "MAD", "AED", "SAR", "QAR", "ILS", "TRY",
})  # fmt: skip
_SYMBOLS = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "₹": "INR", "₩": "KRW", "₪": "ILS"}
_CODE = re.compile(r"\b([A-Za-z]{3})\b")
_AMOUNT = re.compile(
    r"(?P<num>\d{1,3}(?:[,.'’\u00a0\u202f]\d{3})+(?!\d)|\d+(?:\.\d+)?)"
    r"\s*(?P<unit>k\b|m\b|thousand\b)?",
    re.IGNORECASE,
)
# Thousands separators: "120,000", "120.000", Swiss "120'000", and no-break spaces.
_GROUPED = re.compile(r"\d{1,3}(?:[,.'’\u00a0\u202f]\d{3})+")
_UP_TO = re.compile(r"\b(?:up\s*to|max(?:imum)?|under|below|less\s+than)\b|<", re.IGNORECASE)
_FROM = re.compile(
    r"\b(?:from|starting|min(?:imum)?|at\s+least|more\s+than)\b|\d\s*[kK]?\s*\+", re.IGNORECASE
)

_FREEMAIL = frozenset({
    "gmail", "googlemail", "yahoo", "ymail", "hotmail", "outlook", "live", "msn",
    "icloud", "me", "mac", "aol", "proton", "protonmail", "pm", "gmx", "web", "mail",
    "yandex", "zoho", "fastmail", "hey", "tutanota", "qq", "163",
})  # fmt: skip
_SECOND_LEVEL = frozenset({"co", "com", "org", "net", "ac", "gov", "edu", "ltd", "plc"})


@dataclass
class Salary:
    min_ks: int | None
    max_ks: int | None
    currency: str | None


def parse_salary(text: str) -> Salary:
    """Read a free-text salary: "$120K - $150K USD", "120-150k", "From $90K",
    "up to 150k EUR", "€60,000–€80,000". Amounts are returned in thousands; a bare amount of
    1000 or more is taken as a full figure, a smaller one as thousands already.

    No digits at all ("competitive", "DOE") means no salary is advertised. One amount is a
    minimum after "from"/"at least"/"90k+", a maximum after "up to"/"max", else a fixed
    salary (minimum = maximum).
    """
    currency = None
    for word in _CODE.findall(text):
        if word.upper() in KNOWN_CURRENCIES:
            currency = word.upper()
            break
    if currency is None:
        currency = next((code for sym, code in _SYMBOLS.items() if sym in text), None)

    amounts: list[tuple[float, str | None]] = []
    for m in _AMOUNT.finditer(text):
        raw = m.group("num")
        value = float(re.sub(r"\D", "", raw)) if _GROUPED.fullmatch(raw) else float(raw)
        unit = (m.group("unit") or "").lower() or None
        amounts.append((value, unit))
    if not amounts:
        return Salary(None, None, currency)
    # "120-150k": a unit written once applies to the whole range.
    shared_unit = next((u for _, u in amounts if u), None)
    values: list[int] = []
    for value, unit in amounts[:2]:
        unit = unit or shared_unit
        if unit == "m":
            value *= 1000
        elif unit is None and value >= 1000:
            value /= 1000
        values.append(round(value))
    if len(values) == 2:
        return Salary(values[0], values[1], currency)
    if _UP_TO.search(text):
        return Salary(None, values[0], currency)
    if _FROM.search(text):
        return Salary(values[0], None, currency)
    return Salary(values[0], values[0], currency)


class _TextFromHTML(HTMLParser):
    """Visible text of an HTML body, with line breaks where blocks end."""

    _BLOCK = frozenset({
        "p", "div", "br", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "tr",
        "table", "section", "article", "header", "footer",
    })  # fmt: skip
    _HIDDEN = frozenset({"script", "style", "head", "title"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._HIDDEN:
            self._hidden += 1
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._HIDDEN:
            self._hidden = max(0, self._hidden - 1)
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def html_to_text(html: str) -> str:
    parser = _TextFromHTML()
    parser.feed(html)
    parser.close()
    lines = (
        re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in "".join(parser.parts).split("\n")
    )
    return "\n".join(lines)


def _body_text(msg: EmailMessage) -> str:
    part = msg.get_body(preferencelist=("plain", "html"))
    if part is None:
        raise BadInput("the message has no text/plain or text/html body", field="body")
    try:
        content = part.get_content()
    except (LookupError, ValueError, UnicodeError) as exc:
        raise BadInput(f"the message body cannot be decoded: {exc}", field="body") from None
    if not isinstance(content, str):
        raise BadInput("the message body is not text", field="body")
    if part.get_content_subtype() == "html":
        content = html_to_text(content)
    return content.replace("\r\n", "\n").replace("\r", "\n")


def _subject_fields(subject: str) -> dict[str, str]:
    subject = _PREFIX.sub("", " ".join(subject.split()))
    found: dict[str, str] = {}
    city = _SUBJECT_CITY.match(subject)
    if city and city.group("rest"):
        subject, found["city"] = city.group("rest"), city.group("city").strip()
    if not subject:
        return found
    parts = [p.strip() for p in _SUBJECT_SEP.split(subject) if p.strip()]
    at = _SUBJECT_AT.match(subject)
    if len(parts) >= 3 and "city" not in found:
        found.update(title=parts[0], company=parts[1], city=" - ".join(parts[2:]))
    elif at:
        found.update(title=at.group("title").strip(), company=at.group("company").strip())
    elif len(parts) == 2:
        found.update(title=parts[0], company=parts[1])
    else:
        found["title"] = subject
    return found


def _sender_company(msg: EmailMessage) -> str | None:
    try:
        header: Any = msg["From"]
        addresses = tuple(header.addresses) if header is not None else ()
    except (AttributeError, IndexError, TypeError, ValueError):
        return None  # a From header the parser could not make sense of
    for addr in addresses:
        labels = [lab for lab in (addr.domain or "").lower().split(".") if lab]
        if len(labels) >= 2:
            name = labels[-2]
            if name in _SECOND_LEVEL and len(labels) >= 3:
                name = labels[-3]
            if name not in _FREEMAIL:
                return " ".join(w.capitalize() for w in re.split(r"[-_]+", name) if w)
        display = (addr.display_name or "").strip()
        if display and "@" not in display:
            return display
    return None


def _split_body(text: str) -> tuple[dict[str, str], str]:
    """Take the header-like lines out of the body; what is left is the description."""
    fields: dict[str, str] = {}
    kept: list[str] = []
    for line in text.split("\n"):
        if line == "-- ":  # RFC 3676 signature separator: contact details follow
            break
        m = _FIELD_LINE.match(line)
        if m:
            field = _FIELD_OF_KEY[" ".join(m.group("key").lower().split())]
            if field not in fields:
                if m.group("value"):
                    fields[field] = m.group("value")
                continue
        kept.append(line.rstrip())
    description = re.sub(r"\n{3,}", "\n\n", "\n".join(kept)).strip()
    return fields, description


_MISSING_HINT = {
    "title": "job title: put it in the Subject ('Title at Company (City)') or a 'Title:' line",
    "company": "company: put it in the Subject or a 'Company:' line",
    "city": "location: put it in the Subject ('… (City)') or a 'Location:' line",
}


MAX_MULTIPARTS = 50
_MULTIPART_HEADER = re.compile(rb"(?im)^content-type:[ \t]*multipart/")


def parse_job_email(raw: bytes) -> ListingCreate:
    """The listing an e-mail message describes; ``BadInput`` says what is missing."""
    if not raw.strip():
        raise BadInput("the message is empty", field="body")
    # The standard library parses and walks MIME parts recursively: a small message nesting
    # thousands of multiparts would exhaust the stack. A job post needs a handful of parts.
    if len(_MULTIPART_HEADER.findall(raw)) > MAX_MULTIPARTS:
        raise BadInput(
            f"the message nests more than {MAX_MULTIPARTS} multipart parts", field="body"
        )
    try:
        msg = email.message_from_bytes(raw, policy=email.policy.default)
        assert isinstance(msg, EmailMessage)  # guaranteed by policy.default
        body_fields, description = _split_body(_body_text(msg))
    except RecursionError:
        raise BadInput("the message is nested too deeply to read", field="body") from None
    try:
        subject = str(msg["Subject"] or "")
    except (IndexError, TypeError, ValueError):
        subject = ""
    found = _subject_fields(subject) | body_fields
    if "company" not in found and (sender := _sender_company(msg)):
        found["company"] = sender
    missing = [_MISSING_HINT[f] for f in ("title", "company", "city") if not found.get(f)]
    if missing:
        raise BadInput("could not find the " + "; the ".join(missing), field="body")
    if not description:
        raise BadInput("the message body has no job description", field="body")

    salary = parse_salary(found.get("salary", ""))
    currency = found.get("currency") or salary.currency or "USD"
    try:
        return ListingCreate(
            company_name=found["company"],
            job_title=found["title"],
            city_location=found["city"],
            description=description,
            salary_min_ks=salary.min_ks,
            salary_max_ks=salary.max_ks,
            currency_code=currency,
            work_mode=found.get("work_mode"),
        )
    except ValidationError as exc:
        raise bad_input_from(exc, prefix="e-mail job post: ") from None
