"""SerpApi's Google Search API: the ``serp`` tier, people found as LinkedIn profile pages.

Written from SerpApi's documentation (each rule names its page beside the code):
  - Google Search API (serpapi.com/search-api): ``GET /search.json?engine=google&q=…&location=…
    &gl=…&hl=…&start=…&api_key=…``; ``location`` the place the search originates from (city
    level recommended), ``gl`` the country (two-letter code), ``hl`` the language, ``start``
    the result offset (0, 10, 20 …). ``num`` is not sent: Google no longer honours it, a page
    is what Google gives. Results in ``organic_results`` [{``position``, ``title``, ``link``,
    ``snippet``}], and ``serpapi_pagination.next`` while there is a next page. ``no_cache``:
    "Cached searches are free, and are not counted towards your searches per month".
  - Status and error codes (serpapi.com/api-status-and-error-codes) and search errors:
    errors are ``{"error": "<message>"}``; 401 for a bad key; 429 means EITHER "the number of
    requests sent using this API key exceeds the hourly throughput limit" OR "your account has
    run out of searches" — the Account API tells which; a search Google answered with nothing
    is a success whose ``error`` says so.
  - Account API (serpapi.com/account-api): ``GET /account.json?api_key=…`` is free and not
    counted: ``total_searches_left``, ``account_rate_limit_per_hour``, ``this_hour_searches``.
  - Locations API (serpapi.com/locations-api): ``GET /locations.json?q=…&limit=…`` is free;
    its ``canonical_name`` ("Austin,Texas,United States") is what ``location`` takes ("use the
    location canonical name … as the value of the param location"); a ``location`` it does not
    support is refused (400 "Unsupported `location` parameter."), so a place it cannot name
    is searched with ``gl`` only.
The profile URLs found here are enriched through PDL (by ``profile=``), and their LinkedIn slug
is the person's external id, as it is for a PDL record that knows the same profile; a regional
host (``de.linkedin.com/in/x?trk=…``) is the same profile as ``www.linkedin.com/in/x``.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass

import httpx
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from shortlist.config import Settings
from shortlist.places import Place, PlaceKind, locate_place, resolve
from shortlist.talent.vendors.base import (
    DiscoveryPage,
    ProfileStub,
    ProviderError,
    ProviderQuotaExhausted,
    ProviderRateLimited,
    canonical_external_id,
)
from shortlist.talent.vendors.limits import RateGate
from shortlist.talent.vendors.provider import (
    Provider,
    ProviderClient,
    Text,
    parse_model,
    provider_error,
)
from shortlist.text import fold

log = logging.getLogger(__name__)

PROVIDER_NAME = "serpapi"
GATE = "serpapi"
# What the ledger and the balance count: one search credit per search not served from cache.
CREDIT_TYPE = "searches"
# Offsets step by Google's page of ten (Google Search API: ``start``).
PAGE_SIZE = 10
# The Account API is re-read at most this often (and after every 429).
ACCOUNT_TTL = 300.0
_ACCOUNT_TIMEOUT = 10.0
_OUT_OF_SEARCHES = "run out of searches"


class _RichSnippetPart(BaseModel):
    model_config = ConfigDict(extra="ignore")

    extensions: list[Text] = Field(default_factory=list)


class _RichSnippet(BaseModel):
    model_config = ConfigDict(extra="ignore")

    top: _RichSnippetPart | None = None


class _Organic(BaseModel):
    """Google Organic Results API (serpapi.com/organic-results): ``position``, ``title``,
    ``link``, ``displayed_link``, ``snippet``, ``rich_snippet`` {``top`` {``extensions``}}."""

    model_config = ConfigDict(extra="ignore")

    position: int | None = None
    title: Text = ""
    link: Text = ""
    snippet: Text = ""
    rich_snippet: _RichSnippet | None = None

    def extensions(self) -> list[str]:
        top = self.rich_snippet.top if self.rich_snippet is not None else None
        return [e for e in (top.extensions if top is not None else []) if e.strip()]


class _Pagination(BaseModel):
    model_config = ConfigDict(extra="ignore")

    next: str | None = None


class _SearchResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")

    organic_results: list[_Organic] = Field(default_factory=list)
    serpapi_pagination: _Pagination | None = None
    error: str | None = None


class _Location(BaseModel):
    """One supported location (Locations API)."""

    model_config = ConfigDict(extra="ignore")

    name: Text = ""
    canonical_name: Text = ""
    country_code: Text = ""
    target_type: Text = ""


_LOCATIONS = TypeAdapter(list[_Location])


class Account(BaseModel):
    """What the Account API says (serpapi.com/account-api)."""

    model_config = ConfigDict(extra="ignore")

    total_searches_left: int | None = None
    account_rate_limit_per_hour: int | None = None
    this_hour_searches: int | None = None


def people_query(text: str, place: Place | None = None) -> str:
    """A Google query for people's LinkedIn profiles: ``text`` (the role, quoted by the
    caller) and the place's name."""
    parts = ["site:linkedin.com/in", text.strip()]
    if place is not None and place.kind is not PlaceKind.remote and place.name:
        parts.append(place.name)
    return " ".join(p for p in parts if p)


