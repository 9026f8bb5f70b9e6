"""What every adapter maps the same way: markup to plain text, pay to thousands a year, vendor
work modes to ours, timestamps."""

from __future__ import annotations

import html
import math
from datetime import UTC, datetime
from typing import Any

import html_text

from shortlist.listings.models import MAX_SALARY_KS, WorkMode

# Hours, days, weeks and months in a working year: how a pay period becomes a yearly figure.
_PER_YEAR = {"hour": 2080, "day": 260, "week": 52, "month": 12, "year": 1}


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


def period_of(unit: str | None) -> str:
    """``HOUR``, ``per-hour-wage``, ``1 HOUR``, ``hourly``… → hour/day/week/month/year."""
    text = (unit or "year").lower()
    for period in ("hour", "day", "week", "month", "year"):
        if period in text:
            return period
    if "annual" in text:
        return "year"
    return "year"


def yearly_ks(amount: Any, period: str = "year") -> int | None:
    """An amount of money per ``period`` as whole thousands a year; None if it is no amount."""
    if isinstance(amount, bool):
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
    ks = round(value * _PER_YEAR.get(period, 1) / 1000)
    return ks if 0 <= ks <= MAX_SALARY_KS else None


def salary_pair(low: Any, high: Any, period: str) -> tuple[int | None, int | None]:
    lo, hi = yearly_ks(low, period), yearly_ks(high, period)
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


def timestamp(value: Any) -> datetime | None:
    """ISO-8601 text (a date alone is its start, UTC) or epoch milliseconds (Lever)."""
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
