"""People Data Labs over HTTP: Person Search for the ``strict`` and ``broad`` tiers, Person
Enrichment for people found elsewhere (SERP hits).

Written from PDL's documentation:
  - Person Search reference, input parameters and output response
    (docs.peopledatalabs.com/docs/reference-person-search-api,
    /docs/input-parameters-person-search-api, /docs/output-response-person-search-api):
    ``POST /v5/person/search`` with a JSON body ``{"query": <Elasticsearch query>, "size",
    "scroll_token"}`` → ``{"status": 200, "data": [person…], "scroll_token", "total"}``; a
    search hit is the whole person record, billed per record returned.
  - Person Enrichment reference and output response
    (/docs/reference-person-enrichment-api, /docs/output-response-person-enrichment-api):
    ``GET /v5/person/enrich?profile=…`` (or ``pdl_id=…``) → ``{"status", "likelihood",
    "data"}``; 404 when no one matches, and only matches are billed.
  - Authentication (/docs/authentication): the key in the ``X-Api-Key`` header.
  - Errors & status codes (/docs/errors): ``{"status", "error": {"type", "message"}}``; 402
    when the account's credits are spent; 404 means "no match" (for a search too).
  - Usage limits (/docs/usage-limits): ``x-call-credits-spent``, ``x-ratelimit-limit`` /
    ``x-ratelimit-remaining`` (per minute), and ``x-ratelimit-reset`` — a UTC timestamp, not a
    number of seconds; 429 (``rate_limit_error``) when over the limit.
Person fields (/docs/fields, /docs/example-record): any field PDL has no data for is ``null``.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Annotated, Any

import httpx
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from shortlist.config import Settings
from shortlist.sources.base import (
    LINKEDIN_PREFIX,
    DiscoveryPage,
    DiscoveryQuery,
    Profile,
    ProfileStub,
    ProviderError,
    ProviderNotFound,
    ProviderQuotaExhausted,
    ProviderRateLimited,
    ProviderRejected,
    canonical_external_id,
)
from shortlist.sources.limits import RateGate
from shortlist.sources.provider import (
    Provider,
    ProviderClient,
    Text,
    parse_model,
    provider_error,
)

PROVIDER_NAME = "pdl"
PDL_PREFIX = "pdl:"
# PDL's page size bounds (Person Search input parameters: size 1-100).
MAX_SIZE = 100


def _none_as_list(value: object) -> object:
    return [] if value is None else value


def _years(value: object) -> object:
    # inferred_years_experience is an integer, null when unknown; never trust a negative.
    if isinstance(value, int | float) and value >= 0:
        return int(value)
    return None


class PdlPerson(BaseModel):
    """The fields of a PDL person record this product uses; everything may be null."""

    model_config = ConfigDict(extra="ignore")

    id: str | None = None
    full_name: Text = ""
    headline: Text = ""
    summary: Text = ""
    job_title: Text = ""
    job_title_role: Text = ""
    location_name: Text = ""
    linkedin_url: str | None = None
    linkedin_username: str | None = None
    work_email: str | None = None
    recommended_personal_email: str | None = None
    personal_emails: Annotated[list[Any], BeforeValidator(_none_as_list)] = Field(
        default_factory=list
    )
    skills: Annotated[list[Any], BeforeValidator(_none_as_list)] = Field(default_factory=list)
    inferred_years_experience: Annotated[int | None, BeforeValidator(_years)] = None

    def external_id(self) -> str | None:
        linkedin = self.linkedin_url or (
            f"linkedin.com/in/{self.linkedin_username}" if self.linkedin_username else None
        )
        return canonical_external_id(linkedin=linkedin, provider="pdl", provider_id=self.id)

    def email(self) -> str | None:
        # On some plans PDL answers `true` for a field it has but does not show: not an address.
        candidates = [self.work_email, self.recommended_personal_email, *self.personal_emails]
        for value in candidates:
            if isinstance(value, str) and "@" in value:
                return value.strip()
        return None

    def to_profile(self, external_id: str) -> Profile:
        skills = [s for s in self.skills if isinstance(s, str) and s.strip()]
        return Profile(
            external_id=external_id,
            username=external_id.split(":", 1)[-1],
            full_name=self.full_name.title() if self.full_name.islower() else self.full_name,
            headline=self.headline or self.job_title,
            role_title=self.job_title,
            role_family=self.job_title_role,
            skills=skills,
            years_experience=self.inferred_years_experience,
            location=self.location_name,
            email=self.email(),
            summary=self.summary,
            profile_url=(
                f"https://{self.linkedin_url}"
                if self.linkedin_url and "://" not in self.linkedin_url
                else self.linkedin_url
            ),
        )


class _SearchResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")

    data: list[PdlPerson]
    scroll_token: str | None = None
    total: int | None = None


class _EnrichResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")

    data: PdlPerson
    likelihood: int | None = None


def search_body(query: DiscoveryQuery, size: int, scroll_token: str | None) -> dict[str, Any]:
    """The Person Search request: the brief's filters as an Elasticsearch bool query, every
    filter a ``must`` (tier 1 maps the brief 1:1; widening is the caller's business)."""
    must: list[dict[str, Any]] = []
    if query.role:
        must.append({"match": {"job_title": query.role}})
    if query.location:
        must.append({"match": {"location_name": query.location}})
    if query.min_years is not None:
        must.append({"range": {"inferred_years_experience": {"gte": query.min_years}}})
    for skill in query.skills:
        must.append({"term": {"skills": skill.lower()}})
    if not must:
        must.append({"exists": {"field": "job_title"}})
    body: dict[str, Any] = {"query": {"bool": {"must": must}}, "size": min(size, MAX_SIZE)}
    if scroll_token:
        body["scroll_token"] = scroll_token
    return body


def enrich_params(external_id: str) -> dict[str, str]:
    """Enrichment by LinkedIn profile, or by PDL id for a person PDL found itself."""
    if external_id.startswith(LINKEDIN_PREFIX):
        return {"profile": f"linkedin.com/in/{external_id[len(LINKEDIN_PREFIX) :]}"}
    if external_id.startswith(PDL_PREFIX):
        return {"pdl_id": external_id[len(PDL_PREFIX) :]}
    raise provider_error(
        ProviderRejected, PROVIDER_NAME, f"cannot enrich {external_id!r}: no LinkedIn or PDL id"
    )


_MINUTE = re.compile(r"""['"]?minute['"]?\s*:\s*(\d+)""")


def header_per_minute(value: str | None) -> int | None:
    """A per-minute figure from ``x-ratelimit-limit``/``-remaining``: a plain number, or an
    object such as ``{"minute": 1201, "day": null}`` (both forms appear in PDL's docs)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return int(value)
    match = _MINUTE.search(value)
    return int(match.group(1)) if match else None


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

    def credits_of(self, response: httpx.Response, operation: str) -> int:
        spent = response.headers.get("x-call-credits-spent")
        if spent is not None and spent.strip().isdigit():
            return int(spent)
        return 0

    def rate_limit_of(self, response: httpx.Response) -> int | None:
        return header_per_minute(response.headers.get("x-ratelimit-limit"))

    def pause_after_429(self, response: httpx.Response) -> float | None:
        return seconds_until_reset(response.headers.get("x-ratelimit-reset"))

    def vendor_error(self, response: httpx.Response) -> ProviderError | None:
        status = response.status_code
        if status not in (402, 404, 429):
            return None
        kind, message = _error_body(response)
        detail = f"HTTP {status} {kind}: {message}".strip()
        if status == 402:
            return provider_error(ProviderQuotaExhausted, PROVIDER_NAME, detail)
        if status == 404:
            return provider_error(ProviderNotFound, PROVIDER_NAME, detail)
        pause = self.pause_after_429(response)
        if pause is None:
            pause = self.default_pause
        return provider_error(ProviderRateLimited, PROVIDER_NAME, detail, retry_after=pause)


class PdlTalentAPI:
    """:class:`~shortlist.sources.base.TalentAPI` for People Data Labs."""

    def __init__(
        self,
        base_url: str,
        settings: Settings,
        client: httpx.AsyncClient | None = None,
        *,
        provider: Provider | None = None,
        limiter: RateGate | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = settings.talent_api_key
        self.discovery_timeout = settings.discovery_timeout
        self.enrichment_timeout = settings.enrichment_timeout
        self._http = PdlClient.for_settings(
            PROVIDER_NAME, settings, client=client, provider=provider, limiter=limiter
        )
        self.provider = self._http.provider
        self._parse_search = parse_model(_SearchResponse, PROVIDER_NAME, "person search")
        self._parse_enrich = parse_model(_EnrichResponse, PROVIDER_NAME, "person enrichment")

    @property
    def _headers(self) -> dict[str, str]:
        return {"X-Api-Key": self.api_key}

    async def aclose(self) -> None:
        await self._http.aclose()

    async def discover(
        self, query: DiscoveryQuery, page: int, per_page: int, cursor: str | None = None
    ) -> DiscoveryPage:
        if page > 1 and not cursor:
            # PDL pages only by scroll token: a later page without one cannot be asked for.
            return DiscoveryPage(stubs=[], has_more=False)
        try:
            body = await self._http.request_json(
                "search",
                "POST",
                f"{self.base_url}/v5/person/search",
                json=search_body(query, per_page, cursor),
                headers=self._headers,
                time_limit=self.discovery_timeout,
                parse=self._parse_search,
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
                )
            )
        has_more = bool(body.scroll_token) and bool(body.data)
        return DiscoveryPage(stubs=stubs, has_more=has_more, cursor=body.scroll_token)

    async def enrich(self, external_id: str) -> Profile:
        body = await self._http.request_json(
            "enrich",
            "GET",
            f"{self.base_url}/v5/person/enrich",
            params=enrich_params(external_id),
            headers=self._headers,
            time_limit=self.enrichment_timeout,
            parse=self._parse_enrich,
        )
        found = body.data.external_id()
        if found is not None and found != external_id and not external_id.startswith(PDL_PREFIX):
            # Ingesting someone else under this candidate's id would corrupt dedup.
            raise provider_error(
                ProviderRejected,
                PROVIDER_NAME,
                f"asked to enrich {external_id!r}, got the record of {found!r}",
            )
        return body.data.to_profile(external_id)