def search_params(
    text: str, page: int, place: Place | None, api_key: str, location: str | None = None
) -> dict[str, str | int]:
    """The Google Search API request. ``location`` is a canonical name of the Locations API
    (where the search originates); without one, ``gl`` alone says the country."""
    params: dict[str, str | int] = {
        "engine": "google",
        "q": people_query(text, place),
        "start": (page - 1) * PAGE_SIZE,
        "hl": "en",
        "api_key": api_key,
    }
    if place is not None and place.kind is not PlaceKind.remote:
        if location:
            params["location"] = location
        if place.country_code:
            params["gl"] = place.country_code.lower()
    return params


# Locations API ``target_type`` values that name a city, or a country's first-level division.
_TARGET_TYPES: dict[PlaceKind, frozenset[str]] = {
    PlaceKind.city: frozenset({"city"}),
    PlaceKind.region: frozenset(
        {"state", "region", "province", "county", "territory", "autonomous community", "prefecture"}
    ),
}


def pick_location(place: Place, found: list[_Location]) -> str | None:
    """The supported location that is ``place``: same country, same name, a city for a city
    and a region for a region (the API lists the most reach first); None when none is."""
    wanted = fold(place.name)
    kinds = _TARGET_TYPES.get(place.kind)
    if kinds is None:
        return None
    # A city's region must be among the canonical name's parts: Portland, Oregon is not
    # Portland, Maine (more reach, listed first).
    # Portland, Maine (more reach, listed first). Google may name a region otherwise than the
    # gazetteer does: then the one city of that name in the country, if there is only one.
    region = fold(place.region) if place.kind is PlaceKind.city and place.region else None
    same = [
        loc
        for loc in found
        if loc.canonical_name
        and loc.country_code.upper() == (place.country_code or "").upper()
        and fold(loc.name) == wanted
        and loc.target_type.lower() in kinds
    ]
    for loc in same:
        if region is None or region in {fold(p) for p in loc.canonical_name.split(",")}:
            return loc.canonical_name
    return same[0].canonical_name if len(same) == 1 else None


class LocationNames:
    """``location`` values from the Locations API, asked once per place and process (a
    canonical name does not move); a failed lookup is not kept, so it is asked again."""

    def __init__(self, base_url: str, http: httpx.AsyncClient, timeout: float) -> None:
        self.url = f"{base_url}/locations.json"
        self.http = http
        self.timeout = timeout
        self._known: dict[str, str | None] = {}

    async def canonical(self, place: Place) -> str | None:
        if place.kind not in (PlaceKind.city, PlaceKind.region):
            return None  # a country goes by `gl`; a remote brief by nothing
        key = place.label()
        if key in self._known:
            return self._known[key]
        try:
            response = await self.http.get(
                self.url, params={"q": place.name, "limit": 10}, timeout=self.timeout
            )
            response.raise_for_status()
            found = _LOCATIONS.validate_python(response.json())
        except (httpx.HTTPError, ValueError, ValidationError) as exc:
            log.info("serpapi locations lookup failed (%s): searched with gl only", exc)
            return None
        self._known[key] = pick_location(place, found)
        return self._known[key]


# A LinkedIn profile's page title as Google shows it, in the shapes it takes: "Jane Doe -
# Backend Engineer - Acme | LinkedIn" (name, title, company), "Jane Doe - Acme | LinkedIn"
# (name, then the title OR the company: which one, the page does not say), with an en or em
# dash, with "| LinkedIn" cut off by Google's title length or missing, and "…" where Google
# truncated it.
_SEGMENT = re.compile(r"\s+[-\u2013\u2014|]\s+")
_SITE_SUFFIX = re.compile(r"\s*[|\-\u2013\u2014]\s*linkedin\s*$", re.IGNORECASE)
# "… · Location: Berlin, Germany · 500+ connections on LinkedIn" (the snippet of a profile)
_SNIPPET_LOCATION = re.compile(r"\bLocation:\s*([^·|\n]+)", re.IGNORECASE)


