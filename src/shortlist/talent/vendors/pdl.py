"""People Data Labs over HTTP: Person Search for the ``strict`` and ``broad`` tiers, Person
Enrichment for people found elsewhere (SERP hits).

Written from PDL's documentation (each rule names its page beside the code):
  - Person Search reference, input parameters and output response
    (docs.peopledatalabs.com/docs/reference-person-search-api,
    /docs/input-parameters-person-search-api, /docs/output-response-person-search-api, and the
    OpenAPI spec peopledatalabs/openAPI-specifications pdl-specs.json): ``POST
    /v5/person/search`` with a JSON body ``{"query": <Elasticsearch 7.7 query>, "size" (1-100),
    "scroll_token", "titlecase"}`` → ``{"status": 200, "data": [person…], "scroll_token",
    "total"}``; a search hit is the whole person record, billed per record returned.
  - Person Enrichment reference and input parameters (/docs/reference-person-enrichment-api,
    /docs/input-parameters-person-enrichment-api, the spec's ``/v5/person/enrich``): ``GET
    /v5/person/enrich?profile=…`` (or ``pdl_id=…``) with ``min_likelihood`` (0-10),
    ``required`` and ``titlecase`` → ``{"status", "likelihood", "data"}``; 404 when no one
    matches well enough, and only matches are billed.
  - Authentication (/docs/authentication): the key in the ``X-Api-Key`` header.
  - Errors & status codes (/docs/errors): ``{"status", "error": {"type", "message"}}``; 402
    when the account's credits are spent; 404 means "no match" (for a search too).
  - Usage limits (/docs/usage-limits) and "Fix 429 rate limit errors"
    (/support/troubleshooting/rate-limit-errors): limits per key AND per endpoint, fixed 60 s
    windows; ``x-ratelimit-limit`` / ``x-ratelimit-remaining`` hold JSON per window
    (``{'minute': 10, 'day': None}``), ``x-ratelimit-reset`` is a UTC timestamp;
    ``x-call-credits-spent`` / ``x-call-credits-type`` say what the call cost and from which
    pool, ``x-totallimit-remaining`` what is left; 429 (``rate_limit_error``) when over.
  - Cleaner APIs (/docs/cleaner-apis-reference; Data Formatting, "Locations": "To tap into our
    location matching logic, use our Location Cleaner API"): ``GET /v5/location/clean?location=
    …`` → ``{"status", "name", "locality", "region", "country", "continent", "type", "geo"}``
    in PDL's canonical values (Location Countries: the country list changes between releases,
    v28.0 renamed "swaziland" to "eswatini"); free of charge, 10 a minute, 10,000 a month; 404
    when it knows no such place.
  - Data formatting / data build (/docs/data-formatting, /docs/data-build): every string is
    lowercase unless ``titlecase`` is set; a field without data is ``null`` (``[]`` for
    arrays). Person Schema (/docs/fields): ``location_locality`` / ``_region`` / ``_country``
    are keyword fields of canonical lowercase names; ``profiles`` lists every social profile
    PDL knows for the person, old LinkedIn slugs included; on Free and trial plans the contact
    fields (``work_email``, ``personal_emails``, ``recommended_personal_email``) are ``true`` /
    ``false`` — "exists, not shown".
"""

from __future__ import annotations

