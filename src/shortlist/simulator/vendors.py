"""The simulator's People Data Labs and SerpApi dialects, on the vendors' own paths, as their
documentation describes them (each rule names its page).

    POST /v5/person/search   PDL Person Search (OpenAPI spec ``pdl-specs.json``; "Person
                             Search API" input/output pages): ``X-Api-Key``; body
                             ``{"query": <Elasticsearch>, "size", "scroll_token"?,
                             "titlecase"?, "dataset"?, "pretty"?}`` → ``{"status", "data",
                             "scroll_token", "total"}``; 404 ``not_found`` when nobody
                             matches; billed one credit per record returned.
    GET  /v5/person/enrich   PDL Person Enrichment by ``profile`` (any LinkedIn URL form, old
                             slugs in ``profiles[]`` included), ``pdl_id``, ``email``, or
                             ``name`` with ``company``/``location``; ``min_likelihood``
                             (default 2), ``required``, ``titlecase`` → ``{"status",
                             "likelihood", "data"}``; 404 unbilled.
    GET  /search.json        SerpApi Google Search: ``engine=google&q&start&location&gl&hl
                             &api_key`` (``num`` ignored: about ten organic results a page).
    GET  /account.json       SerpApi Account API.

PDL: errors are ``{"status", "error": {"type", "message"}}`` with the types of the "Errors"
page (400 invalid_request_error, 401 authentication_error, 402 payment_required, 404
not_found, 429 rate_limit_error, 5xx api_error). Rate limits are per endpoint with fixed
windows ("Usage Limits", "Fix 429 rate limit errors"); every answer carries
``x-ratelimit-limit`` / ``x-ratelimit-remaining`` as a dict per window (``{'minute': 10}``),
``x-ratelimit-reset`` (UTC timestamp), ``x-totallimit-remaining`` (credits left),
``x-call-credits-spent`` and ``x-call-credits-type``. SerpApi ("Status and Error Codes",
"Account API"): ``{"error"}`` bodies, 401 for a bad key, 429 for the hourly throughput limit
and for an account out of searches (two documented messages); identical searches within an
hour come from the cache, free and not counted. Latencies, 5xx and random 429s are the
generic simulator's (``SimulatorState``); its first-attempt discovery hang is not PDL's (no
PDL page describes one), so Person Search does not hang unless a test forces it.
``GET /v1/admin/vendors`` reports what each endpoint saw.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property, lru_cache
from typing import Any, Final, Literal
from urllib.parse import urlencode

import numpy as np
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from shortlist.simulator.behaviour import SimulatorState
from shortlist.simulator.es_query import QueryError, Store, evaluate
from shortlist.simulator.pdl import (
    data_include,
    meets_required,
    pdl_id,
    person_store,
    record,
    same_name,
    slug_of,
)
from shortlist.simulator.pdl_sql import sql_query
from shortlist.simulator.population import Person, PopulationIndex
from shortlist.simulator.responder import respond
from shortlist.simulator.world import City
from shortlist.text import fold

IN_FLIGHT_GRACE = 1.0
PDL = "pdl"
SERPAPI = "serpapi"
Endpoint = Literal["pdl:search", "pdl:enrich", "serpapi"]
PDL_SEARCH: Final[Literal["pdl:search"]] = "pdl:search"
PDL_ENRICH: Final[Literal["pdl:enrich"]] = "pdl:enrich"
VENDOR_OF: dict[str, str] = {PDL_SEARCH: PDL, PDL_ENRICH: PDL, SERPAPI: SERPAPI}

# PDL "Errors" page: one message per status.
PDL_MESSAGES = {
    400: "Request contained either missing or invalid parameters",
    401: "Request contained a missing or invalid key",
    402: "You have hit your account maximum (all matches used)",
    404: "No records were found matching your request",
    405: "Request method is not allowed on the requested resource",
    429: "An error occurred due to requests hitting the API too quick",
}
PDL_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "payment_required",
    404: "not_found",
    405: "invalid_request_error",
    429: "rate_limit_error",
}
# SerpApi "Status and Error Codes".
SERP_BAD_KEY = "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key"
SERP_THROUGHPUT = (
    "The number of requests sent using this API key exceeds the hourly throughput limit."
)
SERP_OUT_OF_SEARCHES = "Your account has run out of searches."
SERP_EMPTY = "Google hasn't returned any results for this query."
SERP_PAGE = 10  # Google's page since it dropped ``num``
# Regional LinkedIn hosts as Google links them ("de.linkedin.com/in/…").
_LINKEDIN_HOSTS = {"US": "www", "GB": "uk", "IN": "in", "CA": "ca", "AU": "au", "BR": "br"}


@dataclass
class _Window:
    """One endpoint's fixed windows: requests per window, when its 429 window ends."""

    per_window: Counter[int] = field(default_factory=Counter)
    blocked_until: float = 0.0
    block_from: float = 0.0
    during_block: int = 0
    sent_429: int = 0
    unauthorized: int = 0
    credits: int = 0
    records_per_search: list[int] = field(default_factory=list)


