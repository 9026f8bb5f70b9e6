"""The simulator's People Data Labs and SerpApi dialects, on the vendors' own paths.

    POST /v5/person/search   PDL Person Search: ``X-Api-Key``; body ``{"query": <ES bool>,
                             "size", "scroll_token"?, "titlecase"?}`` → ``{"status", "data",
                             "scroll_token", "total"}``; 404 ``not_found`` when nobody matches.
    GET  /v5/person/enrich   PDL Person Enrichment by ``profile`` (LinkedIn URL) or ``pdl_id``
                             → ``{"status", "likelihood", "data"}``; 404 unbilled.
    GET  /search.json        SerpApi Google Search: ``engine=google&q&start&num&api_key`` →
                             ``{"search_metadata", "organic_results", "serpapi_pagination"}``.

Errors are the vendors' bodies (PDL ``{"status", "error": {"type", "message"}}``, SerpApi
``{"error"}``), a request without the key is refused as each vendor refuses it (401), and
PDL answers carry ``x-call-credits-spent`` and ``x-ratelimit-*`` (the reset a UTC timestamp).
Latencies, hangs, 5xx and random 429s are the generic simulator's (``SimulatorState``), so the
seed's production behaviour is the same whichever dialect is spoken. On top:
``vendor_rate_limit`` requests per calendar minute per vendor (then 429 until the minute
ends), and the account quotas ``pdl_credit_limit`` (then 402) and ``serpapi_search_limit``
(then 429 "run out of searches"). ``GET /v1/admin/vendors`` reports what each vendor saw per
minute and any request that arrived while the vendor had told the client to wait.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from shortlist.simulator.behaviour import SimulatorState
from shortlist.simulator.population import Person, PopulationIndex, fold

IN_FLIGHT_GRACE = 1.0
PDL = "pdl"
SERPAPI = "serpapi"
_LINKEDIN = "linkedin.com/in/"


def pdl_id(username: str) -> str:
    """A stable PDL-looking person id for a simulated person."""
    return hashlib.sha256(f"pdl|{username}".encode()).hexdigest()[:22] + "_0000"


def pdl_record(person: Person, *, no_email: bool, titlecase: bool) -> dict[str, Any]:
    """A PDL person record (Person Schema field names; lowercase unless ``titlecase``)."""

    def case(text: str) -> str:
        return text if titlecase else text.lower()

    email = None if no_email else person.email
    first, _, last = person.full_name.partition(" ")
    return {
        "id": pdl_id(person.username),
        "full_name": case(person.full_name),
        "first_name": case(first),
        "last_name": case(last) or None,
        "linkedin_url": _LINKEDIN + person.username,
        "linkedin_username": person.username,
        "headline": person.headline,
        "summary": person.summary,
        "job_title": case(person.role_title),
        "job_title_role": person.role_family,
        "skills": [s.lower() for s in person.skills],
        "inferred_years_experience": person.years_experience,
        "location_name": case(person.location),
        "work_email": email,
        "personal_emails": [],
        "recommended_personal_email": None,
        "mobile_phone": None,
        "birth_year": None,
        "experience": [],
        "education": [],
    }


class VendorState:
    """What the vendors count: requests per calendar minute, their 429 windows, quotas."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.per_minute: dict[str, Counter[int]] = defaultdict(Counter)
        self.blocked_until: dict[str, float] = defaultdict(float)
        self.block_from: dict[str, float] = defaultdict(float)
        self.during_block: Counter[str] = Counter()
        self.unauthorized: Counter[str] = Counter()
        self.credits_spent = 0
        self.searches_used = 0
        self.pages: dict[str, Counter[str]] = defaultdict(Counter)

    def answered(self, vendor: str, page_key: str) -> None:
        """A search page was answered (and billed): ``page_key`` names its query and offset."""
        with self._lock:
            self.pages[vendor][page_key] += 1

    def arrive(self, vendor: str, limit: int) -> float | None:
        """Count one request; the wall-clock reset time if it is over the minute's limit."""
        now = time.time()
        minute = int(now // 60)
        with self._lock:
            if self.block_from[vendor] <= now < self.blocked_until[vendor]:
                self.during_block[vendor] += 1
            self.per_minute[vendor][minute] += 1
            if limit and self.per_minute[vendor][minute] > limit:
                reset = (minute + 1) * 60.0
                self.blocked_until[vendor] = reset
                return reset
        return None

    def block(self, vendor: str, until: float) -> None:
        """The vendor told a client to wait until ``until``. Requests already on their way
        (sent before the client heard) arrive within ``IN_FLIGHT_GRACE``; any later one is
        counted in ``during_block``."""
        with self._lock:
            self.blocked_until[vendor] = max(self.blocked_until[vendor], until)
            self.block_from[vendor] = time.time() + IN_FLIGHT_GRACE

    def report(self) -> dict[str, Any]:
        with self._lock:
            return {
                "per_minute": {
                    v: {str(m): n for m, n in sorted(c.items())} for v, c in self.per_minute.items()
                },
                "max_per_minute": {
                    v: max(c.values(), default=0) for v, c in self.per_minute.items()
                },
                "during_block": dict(self.during_block),
                "unauthorized": dict(self.unauthorized),
                "credits_spent": self.credits_spent,
                "searches_used": self.searches_used,
                # The same page answered (and billed) more than once: what a client that
                # keeps what it was sent never causes.
                "pages_answered_again": {
                    v: sum(n - 1 for n in c.values()) for v, c in self.pages.items()
                },
            }


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(math.ceil(epoch), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pdl_error(
    status: int, kind: str, message: str, headers: dict[str, str] | None = None
) -> Response:
    return JSONResponse(
        {"status": status, "error": {"type": kind, "message": message}}, status, headers=headers
    )


def _pdl_rate_headers(limit: int, used: int, reset: float) -> dict[str, str]:
    headers = {"x-ratelimit-reset": _iso(reset)}
    if limit:
        headers["x-ratelimit-limit"] = str(limit)
        headers["x-ratelimit-remaining"] = str(max(0, limit - used))
    return headers


class _BadQuery(ValueError):
    pass


def parse_es_query(query: Any) -> dict[str, Any]:
    """The filters of the Elasticsearch bool query the PDL adapter sends (``match`` on
    job_title / location_name, ``range`` gte on inferred_years_experience, ``term`` on skills,
    ``exists``). Anything else is refused, as PDL refuses a query it cannot run."""
    if not isinstance(query, dict) or set(query) != {"bool"} or not isinstance(query["bool"], dict):
        raise _BadQuery("query must be a bool query")
    filters: dict[str, Any] = {"role": None, "location": None, "min_years": None, "skills": []}
    for clause in query["bool"].get("must", []):
        if not isinstance(clause, dict) or len(clause) != 1:
            raise _BadQuery(f"unsupported clause {clause!r}")
        [(kind, spec)] = clause.items()
        if kind == "match" and isinstance(spec, dict) and "job_title" in spec:
            filters["role"] = str(spec["job_title"])
        elif kind == "match" and isinstance(spec, dict) and "location_name" in spec:
            filters["location"] = str(spec["location_name"])
        elif kind == "range" and isinstance(spec, dict) and "inferred_years_experience" in spec:
            filters["min_years"] = int(spec["inferred_years_experience"]["gte"])
        elif kind == "term" and isinstance(spec, dict) and "skills" in spec:
            filters["skills"].append(str(spec["skills"]))
        elif kind == "exists":
            continue
        else:
            raise _BadQuery(f"unsupported clause {clause!r}")
    return filters


def register_vendor_routes(app: FastAPI, state: SimulatorState, index: PopulationIndex) -> None:
    from shortlist.simulator.app import _respond

    vendors = VendorState()
    app.state.vendors = vendors
    by_slug = {p.username.lower(): p for p in index.people}

    def pdl_gate(request: Request) -> tuple[Response | None, dict[str, str]]:
        """Auth, then the minute's rate limit: an error response, or the rate headers."""
        if request.headers.get("x-api-key") != state.config.api_key and (
            request.query_params.get("api_key") != state.config.api_key
        ):
            vendors.unauthorized[PDL] += 1
            return _pdl_error(401, "invalid_request_error", "Invalid API key"), {}
        limit = state.config.vendor_rate_limit
        blocked = vendors.arrive(PDL, limit)
        now = time.time()
        minute_end = (int(now // 60) + 1) * 60.0
        used = vendors.per_minute[PDL][int(now // 60)]
        headers = _pdl_rate_headers(limit, used, minute_end)
        if blocked is not None:
            return _pdl_error(
                429,
                "rate_limit_error",
                "An error occurred due to requests hitting the API too quick",
                headers,
            ), headers
        return None, headers

    def pdl_rate_limited(retry_after: float, headers: dict[str, str]) -> Response:
        reset = time.time() + state.config.scaled(0) + retry_after
        vendors.block(PDL, reset)
        headers["x-ratelimit-reset"] = _iso(reset)
        return _pdl_error(
            429,
            "rate_limit_error",
            "An error occurred due to requests hitting the API too quick",
            headers,
        )

    def pdl_failed(status: int, message: str, headers: dict[str, str]) -> Response:
        return _pdl_error(status, "error", message, headers)

    def pdl_billed(credits: int) -> Response | None:
        limit = state.config.pdl_credit_limit
        if limit and vendors.credits_spent + credits > limit:
            return _pdl_error(
                402,
                "payment_required",
                "You have no credits left for this API; add credits to continue",
            )
        return None

    def credit_headers(kind: str) -> Any:
        def headers(payload: dict[str, Any]) -> dict[str, str]:
            data = payload.get("data")
            credits = len(data) if isinstance(data, list) else 1
            vendors.credits_spent += credits
            return {"x-call-credits-spent": str(credits), "x-call-credits-type": kind}

        return headers

    @app.post("/v5/person/search")
    async def pdl_search(request: Request) -> Response:
        refused, rate_headers = pdl_gate(request)
        if refused is not None:
            return refused
        try:
            body = await request.json()
            filters = parse_es_query(body.get("query"))
            size = int(body.get("size", 1))
            if not 1 <= size <= 100:
                raise _BadQuery("size must be within 1..100")
            token = body.get("scroll_token")
            offset = int(str(token).split("$", 1)[0]) if token else 0
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            return _pdl_error(400, "invalid_request_error", str(exc) or "invalid request")
        titlecase = bool(body.get("titlecase"))
        hits = index.search(
            role=filters["role"],
            location=filters["location"],
            min_years=filters["min_years"],
            skills=filters["skills"],
        )
        if not hits[offset:]:
            return _pdl_error(404, "not_found", "No records were found matching your request")
        page = hits[offset : offset + size]
        if (quota := pdl_billed(len(page))) is not None:
            return quota
        key = "pdl-search?" + urlencode(
            {"f": repr(sorted(filters.items())), "o": offset, "s": size}
        )
        decision = state.decide_discovery("search", key)
        nxt = offset + size

        def answer() -> dict[str, Any]:
            vendors.answered(PDL, key)
            return {
                "status": 200,
                "data": [pdl_record(p, no_email=False, titlecase=titlecase) for p in page],
                "scroll_token": f"{nxt}${hashlib.sha1(key.encode()).hexdigest()[:8]}"
                if nxt < len(hits)
                else None,
                "total": len(hits),
            }

        ok = credit_headers("search")

        def headers(payload: dict[str, Any]) -> dict[str, str]:
            return {**rate_headers, **ok(payload)}

        return await _respond(
            request,
            state,
            "search",
            decision,
            answer,
            rate_limited=pdl_rate_limited,
            failed=pdl_failed,
            ok_headers=headers,
        )

    @app.get("/v5/person/enrich")
    async def pdl_enrich(request: Request) -> Response:
        refused, rate_headers = pdl_gate(request)
        if refused is not None:
            return refused
        params = request.query_params
        titlecase = params.get("titlecase", "").lower() == "true"
        person: Person | None = None
        if params.get("profile"):
            profile = params["profile"].lower()
            slug = (
                profile.split(_LINKEDIN, 1)[1].strip("/").split("/")[0]
                if _LINKEDIN in profile
                else ""
            )
            person = by_slug.get(slug)
        elif params.get("pdl_id"):
            person = next((p for p in index.people if pdl_id(p.username) == params["pdl_id"]), None)
        else:
            return _pdl_error(400, "invalid_request_error", "profile or pdl_id is required")
        if person is None:
            state.record("enrich", "404")
            # No match: 404, and not billed.
            return _pdl_error(
                404,
                "not_found",
                "No records were found matching your request",
                {**rate_headers, "x-call-credits-spent": "0"},
            )
        if (quota := pdl_billed(1)) is not None:
            return quota
        state.enrich_by_username[person.username] += 1
        decision = state.decide_enrich(person.username)
        found = person

        def answer() -> dict[str, Any]:
            return {
                "status": 200,
                "likelihood": 10,
                "data": pdl_record(found, no_email=decision.no_email, titlecase=titlecase),
            }

        ok = credit_headers("enrich")

        def headers(payload: dict[str, Any]) -> dict[str, str]:
            return {**rate_headers, **ok(payload)}

        return await _respond(
            request,
            state,
            "enrich",
            decision,
            answer,
            rate_limited=pdl_rate_limited,
            failed=pdl_failed,
            ok_headers=headers,
        )

    def serp_error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
        return JSONResponse({"error": message}, status, headers=headers)

    def serp_rate_limited(retry_after: float, headers: dict[str, str]) -> Response:
        vendors.block(SERPAPI, time.time() + retry_after)
        return serp_error(
            429,
            "The number of requests sent using this API key exceeds the hourly throughput limit.",
            headers,
        )

    @app.get("/search.json")
    async def serpapi_search(request: Request) -> Response:
        params = request.query_params
        if params.get("api_key") != state.config.api_key:
            vendors.unauthorized[SERPAPI] += 1
            return serp_error(
                401,
                "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key",
            )
        if vendors.arrive(SERPAPI, state.config.vendor_rate_limit) is not None:
            return serp_rate_limited(60.0, {})
        limit = state.config.serpapi_search_limit
        if limit and vendors.searches_used >= limit:
            return serp_error(429, "Your account has run out of searches.")
        q = params.get("q", "")
        if not q.strip():
            return serp_error(400, "Missing query `q` parameter.")
        if params.get("engine", "google") != "google":
            return serp_error(400, "Unsupported `engine` parameter.")
        try:
            start = max(0, int(params.get("start", "0")))
            num = max(1, min(100, int(params.get("num", "10"))))
        except ValueError:
            return serp_error(400, "Invalid `start` or `num` parameter.")
        # The site: operator narrows to profile pages, which is all the population has.
        text = " ".join(w for w in q.split() if not w.lower().startswith("site:"))
        key = "serpapi?" + urlencode(
            {"q": " ".join(fold(text).split()), "start": start, "num": num}
        )
        decision = state.decide_discovery("serp", key)

        def answer() -> dict[str, Any]:
            vendors.searches_used += 1
            vendors.answered(SERPAPI, key)
            ranked = index.relevant(text, state.config.serp_max_results)
            page = ranked[start : start + num]
            payload: dict[str, Any] = {
                "search_metadata": {"status": "Success"},
                "search_parameters": {"engine": "google", "q": q, "start": start, "num": num},
            }
            if not page:
                payload["error"] = "Google hasn't returned any results for this query."
                return payload
            payload["organic_results"] = [
                {
                    "position": start + i + 1,
                    "title": f"{p.full_name} - {p.role_title} - {p.location} | LinkedIn",
                    "link": f"https://www.linkedin.com/in/{p.username}",
                    "snippet": p.summary[:160],
                }
                for i, p in enumerate(page)
            ]
            if start + num < len(ranked):
                payload["serpapi_pagination"] = {
                    "current": start // num + 1,
                    "next": "/search.json?"
                    + urlencode({"engine": "google", "q": q, "start": start + num}),
                }
            return payload

        return await _respond(
            request,
            state,
            "serp",
            decision,
            answer,
            rate_limited=serp_rate_limited,
            failed=lambda status, message, headers: serp_error(status, message, headers),
        )

    @app.get("/v1/admin/vendors")
    async def vendor_report() -> dict[str, Any]:
        """Requests per vendor per calendar minute (``max_per_minute``), requests that arrived
        while the vendor had answered 429 (``during_block``), refusals for a missing key,
        credits and searches used."""
        return vendors.report()