import ast
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import httpx
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from shortlist.config import Settings
from shortlist.identity import LINKEDIN_PREFIX, linkedin_slug
from shortlist.places import Place, PlaceKind
from shortlist.talent.roles import NOUN_SYNONYMS, pdl_title
from shortlist.talent.vendors.base import (
    DiscoveryPage,
    DiscoveryQuery,
    Profile,
    ProfileStub,
    ProviderError,
    ProviderNoEmail,
    ProviderNotFound,
    ProviderQuotaExhausted,
    ProviderRateLimited,
    ProviderRejected,
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

PROVIDER_NAME = "pdl"
PDL_PREFIX = "pdl:"
# One gate per endpoint ("Rate limits for all of our API endpoints are separate", Usage Limits).
SEARCH_GATE = "pdl:search"
ENRICH_GATE = "pdl:enrich"
CLEAN_GATE = "pdl:clean"
# PDL's page size bounds (Person Search input parameters; spec: size minimum 1, maximum 100).
MIN_SIZE = 1
MAX_SIZE = 100
# Enrichment answers 200 only for a record that has these (Person Enrichment input parameters,
# ``required``; fields joined by AND as in peopledatalabs-python's README, "emails AND
# profiles"): a record without a title cannot be matched to the brief, and one without any
# e-mail address can never be a result (candidates.py: nobody without an e-mail is), so
# neither is bought — PDL answers 404 and bills nothing.
ENRICH_REQUIRED = "job_title AND emails"
# The same for a search page, billed per record returned: only people with an e-mail address
# (Person Schema ``emails``, every address PDL holds; on Free plans ``true`` — it exists, not
# shown — which is still someone the product can show). ``exists`` is Elasticsearch's "has a
# value" (the SDK's SQL form of it: "phone_numbers IS NOT NULL").
HAS_EMAIL: dict[str, Any] = {"exists": {"field": "emails"}}
# Person Search / Enrichment input parameters, ``data_include``: only the fields PdlPerson
# reads travel (a record is billed whatever it carries; the rest is bandwidth).
DATA_INCLUDE = ",".join((
    "id", "full_name", "headline", "summary", "job_title", "job_title_role",
    "job_title_sub_role", "job_title_levels", "location_name", "linkedin_url",
    "linkedin_username", "profiles", "work_email", "recommended_personal_email",
    "personal_emails", "skills", "inferred_years_experience",
))  # fmt: skip


def _as_list(value: object) -> object:
    # An array field without data is [] (or null); a Free-plan contact array may be a bare
    # `true` / `false` (Person Schema, contact fields on Free plans).
    if value is None:
        return []
    if isinstance(value, str | bool | dict):
        return [value]
    return value


def _years(value: object) -> object:
    # inferred_years_experience is an integer, null when unknown; never trust a negative.
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return int(value)
    return None


def _contact(value: object) -> object:
    # A contact field is an address, or on Free plans true/false ("exists, not shown").
    return value if isinstance(value, str | bool) else None


Contact = Annotated[str | bool | None, BeforeValidator(_contact)]
Items = Annotated[list[Any], BeforeValidator(_as_list)]


class PdlPerson(BaseModel):
    """The fields of a PDL person record this product uses; everything may be null."""

    model_config = ConfigDict(extra="ignore")

    id: str | None = None
    full_name: Text = ""
    headline: Text = ""
    summary: Text = ""
    job_title: Text = ""
    job_title_role: Text = ""
    job_title_sub_role: Text = ""
    job_title_levels: Items = Field(default_factory=list)
    location_name: Text = ""
    linkedin_url: str | None = None
    linkedin_username: str | None = None
    profiles: Items = Field(default_factory=list)
    work_email: Contact = None
    recommended_personal_email: Contact = None
    personal_emails: Items = Field(default_factory=list)
    skills: Items = Field(default_factory=list)
    inferred_years_experience: Annotated[int | None, BeforeValidator(_years)] = None

    def external_id(self) -> str | None:
        linkedin = self.linkedin_url or (
            f"linkedin.com/in/{self.linkedin_username}" if self.linkedin_username else None
        )
        return canonical_external_id(linkedin=linkedin, provider="pdl", provider_id=self.id)

    def linkedin_ids(self) -> set[str]:
        """Every LinkedIn identity PDL knows for this person: the primary one and those of
        ``profiles`` (Person Schema: ``profiles[]``, with ``network``, ``url``, ``username``;
        an older slug of the same person stays there)."""
        found: set[str] = set()
        urls: list[str] = [u for u in (self.linkedin_url,) if u]
        if self.linkedin_username:
            urls.append(f"linkedin.com/in/{self.linkedin_username}")
        for item in self.profiles:
            if isinstance(item, str):
                urls.append(item)
            elif isinstance(item, dict):
                if item.get("url"):
                    urls.append(str(item["url"]))
                if item.get("network") == "linkedin" and item.get("username"):
                    urls.append(f"linkedin.com/in/{item['username']}")
        for url in urls:
            slug = linkedin_slug(url)
            if slug:
                found.add(LINKEDIN_PREFIX + slug)
        return found

    def ids(self) -> set[str]:
        """Every id this record names the person by: its LinkedIn ones and its PDL id."""
        found = self.linkedin_ids()
        if self.id:
            found.add(PDL_PREFIX + self.id)
        return found

    def _contacts(self) -> list[object]:
        return [self.work_email, self.recommended_personal_email, *self.personal_emails]

    def email(self) -> str | None:
        for value in self._contacts():
            if isinstance(value, str) and "@" in value:
                return value.strip()
        return None

    def email_on_file(self) -> bool:
        """PDL says an address exists but does not show it (Free plans: ``true``)."""
        return self.email() is None and any(value is True for value in self._contacts())

    def to_profile(self, external_id: str) -> Profile:
        skills = [s for s in self.skills if isinstance(s, str) and s.strip()]
        return Profile(
            external_id=external_id,
            username=external_id.split(":", 1)[-1],
            # Shown as PDL sends it: every call asks for titlecase (no casing of our own).
            full_name=self.full_name,
            headline=self.headline or self.job_title,
            role_title=self.job_title,
            role_family=self.job_title_role,
            skills=skills,
            years_experience=self.inferred_years_experience,
            location=self.location_name,
            email=self.email(),
            email_on_file=self.email_on_file(),
            summary=self.summary,
            profile_url=(
                f"https://{self.linkedin_url}"
                if self.linkedin_url and "://" not in self.linkedin_url
                else self.linkedin_url
            ),
            aliases=tuple(sorted(self.ids() - {external_id})),
        )


class _SearchResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")

    data: list[PdlPerson]
    scroll_token: str | None = None
    total: int | None = None


class _CleanResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")

    locality: Text = ""
    region: Text = ""
    country: Text = ""


@dataclass(frozen=True)
class CleanedLocation:
    """A place in PDL's own canonical values (Location Cleaner API), lowercase as its
    ``location_*`` fields hold them."""

    locality: str | None
    region: str | None
    country: str | None


class _EnrichResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")

    data: PdlPerson
    likelihood: int | None = None


# --- the Person Search query -----------------------------------------------------------------


def place_filters(place: Place, cleaned: CleanedLocation | None = None) -> list[dict[str, Any]]:
    """``place`` on PDL's keyword location fields (Person Schema: ``location_locality``,
    ``location_region``, ``location_country`` hold the canonical lowercase names). ``cleaned``
    is PDL's own reading of the place (its Location Cleaner) and wins; without it, the
    gazetteer's names. A city goes with its region ("Portland" is not Portland, Maine and
    Portland, Oregon); a remote brief filters on no place."""
    if place.kind is PlaceKind.remote or not place.country:
        return []
    locality = (cleaned.locality if cleaned else None) or place.locality
    region = (cleaned.region if cleaned else None) or place.region
    country = (cleaned.country if cleaned else None) or place.country
    terms: list[dict[str, Any]] = []
    if place.kind is PlaceKind.city and locality:
        terms.append(_keyword("location_locality", locality))
        if region:
            terms.append(_keyword("location_region", region))
    elif place.kind is PlaceKind.region and region:
        terms.append(_keyword("location_region", region))
    terms.append(_keyword("location_country", country))
    return terms


def fold_lower(value: str) -> str | None:
    """A cleaner's value as PDL's keyword fields hold it: lowercase (Data Formatting)."""
    return " ".join(value.lower().split()) or None


def _keyword(field: str, name: str) -> dict[str, Any]:
    """``term`` on a keyword field, or ``terms`` over the spellings one name may have there: as
    GeoNames writes it ("zürich", "new york city"), without its accents ("zurich") and without
    a trailing "city" ("new york"). A keyword match is exact, and which form a vendor keeps is
    not documented."""
    forms = [name, fold(name)]
    forms += [f.removesuffix(" city") for f in forms if f.endswith(" city")]
    forms = list(dict.fromkeys(forms))
    return {"term": {field: forms[0]}} if len(forms) == 1 else {"terms": {field: forms}}


def _role_clause(role: str, *, widen: bool) -> dict[str, Any] | None:
    """Who holds ``role``. Strict: the title as a phrase (Elasticsearch ``match`` ORs the words,
    so a bare match on "fpga verification engineer" bills every "engineer"). Widened — still
    people who hold the role, never a neighbouring one: every word of the title in any order,
    its last word also by the names titles give the same work ("ios engineer" for "ios
    developer"). PDL's own taxonomy (``job_title_sub_role`` / ``job_title_role``) is only a
    preference, it does not admit: "verification engineer" + sub_role hardware is also a design
    verification engineer, which an FPGA brief did not ask for."""
    title = pdl_title(role)
    if not title.core:
        return None
    if not widen:
        return {"match_phrase": {"job_title": title.text}}
    words = title.core.split()
    every_word = {"match": {"job_title": {"query": title.core, "operator": "and"}}}
    synonyms = NOUN_SYNONYMS.get(words[-1], ())
    if len(words) < 2 or len(synonyms) < 2:
        return every_word
    qualifiers = " ".join(words[:-1])
    return {
        "bool": {
            "must": [
                {"match": {"job_title": {"query": qualifiers, "operator": "and"}}},
                # match ORs its words: any one of the names of the work.
                {"match": {"job_title": " ".join(synonyms)}},
            ]
        }
    }


def _taxonomy_hint(role: str) -> dict[str, Any] | None:
    """PDL's filing of the role (sub_role, else role), as a preference (a ``should`` beside the
    ``must``: it excludes nobody, and PDL documents no order it would rank by)."""
    title = pdl_title(role)
    if title.sub_roles:
        return {"terms": {"job_title_sub_role": list(title.sub_roles)}}
    if title.roles:
        return {"terms": {"job_title_role": list(title.roles)}}
    return None


Cleaned = Mapping[Place, CleanedLocation]


def _bool_query(query: DiscoveryQuery, cleaned: Cleaned) -> dict[str, Any]:
    must: list[dict[str, Any]] = []
    should: list[dict[str, Any]] = []
    if query.role:
        clause = _role_clause(query.role, widen=query.widen)
        if clause is not None:
            must.append(clause)
        if query.widen:
            # A seniority the brief named and PDL's filing of the role, as preferences: they
            # exclude nobody, and no PDL page says that Person Search orders its results by
            # them (or by anything): who is billed is decided by the `must` clauses alone.
            levels = list(pdl_title(query.role).levels)
            if levels:
                should.append({"terms": {"job_title_levels": levels}})
            hint = _taxonomy_hint(query.role)
            if hint is not None:
                should.append(hint)
    if query.place is not None:
        must.extend(place_filters(query.place, cleaned.get(query.place)))
    elif query.location:
        # A place the gazetteer does not know: its words against the analysed location_name.
        must.append({"match": {"location_name": {"query": query.location, "operator": "and"}}})
    must_not: list[dict[str, Any]] = []
    if query.min_years is not None and not query.widen:
        must.append({"range": {"inferred_years_experience": {"gte": query.min_years}}})
    elif query.min_years is not None:
        # Widened: someone stating no years is a maybe the brief keeps; someone stating fewer
        # is refused by it (talent/constraints.py), so not bought. A `range` matches no
        # document without the field (Elasticsearch "Range query").
        must_not.append({"range": {"inferred_years_experience": {"lt": query.min_years}}})
    for skill in query.skills:
        # `skills` holds exact lowercase values: `term` (Person Schema); a must-have for the
        # strict tier, a preference for the widened one.
        (should if query.widen else must).append({"term": {"skills": skill.lower()}})
    if not must:
        must.append({"exists": {"field": "job_title"}})
    bool_query: dict[str, Any] = {"must": must}
    if should:
        bool_query["should"] = should
    if query.exclude is not None:
        # People the strict tier already paid for are not bought a second time.
        must_not.append({"bool": _bool_query(query.exclude, cleaned)})
    if must_not:
        bool_query["must_not"] = must_not
    return bool_query


def search_body(
    query: DiscoveryQuery,
    size: int,
    scroll_token: str | None,
    cleaned: Cleaned | None = None,
) -> dict[str, Any]:
    """The Person Search request: the brief as an Elasticsearch bool query on PDL's fields
    (its places as ``cleaned`` reads them) of people with an e-mail address (HAS_EMAIL),
    ``size`` records (each billed) within PDL's bounds, records title-cased."""
    bool_query = _bool_query(query, cleaned or {})
    bool_query["must"] = [*bool_query["must"], HAS_EMAIL]
    body: dict[str, Any] = {
        "query": {"bool": bool_query},
        "size": max(MIN_SIZE, min(size, MAX_SIZE)),
        # Person Search input parameters: titlecase, else every string is lowercase.
        "titlecase": True,
        "data_include": DATA_INCLUDE,
    }
    if scroll_token:
        body["scroll_token"] = scroll_token
    return body


def enrich_params(external_id: str, min_likelihood: int) -> dict[str, str | int]:
    """Enrichment by LinkedIn profile, or by PDL id for a person PDL found itself; only a
    match at least ``min_likelihood`` likely, with a title, answers (and is billed)."""
    params: dict[str, str | int] = {
        "min_likelihood": min_likelihood,
        "required": ENRICH_REQUIRED,
        "titlecase": "true",
        "data_include": DATA_INCLUDE,
    }
    if external_id.startswith(LINKEDIN_PREFIX):
        params["profile"] = f"linkedin.com/in/{external_id[len(LINKEDIN_PREFIX) :]}"
    elif external_id.startswith(PDL_PREFIX):
        params["pdl_id"] = external_id[len(PDL_PREFIX) :]
    else:
        raise provider_error(
            ProviderRejected, PROVIDER_NAME, f"cannot enrich {external_id!r}: no LinkedIn or PDL id"
        )
    return params


# --- headers ----------------------------------------------------------------------------------


def header_window(value: str | None, window: str = "minute") -> int | None:
    """One window's figure from ``x-ratelimit-limit`` / ``-remaining`` (Usage Limits: a JSON
    object per window, ``{"minute": 1201, "day": null}``, sent in Python's repr as often as in
    JSON: ``{'minute': 60, 'day': None}``), or a plain number."""
    if not value:
        return None
    text = value.strip()
    if len(text) > 200:  # a rate header is a few words; anything longer is not one
        return None
    parsed: object
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        try:
            parsed = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    if isinstance(parsed, dict):
        parsed = parsed.get(window)
    if isinstance(parsed, int | float) and not isinstance(parsed, bool) and 0 <= parsed < 2**31:
        return int(parsed)  # (inf, nan and absurd figures are no limit anyone can use)
    return None


WINDOWS = ("minute", "day", "month")
"""PDL's rate windows (Usage Limits: ``x-ratelimit-remaining`` has ``minute``, ``day`` and
``month``; the ones a key has no limit on are ``None``)."""


def spent_until(
    headers: httpx.Headers, window_seconds: float, *, now: datetime | None = None
) -> float | None:
    """Seconds until every spent PDL window has reset, from ``x-ratelimit-remaining``: a spent
    minute ends at ``x-ratelimit-reset`` (else after ``window_seconds``), a spent day at the
    next UTC midnight, a spent month on the first of the next UTC month (fixed windows, Usage
    Limits), whichever is latest; None when no window is spent."""
    now = now or datetime.now(UTC)
    remaining = headers.get("x-ratelimit-remaining")
    reset = seconds_until_reset(headers.get("x-ratelimit-reset"), now=now)
    waits: list[float] = []
    if header_window(remaining, "minute") == 0:
        waits.append(window_seconds if reset is None else reset)
    if header_window(remaining, "day") == 0:
        midnight = datetime(now.year, now.month, now.day, tzinfo=UTC) + timedelta(days=1)
        waits.append(max((midnight - now).total_seconds(), reset or 0.0))
    if header_window(remaining, "month") == 0:
        first = datetime(now.year + now.month // 12, now.month % 12 + 1, 1, tzinfo=UTC)
        waits.append(max((first - now).total_seconds(), reset or 0.0))
    return max(waits) if waits else None


def header_per_minute(value: str | None) -> int | None:
    """The per-minute figure of a rate header (PDL's windows are minutes)."""
    return header_window(value, "minute")


def header_int(value: str | None) -> int | None:
    """A plain count header (``x-call-credits-spent``, ``x-totallimit-remaining``)."""
    if value is None:
        return None
    text = value.strip()
    try:
        return int(float(text))
    except (ValueError, OverflowError):  # "abc", "1e400" (inf), "nan"
        return None


def seconds_until_reset(value: str | None, *, now: datetime | None = None) -> float | None:
    """``x-ratelimit-reset`` as seconds from now: an ISO-8601 UTC timestamp (current docs) or
    epoch seconds (older docs)."""
    if not value:
        return None
    now = now or datetime.now(UTC)
    value = value.strip().strip('"')
    try:
        if value.replace(".", "", 1).isdigit():
            at = datetime.fromtimestamp(float(value), UTC)
        else:
            at = datetime.fromisoformat(value.replace("Z", "+00:00"))
            if at.tzinfo is None:
                at = at.replace(tzinfo=UTC)
    except (ValueError, OverflowError):
        return None
    return max(0.0, (at - now).total_seconds())


def _error_body(response: httpx.Response) -> tuple[str, str]:
    try:
        body = response.json()
    except ValueError:
        return "", response.text[:200]
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("type") or ""), str(error.get("message") or "")
    return "", json.dumps(body)[:200]


class PdlClient(ProviderClient):
    """PDL's headers and error bodies on top of the shared HTTP plumbing."""

    window_seconds: float = 60.0

    def credits_of(self, response: httpx.Response, operation: str) -> int:
        # Usage Limits: x-call-credits-spent, the credits billed for this call. Without it (a
        # proxy that drops headers), what PDL bills: a search one credit per record returned
        # (Person Search, output response), a matched enrichment one (Person Enrichment); an
        # error nothing ("only matches are billed").
        spent = header_int(response.headers.get("x-call-credits-spent"))
        if spent is not None:
            return max(spent, 0)
        if response.status_code != 200 or operation == "clean":
            return 0  # errors, and the Cleaner APIs ("free of charge"), cost nothing
        if operation != "search":
            return 1
        try:
            data = response.json().get("data")
        except (ValueError, AttributeError):
            return 0
        return len(data) if isinstance(data, list) else 0

    def rate_limit_of(self, response: httpx.Response) -> int | None:
        return header_per_minute(response.headers.get("x-ratelimit-limit"))

    def pause_after_429(self, response: httpx.Response) -> float | None:
        # "Fix 429 rate limit errors": pause until x-ratelimit-reset, then retry — or, when the
        # day's or the month's window is the one spent (Usage Limits), until it ends: asking
        # again after a minute would only earn the next 429.
        spent = spent_until(response.headers, self.window_seconds)
        if spent is not None:
            return spent
        reset = seconds_until_reset(response.headers.get("x-ratelimit-reset"))
        if reset is not None:
            return reset
        return super().pause_after_429(response)

    async def _observe(self, response: httpx.Response, operation: str, gate: Provider) -> None:
        await super()._observe(response, operation, gate)
        headers = response.headers
        # The balance of the credit pool this call drew on (Usage Limits:
        # x-totallimit-remaining, x-call-credits-type), kept for the next caller.
        remaining = header_int(headers.get("x-totallimit-remaining"))
        if remaining is not None:
            credit_type = (headers.get("x-call-credits-type") or operation).strip() or operation
            await self.note_balance(credit_type, remaining)
        # One of the endpoint's windows is spent ("Fix 429 rate limit errors": once
        # x-ratelimit-remaining reaches zero, requests return 429 until the window resets;
        # Usage Limits: minute, day and month windows): the next caller waits for the reset
        # instead of earning a 429.
        wait = spent_until(headers, self.window_seconds)
        if wait is not None and response.status_code != 429 and self.limiter is not None:
            await self.limiter.spent(gate.name, wait)

    async def vendor_error(self, response: httpx.Response, gate: Provider) -> ProviderError | None:
        status = response.status_code
        if status not in (402, 404, 429):
            return None
        kind, message = _error_body(response)
        detail = f"HTTP {status} {kind}: {message}".strip()
        if status == 402:
            await self.note_balance(_credit_type(response, gate), 0)
            return provider_error(ProviderQuotaExhausted, gate.name, detail)
        if status == 404:
            return provider_error(ProviderNotFound, gate.name, detail)
        pause = self.pause_after_429(response)
        if pause is None:
            pause = self.default_pause
        return provider_error(ProviderRateLimited, gate.name, detail, retry_after=pause)


def _credit_type(response: httpx.Response, gate: Provider) -> str:
    given = (response.headers.get("x-call-credits-type") or "").strip()
    return given or gate.name.split(":", 1)[-1]


class PdlTalentAPI:
    """:class:`~shortlist.talent.vendors.base.TalentAPI` for People Data Labs: one gate per endpoint
    (``pdl:search``, ``pdl:enrich``), each bounded by ``provider_concurrency`` in this process
    and by its own window in PostgreSQL (``limiter``)."""

    def __init__(
        self,
        base_url: str,
        settings: Settings,
        client: httpx.AsyncClient | None = None,
        *,
        limiter: RateGate | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = settings.talent_api_key
        self.discovery_timeout = settings.discovery_timeout
        self.enrichment_timeout = settings.enrichment_timeout
        self.min_likelihood = settings.pdl_min_likelihood
        self.search_gate = Provider(SEARCH_GATE, settings.provider_concurrency)
        self.enrich_gate = Provider(ENRICH_GATE, settings.provider_concurrency)
        # The Location Cleaner: one call at a time (10 a minute, Cleaner APIs reference).
        self.clean_gate = Provider(CLEAN_GATE, 1)
        self._http = PdlClient.for_settings(
            PROVIDER_NAME,
            settings,
            client=client,
            gates={
                "search": self.search_gate,
                "enrich": self.enrich_gate,
                "clean": self.clean_gate,
            },
            limiter=limiter,
        )
        self._cleaned: dict[str, CleanedLocation | None] = {}
        self._http.window_seconds = settings.pdl_window_seconds
        self.provider = self.search_gate
        self._parse_search = parse_model(_SearchResponse, SEARCH_GATE, "person search")
        self._parse_enrich = parse_model(_EnrichResponse, ENRICH_GATE, "person enrichment")
        self._parse_clean = parse_model(_CleanResponse, CLEAN_GATE, "location clean")

    @property
    def _headers(self) -> dict[str, str]:
        return {"X-Api-Key": self.api_key}

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _check_balance(self, credit_type: str, needed: int, what: str) -> None:
        """Stop before the account runs dry (a visible ``quota_exhausted``), not at a 402."""
        balance = await self._http.known_balance(credit_type)
        if balance is not None and balance < needed:
            raise provider_error(
                ProviderQuotaExhausted,
                f"{PROVIDER_NAME}:{credit_type}",
                f"PDL balance {balance} {credit_type} credits: below {what} ({needed})",
            )

    async def clean_location(self, place: Place) -> CleanedLocation | None:
        """PDL's canonical values for ``place`` (Location Cleaner API), asked once per place
        and process (a place's canonical form does not change within a release); None when
        the cleaner knows no such place or cannot be asked now (the gazetteer's names are
        used instead, and the cleaner is asked again next time)."""
        if place.kind is PlaceKind.remote or not place.country:
            return None
        label = place.label()
        if label in self._cleaned:
            return self._cleaned[label]
        try:
            body = await self._http.request_json(
                "clean",
                "GET",
                f"{self.base_url}/v5/location/clean",
                params={"location": label},
                headers=self._headers,
                time_limit=self.enrichment_timeout,
                parse=self._parse_clean,
            )
        except ProviderNotFound:
            self._cleaned[label] = None
            return None
        except ProviderError as exc:
            log.info("pdl location cleaner unavailable (%s): the gazetteer's names are used", exc)
            return None
        cleaned = CleanedLocation(
            locality=fold_lower(body.locality),
            region=fold_lower(body.region),
            country=fold_lower(body.country),
        )
        self._cleaned[label] = cleaned
        return cleaned

    async def _cleaned_places(self, query: DiscoveryQuery) -> dict[Place, CleanedLocation]:
        found: dict[Place, CleanedLocation] = {}
        for q in (query, query.exclude):
            if q is not None and q.place is not None and q.place not in found:
                cleaned = await self.clean_location(q.place)
                if cleaned is not None:
                    found[q.place] = cleaned
        return found

    async def discover(
        self, query: DiscoveryQuery, page: int, per_page: int, cursor: str | None = None
    ) -> DiscoveryPage:
        if page > 1 and not cursor:
            # PDL pages only by scroll token: a later page without one cannot be asked for.
            return DiscoveryPage(stubs=[], has_more=False)
        # A page is what the balance still pays for (PDL bills a search per record returned):
        # a smaller page rather than none; only an empty balance stops the search.
        balance = await self._http.known_balance("search")
        if balance is not None:
            await self._check_balance("search", 1, "one record")
            per_page = min(per_page, balance)
        body_json = search_body(query, per_page, cursor, await self._cleaned_places(query))
        try:
            body = await self._http.request_json(
                "search",
                "POST",
                f"{self.base_url}/v5/person/search",
                json=body_json,
                headers=self._headers,
                time_limit=self.discovery_timeout,
                parse=self._parse_search,
                # "How credits work" (docs.peopledatalabs.com/support/billing/how-credits-work):
                # a search bills one credit per record returned, and "unsuccessful requests are
                # not billed"; "Errors & status codes" (/docs/errors): a 5xx is "an internal
                # issue with the API". So a 5xx is re-sent once (unbilled), but a search that
                # timed out may have been answered and billed on PDL's side: it is not re-sent
                # (the tier fails, visibly; a search retry asks again). No PDL page describes
                # a search that hangs and answers on a second try.
                resend_after_timeout=False,
            )
        except ProviderNotFound:
            # PDL answers a search that matches nobody with 404 (and bills nothing).
            return DiscoveryPage(stubs=[], has_more=False)
        stubs = []
        for person in body.data:
            external_id = person.external_id()
            if external_id is None:
                continue  # no id at all: nothing to deduplicate or enrich it by
            profile = person.to_profile(external_id)
            stubs.append(
                ProfileStub(
                    external_id=external_id,
                    username=profile.username,
                    display_name=profile.full_name or profile.username,
                    profile=profile,
                    aliases=profile.aliases,
                )
            )
        has_more = bool(body.scroll_token) and bool(body.data)
        return DiscoveryPage(stubs=stubs, has_more=has_more, cursor=body.scroll_token)

    async def enrich(self, external_id: str) -> Profile:
        params = enrich_params(external_id, self.min_likelihood)
        await self._check_balance("enrich", 1, "one enrichment")
        try:
            body = await self._http.request_json(
                "enrich",
                "GET",
                f"{self.base_url}/v5/person/enrich",
                params=params,
                headers=self._headers,
                time_limit=self.enrichment_timeout,
                parse=self._parse_enrich,
            )
        except ProviderNotFound as exc:
            # Every enrichment requires an e-mail address (ENRICH_REQUIRED): PDL's 404 says it
            # holds no record of this person with one, at the likelihood asked for.
            raise provider_error(
                ProviderNoEmail,
                ENRICH_GATE,
                f"HTTP 404: no record with {ENRICH_REQUIRED} at likelihood"
                f" {self.min_likelihood} or more (not billed)",
            ) from exc
        person = body.data
        if external_id.startswith(LINKEDIN_PREFIX) and external_id not in person.linkedin_ids():
            # Ingesting someone else under this candidate's id would corrupt dedup. The same
            # person under a newer slug keeps the old one in `profiles`: that is a match, kept
            # under the id the search already knows them by.
            raise provider_error(
                ProviderRejected,
                ENRICH_GATE,
                f"asked to enrich {external_id!r}, got the record of {person.external_id()!r}",
            )
        return person.to_profile(external_id)