class VendorState:
    """What the vendors count, per endpoint: windows, 429s, credits, searches, pages."""

    def __init__(self, state: SimulatorState) -> None:
        self._state = state
        self._lock = threading.Lock()
        self.endpoints: dict[str, _Window] = defaultdict(_Window)
        self.credits_spent = 0
        self.searches_used = 0
        self.serp_hour: Counter[int] = Counter()
        self.pages: dict[str, Counter[str]] = defaultdict(Counter)

    def window(self, endpoint: str) -> float:
        cfg = self._state.config
        return cfg.serpapi_window_s if endpoint == SERPAPI else cfg.rate_window_s

    def answered(self, vendor: str, page_key: str) -> None:
        with self._lock:
            self.pages[vendor][page_key] += 1

    def arrive(self, endpoint: str, limit: int) -> tuple[int, float, bool]:
        """Count one request: (requests in this window, the window's end, over the limit)."""
        now = time.time()
        size = self.window(endpoint)
        index = int(now // size)
        with self._lock:
            w = self.endpoints[endpoint]
            if w.block_from <= now < w.blocked_until:
                w.during_block += 1
            w.per_window[index] += 1
            used = w.per_window[index]
            end = (index + 1) * size
            over = bool(limit) and used > limit
            if over:
                w.blocked_until = max(w.blocked_until, end)
                w.sent_429 += 1
        return used, end, over

    def block(self, endpoint: str, until: float) -> None:
        """The vendor told a client to wait until ``until``. Requests already on their way
        arrive within ``IN_FLIGHT_GRACE``; any later one is counted in ``during_block``."""
        with self._lock:
            w = self.endpoints[endpoint]
            w.blocked_until = max(w.blocked_until, until)
            w.block_from = time.time() + IN_FLIGHT_GRACE

    def bill(self, endpoint: str, credits: int) -> None:
        with self._lock:
            self.credits_spent += credits
            self.endpoints[endpoint].credits += credits
            if endpoint == PDL_SEARCH:
                self.endpoints[endpoint].records_per_search.append(credits)

    def report(self) -> dict[str, Any]:
        with self._lock:
            per_vendor: dict[str, dict[str, int]] = defaultdict(dict)
            endpoints: dict[str, Any] = {}
            for name, w in self.endpoints.items():
                endpoints[name] = {
                    "window_s": self.window(name),
                    "per_window": {str(k): n for k, n in sorted(w.per_window.items())},
                    "max_per_window": max(w.per_window.values(), default=0),
                    "sent_429": w.sent_429,
                    "during_block": w.during_block,
                    "unauthorized": w.unauthorized,
                    "credits": w.credits,
                    "records_per_search": list(w.records_per_search),
                }
                vendor = VENDOR_OF[name]
                for k, n in w.per_window.items():
                    per_vendor[vendor][str(k)] = per_vendor[vendor].get(str(k), 0) + n
            by_vendor: dict[str, list[_Window]] = defaultdict(list)
            for name, w in self.endpoints.items():
                by_vendor[VENDOR_OF[name]].append(w)
            return {
                "endpoints": endpoints,
                "per_minute": dict(per_vendor),
                # The busiest window of any one endpoint (limits are per endpoint).
                "max_per_minute": {
                    v: max((max(w.per_window.values(), default=0) for w in ws), default=0)
                    for v, ws in by_vendor.items()
                },
                "during_block": {v: sum(w.during_block for w in ws) for v, ws in by_vendor.items()},
                "unauthorized": {v: sum(w.unauthorized for w in ws) for v, ws in by_vendor.items()},
                "credits_spent": self.credits_spent,
                "searches_used": self.searches_used,
                # The same page answered (and billed) more than once: what a client that
                # keeps what it was sent never causes.
                "pages_answered_again": {
                    v: sum(n - 1 for n in c.values()) for v, c in self.pages.items()
                },
            }


@dataclass(frozen=True)
class _Places:
    """The places the population lives in, by folded name: what the simulated Location
    Cleaner (PDL) and Locations API (SerpApi) know."""

    cities: dict[str, list[City]]
    countries: dict[str, City]
    """Folded country name or ISO code → one city of it (for the country's names)."""

    @staticmethod
    def of(index: PopulationIndex) -> _Places:
        cities: dict[str, list[City]] = defaultdict(list)
        countries: dict[str, City] = {}
        for city in {p.city for p in index.people if p.city is not None}:
            cities[fold(city.name)].append(city)
            countries.setdefault(fold(city.country_name), city)
            countries.setdefault(city.country_code.lower(), city)
        for found in cities.values():
            found.sort(key=lambda c: -c.population)
        return _Places(dict(cities), countries)

    @cached_property
    def google_locations(self) -> list[dict[str, Any]]:
        """SerpApi's supported locations (Locations API: ``id``, ``google_id``,
        ``google_parent_id``, ``name``, ``canonical_name`` "Austin,Texas,United States",
        ``country_code``, ``target_type``, ``reach``, ``gps``), most reach first."""
        rows: dict[str, dict[str, Any]] = {}

        def add(name: str, parts: list[str], code: str, kind: str, reach: int, gps: Any) -> None:
            canonical = ",".join(p for p in parts if p)
            row = rows.get(canonical)
            if row is not None:
                row["reach"] += reach
                return
            digest = hashlib.sha1(canonical.encode()).hexdigest()
            rows[canonical] = {
                "id": digest[:24],
                "google_id": 1_000_000 + int(digest[:6], 16),
                "google_parent_id": 2_000 + int(hashlib.sha1(code.encode()).hexdigest()[:3], 16),
                "name": name,
                "canonical_name": canonical,
                "country_code": code,
                "target_type": kind,
                "reach": reach,
                "gps": gps,
            }

        for found in self.cities.values():
            for c in found:
                reach = c.population * 3
                add(c.name, [c.name, c.region_name or "", c.country_name], c.country_code,
                    "City", reach, [c.lon, c.lat])  # fmt: skip
                if c.region_name:
                    add(c.region_name, [c.region_name, c.country_name], c.country_code,
                        "Region", reach, None)  # fmt: skip
                add(c.country_name, [c.country_name], c.country_code, "Country", reach, None)
        return sorted(rows.values(), key=lambda r: (-int(r["reach"]), r["canonical_name"]))

    def google_location(self, text: str) -> dict[str, Any] | None:
        """The supported location a search's ``location`` names (Google Search API: "If
        several locations match the location requested, we'll pick the most popular one")."""
        wanted = [fold(x.strip()) for x in text.split(",") if x.strip()]
        if not wanted:
            return None
        for row in self.google_locations:
            parts = [fold(x.strip()) for x in str(row["canonical_name"]).split(",")]
            if parts == wanted:
                return row
        for row in self.google_locations:
            parts = [fold(x.strip()) for x in str(row["canonical_name"]).split(",")]
            if parts[0] == wanted[0] and all(w in parts for w in wanted[1:]):
                return row
        return None

    def city(self, text: str) -> City | None:
        """The biggest city named by the first part of ``text`` whose other parts (region,
        country) agree with it."""
        parts = [fold(x.strip()) for x in text.split(",") if x.strip()]
        if not parts:
            return None
        for city in self.cities.get(parts[0], ()):
            names = {
                fold(city.region_name or ""),
                fold(city.country_name),
                city.country_code.lower(),
            }
            if all(p in names for p in parts[1:]):
                return city
        return None

    def clean(self, text: str) -> dict[str, Any] | None:
        city = self.city(text)
        if city is not None:
            return {
                "name": city.location_name,
                "locality": city.locality,
                "region": city.region,
                "country": city.country,
                "continent": city.continent,
                "type": "locality",
                "geo": f"{city.lat:.4f},{city.lon:.4f}",
            }
        parts = [fold(x.strip()) for x in text.split(",") if x.strip()]
        country = self.countries.get(parts[-1]) if parts else None
        if country is None:
            return None
        if len(parts) == 2:
            regions = {
                c.region for found in self.cities.values() for c in found
                if c.country_code == country.country_code and fold(c.region or "") == parts[0]
            }  # fmt: skip
            if not regions:
                return None
            region = next(iter(regions))
            return {
                "name": f"{region}, {country.country}",
                "locality": None,
                "region": region,
                "country": country.country,
                "continent": country.continent,
                "type": "region",
                "geo": None,
            }
        if len(parts) > 1:
            return None
        return {
            "name": country.country,
            "locality": None,
            "region": None,
            "country": country.country,
            "continent": country.continent,
            "type": "country",
            "geo": None,
        }


def _profile_likelihood(person: Person, *, current: bool) -> int:
    """PDL's likelihood (1-10, Person Enrichment output response: how sure it is the record is
    the person asked for) of a match by LinkedIn URL: its current address is near certain
    (9-10); an address the person left, kept in ``profiles[]``, less so (4-8), so a client's
    ``min_likelihood`` decides whether such a match answers (and is billed) or is a 404."""
    digest = int(hashlib.sha1(f"{person.username}|likelihood".encode()).hexdigest()[:4], 16)
    return (10 if digest % 4 else 9) if current else 4 + digest % 5


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(math.ceil(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pdl_error(status: int, headers: dict[str, str] | None = None, message: str = "") -> Response:
    kind = PDL_TYPES.get(status, "api_error")
    text = message or PDL_MESSAGES.get(status, "The server encountered an unexpected condition")
    return JSONResponse(
        {"status": status, "error": {"type": kind, "message": text}}, status, headers=headers
    )


@dataclass
class _Searches:
    """Ranked hits per query, kept for paging (a scroll token names a query and an offset)."""

    store: Store
    cache: dict[str, np.ndarray[Any, Any]] = field(default_factory=dict)

    def hits(self, query: Any) -> tuple[str, np.ndarray[Any, Any]]:
        key = hashlib.sha1(json.dumps(query, sort_keys=True).encode()).hexdigest()[:16]
        found = self.cache.get(key)
        if found is None:
            found = evaluate(self.store, query)
            if len(self.cache) > 256:
                self.cache.pop(next(iter(self.cache)))
            self.cache[key] = found
        return key, found


@dataclass(frozen=True)
class _Lookups:
    """A population's PDL search store and its enrichment keys: read-only, built once per
    index and shared by every app made on it (tests make hundreds; ~0.7 s of CPU each)."""

    store: Store
    by_slug: dict[str, tuple[Person, bool]]
    by_id: dict[str, Person]
    by_email: dict[str, Person]
    by_name: dict[str, list[Person]]


@lru_cache(maxsize=4)
def _lookups(index: PopulationIndex) -> _Lookups:
    people = index.people
    store = person_store(people)
    store.warm([f for f in _WARM_FIELDS if f in store.kinds])
    by_slug: dict[str, tuple[Person, bool]] = {}
    for p in people:
        by_slug[p.username.lower()] = (p, True)
        for old in p.old_slugs:
            by_slug.setdefault(old.lower(), (p, False))
    by_name: dict[str, list[Person]] = defaultdict(list)
    for p in people:
        by_name[fold(p.full_name)].append(p)
    return _Lookups(
        store=store,
        by_slug=by_slug,
        by_id={pdl_id(p.username): p for p in people},
        by_email={
            e.lower(): p for p in people for e in (p.work_email, p.personal_email) if e is not None
        },
        by_name=dict(by_name),
    )


def register_vendor_routes(app: FastAPI, state: SimulatorState, index: PopulationIndex) -> None:
    vendors = VendorState(state)
    app.state.vendors = vendors
    people = index.people
    lookups = _lookups(index)
    searches = _Searches(lookups.store)

    def credits_left() -> int | None:
        limit = state.config.pdl_credit_limit
        return max(0, limit - vendors.credits_spent) if limit else None

    def pdl_gate(request: Request, endpoint: Endpoint) -> tuple[Response | None, dict[str, str]]:
        """Auth, then the endpoint's window: an error response, or the rate headers."""
        if request.headers.get("x-api-key") != state.config.api_key and (
            request.query_params.get("api_key") != state.config.api_key
        ):
            vendors.endpoints[endpoint].unauthorized += 1
            return _pdl_error(401), {}
        limit = state.config.pdl_limit("search" if endpoint == PDL_SEARCH else "enrich")
        used, end, over = vendors.arrive(endpoint, limit)
        headers = {"x-ratelimit-reset": _iso(end)}
        if limit:
            # "Usage Limits": a dict per window, e.g. {'minute': 10}.
            headers["x-ratelimit-limit"] = str({"minute": limit})
            headers["x-ratelimit-remaining"] = str({"minute": max(0, limit - used)})
        left = credits_left()
        if left is not None:
            headers["x-totallimit-limit"] = str(state.config.pdl_credit_limit)
            headers["x-totallimit-remaining"] = str(left)
        if over:
            return _pdl_error(429, headers), headers
        return None, headers

    def pdl_rate_limited(endpoint: Endpoint) -> Callable[[float, dict[str, str]], Response]:
        def answer(retry_after: float, headers: dict[str, str]) -> Response:
            reset = time.time() + retry_after
            vendors.block(endpoint, reset)
            vendors.endpoints[endpoint].sent_429 += 1
            headers["x-ratelimit-reset"] = _iso(reset)
            return _pdl_error(429, headers)

        return answer

    def pdl_failed(status: int, message: str, headers: dict[str, str]) -> Response:
        return _pdl_error(status, headers, message)

    def out_of_credits(credits: int, headers: dict[str, str]) -> Response | None:
        left = credits_left()
        if left is not None and credits > left:
            return _pdl_error(402, headers)
        return None

    def billed(endpoint: Endpoint, kind: str, rate: dict[str, str]) -> Callable[..., Any]:
        def headers(payload: dict[str, Any]) -> dict[str, str]:
            data = payload.get("data")
            credits = len(data) if isinstance(data, list) else 1
            vendors.bill(endpoint, credits)
            out = {**rate, "x-call-credits-spent": str(credits), "x-call-credits-type": kind}
            left = credits_left()
            if left is not None:
                out["x-totallimit-remaining"] = str(left)
            return out

        return headers

    @app.post("/v5/person/search")
    async def pdl_search(request: Request) -> Response:
        refused, rate = pdl_gate(request, PDL_SEARCH)
        if refused is not None:
            return refused
        try:
            body = await request.json()
            if not isinstance(body, dict):
                raise QueryError("the body must be a JSON object")
            # Person Search input parameters: `query` (Elasticsearch) or `sql`, one of them; the
            # docs' SDK examples wrap the query once more ({"query": {"query": {…}}}).
            if ("sql" in body) == ("query" in body):
                raise QueryError("one of query or sql is required")
            query = sql_query(body["sql"]) if "sql" in body else body["query"]
            if isinstance(query, dict) and set(query) == {"query"}:
                query = query["query"]
            size = int(body.get("size", 1))
            if not 1 <= size <= 100:
                raise QueryError("size must be between 1 and 100")
            token = body.get("scroll_token")
            key, hits = searches.hits(query)
            offset = 0
            if token:
                token_key, _, start = str(token).partition(":")
                if token_key != key or not start.isdigit():
                    raise QueryError("scroll_token does not belong to this query")
                offset = int(start)
        except (QueryError, ValueError, TypeError) as exc:
            return _pdl_error(400, rate, str(exc) or PDL_MESSAGES[400])
        titlecased = body.get("titlecase") is True or str(body.get("titlecase")).lower() == "true"
        include = body.get("data_include")
        include = None if include is None else str(include)
        page_ids = hits[offset : offset + size]
        if not len(page_ids):
            return _pdl_error(404, {**rate, "x-call-credits-spent": "0"})
        if (quota := out_of_credits(len(page_ids), rate)) is not None:
            return quota
        page_key = f"pdl-search?{key}&o={offset}&s={size}"
        # The generic simulator's first-attempt hang (SPEC §5, the seed's talent API) is not
        # PDL's: no PDL page describes a search that hangs and answers when sent again.
        decision = state.decide_discovery("search", page_key, hangs=False)
        nxt = offset + size
        plan = state.config.pdl_plan

        def answer() -> dict[str, Any]:
            vendors.answered(PDL, page_key)
            return {
                "status": 200,
                "data": [
                    data_include(
                        record(people[i], titlecased=titlecased, plan=plan, no_email=False),
                        include,
                    )
                    for i in page_ids
                ],
                "scroll_token": f"{key}:{nxt}" if nxt < len(hits) else None,
                "total": len(hits),
            }

        return await respond(
            request,
            state,
            "search",
            decision,
            answer,
            rate_limited=pdl_rate_limited(PDL_SEARCH),
            failed=pdl_failed,
            ok_headers=billed(PDL_SEARCH, "search", rate),
        )

    def find(params: Any) -> tuple[Person | None, int]:
        """The person an enrichment names, and PDL's likelihood (1-10) of the match."""
        if params.get("pdl_id"):
            return lookups.by_id.get(str(params["pdl_id"])), 10
        if params.get("profile"):
            slug = slug_of(str(params["profile"]))
            hit = lookups.by_slug.get(slug) if slug else None
            if hit is None:
                return None, 0
            return hit[0], _profile_likelihood(hit[0], current=hit[1])
        if params.get("email"):
            return lookups.by_email.get(str(params["email"]).strip().lower()), 10
        name = params.get("name") or " ".join(
            str(params.get(k, "")) for k in ("first_name", "last_name")
        )
        if name.strip():
            found = lookups.by_name.get(fold(" ".join(name.split())), [])
            company = fold(str(params.get("company", "")))
            where = fold(str(params.get("location", "") or params.get("locality", "")))
            best: tuple[int, Person] | None = None
            for p in found:
                likelihood = 3 if len(found) == 1 else 1
                if company and company in fold(p.company):
                    likelihood += 5
                if where and p.city and where.split(",")[0].strip() == fold(p.city.name):
                    likelihood += 3
                if same_name(p, name) and (best is None or likelihood > best[0]):
                    best = (min(10, likelihood), p)
            return (best[1], best[0]) if best else (None, 0)
        raise QueryError("profile, pdl_id, email or name is required")

    @app.get("/v5/person/enrich")
    async def pdl_enrich(request: Request) -> Response:
        refused, rate = pdl_gate(request, PDL_ENRICH)
        if refused is not None:
            return refused
        params = request.query_params
        titlecased = params.get("titlecase", "").lower() == "true"
        try:
            person, likelihood = find(params)
            # Person Enrichment API, input parameters: min_likelihood defaults to 2.
            min_likelihood = int(params.get("min_likelihood", "2"))
            if not 0 <= min_likelihood <= 10:
                raise QueryError("min_likelihood must be between 0 and 10")
        except (QueryError, ValueError) as exc:
            return _pdl_error(400, rate, str(exc))
        not_found = _pdl_error(404, {**rate, "x-call-credits-spent": "0"})
        if person is None or likelihood < min_likelihood:
            state.record("enrich", "404")
            return not_found
        state.enrich_by_username[person.username] += 1
        decision = state.decide_enrich(person.username)
        plan = state.config.pdl_plan
        data = record(person, titlecased=titlecased, plan=plan, no_email=decision.no_email)
        required = params.get("required")
        if required and not meets_required(data, required):
            state.record("enrich", "404")
            return not_found  # the match lacks what was required: not found, not billed
        if (quota := out_of_credits(1, rate)) is not None:
            return quota
        found_likelihood = likelihood

        shown = data_include(data, params.get("data_include"))

        def answer() -> dict[str, Any]:
            return {"status": 200, "likelihood": found_likelihood, "data": shown}

        return await respond(
            request,
            state,
            "enrich",
            decision,
            answer,
            rate_limited=pdl_rate_limited(PDL_ENRICH),
            failed=pdl_failed,
            ok_headers=billed(PDL_ENRICH, "enrich", rate),
        )

    places = _Places.of(index)

    @app.get("/v5/location/clean")
    async def pdl_location_clean(request: Request) -> Response:
        """PDL Location Cleaner API (Cleaner APIs reference): ``location`` → PDL's canonical
        ``name``, ``locality``, ``region``, ``country``, ``continent``, ``type``, ``geo``
        (lowercase, Data Formatting); 404 for a place it does not know; free of charge."""
        if request.headers.get("x-api-key") != state.config.api_key and (
            request.query_params.get("api_key") != state.config.api_key
        ):
            return _pdl_error(401)
        text = request.query_params.get("location", "")
        if not text.strip():
            return _pdl_error(400, message="location is required")
        found = places.clean(text)
        if found is None:
            return _pdl_error(404, {"x-call-credits-spent": "0"})
        return JSONResponse({"status": 200, **found}, headers={"x-call-credits-spent": "0"})

    register_serpapi_routes(app, state, index, vendors, places)

    @app.get("/v1/admin/vendors")
    async def vendor_report() -> dict[str, Any]:
        """Per endpoint (``pdl:search``, ``pdl:enrich``, ``serpapi``): requests per window,
        429s sent, requests that arrived while told to wait, credits and the records billed
        per search; per vendor the busiest window, ``during_block`` and pages answered twice."""
        return vendors.report()


# The fields Person Searches read most (Person Schema: title, taxonomy, place, years, skills),
# indexed at start (about a second) so a first query does not pay for them.
_WARM_FIELDS = (
    "job_title",
    "job_title_role",
    "job_title_sub_role",
    "job_title_levels",
    "location_locality",
    "location_region",
    "location_country",
    "location_name",
    "skills",
    "inferred_years_experience",
)


@dataclass
class _Cached:
    at: float
    payload: dict[str, Any]


def _serp_link(p: Person, rng_key: str) -> str:
    """Google's LinkedIn links: a regional host and often a tracking parameter; for a member
    who changed their public URL, often the old one Google indexed first (PDL keeps it in
    ``profiles[]``, Person Schema; LinkedIn redirects it)."""
    code = p.city.country_code if p.city else "US"
    host = _LINKEDIN_HOSTS.get(code, code.lower())
    digest = int(hashlib.sha1(f"{rng_key}|{p.username}".encode()).hexdigest()[:4], 16)
    slug = p.old_slugs[0] if p.old_slugs and digest % 2 == 0 else p.username
    link = f"https://{host}.linkedin.com/in/{slug}"
    return f"{link}?trk=public_profile_browsemap" if digest % 3 == 0 else link


def _organic(p: Person, position: int, rng_key: str) -> dict[str, Any]:
    """A LinkedIn profile as Google Organic Results show it (serpapi.com/organic-results:
    ``position``, ``title``, ``link``, ``displayed_link``, ``snippet``, ``rich_snippet.top
    .extensions``), in the shapes real pages take: the title "Name - Title - Company |
    LinkedIn", or "Name - Company | LinkedIn" (no title), an en dash, no "| LinkedIn"; the
    place, title and company as the rich snippet's extensions on some, "Location: …" in the
    snippet on others, nothing on the rest."""
    digest = int(hashlib.sha1(f"{rng_key}|{p.username}|shape".encode()).hexdigest()[:6], 16)
    dash = " \u2013 " if digest % 5 == 0 else " - "
    site = "" if digest % 7 == 0 else " | LinkedIn"
    if digest % 4 == 0:
        title = f"{p.full_name}{dash}{p.company}{site}"
    else:
        title = f"{p.full_name}{dash}{p.job_title}{dash}{p.company}{site}"
    link = _serp_link(p, rng_key)
    host = link.split("/")[2]
    slug = link.split("/in/", 1)[1].split("?")[0]
    city = p.city
    where = (
        ", ".join(x for x in (city.name, city.region_name, city.country_name) if x) if city else ""
    )
    hit: dict[str, Any] = {
        "position": position,
        "title": title,
        "link": link,
        "displayed_link": f"https://{host} \u203a in \u203a {slug}",
        "snippet": p.summary[:160],
    }
    shape = (digest >> 8) % 3
    if where and shape == 0:
        hit["rich_snippet"] = {"top": {"extensions": [where, p.job_title, p.company]}}
    elif where and shape == 1:
        hit["snippet"] = (
            f"{p.summary[:120]} · Experience: {p.company} · Location: {where}"
            " · 500+ connections on LinkedIn."
        )
    return hit


def register_serpapi_routes(
    app: FastAPI,
    state: SimulatorState,
    index: PopulationIndex,
    vendors: VendorState,
    places: _Places,
) -> None:
    cache: dict[str, _Cached] = {}
    countries_by_code = {
        p.city.country_code.lower(): p.city.country for p in index.people if p.city
    }

    def serp_error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
        return JSONResponse({"error": message}, status, headers=headers)

    def serp_rate_limited(retry_after: float, headers: dict[str, str]) -> Response:
        vendors.block(SERPAPI, time.time() + retry_after)
        vendors.endpoints[SERPAPI].sent_429 += 1
        return serp_error(429, SERP_THROUGHPUT, headers)

    def place_filter(location: str, gl: str) -> Callable[[Person], bool]:
        """Whether a person is where the search originates (``location`` "Munich, Bavaria,
        Germany", ``gl`` a country code). Google Search API: ``location`` and ``gl`` set where
        the search is made from, not whom it returns: people there rank first, the others
        follow (a real page carries people elsewhere)."""
        parts = [fold(x.strip()) for x in location.split(",") if x.strip()]
        country = countries_by_code.get(gl.lower()) if gl else None

        def keep(p: Person) -> bool:
            if p.city is None:
                return False
            names = {fold(p.city.name), fold(p.city.region or ""), fold(p.city.country)}
            if parts and not all(part in names for part in parts):
                return False
            return not (country and p.city.country != country)

        return keep

    @app.get("/search.json")
    async def serpapi_search(request: Request) -> Response:
        params = request.query_params
        if params.get("api_key") != state.config.api_key:
            vendors.endpoints[SERPAPI].unauthorized += 1
            return serp_error(401, SERP_BAD_KEY)
        q = params.get("q", "")
        if not q.strip():
            return serp_error(400, "Missing query `q` parameter.")
        if params.get("engine", "google") != "google":
            return serp_error(400, "Unsupported `engine` parameter.")
        try:
            start = max(0, int(params.get("start", "0")))
        except ValueError:
            return serp_error(400, "Invalid `start` parameter.")
        location, gl, hl = params.get("location", ""), params.get("gl", ""), params.get("hl", "")
        if location.strip():
            # Google Search API, `location`: one of the Locations API's; another is refused.
            origin = places.google_location(location)
            if origin is None:
                return serp_error(400, "Unsupported `location` parameter.")
            location = str(origin["canonical_name"])
        key = "serpapi?" + urlencode(
            {"q": " ".join(fold(q).split()), "start": start, "location": fold(location),
             "gl": gl.lower(), "hl": hl.lower()}
        )  # fmt: skip
        # Google Search API, no_cache: an identical search within the hour comes from the
        # cache, is free and is not counted towards the month's searches.
        hit = cache.get(key)
        if (
            hit
            and time.time() - hit.at < state.config.serpapi_cache_s
            and (params.get("no_cache", "false").lower() != "true")
        ):
            return JSONResponse(hit.payload)
        _, _, over = vendors.arrive(SERPAPI, state.config.serpapi_limit())
        if over:
            return serp_error(429, SERP_THROUGHPUT)
        limit = state.config.serpapi_search_limit
        if limit and vendors.searches_used >= limit:
            return serp_error(429, SERP_OUT_OF_SEARCHES)
        decision = state.decide_discovery("serp", key)
        # The site: operator narrows to profile pages, which is all the population has.
        text = " ".join(w for w in q.split() if not w.lower().startswith("site:"))

        def answer() -> dict[str, Any]:
            vendors.searches_used += 1
            vendors.bill(SERPAPI, 1)
            vendors.answered(SERPAPI, key)
            ranked = index.web(text, state.config.serp_max_results, place_filter(location, gl))
            page = ranked[start : start + SERP_PAGE]
            created = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            search_id = hashlib.sha1(f"{key}|{time.time()}".encode()).hexdigest()[:24]
            payload: dict[str, Any] = {
                "search_metadata": {
                    "id": search_id,
                    "status": "Success",
                    "created_at": created,
                    "google_url": "https://www.google.com/search?" + urlencode({"q": q}),
                },
                "search_parameters": {
                    "engine": "google",
                    "q": q,
                    "start": start,
                    **({"location_requested": location} if location else {}),
                    **({"gl": gl} if gl else {}),
                    **({"hl": hl} if hl else {}),
                },
            }
            if not page:
                # Search API Status and Errors: an empty result is still a success.
                payload["search_information"] = {"organic_results_state": "Fully empty"}
                payload["error"] = SERP_EMPTY
            else:
                payload["search_information"] = {
                    "organic_results_state": "Results for exact spelling"
                }
                payload["organic_results"] = [
                    _organic(p, start + i + 1, key) for i, p in enumerate(page)
                ]
                if start + SERP_PAGE < len(ranked):
                    payload["serpapi_pagination"] = {
                        "current": start // SERP_PAGE + 1,
                        "next": "https://serpapi.com/search.json?"
                        + urlencode({"engine": "google", "q": q, "start": start + SERP_PAGE}),
                    }
            cache[key] = _Cached(time.time(), payload)
            return payload

        return await respond(
            request,
            state,
            "serp",
            decision,
            answer,
            rate_limited=serp_rate_limited,
            failed=lambda status, message, headers: serp_error(status, message, headers),
        )

    @app.get("/locations.json")
    async def serpapi_locations(request: Request) -> Response:
        """SerpApi Locations API (serpapi.com/locations-api): free, no key; ``q`` keeps the
        locations whose name contains it, ``limit`` (at most 10) how many; most reach first."""
        q = fold(request.query_params.get("q", "").strip())
        try:
            limit = min(10, max(1, int(request.query_params.get("limit", "10"))))
        except ValueError:
            return serp_error(400, "Invalid `limit` parameter.")
        found = [r for r in places.google_locations if q in fold(str(r["name"]))]
        return JSONResponse(found[:limit])

    @app.get("/account.json")
    async def serpapi_account(request: Request) -> Response:
        """SerpApi Account API: the month's usage, what is left, the hourly throughput."""
        if request.query_params.get("api_key") != state.config.api_key:
            return serp_error(401, SERP_BAD_KEY)
        cfg = state.config
        hour = int(time.time() // cfg.serpapi_window_s)
        this_hour = vendors.endpoints[SERPAPI].per_window.get(hour, 0)
        limit = cfg.serpapi_search_limit
        left = max(0, limit - vendors.searches_used) if limit else 1_000_000
        return JSONResponse(
            {
                "account_id": "5ac54d6adefb2f1dba1663f5",
                "api_key": cfg.api_key,
                "account_email": "simulator@example.com",
                "plan_id": "simulator",
                "plan_name": "Simulator Plan",
                "searches_per_month": limit or 1_000_000,
                "plan_searches_left": left,
                "extra_credits": 0,
                "total_searches_left": left,
                "this_month_usage": vendors.searches_used,
                "this_hour_searches": this_hour,
                "last_hour_searches": this_hour,
                "account_rate_limit_per_hour": cfg.serpapi_limit(),
            }
        )
