"""Who may take a job: the countries a remote job accepts, and whether it sponsors a visa.

Read from the sources' fields where they have them (Lever ``country``, Ashby's address country,
JSON-LD ``applicantLocationRequirements``: shortlist.listings.sources) and otherwise from the
listing's own words, in English and German, with the gazetteer (shortlist.places) for country
names in either language: "Remote (US only)", "remote within the EU", "Remote – Deutschland",
"nur innerhalb Deutschlands", "visa sponsorship available", "we are unable to sponsor",
"Unterstützung beim Visum".

Only a stated restriction counts: "remote-first company in Berlin" names no country a remote
worker must live in, so a place is read only in the phrases below (after "remote" in brackets
or after a dash, "within"/"only in"/"based in"/"innerhalb", "…-only", "…weit"). Regions expand
to their countries (:data:`REGIONS`). Nothing read: an empty list, which the remote_country
filter treats as "not said" (shown to everyone who asks for remote work).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from shortlist import places
from shortlist.text import fold

VisaSponsorship = Literal["offered", "not_offered", "unknown"]
VISA_VALUES: tuple[VisaSponsorship, ...] = ("offered", "not_offered", "unknown")

_EU = [
    "AT",
    "BE",
    "BG",
    "HR",
    "CY",
    "CZ",
    "DK",
    "EE",
    "FI",
    "FR",
    "DE",
    "GR",
    "HU",
    "IE",
    "IT",
    "LV",
    "LT",
    "LU",
    "MT",
    "NL",
    "PL",
    "PT",
    "RO",
    "SK",
    "SI",
    "ES",
    "SE",
]
_EEA = [*_EU, "IS", "LI", "NO"]
REGIONS: dict[str, tuple[str, ...]] = {
    "eu": tuple(_EU),
    "european union": tuple(_EU),
    "europaische union": tuple(_EU),
    "eea": tuple(_EEA),
    "ewr": tuple(_EEA),
    "european economic area": tuple(_EEA),
    "europe": (*_EEA, "CH", "GB"),
    "europa": (*_EEA, "CH", "GB"),
    "dach": ("DE", "AT", "CH"),
    "nordics": ("DK", "FI", "IS", "NO", "SE"),
    "nordic countries": ("DK", "FI", "IS", "NO", "SE"),
    "scandinavia": ("DK", "NO", "SE"),
    "north america": ("US", "CA", "MX"),
    "nordamerika": ("US", "CA", "MX"),
    "benelux": ("BE", "NL", "LU"),
    "uk": ("GB",),
    "us": ("US",),
    "usa": ("US",),
}
"""Regions a posting names, by their folded name, and the ISO 3166 alpha-2 codes they stand
for (the EU's 27 members; the EEA adds Iceland, Liechtenstein and Norway)."""

# A place list: up to six capitalised names (or a region's) joined by commas, "/", "&", "or",
# "and", "oder", "und".
_NAME = r"(?:[A-ZÄÖÜ][\w.'’-]*(?: [A-ZÄÖÜ][\w.'’-]*){0,2})"
_PLACES = rf"(?P<places>{_NAME}(?:\s*(?:,|/|&|\bor\b|\band\b|\boder\b|\bund\b)\s*{_NAME}){{0,5}})"
_REMOTE = r"(?:remote|fully remote|100\s?% remote|home\s?office|mobile?s? arbeiten|work from home)"
_THE = r"(?:the |der |des |von |ganz |all of (?:the )?)?"
_REMOTE_WORDS = ("remote", "home", "mobil")
"""A word each of :data:`_REMOTE`'s phrases holds, in :func:`_folded` text."""
# Each phrase with the words one of which any text it matches holds (in _folded text): a text
# holding none is not scanned, which gives the same answer (most texts name no restriction,
# and the scans were ~1 ms of CPU per listing, most of a bulk import's Python time).
_PATTERNS: list[tuple[tuple[str, ...], re.Pattern[str]]] = [
    # "Remote (US only)", "Remote [EU]", "Remote (Germany, Austria)"
    (
        _REMOTE_WORDS,
        re.compile(
            rf"{_REMOTE}\s*[(\[]\s*{_THE}{_PLACES}(?:\s*[-–]?\s*(?:only|nur))?\s*[)\]]", re.I
        ),
    ),
    # "Remote – Deutschland", "Remote - US", "Remote: EU"
    (_REMOTE_WORDS, re.compile(rf"{_REMOTE}\s*[-–—:|,]\s*{_THE}{_PLACES}", re.I)),
    # "remote within the EU", "remote in Germany", "remote from Portugal", "Remote aus ganz …"
    (_REMOTE_WORDS, re.compile(rf"{_REMOTE}\s+(?:with)?in\s+{_THE}{_PLACES}", re.I)),
    (_REMOTE_WORDS, re.compile(rf"{_REMOTE}\s+(?:from|aus|in)\s+{_THE}{_PLACES}", re.I)),
    # "anywhere in the EU", "from anywhere in Europe"
    (("anywhere",), re.compile(rf"anywhere\s+(?:with)?in\s+{_THE}{_PLACES}", re.I)),
    # "US-only", "EU only"
    (("only",), re.compile(rf"\b{_PLACES}[- ]only\b")),
    # "only in the US", "only from Germany", "only within the EEA"
    (("only",), re.compile(rf"\bonly\s+(?:in|from|within)\s+{_THE}{_PLACES}", re.I)),
    # "must be based in Portugal", "candidates located in the US", "must reside in Canada"
    # (the person, not the company: "our company is based in Berlin" limits nobody)
    (
        ("based", "located", "resid", "living", "live"),
        re.compile(
            r"(?:must|should|need to|have to|you(?:'re| are)?|candidates?|applicants?)\s+"
            r"(?:\w+\s+){0,2}(?:based|located|reside|residing|resident|living|live)\s+in\s+"
            rf"{_THE}{_PLACES}",
            re.I,
        ),
    ),
    # "nur innerhalb Deutschlands", "innerhalb der EU", "Wohnsitz in Deutschland"
    (("innerhalb",), re.compile(rf"\binnerhalb\s+{_THE}{_PLACES}", re.I)),
    (("wohnsitz",), re.compile(rf"\bWohnsitz\s+in\s+{_THE}{_PLACES}", re.I)),
]
# "deutschlandweit", "europaweit", "EU-weit", "bundesweit" (Germany's federal "nationwide")
_WIDE = re.compile(r"\b(?P<place>[A-Za-zÄÖÜäöü]+)-?weit\b")
_SPLIT = re.compile(r"\s*(?:,|/|&|\bor\b|\band\b|\boder\b|\bund\b)\s*")


def country_codes(name: str) -> tuple[str, ...]:
    """The countries a place name stands for: a region's (:data:`REGIONS`), or one country by
    the gazetteer in any language it knows ("Deutschland", "Germany", "USA"), or a German
    genitive ("Deutschlands"); empty for a city or an unknown word."""
    key = " ".join(fold(name).lower().replace(".", "").split())
    key = key.removeprefix("the ")
    if key in REGIONS:
        return REGIONS[key]
    if key == "bundes":
        return ("DE",)
    for candidate in (name, name[:-1] if name.endswith("s") else None):
        if not candidate:
            continue
        place = places.resolve(candidate)
        if place is not None and place.kind is places.PlaceKind.country and place.country_code:
            return (place.country_code,)
    return ()


def _names(phrase: str) -> list[str]:
    return [p.strip(" .") for p in _SPLIT.split(phrase) if p.strip(" .")]


def _folded(text: str) -> str:
    """``text`` as the case-blind patterns see it, for the word checks before them: case folded
    (a "ſ" or a Kelvin sign is then the letter ``re.I`` takes it for), and the dotless "ı",
    which ``re.I`` also takes for an "i"."""
    return text.casefold().replace("ı", "i")


def remote_countries_in(text: str) -> list[str]:
    """The countries a posting's text limits remote work to (sorted codes; empty: none said)."""
    found: set[str] = set()
    head = text[:20_000]
    folded = _folded(head)
    for words, pattern in _PATTERNS:
        if not any(word in folded for word in words):
            continue
        for match in pattern.finditer(head):
            for name in _names(match.group("places")):
                found.update(_codes_of_name(name))
    for match in _WIDE.finditer(head) if "weit" in head else ():
        found.update(_codes_of_name(match.group("place")))
    return sorted(found)


def _codes_of_name(name: str) -> tuple[str, ...]:
    # "Germany Remote", "Deutschlands. Python": the longest leading words that name a place
    words = name.split()
    for n in range(len(words), 0, -1):
        codes = country_codes(" ".join(words[:n]).strip(".,;:!?'’"))
        if codes:
            return codes
    return ()


def codes_of(values: Iterable[object]) -> list[str]:
    """Countries from a source's fields: ISO codes ("US") or names ("United States",
    "Deutschland"), a region's name ("EU"); others ignored."""
    found: set[str] = set()
    for value in values:
        if not isinstance(value, str) or not value.strip():
            continue
        text = value.strip()
        if len(text) == 2 and text.isalpha() and text.isupper():
            found.add(text)
            continue
        found.update(country_codes(text))
    return sorted(found)


_NOT_OFFERED = re.compile(
    r"(?:unable|not able|cannot|can ?not|can't|do not|don't|does not|doesn't|will not|won't|"
    r"are not in a position)\s+(?:to\s+)?(?:currently\s+)?(?:offer\s+|provide\s+|support\s+)?"
    r"(?:any\s+)?(?:visa\s+|work\s+permit\s+)?sponsor"
    r"|\bno\s+(?:visa|work\s+permit)\s+sponsorship"
    r"|(?:visa\s+)?sponsorship\s+(?:is\s+)?not\s+(?:available|offered|provided|possible)"
    r"|without\s+(?:the\s+need\s+for\s+)?(?:current\s+or\s+future\s+)?(?:visa\s+)?sponsorship"
    r"|kein(?:e|en)?\s+(?:Visum|Visa|Arbeitserlaubnis)[\w-]*\s*(?:-?\s*)?(?:Sponsoring|Unterstützung)?"
    r"|(?:Visum|Visa)[\w-]*\s+(?:können|kann)\s+(?:wir\s+)?nicht"
    r"|keine\s+Unterstützung\s+(?:beim|bei\s+(?:dem|der)?)\s*(?:Visum|Visa)",
    re.I,
)
_OFFERED = re.compile(
    r"visa\s+sponsorship\s+(?:is\s+)?(?:available|offered|provided|possible)"
    r"|(?:offer|provide|offers|provides|including|include)\s+(?:full\s+)?(?:a\s+)?(?:visa|work\s+permit)"
    r"\s+(?:sponsorship|support)"
    r"|(?:we|will|can|happy to)\s+(?:\w+\s+)?sponsor\s+(?:your\s+|a\s+|the\s+)?(?:work\s+)?visas?"
    r"|(?:relocation|visa)\s+(?:and|&)\s+(?:visa|relocation)\s+(?:support|assistance|sponsorship)"
    r"|visa\s+(?:support|assistance|sponsorship)\s+(?:for|is|are|included)"
    r"|(?:Visum|Visa)[\w-]*\s*(?:-?Sponsoring|-?Unterstützung)"
    r"|Unterstützung\s+(?:beim|bei\s+(?:dem|der)?|für\s+(?:das|dein|Ihr)?)\s*(?:Visum|Visa)"
    r"|unterstützen\s+(?:dich|Sie|euch)?\s*(?:gerne\s+)?(?:beim|bei\s+(?:dem|der)?)\s*(?:Visum|Visa)",
    re.I,
)


_VISA_WORDS = ("sponsor", "vis", "permit", "arbeitserlaubnis")
"""A word each phrase of :data:`_NOT_OFFERED` and :data:`_OFFERED` holds (in :func:`_folded`
text: "Visum", "Visa" hold "vis"): a text with none says neither."""


def visa_in(text: str) -> VisaSponsorship:
    """Whether a posting's text says it sponsors a visa; a refusal wins over an offer (a
    posting that says both is read as not offering)."""
    head = text[:20_000]
    folded = _folded(head)
    if not any(word in folded for word in _VISA_WORDS):
        return "unknown"
    if _NOT_OFFERED.search(head):
        return "not_offered"
    if _OFFERED.search(head):
        return "offered"
    return "unknown"
