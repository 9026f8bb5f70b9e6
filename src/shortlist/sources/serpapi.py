"""SerpApi's Google Search API: the ``serp`` tier, people found as LinkedIn profile pages.

Written from SerpApi's documentation:
  - Google Search API (serpapi.com/search-api): ``GET /search.json?engine=google&q=…&start=…
    &num=…&api_key=…``; ``start`` is the result offset (0, 10, 20 …), ``num`` the results per
    page; results in ``organic_results`` [{``position``, ``title``, ``link``, ``snippet``}], and
    ``serpapi_pagination.next`` while there is a next page.
  - Organic results (serpapi.com/organic-results).
  - Status and error codes (serpapi.com/api-status-and-error-codes): errors are
    ``{"error": "<message>"}``; 401 for a bad key; 429 means EITHER the hourly throughput
    limit was exceeded OR "Your account has run out of searches." — the body tells which; and a
    search Google answered with nothing is a success whose ``error`` says so.
The profile URLs found here are enriched through PDL (by ``profile=``), and their LinkedIn slug
is the person's external id, as it is for a PDL record that knows the same profile.
"""

from __future__ import annotations

import httpx
from pydantic import BaseModel, ConfigDict, Field

from shortlist.config import Settings
from shortlist.sources.base import (
    DiscoveryPage,
    ProfileStub,
    ProviderError,
    ProviderQuotaExhausted,
    ProviderRateLimited,
    canonical_external_id,
)
from shortlist.sources.limits import RateGate
from shortlist.sources.provider import Provider, ProviderClient, Text, parse_model, provider_error

PROVIDER_NAME = "serpapi"
PAGE_SIZE = 10
# An hourly throughput limit has no Retry-After: wait this long before the next try.
THROTTLE_PAUSE = 60.0
_OUT_OF_SEARCHES = "run out of searches"


class _Organic(BaseModel):
    model_config = ConfigDict(extra="ignore")

    position: int | None = None
    title: Text = ""
    link: Text = ""
    snippet: Text = ""


class _Pagination(BaseModel):
    model_config = ConfigDict(extra="ignore")

    next: str | None = None


class _SearchResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")

    organic_results: list[_Organic] = Field(default_factory=list)
    serpapi_pagination: _Pagination | None = None
    error: str | None = None


def people_query(text: str) -> str:
    """A Google query for people's LinkedIn profiles matching ``text``."""
    return f"site:linkedin.com/in {text}".strip()


def _display_name(title: str) -> str:
    # "Jane Doe - Backend Engineer - Acme | LinkedIn": the name comes first.
    return title.split(" - ")[0].split(" | ")[0].strip()


class SerpApiClient(ProviderClient):
    """SerpApi's error bodies on top of the shared HTTP plumbing."""

    def credits_of(self, response: httpx.Response, operation: str) -> int:
        # One search credit per successful search (errors are not billed).
        return 1 if response.status_code == 200 else 0

    def vendor_error(self, response: httpx.Response) -> ProviderError | None:
        if response.status_code != 429:
            return None
        try:
            message = str(response.json().get("error") or "")
        except (ValueError, AttributeError):
            message = response.text[:200]
        if _OUT_OF_SEARCHES in message.lower():
            return provider_error(ProviderQuotaExhausted, PROVIDER_NAME, f"HTTP 429: {message}")
        pause = self.pause_after_429(response) or THROTTLE_PAUSE
        return provider_error(
            ProviderRateLimited, PROVIDER_NAME, f"HTTP 429: {message}", retry_after=pause
        )


class SerpApiSearch:
    """:class:`~shortlist.sources.base.SerpAPI` over SerpApi's Google engine."""

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
        self.api_key = settings.serp_api_key
        self.timeout = settings.discovery_timeout
        self._http = SerpApiClient.for_settings(
            PROVIDER_NAME, settings, client=client, provider=provider, limiter=limiter
        )
        self.provider = self._http.provider
        self._parse = parse_model(_SearchResponse, PROVIDER_NAME, "google search")

    async def aclose(self) -> None:
        await self._http.aclose()

    async def search(self, text: str, page: int) -> DiscoveryPage:
        body = await self._http.get_json(
            "search",
            f"{self.base_url}/search.json",
            params={
                "engine": "google",
                "q": people_query(text),
                "start": (page - 1) * PAGE_SIZE,
                "num": PAGE_SIZE,
                "api_key": self.api_key,
            },
            time_limit=self.timeout,
            parse=self._parse,
        )
        stubs: list[ProfileStub] = []
        for hit in body.organic_results:
            external_id = canonical_external_id(linkedin=hit.link, provider="", provider_id=None)
            if external_id is None:
                continue  # not a profile page (a company page, a post …)
            stubs.append(
                ProfileStub(
                    external_id=external_id,
                    username=external_id.split(":", 1)[1],
                    display_name=_display_name(hit.title) or external_id,
                )
            )
        has_more = bool(body.organic_results) and bool(
            body.serpapi_pagination and body.serpapi_pagination.next
        )
        return DiscoveryPage(stubs=stubs, has_more=has_more)
