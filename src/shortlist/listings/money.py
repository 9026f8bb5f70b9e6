"""Salaries as people read them: in the listing's own currency style (``€65K – €85K``,
``SEK 1.1M – 1.5M``), for the pages and the salary facet's labels.

The API's ``salary_range`` keeps the seed's format (``shortlist.listings.models``); this is only
how the pages show an amount.
"""

from __future__ import annotations

# Currencies written with a symbol before the amount; any other is its ISO code and a space.
SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "INR": "₹", "CAD": "CA$", "AUD": "A$"}

# Salary bands of the facet are 50K, 100K, 150K, 200K and more, times this factor: a band of
# "SEK 50K+" would hold every Swedish listing. Rough magnitude per currency; others are 1.
BAND_SCALE = {"SEK": 10, "NOK": 10, "DKK": 7, "CZK": 20, "PLN": 4, "INR": 20, "JPY": 100}
BAND_UNIT = 50
BANDS = 4


def format_amount(thousands: int, currency_code: str) -> str:
    """``65`` EUR → ``€65K``; ``1100`` SEK → ``SEK 1.1M``."""
    if thousands >= 1000:
        figure = f"{thousands / 1000:.1f}".removesuffix(".0") + "M"
    else:
        figure = f"{thousands}K"
    symbol = SYMBOLS.get(currency_code)
    return f"{symbol}{figure}" if symbol else f"{currency_code} {figure}"


def format_salary(low: int | None, high: int | None, currency_code: str) -> str | None:
    """A salary range for the pages; None when no figure is advertised."""
    if low is not None and high is not None:
        if low == high:
            return format_amount(low, currency_code)
        if currency_code in SYMBOLS:
            return f"{format_amount(low, currency_code)} – {format_amount(high, currency_code)}"
        # "SEK 1.1M – 1.5M": the code once, as people write it.
        return f"{format_amount(low, currency_code)} – {format_amount(high, currency_code)[4:]}"
    if low is not None:
        return f"From {format_amount(low, currency_code)}"
    if high is not None:
        return f"Up to {format_amount(high, currency_code)}"
    return None


def band_scale(currency_code: str) -> int:
    return BAND_SCALE.get(currency_code, 1)
