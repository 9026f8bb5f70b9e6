"""Job search filters' helpers without a database: salaries in a listing's own currency style,
the why of a match."""

from __future__ import annotations

import pytest

from shortlist.listings.money import format_salary
from shortlist.listings.why import highlighted, query_words, via


def test_why_helpers() -> None:
    assert query_words("Python, python & Rust!") == ["python", "rust"]
    assert highlighted("<i>\ue000x\ue001</i>") == "&lt;i&gt;<mark>x</mark>&lt;/i&gt;"
    assert (via(1, None), via(None, 2), via(3, 4)) == ("meaning", "words", "both")


@pytest.mark.parametrize(
    ("low", "high", "currency", "text"),
    [
        (65, 85, "EUR", "€65K – €85K"),
        (1100, 1500, "SEK", "SEK 1.1M – 1.5M"),
        (120, None, "USD", "From $120K"),
        (None, 150, "GBP", "Up to £150K"),
        (1000, 2000, "NOK", "NOK 1M – 2M"),
        (None, None, "USD", None),
    ],
)
def test_salary_in_the_listings_own_currency_style(
    low: int | None, high: int | None, currency: str, text: str | None
) -> None:
    assert format_salary(low, high, currency) == text
