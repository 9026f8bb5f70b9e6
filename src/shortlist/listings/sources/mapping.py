"""What every adapter maps the same way: markup to plain text, timestamps, trimmed text. Pay and
work modes are read by :mod:`shortlist.listings.jobpost`, which the e-mail intake shares."""

from __future__ import annotations

import html
from datetime import UTC, datetime
from typing import Any

import html_text


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
