"""The talent API over HTTP: filtered, paged discovery and per-profile enrichment.

    GET {base}/v1/people/search?role=&location=&min_years=&skills=a,b&page=&per_page=
        → {"page", "per_page", "total", "has_more", "results": [{"username", "full_name",
           "headline"}]}
    GET {base}/v1/people/{username}/enrich
        → {"username", "full_name", "headline", "role_title", "role_family", "skills",
           "years_experience", "location", "email" | null, "summary", "profile_url"}

Discovery and enrichment share one :class:`Provider` gate: a 429 on either pauses both, and
``provider_concurrency`` bounds them together, because they are one provider's capacity.
"""

from __future__ import annotations

from typing import Annotated, Any

import httpx
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from shortlist.config import Settings
from shortlist.talent.vendors.base import (
    TALENT_PREFIX,
    DiscoveryPage,
    DiscoveryQuery,
    Profile,
    ProfileStub,
    ProviderRejected,
    talent_external_id,
)
from shortlist.talent.vendors.provider import (
    Provider,
    ProviderClient,
    Text,
    parse_model,
    path_segment,
    provider_error,
)

PROVIDER_NAME = "talent"


class _Person(BaseModel):
    model_config = ConfigDict(extra="ignore")

    username: str = Field(min_length=1)
    full_name: Text = ""
    headline: Text = ""


class _SearchPage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    results: list[_Person]
    has_more: bool


def _blank_as_none(value: object) -> object:
    # Providers spell "no e-mail" as a missing field, null or "": all mean the same here.
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return value


def _none_as_list(value: object) -> object:
    return [] if value is None else value


class _FullProfile(BaseModel):
    model_config = ConfigDict(extra="ignore")

    username: str = Field(min_length=1)
    full_name: str
    headline: Text = ""
    role_title: Text = ""
    role_family: Text = ""
    skills: Annotated[list[str], BeforeValidator(_none_as_list)] = Field(default_factory=list)
    years_experience: int | None = Field(default=None, ge=0)
    location: Text = ""
    email: Annotated[str | None, BeforeValidator(_blank_as_none)] = None
    summary: Text = ""
    profile_url: Annotated[str | None, BeforeValidator(_blank_as_none)] = None


def discovery_params(query: DiscoveryQuery, page: int, per_page: int) -> dict[str, str | int]:
    """The query string for one discovery page; unset filters are left out, not sent empty."""
    params: dict[str, str | int] = {"page": page, "per_page": per_page}
    if query.role:
        params["role"] = query.role
    if query.location:
        params["location"] = query.location
    if query.min_years is not None and not query.widen:
        # A widened query does not require the years (SPEC §4: the broad tier drops them).
        params["min_years"] = query.min_years
    if query.skills:
        params["skills"] = ",".join(query.skills)
    return params


class HttpTalentAPI:
    """:class:`~shortlist.talent.vendors.base.TalentAPI` over HTTP.

    ``provider`` is the gate to share with other instances in this process (default: a new one
    bounded by ``settings.provider_concurrency``). Pass ``client`` to share a connection pool
    (it is then not closed by :meth:`aclose`).
    """

    def __init__(
        self,
        base_url: str,
        settings: Settings,
        client: httpx.AsyncClient | None = None,
        *,
        provider: Provider | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.discovery_timeout = settings.discovery_timeout
        self.enrichment_timeout = settings.enrichment_timeout
        self.provider = provider or Provider(PROVIDER_NAME, settings.provider_concurrency)
        self._http = ProviderClient(
            self.provider,
            retry_delay=settings.retry_delay,
            # A 429 without a usable Retry-After pauses for as long as a retry would wait.
            default_pause=settings.retry_delay,
            client=client,
        )
        self._parse_page = parse_model(_SearchPage, self.provider.name, "discovery")
        self._parse_profile = parse_model(_FullProfile, self.provider.name, "enrichment")

    async def aclose(self) -> None:
        await self._http.aclose()

    async def discover(
        self, query: DiscoveryQuery, page: int, per_page: int, cursor: str | None = None
    ) -> DiscoveryPage:
        body = await self._http.get_json(
            "discover",
            f"{self.base_url}/v1/people/search",
            params=discovery_params(query, page, per_page),
            time_limit=self.discovery_timeout,
            parse=self._parse_page,
        )
        stubs = [
            ProfileStub(
                external_id=talent_external_id(person.username),
                username=person.username,
                display_name=person.full_name or person.username,
            )
            for person in body.results
        ]
        return DiscoveryPage(stubs=stubs, has_more=body.has_more)

    async def enrich(self, external_id: str) -> Profile:
        """By ``talent:<username>`` (a bare username is accepted too)."""
        username = external_id.removeprefix(TALENT_PREFIX)
        if not username or ":" in username:
            raise provider_error(
                ProviderRejected,
                self.provider.name,
                f"cannot enrich {external_id!r}: not a talent-platform id",
            )

        def parse(raw: Any) -> _FullProfile:
            body = self._parse_profile(raw)
            if body.username != username:
                # Ingesting someone else under this candidate's external id would corrupt dedup.
                raise provider_error(
                    ProviderRejected,
                    self.provider.name,
                    f"asked to enrich {username!r}, got the profile of {body.username!r}",
                )
            return body

        body = await self._http.get_json(
            "enrich",
            f"{self.base_url}/v1/people/{path_segment(username)}/enrich",
            time_limit=self.enrichment_timeout,
            parse=parse,
        )
        return Profile(
            external_id=talent_external_id(username),
            username=username,
            full_name=body.full_name,
            headline=body.headline,
            role_title=body.role_title,
            role_family=body.role_family,
            skills=list(body.skills),
            years_experience=body.years_experience,
            location=body.location,
            email=body.email,
            summary=body.summary,
            profile_url=body.profile_url,
        )
