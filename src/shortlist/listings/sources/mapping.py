"""What every adapter maps the same way: markup to plain text, pay to thousands a year, vendor
work modes to ours, timestamps."""

from __future__ import annotations

import html
import math
from datetime import UTC, datetime
from typing import Any

import html_text

from shortlist.listings.models import MAX_SALARY_KS, WorkMode

# How often a pay period comes round in a working year.
_UNIT_PER_YEAR = {"hour": 2080.0, "day": 260.0, "week": 52.0, "month": 12.0, "year": 1.0}
# The vendors' period names, each → times per year; None: no yearly figure (one-off pay).
#   schema.org / Google JobPosting ``unitText``: HOUR, DAY, WEEK, MONTH, YEAR
#     (developers.google.com/search/docs/appearance/structured-data/job-posting).
#   Lever ``salaryRange.interval`` (github.com/lever/postings-api names the field, not its
#     values; these are the ones live boards send): per-year-salary, per-month-salary, …
#   Ashby ``interval`` ("1 YEAR", "2 WEEK", "0.5 MONTH", "NONE"): a count and a unit,
#     read by _count_unit (developers.ashbyhq.com, job postings API, compensation).
_NAMED_PERIODS: dict[str, float | None] = {
    **_UNIT_PER_YEAR,
    "hourly": 2080.0, "daily": 260.0, "weekly": 52.0, "monthly": 12.0, "yearly": 1.0,
    "annual": 1.0, "annually": 1.0, "annum": 1.0,
    "per-hour-wage": 2080.0, "per-day-wage": 260.0, "per-week-salary": 52.0,
    "per-month-salary": 12.0, "per-year-salary": 1.0, "bi-week-salary": 26.0,
    "semi-month-salary": 24.0, "bi-month-salary": 6.0, "one-time": None, "none": None,
}  # fmt: skip


def plain_text(markup: str | None, *, escaped: bool = False) -> str:
    """Visible text of an HTML fragment, without markup or entities (``html_text``, on lxml:
    block elements become line breaks). ``escaped``: the markup itself arrives entity-escaped
    (Greenhouse's ``content``: ``&lt;p&gt;``), so it is unescaped once first."""
    if not markup:
        return ""
    source = html.unescape(markup) if escaped else markup
    if "<" not in source and "&" not in source:
        return source.strip()
    return str(html_text.extract_text(source, guess_layout=True)).strip()


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
    rate = _UNIT_PER_YEAR.get(unit.strip().removesuffix("s"))
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
    lo, hi = yearly_ks(low, per_year), yearly_ks(high, per_year)
    if lo is not None and hi is not None and lo > hi:
        lo, hi = hi, lo
    return lo, hi


def currency(code: Any) -> str | None:
    if isinstance(code, str) and len(code.strip()) == 3 and code.strip().isalpha():
        return code.strip().upper()
    return None


def work_mode(value: Any) -> WorkMode | None:
    """Lever ``remote``/``hybrid``/``on-site``, Ashby ``Remote``/``Hybrid``/``OnSite``,
    schema.org ``TELECOMMUTE``; anything else: None (inferred from the text)."""
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


def timestamp(value: Any, *, end_of_day: bool = False) -> datetime | None:
    """ISO-8601 text or epoch milliseconds (Lever). A date alone (Google's JobPosting allows
    ``"2017-02-24"``) is its start, UTC; with ``end_of_day`` its last moment: a posting
    ``validThrough`` a date is still open on that day."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(value / 1000, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip().replace("Z", "+00:00")
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if end_of_day and len(text) == 10:  # YYYY-MM-DD
        parsed = parsed.replace(hour=23, minute=59, second=59, microsecond=999999)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def text_of(value: Any, limit: int) -> str | None:
    """A trimmed string of at most ``limit`` characters, or None."""
    if not isinstance(value, str | int) or isinstance(value, bool):
        return None
    text = " ".join(str(value).split())
    return text[:limit] if text else None


def obj(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (a vendor's null or odd type)."""
    return value if isinstance(value, dict) else {}
