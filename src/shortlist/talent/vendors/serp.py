"""The SERP-style people search over HTTP: the backfill's last-resort tier.

    GET {base}/v1/serp/search?q=&page= → {"results": [{"username", "title", "snippet"}],
                                          "has_more"}

Its results are handles on the talent platform, so they get the same external ids as the talent
API's (:func:`~shortlist.talent.vendors.base.talent_external_id`): the same person found by any
tier is one candidate, and is enriched through the talent API.
"""

from __future__ import annotations

import httpx
from pydantic import BaseModel, ConfigDict, Field

from shortlist.config import Settings
from shortlist.places import Place, PlaceKind
from shortlist.talent.vendors.base import DiscoveryPage, ProfileStub, talent_external_id
from shortlist.talent.vendors.provider import Provider, ProviderClient, Text, parse_model

PROVIDER_NAME = "serp"


class _Hit(BaseModel):
    model_config = ConfigDict(extra="ignore")

    username: str = Field(min_length=1)
    title: Text = ""
    snippet: Text = ""


class _SerpPage(BaseModel):
    model_config = ConfigDict(extra="ignore")

    results: list[_Hit]
    has_more: bool


class HttpSerpAPI:
    """:class:`~shortlist.talent.vendors.base.SerpAPI` over HTTP.

    A SERP call is a discovery call, so it gets ``settings.discovery_timeout``. ``provider`` and
    ``client`` as for :class:`~shortlist.talent.vendors.talent_api.HttpTalentAPI`.
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
        self.timeout = settings.discovery_timeout
        self.provider = provider or Provider(PROVIDER_NAME, settings.provider_concurrency)
        self._http = ProviderClient(
            self.provider,
            retry_delay=settings.retry_delay,
            default_pause=settings.retry_delay,
            client=client,
        )
        self._parse_page = parse_model(_SerpPage, self.provider.name, "search")

    async def aclose(self) -> None:
        await self._http.aclose()

    async def search(self, text: str, page: int, place: Place | None = None) -> DiscoveryPage:
        # The generic SERP takes words only: no phrase quotes, and the place as one more word.
        words = text.replace('"', " ").split()
        if place is not None and place.kind is not PlaceKind.remote and place.name:
            words.append(place.name)
        body = await self._http.get_json(
            "search",
            f"{self.base_url}/v1/serp/search",
            params={"q": " ".join(words), "page": page},
            time_limit=self.timeout,
            parse=self._parse_page,
        )
        stubs = [
            ProfileStub(
                external_id=talent_external_id(hit.username),
                username=hit.username,
                display_name=hit.title or hit.username,
            )
            for hit in body.results
        ]
        return DiscoveryPage(stubs=stubs, has_more=body.has_more)