@dataclass(frozen=True)
class PageTitle:
    """What a profile result's title says: the name, what the person does when the title
    shows it for sure (three segments: name, title, company), and the second segment of a
    two-segment title (their title or their company: unknown which)."""

    name: str
    headline: str
    either: str


def page_title(title: str) -> PageTitle:
    text = _SITE_SUFFIX.sub("", title.strip()).strip().rstrip("…").rstrip(".").strip()
    parts = [p.strip() for p in _SEGMENT.split(text) if p.strip()]
    if not parts:
        return PageTitle("", "", "")
    if len(parts) >= 3:
        return PageTitle(parts[0], " - ".join(parts[1:-1]), "")
    return PageTitle(parts[0], "", parts[1] if len(parts) == 2 else "")


def displayed_location(hit: _Organic) -> str:
    """Where the page says the person is: the place among the rich snippet's extensions
    ("Berlin, Berlin, Germany · Backend Engineer · Acme"), the snippet's "Location: …", or
    else a place the snippet names ("… a nurse based in Osaka with …": Google draws a snippet
    from the page's text around the query's words, so a page that names the brief's city
    shows it there)."""
    for extension in hit.extensions():
        # "City, Region, Country" (a company is rarely written so; a one-word company may
        # share a town's name, so a bare word counts only as a country).
        place = resolve(extension)
        if place is not None and ("," in extension or place.kind is PlaceKind.country):
            return extension.strip()
    match = _SNIPPET_LOCATION.search(hit.snippet)
    if match:
        return match.group(1).strip()
    named = locate_place(hit.snippet)
    if named is not None and named.place.kind is not PlaceKind.remote:
        return named.place.label()
    return ""


class SerpApiClient(ProviderClient):
    """SerpApi's billing and error bodies on top of the shared HTTP plumbing."""

    window_seconds: float = 3600.0
    account: AccountReader | None = None

    def credits_of(self, response: httpx.Response, operation: str) -> int:
        # One search credit per successful search; errors are free. Cached searches are free
        # too (Google Search API, `no_cache`), but no documented field of an answer says it
        # came from the cache: each is booked as paid (an upper bound) and the balance is
        # corrected by the Account API's total_searches_left at its next read.
        return 1 if response.status_code == 200 else 0

    async def _observe(self, response: httpx.Response, operation: str, gate: Provider) -> None:
        await super()._observe(response, operation, gate)
        spent = self.credits_of(response, operation)
        if spent:
            # The Account API is not asked after every search: the known balance goes down.
            await self.note_spent(CREDIT_TYPE, spent)

    def _window_left(self) -> float:
        # Our windows are fixed slices of the epoch (limits.sql): wait for the next one.
        return self.window_seconds - (time.time() % self.window_seconds)

    async def vendor_error(self, response: httpx.Response, gate: Provider) -> ProviderError | None:
        if response.status_code != 429:
            return None
        try:
            message = str(response.json().get("error") or "")
        except (ValueError, AttributeError):
            message = response.text[:200]
        # Status and error codes: a 429 is the hourly throughput OR no searches left; the
        # Account API says which (its message is for people, not for parsing).
        account = await self.account.read(force=True) if self.account is not None else None
        if account is not None and account.total_searches_left is not None:
            out = account.total_searches_left <= 0
        else:
            out = _OUT_OF_SEARCHES in message.lower()
        if out:
            return provider_error(
                ProviderQuotaExhausted,
                gate.name,
                f"HTTP 429: SerpApi balance 0 searches left: {message}",
            )
        pause = self.pause_after_429(response) or self._throughput_pause(account)
        return provider_error(
            ProviderRateLimited, gate.name, f"HTTP 429: {message}", retry_after=pause
        )

    def _throughput_pause(self, account: Account | None) -> float:
        """How long the hourly throughput 429 pauses searching. SerpApi does not say when its
        hour ends (Account API: ``this_hour_searches`` of ``account_rate_limit_per_hour``), so
        not until our clock's hour ends: when the Account API shows room, a short pause;
        otherwise the Account API is asked again after a twelfth of the window."""
        if (
            account is not None
            and account.this_hour_searches is not None
            and account.account_rate_limit_per_hour
            and account.this_hour_searches < account.account_rate_limit_per_hour
        ):
            return self.default_pause
        return min(self._window_left(), self.window_seconds / 12)


