"""The SerpApi adapter against answers shaped like SerpApi's documented examples
(MockTransport): the Google Search API's parameters (``location``, ``gl``, ``hl``, ``start``;
no ``num``), regional LinkedIn hosts, every search booked (no documented field tells a
cached one; the Account API's balance is the truth),
the two kinds of 429 told apart by the Account API (Status and error codes; Account API), and a
balance that stops the tier before the account runs dry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from shortlist.config import Settings
from shortlist.places import resolve
from shortlist.talent.vendors import ledger
from shortlist.talent.vendors.base import ProviderQuotaExhausted, ProviderRateLimited
from shortlist.talent.vendors.serpapi import SerpApiSearch, search_params

Handler = Callable[[httpx.Request], httpx.Response]
THROTTLED = "The number of requests sent using this API key exceeds the hourly throughput limit."


def _serp(handler: Handler, **overrides: Any) -> SerpApiSearch:
    settings = Settings(
        **({"serp_api_key": "serp-key", "discovery_timeout": 1.0, "retry_delay": 0.01} | overrides)
    )
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return SerpApiSearch("https://serpapi.test", settings, client)


def account(**fields: Any) -> dict[str, Any]:
    """The Account API's documented example."""
    return {
        "account_id": "5ac54d6adefb2f1dba1663f5",
        "plan_name": "Big Data Plan",
        "searches_per_month": 30000,
        "plan_searches_left": 5958,
        "total_searches_left": 5958,
        "this_hour_searches": 87,
        "account_rate_limit_per_hour": 6000,
    } | fields


def page(*links: str, cached: bool = False) -> dict[str, Any]:
    return {
        "search_metadata": {"status": "Success", "cached": cached},
        "organic_results": [
            {"position": i + 1, "title": f"Jane {i} - Nurse | LinkedIn", "link": link}
            for i, link in enumerate(links)
        ],
    }


def test_the_place_is_a_location_and_a_country_and_num_is_never_sent() -> None:
    munich = resolve("Munich")
    params = search_params('"FPGA Verification Engineer"', 2, munich, "k", "Munich,Bavaria,Germany")
    assert params == {
        "engine": "google",
        "q": 'site:linkedin.com/in "FPGA Verification Engineer" Munich',
        "start": 10,
        "hl": "en",
        "api_key": "k",
        "location": "Munich,Bavaria,Germany",
        "gl": "de",
    }
    # Without a canonical name from the Locations API, the country alone.
    assert "location" not in search_params('"Nurse"', 1, munich, "k")
    country = search_params('"Nurse"', 1, resolve("UK"), "k")
    assert country["gl"] == "gb" and "location" not in country
    remote = search_params('"Nurse"', 1, resolve("Remote"), "k")
    assert "gl" not in remote and remote["q"] == 'site:linkedin.com/in "Nurse"'


async def test_regional_hosts_with_tracking_are_the_same_person() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/account.json":
            return httpx.Response(200, json=account())
        return httpx.Response(
            200,
            json=page(
                "https://de.linkedin.com/in/jane-doe-123?trk=public_profile",
                "https://www.linkedin.com/in/jane-doe-123/",
                "https://uk.linkedin.com/in/Other-Person",
            ),
        )

    api = _serp(handler)
    result = await api.search('"Nurse"', 1, resolve("Munich"))
    assert [s.external_id for s in result.stubs] == [
        "linkedin:jane-doe-123",
        "linkedin:jane-doe-123",
        "linkedin:other-person",
    ]
    await api.aclose()


async def test_every_search_is_booked_and_the_account_api_corrects_the_balance() -> None:
    # Google Search API, no_cache: cached searches are free, but no documented field of an
    # answer says it came from the cache (an undocumented search_metadata.cached is ignored):
    # each search is booked, and the Account API's total_searches_left is the truth.
    left = {"value": 10}

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/account.json":
            return httpx.Response(200, json=account(total_searches_left=left["value"]))
        return httpx.Response(200, json=page("https://www.linkedin.com/in/a", cached=True))

    api = _serp(handler)
    with ledger.collecting() as calls:
        await api.search('"Nurse"', 1)
        await api.search('"Nurse"', 1)
    assert [(c.provider, c.kind, c.credits) for c in calls] == [
        ("serpapi", "search", 1),
        ("serpapi", "search", 1),
    ]
    assert await api._http.known_balance("searches") == 8
    # The second was served from the cache: the Account API says so at its next read.
    left["value"] = 9
    await api.account.read(force=True)
    assert await api._http.known_balance("searches") == 9
    await api.aclose()


