"""Reference exchange rates: every salary in one currency, from a dated table, never fetched
at search time.

The table (``exchange_rates``, migration 0033) holds how many units of each currency one euro
buys and the date of that rate: the European Central Bank's daily reference rates (base EUR),
bundled as ``data/eurofxref.csv`` with the fixed parities of currencies pegged to one of them
(``data/pegs.csv``; data/README.md names both). Every migrated database gets the bundled table
(:func:`seed_bundled`); ``shortlist rates update FILE`` loads a newer ECB file.

Salaries are stored as yearly thousands of their own currency (shortlist.listings.models), so a
conversion is one multiplication: ``ks × per_eur(to) / per_eur(from)``. The search reads the
table through :class:`RateCache` (at most one read a minute per process) and converts the
page's hits and the salary filter's threshold in Python; SQL has ``shortlist_convert_ks``.
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from importlib import resources
from typing import Any

import psycopg

from shortlist.db.sql import load_queries
from shortlist.db.types import AsyncPool
from shortlist.errors import BadInput
from shortlist.listings.models import SalaryConverted

QUERIES = load_queries("shortlist.listings", "rates.sql")

ECB_SOURCE = "ECB euro foreign exchange reference rates"
CACHE_SECONDS = 60.0


@dataclass(frozen=True)
class Rate:
    currency_code: str
    per_eur: Decimal
    """Units of the currency one euro buys."""
    rate_date: date
    source: str


def _ecb_date(text: str) -> date:
    text = text.strip()
    for fmt in ("%d %B %Y", "%Y-%m-%d"):
        try:
            return datetime.strptime(text, fmt).date()
        except ValueError:
            continue
    raise BadInput(f"not a date of an ECB rates file: {text[:40]!r}")


def parse_ecb(text: str) -> list[Rate]:
    """The rates of an ECB reference rates file: the daily ``eurofxref.csv`` ("Date, USD, JPY,
    …" then "30 October 2026, 1.1172, …") or the history file ``eurofxref-hist.csv`` (one line
    per day, newest first, ``N/A`` for currencies not quoted that day): its newest line. EUR is
    added at 1. ``BadInput`` if the text is not such a file."""
    rows = [[c.strip() for c in row] for row in csv.reader(io.StringIO(text)) if row]
    if len(rows) < 2 or rows[0][0].lower() != "date":
        raise BadInput("not an ECB reference rates file: the first line must be 'Date, USD, …'")
    header, dated = rows[0], [r for r in rows[1:] if r and r[0]]
    newest = max(dated, key=lambda r: _ecb_date(r[0]))
    day = _ecb_date(newest[0])
    rates = [Rate("EUR", Decimal(1), day, ECB_SOURCE)]
    for code, value in zip(header[1:], newest[1:], strict=False):
        if len(code) != 3 or not code.isalpha() or not value or value == "N/A":
            continue
        try:
            per_eur = Decimal(value)
        except InvalidOperation:
            raise BadInput(f"not a rate for {code}: {value[:40]!r}") from None
        if per_eur > 0:
            rates.append(Rate(code.upper(), per_eur, day, ECB_SOURCE))
    if len(rates) == 1:
        raise BadInput("the ECB rates file quotes no currency")
    return rates


def with_pegs(rates: list[Rate], pegs_csv: str) -> list[Rate]:
    """``rates`` and, for each peg (currency, anchor, per_anchor, authority) whose anchor has a
    rate, the pegged currency through it, dated as the anchor's rate."""
    by_code = {r.currency_code: r for r in rates}
    out = list(rates)
    for row in csv.DictReader(io.StringIO(pegs_csv)):
        anchor = by_code.get(row["anchor"])
        if anchor is None or row["currency"] in by_code:
            continue
        out.append(
            Rate(
                row["currency"],
                anchor.per_eur * Decimal(row["per_anchor"]),
                anchor.rate_date,
                f"{row['authority']}: {row['per_anchor']} per {row['anchor']}",
            )
        )
    return out


def _data(name: str) -> str:
    return resources.files("shortlist.listings").joinpath("data", name).read_text("utf-8")


