"""What the job pages show a job seeker beyond the listing: the currency salaries are shown
in (picked, else from the query's place, else from the browser's language), the names of
currencies and countries, a salary converted with its rate's date, the match in words, and
the one way to apply.

Currency and country data are CLDR's, through babel (https://babel.pocoo.org/, "Numbers":
``get_territory_currencies``, ``get_currency_name``; "Locale": ``Locale.parse`` and
``territories``); places through the gazetteer (shortlist.places).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from functools import cache
from urllib.parse import quote, urlsplit

from babel import Locale, UnknownLocaleError
from babel.core import get_global
from babel.numbers import get_currency_name, get_territory_currencies

from shortlist import places
from shortlist.listings.models import ListingOut, SalaryConverted
from shortlist.listings.money import format_salary
from shortlist.listings.why import SIMILAR, TITLE_MATCHES, TITLE_PART

FALLBACK_CURRENCY = "EUR"
MAX_ACCEPT_LANGUAGES = 8


def currency_of_country(code: str | None, known: set[str]) -> str | None:
    """The currency a country uses today (CLDR), if the rates know it."""
    if not code:
        return None
    try:
        found = get_territory_currencies(code.upper(), date.today())
    except Exception:  # babel raises several types for an unknown territory
        return None
    return next((c for c in found if c in known), None)


def country_of_locale(tag: str) -> str | None:
    """The territory of a language tag ("pt-PT" → PT; "de" → DE by CLDR's likely subtags)."""
    try:
        locale = Locale.parse(tag.strip().replace("-", "_"))
    except (ValueError, TypeError, UnknownLocaleError):
        return None
    if locale.territory:
        return str(locale.territory)
    likely = get_global("likely_subtags").get(locale.language)
    if isinstance(likely, str) and likely.count("_") >= 1:
        return likely.rsplit("_", 1)[-1]
    return None


def accept_languages(header: str) -> list[str]:
    """The tags of an Accept-Language header, by their q (RFC 9110 §12.5.4), best first."""
    tags: list[tuple[float, int, str]] = []
    for i, part in enumerate(header.split(",")[:MAX_ACCEPT_LANGUAGES]):
        tag, _, params = part.strip().partition(";")
        weight = 1.0
        if params.strip().startswith("q="):
            try:
                weight = float(params.strip()[2:])
            except ValueError:
                weight = 0.0
        if tag and tag != "*" and weight > 0:
            tags.append((-weight, i, tag))
    return [t for _w, _i, t in sorted(tags)]


def default_currency(query: str, location: str, accept_language: str, known: set[str]) -> str:
    """The currency to show salaries in when the person picked none: the country of the place
    the search names ("nurse in Toronto" → CAD), else of the browser's language ("pt-PT" →
    EUR, "en-US" → USD), else EUR."""
    place = places.resolve(location) if location else None
    if place is None and query:
        place = places.find_place(query)
    found = currency_of_country(place.country_code if place else None, known)
    if found:
        return found
    for tag in accept_languages(accept_language):
        found = currency_of_country(country_of_locale(tag), known)
        if found:
            return found
    return FALLBACK_CURRENCY if FALLBACK_CURRENCY in known else sorted(known)[0]


def currency_choices(known: Sequence[str]) -> list[tuple[str, str]]:
    """(code, "EUR — Euro") for each currency with a rate."""
    return [(c, f"{c} — {get_currency_name(c, locale='en')}") for c in sorted(known)]


# CLDR's two-letter codes that are no country: groupings (EU, the eurozone, the UN, outlying
# Oceania), pseudo-locales and "unknown". Kosovo's XK stays: it is where people live.
_NOT_COUNTRIES = frozenset({"EU", "EZ", "UN", "QO", "XA", "XB", "ZZ"})


@cache
def country_choices() -> list[tuple[str, str]]:
    """(code, name) of every country CLDR names, by name."""
    names = Locale("en").territories
    return sorted(
        (
            (code, str(name))
            for code, name in names.items()
            if len(code) == 2 and code.isalpha() and code not in _NOT_COUNTRIES
        ),
        key=lambda item: item[1],
    )


def country_name(code: str) -> str:
    return str(Locale("en").territories.get(code, code))


def converted_text(converted: SalaryConverted | None, listing: ListingOut) -> str | None:
    """ "≈ €82K – €99K" when the listing's salary is in another currency; None otherwise."""
    if converted is None or converted.currency == listing.currency_code:
        return None
    figure = format_salary(converted.min_ks, converted.max_ks, converted.currency)
    return f"≈ {figure}" if figure else None


def rate_day(day: date) -> str:
    return f"{day.day} {day:%B} {day:%Y}"


@dataclass(frozen=True)
class Apply:
    """The one way to apply a job page offers."""

    url: str
    label: str
    kind: str
    """``url`` (the employer's page), ``email`` (a mailto) or ``posting`` (the board's page)."""


def apply_action(listing: ListingOut) -> Apply | None:
    """The employer's application page, else a mailto with the job in the subject, else the
    posting on the employer's board; None when the listing says nowhere (or is closed)."""
    if listing.status == "closed":
        return None
    if listing.apply_url:
        host = urlsplit(listing.apply_url).hostname or ""
        return Apply(listing.apply_url, f"Apply on {host.removeprefix('www.')}", "url")
    if listing.apply_email:
        subject = quote(f"Application: {listing.job_title}", safe="")
        return Apply(
            f"mailto:{quote(listing.apply_email, safe='@')}?subject={subject}",
            f"Apply by e-mail to {listing.apply_email}",
            "email",
        )
    if listing.source_url:
        host = urlsplit(listing.source_url).hostname or ""
        return Apply(listing.source_url, f"Apply on {host.removeprefix('www.')}", "posting")
    return None


def score_note(scores: Sequence[float], labels: Sequence[Sequence[str]]) -> tuple[bool, str]:
    """Whether the page shows each hit's percentage (only when they differ), and, when every
    hit scores the same, why they are equal (what they share)."""
    percents = {round(max(0.0, min(1.0, s)) * 100) for s in scores}
    if len(scores) < 2 or len(percents) > 1:
        return True, ""
    shared = set(labels[0]).intersection(*map(set, labels[1:])) if labels else set()
    clauses = [_CLAUSES.get(label) or _mentions(label) for label in sorted(shared)]
    reason = f": in each, {' and '.join(c for c in clauses if c)}" if shared else ""
    return False, f"These {len(scores)} jobs match your search equally well{reason}."


_CLAUSES = {
    TITLE_MATCHES: "the title holds every word you typed",
    TITLE_PART: "the title holds some of your words",
    SIMILAR: "the work described is close in meaning",
}


def _mentions(label: str) -> str:
    return "the text " + label[:1].lower() + label[1:] if label.startswith("Mentions") else ""