async def test_the_account_api_tells_a_throttle_from_an_empty_account(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Mid-hour: at the hour's last instant the throughput pause is rightly ~0 (a new hour).
    monkeypatch.setattr(
        "shortlist.talent.vendors.serpapi.time.time", lambda: 1_800_000_000.0 + 1_800.0
    )
    left = {"n": 40}

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/account.json":
            return httpx.Response(200, json=account(total_searches_left=left["n"]))
        # The same 429 body both times: only the Account API knows which it is.
        return httpx.Response(429, json={"error": THROTTLED})

    api = _serp(handler)
    with pytest.raises(ProviderRateLimited) as throttled:
        await api.search('"Nurse"', 1)
    assert throttled.value.retry_after and 0 < throttled.value.retry_after <= 3600
    assert api.provider.paused_for() > 0
    api.provider._paused_until = 0.0
    left["n"] = 0
    with pytest.raises(ProviderQuotaExhausted, match="SerpApi balance 0 searches left"):
        await api.search('"Nurse"', 1)
    await api.aclose()


async def test_without_the_account_api_the_429_message_decides() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/account.json":
            return httpx.Response(503, json={"error": "down"})
        return httpx.Response(429, json={"error": "Your account has run out of searches."})

    api = _serp(handler)
    with pytest.raises(ProviderQuotaExhausted):
        await api.search('"Nurse"', 1)
    await api.aclose()


async def test_an_empty_balance_stops_before_a_search_is_sent() -> None:
    searches: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/account.json":
            return httpx.Response(200, json=account(total_searches_left=0))
        searches.append(request)
        return httpx.Response(200, json=page())

    api = _serp(handler)
    with pytest.raises(ProviderQuotaExhausted, match="SerpApi balance 0 searches left"):
        await api.search('"Nurse"', 1)
    assert searches == []
    await api.aclose()


async def test_location_is_the_locations_apis_canonical_name_asked_once() -> None:
    # Locations API (serpapi.com/locations-api): "use the location canonical name (e.g.,
    # "Austin,Texas,United States") … as the value of the param location"; the list comes
    # most reach first, and a name may be a city, a region or a DMA elsewhere.
    asked: list[str] = []
    searched: list[httpx.QueryParams] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/account.json":
            return httpx.Response(200, json=account())
        if request.url.path == "/locations.json":
            asked.append(request.url.params["q"])
            return httpx.Response(
                200,
                json=[
                    {"name": "Portland, OR", "canonical_name": "Portland, OR,Oregon,United States",
                     "country_code": "US", "target_type": "DMA Region", "reach": 3000000},
                    {"name": "Portland", "canonical_name": "Portland,Maine,United States",
                     "country_code": "US", "target_type": "City", "reach": 900000},
                    {"name": "Portland", "canonical_name": "Portland,Oregon,United States",
                     "country_code": "US", "target_type": "City", "reach": 800000},
                ],
            )  # fmt: skip
        searched.append(request.url.params)
        return httpx.Response(200, json=page("https://www.linkedin.com/in/a"))

    api = _serp(handler)
    portland = resolve("Portland, Oregon")
    assert portland is not None and portland.region == "oregon"
    await api.search('"Nurse"', 1, portland)
    await api.search('"Nurse"', 2, portland)
    assert asked == ["Portland"]
    assert [p.get("location") for p in searched] == ["Portland,Oregon,United States"] * 2
    assert searched[0]["gl"] == "us"
    await api.aclose()


async def test_a_place_the_locations_api_cannot_name_is_searched_with_gl_only() -> None:
    searched: list[httpx.QueryParams] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/account.json":
            return httpx.Response(200, json=account())
        if request.url.path == "/locations.json":
            return httpx.Response(200, json=[])
        searched.append(request.url.params)
        return httpx.Response(200, json=page("https://www.linkedin.com/in/a"))

    api = _serp(handler)
    result = await api.search('"Nurse"', 1, resolve("Munich"))
    assert result.stubs and "location" not in searched[0] and searched[0]["gl"] == "de"
    await api.aclose()


async def test_a_throttle_while_the_account_hour_has_room_pauses_briefly() -> None:
    # Account API: this_hour_searches of account_rate_limit_per_hour. SerpApi does not say when
    # its hour ends; a 429 while the Account API shows room is not an hour's pause.
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/account.json":
            return httpx.Response(200, json=account(this_hour_searches=87))
        if request.url.path == "/locations.json":
            return httpx.Response(200, json=[])
        return httpx.Response(429, json={"error": THROTTLED})

    api = _serp(handler, serpapi_window_seconds=3600.0)
    with pytest.raises(ProviderRateLimited) as throttled:
        await api.search('"Nurse"', 1)
    assert throttled.value.retry_after is not None and throttled.value.retry_after < 1
    await api.aclose()

    def full(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/account.json":
            return httpx.Response(200, json=account(this_hour_searches=6000))
        return httpx.Response(429, json={"error": THROTTLED})

    api = _serp(full, serpapi_window_seconds=3600.0)
    with pytest.raises(ProviderRateLimited) as throttled:
        await api.search('"Nurse"', 1)
    # Asked again within a twelfth of the hour, not at the clock's next hour.
    assert throttled.value.retry_after is not None and throttled.value.retry_after <= 300
    await api.aclose()
