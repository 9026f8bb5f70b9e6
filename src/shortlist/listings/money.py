"""Salaries as people read them: in the listing's own currency style (``€65K – €85K``,
``SEK 1.1M – 1.5M``), for the pages and the salary facet's labels.

The API's ``salary_range`` keeps the seed's format (``shortlist.listings.models``); this is only
how the pages show an amount.
"""

from __future__ import annotations

from typing import Any

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


REFERENCE_STEP_EUR = 20
"""The salary facet's bands in a chosen currency are multiples of about this many thousand
euros in it, rounded to a figure people write (20K USD, 200K SEK, 3M JPY)."""
MAX_BANDS = 6


def nice(amount: float) -> int:
    """``amount`` (thousands) down to 1, 2, 2.5 or 5 times a power of ten, at least 1."""
    if amount <= 1:
        return 1
    power = int(10 ** (len(str(int(amount))) - 1))
    for m in (5, 2.5, 2, 1):
        if amount >= m * power and (m * power) == int(m * power):
            return int(m * power)
    return power


def salary_step(rates: Any, currency_code: str) -> int:
    """The facet's step in ``currency_code`` (thousands), from the reference rates."""
    factor = rates.factor("EUR", currency_code) or 1.0
    return nice(REFERENCE_STEP_EUR * factor)