class AccountReader:
    """The Account API, read at most every ``ACCOUNT_TTL`` seconds: its balance goes to the
    client's balance book, its hourly limit tightens the ``serpapi`` gate."""

    def __init__(self, base_url: str, api_key: str, http: SerpApiClient) -> None:
        self.url = f"{base_url}/account.json"
        self.api_key = api_key
        self.http = http
        self._read_at: float | None = None
        self._last: Account | None = None

    async def read(self, *, force: bool = False) -> Account | None:
        now = time.monotonic()
        if not force and self._read_at is not None and now - self._read_at < ACCOUNT_TTL:
            return self._last
        self._read_at = now
        try:
            response = await self.http._client.get(
                self.url, params={"api_key": self.api_key}, timeout=_ACCOUNT_TIMEOUT
            )
            response.raise_for_status()
            account = Account.model_validate(response.json())
        except (httpx.HTTPError, ValueError, ValidationError) as exc:
            # Best effort: without it the search goes on, the balance unknown.
            log.debug("serpapi account lookup failed: %s", exc)
            return None
        self._last = account
        if account.total_searches_left is not None:
            await self.http.note_balance(CREDIT_TYPE, account.total_searches_left)
        if self.http.limiter is not None:
            if account.account_rate_limit_per_hour:
                await self.http.limiter.tighten(GATE, account.account_rate_limit_per_hour)
            if account.this_hour_searches:
                # What the key already sent this hour (another process, before a restart)
                # counts in our window too.
                await self.http.limiter.seed(GATE, account.this_hour_searches)
        return account


class SerpApiSearch:
    """:class:`~shortlist.talent.vendors.base.SerpAPI` over SerpApi's Google engine."""

    def __init__(
        self,
        base_url: str,
        settings: Settings,
        client: httpx.AsyncClient | None = None,
        *,
        limiter: RateGate | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = settings.serp_api_key
        self.timeout = settings.discovery_timeout
        self.provider = Provider(GATE, settings.provider_concurrency)
        self._http = SerpApiClient.for_settings(
            PROVIDER_NAME,
            settings,
            client=client,
            gates={"search": self.provider},
            limiter=limiter,
        )
        self._http.window_seconds = settings.serpapi_window_seconds
        self.account = AccountReader(self.base_url, self.api_key, self._http)
        self._http.account = self.account
        self.locations = LocationNames(self.base_url, self._http._client, _ACCOUNT_TIMEOUT)
        self._parse = parse_model(_SearchResponse, GATE, "google search")

    async def aclose(self) -> None:
        await self._http.aclose()

    async def search(self, text: str, page: int, place: Place | None = None) -> DiscoveryPage:
        await self.account.read()
        balance = await self._http.known_balance(CREDIT_TYPE)
        if balance is not None and balance < 1:
            # Stop visibly before the account runs dry, not at its 429.
            raise provider_error(
                ProviderQuotaExhausted, GATE, f"SerpApi balance {balance} searches left"
            )
        location = await self.locations.canonical(place) if place is not None else None
        body = await self._http.get_json(
            "search",
            f"{self.base_url}/search.json",
            params=search_params(text, page, place, self.api_key, location),
            time_limit=self.timeout,
            parse=self._parse,
        )
        stubs: list[ProfileStub] = []
        for hit in body.organic_results:
            external_id = canonical_external_id(linkedin=hit.link, provider="", provider_id=None)
            if external_id is None:
                continue  # not a profile page (a company page, a post …)
            title = page_title(hit.title)
            stubs.append(
                ProfileStub(
                    external_id=external_id,
                    username=external_id.split(":", 1)[1],
                    display_name=title.name or external_id,
                    headline=title.headline,
                    page_text=" · ".join(
                        t for t in (title.either, *hit.extensions(), hit.snippet) if t
                    ),
                    location=displayed_location(hit),
                )
            )
        has_more = bool(body.organic_results) and bool(
            body.serpapi_pagination and body.serpapi_pagination.next
        )
        return DiscoveryPage(stubs=stubs, has_more=has_more)