def bundled() -> list[Rate]:
    """The rates shipped with shortlist (data/eurofxref.csv and data/pegs.csv)."""
    return with_pegs(parse_ecb(_data("eurofxref.csv")), _data("pegs.csv"))


def from_file(text: str) -> list[Rate]:
    """The rates of an ECB file, with the bundled pegs."""
    return with_pegs(parse_ecb(text), _data("pegs.csv"))


def _params(rates: Iterable[Rate]) -> dict[str, list[Any]]:
    rows = list(rates)
    return {
        "codes": [r.currency_code for r in rows],
        "per_eur": [r.per_eur for r in rows],
        "dates": [r.rate_date for r in rows],
        "sources": [r.source for r in rows],
    }


def seed_bundled(url: str) -> None:
    """Store the bundled rates in the database at ``url`` where they are newer than what it
    has (a migrated database's first rates; never older ones over a newer update)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(QUERIES["store_rates"], _params(bundled()))


async def store(pool: AsyncPool, rates: list[Rate]) -> int:
    """Store ``rates`` (an update: each replaces its currency's row whatever its date);
    returns how many."""
    async with pool.connection() as conn:
        await conn.execute(QUERIES["replace_rates"], _params(rates))
    return len(rates)


async def load(pool: AsyncPool) -> dict[str, Rate]:
    async with pool.connection() as conn:
        cur = await conn.execute(QUERIES["all_rates"])
        rows = await cur.fetchall()
    return {
        r["currency_code"]: Rate(r["currency_code"], r["per_eur"], r["rate_date"], r["source"])
        for r in rows
    }


class Rates:
    """A snapshot of the table: conversions of yearly thousands between currencies."""

    def __init__(self, by_code: dict[str, Rate]) -> None:
        self.by_code = by_code

    def factor(self, from_code: str, to_code: str) -> float | None:
        """What one unit of ``from_code`` is in ``to_code``; None without both rates."""
        src, dst = self.by_code.get(from_code), self.by_code.get(to_code)
        if src is None or dst is None:
            return None
        return float(dst.per_eur / src.per_eur)

    def rate_date(self, from_code: str, to_code: str) -> date | None:
        """The date of the older of the two rates (the conversion is as of then)."""
        src, dst = self.by_code.get(from_code), self.by_code.get(to_code)
        if src is None or dst is None:
            return None
        return min(src.rate_date, dst.rate_date)

    def convert(
        self, low: int | None, high: int | None, from_code: str, to_code: str
    ) -> SalaryConverted | None:
        """A listing's figures in ``to_code``; None without a figure or a rate."""
        if low is None and high is None:
            return None
        factor, day = self.factor(from_code, to_code), self.rate_date(from_code, to_code)
        if factor is None or day is None:
            return None
        return SalaryConverted(
            min_ks=None if low is None else round(low * factor),
            max_ks=None if high is None else round(high * factor),
            currency=to_code,
            rate_date=day,
        )

    def thresholds(self, amount_ks: int, to_code: str) -> dict[str, float]:
        """For a salary filter of ``amount_ks`` thousands of ``to_code``: the same amount in
        each currency with a rate (search.sql, filter_salary_converted)."""
        return {code: amount_ks / f for code, f in self.factors(to_code).items()}

    def factors(self, to_code: str) -> dict[str, float]:
        """What one unit of each currency with a rate is in ``to_code``."""
        found = {code: self.factor(code, to_code) for code in sorted(self.by_code)}
        return {code: f for code, f in found.items() if f}


class RateCache:
    """The table as a search reads it: read again at most every :data:`CACHE_SECONDS` (a
    ``shortlist rates update`` shows within a minute)."""

    def __init__(self, seconds: float = CACHE_SECONDS) -> None:
        self.seconds = seconds
        self._rates: Rates | None = None
        self._read_at = 0.0

    async def get(self, pool: AsyncPool) -> Rates:
        now = time.monotonic()
        if self._rates is None or now - self._read_at > self.seconds:
            self._rates = Rates(await load(pool))
            self._read_at = now
        return self._rates
