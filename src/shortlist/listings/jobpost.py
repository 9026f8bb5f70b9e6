"""The understanding of a job post, whatever carried it (an e-mail, a board's description):
its title, its pay and the period the pay is for, its work mode, and the place it names.

Mail (:mod:`shortlist.listings.mail`) and the crawler (:mod:`shortlist.listings.sources`) read
the same things the same way here. Every pattern is linear (bounded repetition, one way to match
each character): the mail parser runs them on hostile text, in its sandbox process, after the
text is cut to bounded lines.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from shortlist.listings.models import MAX_SALARY_KS, MAX_TITLE, WorkMode

Period = Literal["year", "month", "week", "day", "hour"]

# How often a pay period comes round in a working year.
PER_YEAR: dict[str, float] = {
    "hour": 2080.0,
    "day": 260.0,
    "week": 52.0,
    "month": 12.0,
    "year": 1.0,
}
# The vendors' period names, each → times per year; None: no yearly figure (one-off pay).
#   schema.org / Google JobPosting ``unitText``: HOUR, DAY, WEEK, MONTH, YEAR
#     (developers.google.com/search/docs/appearance/structured-data/job-posting).
#   Lever ``salaryRange.interval`` (github.com/lever/postings-api names the field, not its
#     values; these are the ones live boards send): per-year-salary, per-month-salary, …
#   Ashby ``interval`` ("1 YEAR", "2 WEEK", "0.5 MONTH", "NONE"): a count and a unit,
#     read by _count_unit (developers.ashbyhq.com, job postings API, compensation).
_NAMED_PERIODS: dict[str, float | None] = {
    **PER_YEAR,
    "hourly": 2080.0, "daily": 260.0, "weekly": 52.0, "monthly": 12.0, "yearly": 1.0,
    "annual": 1.0, "annually": 1.0, "annum": 1.0,
    "per-hour-wage": 2080.0, "per-day-wage": 260.0, "per-week-salary": 52.0,
    "per-month-salary": 12.0, "per-year-salary": 1.0, "bi-week-salary": 26.0,
    "semi-month-salary": 24.0, "bi-month-salary": 6.0, "one-time": None, "none": None,
}  # fmt: skip


@dataclass(frozen=True)
class Salary:
    min_ks: int | None
    max_ks: int | None
    currency: str | None
    period: Period


# --- patterns ------------------------------------------------------------------------------

_SEPARATOR = re.compile(r"\s[-–—|·•]\s|\s?[|·•]\s?")
_GENDER = re.compile(
    r"\(\s?(?:[mwfdxi]{1,3}\s?(?:[/|,]\s?[mwfdxi*]{1,4}\s?){1,3}|all\sgenders?|gn\*?|d/m/w"
    r"|any\sgender)\s?\)|\s[mwfd]/[mwfd]/[dxi]\b",
    re.IGNORECASE,
)
_SALARY_WORDS = re.compile(
    r"\b(?:salary|compensation|pay|package|base|ote|per\sannum|p\.\s?a\.|gehalt|vergütung"
    r"|jahresgehalt|brutto|bruttojahresgehalt|verdienst|entgelt|lohn|stundenlohn|tagessatz)\b",
    re.IGNORECASE,
)
_CURRENCY = re.compile(
    r"(?P<sym>[€$£¥₹])|\b(?P<code>EUR|USD|GBP|CHF|CAD|AUD|SEK|NOK|DKK|PLN|CZK|JPY|INR|SGD|NZD)\b"
    r"|(?P<word>\beuros?\b|\bdollars?\b|\bpounds?\b|\bfranken\b)",
    re.IGNORECASE,
)
_WORD_CURRENCY = {"euro": "EUR", "dollar": "USD", "pound": "GBP", "franken": "CHF"}
_SYMBOL_CURRENCY = {"€": "EUR", "$": "USD", "£": "GBP", "¥": "JPY", "₹": "INR"}
# An amount: grouped digits ("65.000", "55,000", "120'000", "90 000") or up to 7 plain digits,
# an optional decimal part, and an optional thousands unit ("70K", "85 Tsd.").
_AMOUNT = re.compile(
    r"(?<![\d.,])(?P<num>\d{1,3}(?:[.,'’\u00a0\u202f ]\d{3}){1,3}|\d{1,7})(?P<dec>[.,]\d{1,2})?"
    r"(?![\d])\s?(?P<unit>k\b|tsd\.?|tausend\b|thousand\b|m\b|mio\.?)?",
    re.IGNORECASE,
)
_PERIODS: tuple[tuple[Period, re.Pattern[str]], ...] = (
    (
        "hour",
        re.compile(
            r"per\shour|an\shour|hourly|/\s?h(?:ou)?r\b|/\s?h\b|pro\sstunde|stundenlohn|€/h",
            re.IGNORECASE,
        ),
    ),
    (
        "day",
        re.compile(r"per\sday|a\sday\b|daily\srate|day\srate|/\s?day|pro\stag|tagessatz", re.I),
    ),
    (
        "month",
        re.compile(
            r"per\smonth|a\smonth|monthly|/\s?mo(?:nth)?\b|pro\smonat|im\smonat|monatlich"
            r"|monatsgehalt|brutto\smonatlich",
            re.IGNORECASE,
        ),
    ),
)

_FULLY_REMOTE = re.compile(
    r"\b(?:fully\sremote|100\s?%\sremote|remote[-\s]first|remote[-\s]only|full[-\s]remote"
    r"|work\sfrom\sanywhere|anywhere\sin\s(?:europe|the\sworld)|vollständig\sremote"
    r"|komplett\sremote|100\s?%\shome[-\s]?office|remote\s\(anywhere)",
    re.IGNORECASE,
)
_HYBRID = re.compile(
    r"\bhybrid\b|\bhybride[sn]?\b|remote[-\s]anteil|home[-\s]?office|mobiles\sarbeiten"
    r"|teilweise\sremote|partly\sremote|partially\sremote|flexible\sremote"
    r"|\b\d(?:\s?[-–]\s?\d)?\s(?:days?|tage?n?)\s(?:a|per|pro|die|in\sder|each)\s(?:week|woche)"
    r"|\b(?:one|two|three|four)\sdays?\s(?:a|per)\sweek|\b(?:ein|zwei|drei|vier)\stage?\s(?:pro|die)"
    r"\swoche",
    re.IGNORECASE,
)
_ONSITE = re.compile(
    r"\bon[-\s]?site\b|\bin[-\s]office\b|\boffice[-\s]based\b|\bvor\sort\b|\bpräsenz|\bnot\sremote"
    r"|\bno\sremote\b|\bkein\shomeoffice",
    re.IGNORECASE,
)
_REMOTE = re.compile(r"\bremote\b|\bwork\sfrom\shome\b", re.IGNORECASE)

_JOB_WORDS = re.compile(
    r"\b(?:hiring|vacanc(?:y|ies)|position|role|job|opening|apply|application|responsibilities"
    r"|requirements|qualifications|join\sour|looking\sfor|we\soffer|benefits|salary|candidate"
    r"|full[-\s]time|part[-\s]time|engineer|developer|manager|stelle|wir\ssuchen|aufgaben"
    r"|anforderungen|ihr\sprofil|dein\sprofil|wir\sbieten|bewerbung|bewirb|gehalt|vollzeit"
    r"|teilzeit|festanstellung|mitarbeiter|entwickler|ingenieur)\b",
    re.IGNORECASE,
)


# --- title ---------------------------------------------------------------------------------


def clean_title(text: str) -> str:
    """A title without gender markers ("(m/w/d)"), work-mode and salary tails, quotes."""
    title = _GENDER.sub(" ", text)
    title = re.sub(r"\((?:[^()]{0,60})\)", lambda m: "" if _noise(m.group()) else m.group(), title)
    parts = [p.strip() for p in _SEPARATOR.split(title) if p.strip()]
    if parts:
        title = parts[0]
    title = " ".join(title.split()).strip(" \"'“”„*-–—:,;|")
    return title[:MAX_TITLE]


def _noise(text: str) -> bool:
    """Words in a title that are not the role: a work mode, a salary, a place marker."""
    return bool(
        _REMOTE.search(text)
        or _HYBRID.search(text)
        or _ONSITE.search(text)
        or (_CURRENCY.search(text) and _AMOUNT.search(text))
        or re.search(r"\b(?:full|part)[-\s]time\b|\bvollzeit|\bteilzeit", text, re.I)
    )


# --- pay -----------------------------------------------------------------------------------


def _to_thousands(num: str, dec: str | None, unit: str | None) -> float | None:
    """One amount as thousands; price-parser reads the figure ("65.000", "55,000", "120'000")
    (https://github.com/scrapinghub/price-parser)."""
    from price_parser import Price

    price = Price.fromstring(num + (dec or ""))
    if price.amount is None:
        return None
    try:
        value = float(price.amount)
    except (InvalidOperation, OverflowError, ValueError):
        return None
    if isinstance(price.amount, Decimal) and not price.amount.is_finite():
        return None
    unit = (unit or "").lower().rstrip(".")
    if unit in ("k", "tsd", "tausend", "thousand"):
        return value
    if unit in ("m", "mio"):
        return value * 1000
    return value / 1000


def parse_salary(line: str) -> Salary | None:
    """The salary a line states: "£55,000 - £65,000 per annum", "65.000 – 80.000 € brutto im
    Jahr", "€70K–€90K", "4.500 € pro Monat", "$60/hour". Amounts become thousands per year."""
    currency: str | None = None
    cur = _CURRENCY.search(line)
    if cur:
        if cur.group("sym"):
            currency = _SYMBOL_CURRENCY[cur.group("sym")]
        elif cur.group("code"):
            currency = cur.group("code").upper()
        else:
            currency = _WORD_CURRENCY[cur.group("word").lower().rstrip("s")]
    raw = [(m.group("num"), m.group("dec"), m.group("unit")) for m in _AMOUNT.finditer(line)][:4]
    # Years ("since 2015"), percentages and day counts are not salaries.
    raw = [r for r in raw if not re.fullmatch(r"(?:19|20)\d\d", r[0])]
    if not raw:
        return None
    # "70-90K": a unit written once applies to the whole range.
    shared = next((u for _n, _d, u in raw if u), None)
    period: Period = next((p for p, pattern in _PERIODS if pattern.search(line)), "year")
    values: list[float] = []
    for num, dec, unit in raw[:2]:
        value = _to_thousands(num, dec, unit or (shared if len(raw) > 1 else None))
        if value is None:
            return None
        values.append(value * PER_YEAR[period])
    if period == "year" and all(v < 1 for v in values):
        return None  # "€70" a year is no salary: a stray number
    ks = [round(v) for v in values if 0 < v <= MAX_SALARY_KS]
    if len(ks) != len(values):
        return None
    low, high = (ks[0], ks[1]) if len(ks) == 2 else (ks[0], ks[0])
    if low > high:
        low, high = high, low
    if re.search(r"\b(?:up\sto|bis\szu|max(?:imum)?)\b", line, re.I) and len(ks) == 1:
        return Salary(None, high, currency, period)
    from_words = r"\b(?:from|ab|starting\sat|at\sleast|mindestens)\b|\d\s?[kK]?\s?\+"
    if re.search(from_words, line, re.I) and len(ks) == 1:
        return Salary(low, None, currency, period)
    return Salary(low, high, currency, period)


def find_salary(lines: list[str], subject: str = "") -> Salary | None:
    """The first salary the lines (and a subject) state: a line with a pay word or a currency
    and an amount, read by :func:`parse_salary`."""
    candidates = [ln for ln in lines if _SALARY_WORDS.search(ln) and _AMOUNT.search(ln)]
    candidates += [ln for ln in [subject, *lines] if _CURRENCY.search(ln) and _AMOUNT.search(ln)]
    for line in candidates[:50]:
        salary = parse_salary(line)
        if salary is not None and (salary.currency or _SALARY_WORDS.search(line)):
            return salary
    return None


def find_work_mode(text: str) -> WorkMode | None:
    """ "fully remote" → remote; "hybrid", "2 days a week in the office", "Remote-Anteil bis zu 3
    Tage" → hybrid; "on-site", "vor Ort" → onsite; a bare "remote" → remote."""
    if _FULLY_REMOTE.search(text):
        return "remote"
    if _HYBRID.search(text):
        return "hybrid"
    if _ONSITE.search(text):
        return "onsite"
    if _REMOTE.search(text):
        return "remote"
    return None


def job_score(text: str) -> int:
    """How much a text reads like a job post: its job words, and 3 for an amount of money."""
    return len(_JOB_WORDS.findall(text[:20_000])) + (
        3 if _CURRENCY.search(text[:20_000]) and _AMOUNT.search(text[:20_000]) else 0
    )


def period_of(unit: str | None) -> float | None:
    """How many times a year a vendor's pay period comes round (``HOUR`` → 2080,
    ``bi-week-salary`` → 26, Ashby's ``2 WEEK`` → 26); no unit: yearly. None: a period that
    makes no yearly figure (one-off, ``NONE``) or one not known, so no salary is guessed."""
    if unit is None or not str(unit).strip():
        return 1.0
    text = str(unit).strip().lower()
    if text in _NAMED_PERIODS:
        return _NAMED_PERIODS[text]
    return _count_unit(text)


def _count_unit(text: str) -> float | None:
    """Ashby's "N UNIT" (``1 YEAR``, ``0.5 MONTH``): the unit's rate over the count."""
    count, _, unit = text.partition(" ")
    rate = PER_YEAR.get(unit.strip().removesuffix("s"))
    try:
        n = float(count)
    except ValueError:
        return None
    if rate is None or not math.isfinite(n) or n <= 0:
        return None
    return rate / n


def yearly_ks(amount: Any, per_year: float | None = 1.0) -> int | None:
    """An amount of money paid ``per_year`` times a year (:func:`period_of`) as whole thousands
    a year; None if it is no amount, or no yearly figure can be made of it."""
    if isinstance(amount, bool) or per_year is None:
        return None
    try:
        value = (
            float(str(amount).replace(",", "").strip())
            if isinstance(amount, str)
            else float(amount)
        )
    except (TypeError, ValueError):
        return None
    if not math.isfinite(value) or value <= 0:
        return None
    ks = round(value * per_year / 1000)
    # Under 500 a year rounds to nothing: no salary, not a salary of 0.
    return ks if 0 < ks <= MAX_SALARY_KS else None


def salary_pair(low: Any, high: Any, per_year: float | None) -> tuple[int | None, int | None]:
    """A vendor's structured range as thousands a year, low first."""
    lo, hi = yearly_ks(low, per_year), yearly_ks(high, per_year)
    if lo is not None and hi is not None and lo > hi:
        lo, hi = hi, lo
    return lo, hi


def currency_code(code: Any) -> str | None:
    """A vendor's ISO 4217 code, upper case; None if it is not three letters."""
    if isinstance(code, str) and len(code.strip()) == 3 and code.strip().isalpha():
        return code.strip().upper()
    return None


# --- work mode -----------------------------------------------------------------------------


def named_work_mode(value: Any) -> WorkMode | None:
    """A work mode a field names: Lever ``remote``/``hybrid``/``on-site``, Ashby
    ``Remote``/``Hybrid``/``OnSite``, schema.org ``TELECOMMUTE``; anything else: None (the
    text may say it: :func:`find_work_mode`)."""
    if not isinstance(value, str):
        return None
    key = value.strip().lower().replace("-", "").replace("_", "").replace(" ", "")
    if key in ("remote", "telecommute"):
        return "remote"
    if key == "hybrid":
        return "hybrid"
    if key in ("onsite", "inoffice", "office"):
        return "onsite"
    return None


# --- place ---------------------------------------------------------------------------------


def city_of(field: str | None, texts: list[str]) -> str | None:
    """The city a post names: its location ``field`` (a "Location:" line, the source's location
    field) read whole first, then the place each text names, in order (the gazetteer,
    :mod:`shortlist.places`); a remote marker is no city."""
    from shortlist import places

    if field:
        place = places.resolve(field) or places.find_place(field)
        if place is not None and place.kind is not places.PlaceKind.remote:
            return place.name
    for text in texts:
        found = places.locate_place(text[:2000])
        if found is not None and found.place.kind is not places.PlaceKind.remote:
            return found.place.name
    return None


def title_without_place(title: str) -> str:
    """A title with the place it ends with cut off ("Data Engineer Berlin" → "Data Engineer");
    cut only where the gazetteer read a place."""
    from shortlist import places

    found = places.locate_place(title)
    if found is not None and found.start > 0 and found.place.kind is not places.PlaceKind.remote:
        title = title[: found.start]
    return title.strip(" ,-–—(") or title


_EURO = frozenset(
    {"DE", "AT", "FR", "ES", "PT", "IT", "NL", "BE", "IE", "FI", "GR", "LU", "SK", "SI"}
)
_NATIONAL = {"GB": "GBP", "CH": "CHF", "SE": "SEK", "NO": "NOK", "DK": "DKK", "PL": "PLN"}


def default_currency(city: str) -> str:
    """The currency of a city's country (EUR, GBP, …), USD if not known."""
    from shortlist import places

    place = places.resolve(city)
    code = place.country_code if place is not None else None
    if code in _EURO:
        return "EUR"
    return _NATIONAL.get(code or "", "USD")


# --- what a board's description states ------------------------------------------------------

# A remote statement as boards write them: "This position is US - Remote Eligible", "This role
# is remote within Canada", "Remote-Friendly", "(Remote)". Stricter than find_work_mode's bare
# "remote": a description mentions remote monitoring, remote teams, remote sensing.
_STATED_REMOTE = re.compile(
    r"\bremote[-\s]eligible\b|\bremote[-\s]friendly\b|\bremote\s(?:within|in|from|across)\s"
    r"(?:the\s)?[A-Z][\w.]*|\b(?:position|role|job|opportunity)\sis\s(?:a\s)?(?:fully\s)?"
    r"remote\b|\b(?:this\sis\sa|we\sare\shiring\sa)\s(?:fully\s)?remote\s(?:role|position|job)"
    r"|\(remote\)|^\s?remote\s?$|[-–—|,]\s?remote\b",
    re.IGNORECASE | re.MULTILINE,
)


def stated_work_mode(text: str) -> WorkMode | None:
    """The work mode a posting's description states in so many words: "fully remote", "hybrid",
    "2 days a week in the office", "on-site", "US - Remote Eligible", "remote within Canada"."""
    head = text[:20_000]
    if _FULLY_REMOTE.search(head):
        return "remote"
    if _HYBRID.search(head):
        return "hybrid"
    if _STATED_REMOTE.search(head):
        return "remote"
    if _ONSITE.search(head):
        return "onsite"
    return None


def salary_in_text(text: str) -> Salary | None:
    """The pay a description states ("$75k - $105k", "$34.62/hour", "$60,000 - $97,000/year"),
    read as the e-mail intake reads it: a line with a pay word or a currency, and an amount."""
    lines = [" ".join(line.split()) for line in text[:50_000].splitlines()]
    return find_salary([line[:1000] for line in lines if line][:4000])


# Postings that name several places in one field: "London, UK; Ontario, CAN; Remote-Friendly,
# United States; San Francisco, CA". Within one place, commas separate city, region, country.
_PLACE_LIST = re.compile(r"\s*(?:;|\||\s/\s|\bor\b)\s*")
MAX_PLACES = 10


def places_of_field(text: str) -> list[str]:
    """The places a location field names, each as the gazetteer names it ("London",
    "Ontario", "San Francisco"; "Remote" for a remote one), in the field's order, no repeats;
    a part the gazetteer does not know is kept as written."""
    from shortlist import places

    out: list[str] = []
    for part in _PLACE_LIST.split(text[:1000])[:MAX_PLACES]:
        part = part.strip(" ,")
        if not part:
            continue
        place = places.resolve(part)
        if re.search(r"\bremote\b", part, re.IGNORECASE):
            name = "Remote"  # "Remote-Friendly, United States": the work, not a city
        else:
            name = place.name if place is not None else part
        if name not in out:
            out.append(name)
    return out
