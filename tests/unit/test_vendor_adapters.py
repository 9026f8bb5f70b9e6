"""Contract tests of the PDL and SerpApi adapters against scripted answers shaped like the
vendors' documented examples (PDL: Person Search / Enrichment output responses, Errors & Status
Codes, Usage Limits headers; SerpApi: Google Search API, Status and Error Codes)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from shortlist.config import Settings
from shortlist.places import resolve
from shortlist.talent.vendors import ledger
from shortlist.talent.vendors.base import (
    DiscoveryQuery,
    ProviderNotFound,
    ProviderQuotaExhausted,
    ProviderRateLimited,
    canonical_external_id,
)
from shortlist.talent.vendors.pdl import PdlTalentAPI, header_per_minute, seconds_until_reset
from shortlist.talent.vendors.serpapi import SerpApiSearch

Handler = Callable[[httpx.Request], httpx.Response]


def _settings() -> Settings:
    return Settings(
        talent_api_key="pdl-key",
        serp_api_key="serp-key",
        discovery_timeout=1.0,
        enrichment_timeout=1.0,
        retry_delay=0.01,
    )


def _pdl(handler: Handler) -> PdlTalentAPI:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return PdlTalentAPI("https://api.peopledatalabs.test", _settings(), client)


def _serp(handler: Handler) -> SerpApiSearch:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return SerpApiSearch("https://serpapi.test", _settings(), client)


# The documented example record, with the nulls PDL returns for fields it has no data for.
def person(n: int, **fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": f"qEnOZ5Oh0poWnQ1luFBfVw_000{n}",
        "full_name": f"sean thorne{n}",
        "linkedin_url": f"linkedin.com/in/seanthorne{n}",
        "linkedin_username": f"seanthorne{n}",
        "headline": None,
        "job_title": "co-founder and chief executive officer",
        "job_title_role": None,
        "skills": None,
        "inferred_years_experience": None,
        "location_name": None,
        "work_email": None,
        "personal_emails": None,
        "recommended_personal_email": None,
        "summary": None,
    }
    record.update(fields)
    return record


async def test_pdl_search_request_shape_auth_and_paging_to_the_last_page() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v5/location/clean":
            # Not known to this cleaner: the gazetteer's names are searched.
            return httpx.Response(404, json={"status": 404, "error": {"type": "not_found"}})
        seen.append(request)
        body = json.loads(request.content)
        if "scroll_token" not in body:
            data = {
                "status": 200,
                "data": [person(1), person(2)],
                "scroll_token": "1117$12.17",
                "total": 3,
            }
        else:
            data = {"status": 200, "data": [person(3)], "scroll_token": None, "total": 3}
        return httpx.Response(
            200, json=data, headers={"x-call-credits-spent": str(len(data["data"]))}
        )

    api = _pdl(handler)
    query = DiscoveryQuery(
        role="FPGA Verification Engineer",
        location="Munich",
        min_years=5,
        skills=("SystemVerilog",),
        place=resolve("Munich"),
    )
    with ledger.collecting() as calls:
        first = await api.discover(query, 1, 2)
        second = await api.discover(query, 2, 2, first.cursor)
    assert [r.method for r in seen] == ["POST", "POST"]
    assert seen[0].url.path == "/v5/person/search"
    assert seen[0].headers["X-Api-Key"] == "pdl-key"
    body = json.loads(seen[0].content)
    assert body["size"] == 2 and body["titlecase"] is True
    # A phrase, not Elasticsearch's OR-of-words `match`; the place on the keyword fields.
    assert body["query"]["bool"]["must"] == [
        {"match_phrase": {"job_title": "fpga verification engineer"}},
        {"term": {"location_locality": "munich"}},
        {"term": {"location_region": "bavaria"}},
        {"term": {"location_country": "germany"}},
        {"range": {"inferred_years_experience": {"gte": 5}}},
        {"term": {"skills": "systemverilog"}},
        {"exists": {"field": "emails"}},  # nobody without an e-mail address is bought
    ]
    assert json.loads(seen[1].content)["scroll_token"] == "1117$12.17"
    assert first.has_more and not second.has_more
    assert [s.external_id for s in first.stubs] == ["linkedin:seanthorne1", "linkedin:seanthorne2"]
    # A search hit is the whole record: the stub carries it, nobody pays to enrich it again.
    assert first.stubs[0].profile is not None
    # Shown as PDL sends it (titlecase was asked for): no casing of our own.
    assert first.stubs[0].profile.full_name == "sean thorne1"
    assert [c.credits for c in calls if c.kind == "search"] == [2, 1]
    await api.aclose()


async def test_pdl_null_heavy_records_parse_and_a_search_404_is_an_empty_page() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/enrich"):
            return httpx.Response(
                200,
                json={
                    "status": 200,
                    "likelihood": 6,
                    "data": person(7, linkedin_url=None, id="abc"),
                },
            )
        return httpx.Response(
            404,
            json={
                "status": 404,
                "error": {
                    "type": "not_found",
                    "message": "No records were found matching your request",
                },
            },
        )

    api = _pdl(handler)
    page = await api.discover(DiscoveryQuery(role="glass blower"), 1, 10)
    assert page.stubs == [] and not page.has_more
    profile = await api.enrich("pdl:abc")
    assert profile.email is None and profile.skills == [] and profile.years_experience is None
    await api.aclose()


async def test_pdl_enrich_by_profile_404_is_unbilled_and_402_is_quota_exhausted() -> None:
    requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        if request.url.params.get("profile") == "linkedin.com/in/nobody":
            return httpx.Response(
                404,
                json={"status": 404, "error": {"type": "not_found", "message": "No records"}},
                headers={"x-call-credits-spent": "0"},
            )
        return httpx.Response(
            402,
            json={
                "status": 402,
                "error": {
                    "type": "payment_required",
                    "message": "You have hit your account maximum",
                },
            },
        )

    api = _pdl(handler)
    with ledger.collecting() as calls:
        with pytest.raises(ProviderNotFound):
            await api.enrich("linkedin:nobody")
        with pytest.raises(ProviderQuotaExhausted, match="payment_required"):
            await api.enrich("linkedin:someone")
    assert [c.credits for c in calls] == [0, 0]
    assert [c.outcome for c in calls] == ["not_found", "quota_exhausted"]
    assert len(requests) == 2  # neither retried
    await api.aclose()


async def test_pdl_429_pauses_until_the_reset_timestamp() -> None:
    reset = datetime.now(UTC) + timedelta(seconds=30)

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            429,
            json={
                "status": 429,
                "error": {
                    "type": "rate_limit_error",
                    "message": "An error occurred due to requests hitting the API too quick",
                },
            },
            headers={
                "x-ratelimit-reset": reset.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "x-ratelimit-limit": "{'minute': 60, 'day': None}",
            },
        )

    api = _pdl(handler)
    with pytest.raises(ProviderRateLimited) as caught:
        await api.discover(DiscoveryQuery(role="nurse"), 1, 10)
    assert caught.value.retry_after is not None and 25 < caught.value.retry_after <= 30
    assert 25 < api.provider.paused_for() <= 30
    await api.aclose()


def test_pdl_rate_headers_in_both_documented_forms() -> None:
    assert header_per_minute("1201") == 1201
    assert header_per_minute('{"minute": 1201, "day": null}') == 1201
    assert header_per_minute("{'minute': 60, 'day': None, 'month': None}") == 60
    now = datetime(2022, 2, 23, 20, 19, 0, tzinfo=UTC)
    assert seconds_until_reset("2022-02-23T20:19:55Z", now=now) == 55
    assert seconds_until_reset(str(int(now.timestamp()) + 10), now=now) == 10
    assert seconds_until_reset("soon", now=now) is None


def _serp_page(start: int, links: list[str], more: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "search_metadata": {"status": "Success"},
        "organic_results": [
            {
                "position": start + i + 1,
                "title": f"Person {i} - Engineer | LinkedIn",
                "link": link,
                "snippet": "…",
            }
            for i, link in enumerate(links)
        ],
    }
    if more:
        body["serpapi_pagination"] = {"next": "https://serpapi.com/search.json?start=10"}
    return body


async def test_serpapi_request_shape_paging_and_identity() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/account.json":
            return httpx.Response(404, json={"error": "not here"})
        seen.append(request)
        if request.url.params["start"] == "0":
            return httpx.Response(
                200,
                json=_serp_page(
                    0,
                    [
                        "https://www.linkedin.com/in/SeanThorne1/",
                        "https://www.linkedin.com/company/acme",
                    ],
                    more=True,
                ),
            )
        return httpx.Response(
            200,
            json={
                "search_metadata": {"status": "Success"},
                "error": "Google hasn't returned any results for this query.",
            },
        )

    api = _serp(handler)
    with ledger.collecting() as calls:
        first = await api.search("FPGA verification engineer", 1)
        last = await api.search("FPGA verification engineer", 2)
    params = seen[0].url.params
    assert seen[0].url.path == "/search.json"
    assert params["engine"] == "google" and params["api_key"] == "serp-key"
    assert params["q"] == "site:linkedin.com/in FPGA verification engineer"
    # Google no longer honours `num`: not sent; `start` steps by ten.
    assert params["start"] == "0" and "num" not in params and params["hl"] == "en"
    assert seen[1].url.params["start"] == "10"
    # The company page is not a person; the profile is the same person PDL knows.
    assert [s.external_id for s in first.stubs] == ["linkedin:seanthorne1"]
    assert first.stubs[0].external_id == canonical_external_id(
        linkedin="linkedin.com/in/seanthorne1", provider="pdl", provider_id="x"
    )
    assert first.has_more and last.stubs == [] and not last.has_more
    assert [c.credits for c in calls] == [1, 1]
    await api.aclose()


async def test_serpapi_tells_its_two_kinds_of_429_apart() -> None:
    message = {
        "text": "The number of requests sent using this API key exceeds the hourly "
        "throughput limit."
    }

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(429, json={"error": message["text"]})

    api = _serp(handler)
    with pytest.raises(ProviderRateLimited) as throttled:
        await api.search("nurse", 1)
    assert throttled.value.retry_after and throttled.value.retry_after > 0
    message["text"] = "Your account has run out of searches."
    api.provider._paused_until = 0.0  # the throttle pause is not what this part is about
    with pytest.raises(ProviderQuotaExhausted):
        await api.search("nurse", 1)
    await api.aclose()


async def test_serpapi_401_is_rejected_not_retried() -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += request.url.path == "/search.json"  # the Account API answers 401 too
        return httpx.Response(
            401,
            json={
                "error": "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key"
            },
        )

    api = _serp(handler)
    with pytest.raises(Exception, match="401"):
        await api.search("nurse", 1)
    assert calls == 1
    await api.aclose()
