"""The simulator held to the vendors' documented behaviour (each test names its page), never to
what our adapters expect: People Data Labs (Errors & Status Codes, Usage Limits, Fix 429 rate
limit errors, Person Schema, Person Search / Enrichment API input parameters, ``pdl-specs.json``)
and SerpApi (Status and Error Codes, Google Search API, Account API)."""

from __future__ import annotations

import ast
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import httpx
import pytest

from shortlist.simulator import SimulatorConfig, create_simulator_app
from tests.pdl_taxonomy import LEGACY_ROLES, ROLE_OF, ROLES, SUB_ROLES

KEY = "simulator-key"
CALM = SimulatorConfig(
    time_scale=0.0,
    discovery_hang_rate=0.0,
    error_5xx_rate=0.0,
    serp_error_5xx_rate=0.0,
    rate_limit_rate=0.0,
    serp_rate_limit_rate=0.0,
    pdl_search_rate_limit=0,
)
THROUGHPUT = "The number of requests sent using this API key exceeds the hourly throughput limit."
GEOPHYSICISTS = {"bool": {"must": [{"match_phrase": {"job_title": "geophysicist"}}]}}


def client(config: SimulatorConfig = CALM) -> httpx.AsyncClient:
    app = create_simulator_app(config)
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://sim", headers={"X-Api-Key": KEY}
    )


@pytest.fixture
async def sim() -> AsyncIterator[httpx.AsyncClient]:
    async with client() as c:
        yield c


async def search(c: httpx.AsyncClient, query: Any, **body: Any) -> httpx.Response:
    return await c.post("/v5/person/search", json={"query": query, **body})


async def test_pdl_error_bodies_and_types(sim: httpx.AsyncClient) -> None:
    # Errors & Status Codes: {"status", "error": {"type", "message"}}; 401 authentication_error.
    bad = await sim.post(
        "/v5/person/search", json={"query": GEOPHYSICISTS}, headers={"X-Api-Key": "x"}
    )
    assert bad.status_code == 401
    assert bad.json() == {
        "status": 401,
        "error": {
            "type": "authentication_error",
            "message": "Request contained a missing or invalid key",
        },
    }
    # The documented body is {"query": ...}: a bare {"bool": ...} is an invalid request.
    bare = await sim.post("/v5/person/search", json={"bool": {"must": []}})
    assert bare.status_code == 400 and bare.json()["error"]["type"] == "invalid_request_error"
    unknown = await search(sim, {"fuzzy": {"job_title": "nurse"}})
    assert unknown.status_code == 400
    # 404 not_found "No records were found matching your request", not billed.
    nobody = await search(sim, {"bool": {"filter": [{"term": {"location_country": "atlantis"}}]}})
    assert nobody.status_code == 404
    assert nobody.json()["error"] == {
        "type": "not_found",
        "message": "No records were found matching your request",
    }
    assert nobody.headers["x-call-credits-spent"] == "0"


async def test_records_are_lowercase_unless_titlecase(sim: httpx.AsyncClient) -> None:
    # Person Schema examples are lowercase ("full_name": "sean thorne"); titlecase=true
    # title-cases the person data (spec, titlecase parameter).
    plain = (await search(sim, GEOPHYSICISTS, size=5)).json()["data"]
    for person in plain:
        for name in ("full_name", "job_title", "location_name"):
            assert person[name] == person[name].lower()
        assert person["linkedin_url"].startswith("linkedin.com/in/")
        assert person["job_title_role"] in ROLES
        assert person["profiles"][0]["network"] == "linkedin"
    titled = (await search(sim, GEOPHYSICISTS, size=5, titlecase=True)).json()["data"]
    assert titled[0]["full_name"] == titled[0]["full_name"].title()
    assert titled[0]["full_name"].lower() == plain[0]["full_name"]


async def test_roles_and_sub_roles_are_pdls_current_taxonomy(sim: httpx.AsyncClient) -> None:
    # Job Title Roles / Job Title Subroles (v28.0; the legacy taxonomy "no longer supported in
    # our datasets" since v29.1): every record carries current values, a sub role under the
    # role the mapping page files it under.
    app = create_simulator_app(CALM)
    seen = {(p.job_title_role, p.job_title_sub_role) for p in app.state.index.people}
    roles = {role for role, _ in seen if role is not None}
    sub_roles = {sub_role for _, sub_role in seen if sub_role is not None}
    assert roles <= ROLES and sub_roles <= SUB_ROLES
    assert not roles & (LEGACY_ROLES - ROLES)  # no customer_service, design, media, trades …
    for role, sub_role in seen:
        assert ROLE_OF.get(sub_role or "", role) == role, (role, sub_role)
    # …and the documented query on them answers: Person Search on the current values.
    nurses = await search(
        sim, {"bool": {"must": [{"term": {"job_title_sub_role": "nursing"}}]}}, size=5
    )
    assert nurses.status_code == 200
    assert {r["job_title_role"] for r in nurses.json()["data"]} == {"health"}
    legacy = await search(sim, {"bool": {"must": [{"term": {"job_title_role": "design"}}]}})
    assert legacy.status_code == 404


async def test_free_plan_contact_fields_are_booleans() -> None:
    # Person Schema, Field Availability: on Free plans contact fields "appear as true if the
    # value exists or false if it does not".
    async with client(replace(CALM, pdl_plan="free")) as c:
        data = (await search(c, GEOPHYSICISTS, size=50)).json()["data"]
    for person in data:
        for name in ("work_email", "personal_emails", "recommended_personal_email", "mobile_phone"):
            assert isinstance(person[name], bool)
    assert any(p["work_email"] for p in data) and any(not p["personal_emails"] for p in data)


async def test_rate_limits_are_per_endpoint_with_dict_headers() -> None:
    # Usage Limits: per key and per endpoint, fixed windows; headers carry a dict per window.
    config = replace(CALM, pdl_search_rate_limit=None, pdl_enrich_rate_limit=3)
    async with client(config) as c:
        answers = [await search(c, GEOPHYSICISTS) for _ in range(11)]
        assert [r.status_code for r in answers[:10]] == [200] * 10
        limited = answers[10]
        # Fix 429 rate limit errors / Errors: 429 rate_limit_error.
        assert limited.status_code == 429
        assert limited.json()["error"]["type"] == "rate_limit_error"
        first = answers[0].headers
        assert ast.literal_eval(first["x-ratelimit-limit"]) == {"minute": 10}
        assert ast.literal_eval(first["x-ratelimit-remaining"]) == {"minute": 9}
        assert first["x-ratelimit-reset"].endswith("Z")
        assert first["x-call-credits-type"] == "search"
        # Enrichment has its own window: the search 429 does not touch it.
        slug = answers[0].json()["data"][0]["linkedin_username"]
        enrich = [await c.get("/v5/person/enrich", params={"profile": slug}) for _ in range(4)]
        assert [r.status_code for r in enrich] == [200, 200, 200, 429]
        assert enrich[0].headers["x-call-credits-type"] == "enrich"
        report = (await c.get("/v1/admin/vendors")).json()["endpoints"]
        assert report["pdl:search"]["sent_429"] == 1 and report["pdl:enrich"]["sent_429"] == 1
    assert SimulatorConfig().pdl_limit("enrich") == 1000
    assert SimulatorConfig(pdl_plan="free").pdl_limit("enrich") == 100


async def test_person_search_does_not_hang_where_the_generic_discovery_does() -> None:
    # No PDL page (Person Search reference, Errors & Status Codes) describes a search that
    # hangs on a first attempt and answers a second: that is the seed's talent API (SPEC §5),
    # kept on /v1/people/search, not PDL's Person Search (issue 38 point 10).
    config = replace(CALM, discovery_hang_rate=1.0)
    async with client(config) as c:
        answers = [await search(c, GEOPHYSICISTS, size=n) for n in (1, 2, 3)]
        assert [r.status_code for r in answers] == [200, 200, 200]
        generic = await c.get("/v1/people/search", params={"role": "geophysicist"})
        assert generic.status_code == 200
        calls = (await c.get("/v1/stats")).json()["calls"]
        assert calls["search"]["hang"] == 1  # the generic search's, none of PDL's three


async def test_credits_run_out_with_402() -> None:
    async with client(replace(CALM, pdl_credit_limit=3)) as c:
        first = await search(c, GEOPHYSICISTS, size=3)
        assert first.headers["x-totallimit-remaining"] == "0"
        again = await search(c, GEOPHYSICISTS, size=1)
        assert again.status_code == 402
        assert again.json()["error"]["type"] == "payment_required"


async def test_enrichment_min_likelihood_required_and_old_slugs(sim: httpx.AsyncClient) -> None:
    app_people = sim._transport.app.state.index.people  # type: ignore[attr-defined]
    moved = next(p for p in app_people if p.old_slugs)
    # Any LinkedIn URL form, and an older slug PDL keeps in profiles[].
    by_old = await sim.get(
        "/v5/person/enrich",
        params={"profile": f"https://www.linkedin.com/in/{moved.old_slugs[0]}/"},
    )
    assert by_old.status_code == 200
    data = by_old.json()["data"]
    assert data["linkedin_username"] == moved.username
    assert {p["username"] for p in data["profiles"]} == {moved.username, *moved.old_slugs}
    assert 1 <= by_old.json()["likelihood"] <= 10
    # A weak match (name only, shared by several) is below min_likelihood: 404, unbilled.
    weak = await sim.get("/v5/person/enrich", params={"name": moved.full_name, "min_likelihood": 9})
    assert weak.status_code == 404 and weak.headers["x-call-credits-spent"] == "0"
    # required=emails: a person without any e-mail is a 404, not billed.
    silent = next(p for p in app_people if p.email is None)
    lacking = await sim.get(
        "/v5/person/enrich", params={"profile": silent.username, "required": "emails"}
    )
    assert lacking.status_code == 404 and lacking.headers["x-call-credits-spent"] == "0"


async def test_serpapi_shapes_limits_and_account(sim: httpx.AsyncClient) -> None:
    params = {"engine": "google", "api_key": KEY}
    # Status and Error Codes: 401 with the documented message.
    bad = await sim.get("/search.json", params={**params, "q": "nurse", "api_key": "x"})
    assert bad.status_code == 401
    assert bad.json() == {
        "error": "Invalid API key. Your API key should be here: https://serpapi.com/manage-api-key"
    }
    # num is ignored: about ten organic results a page; regional LinkedIn hosts.
    page = (
        await sim.get("/search.json", params={**params, "q": "registered nurse", "num": 100})
    ).json()
    assert len(page["organic_results"]) == 10
    assert all(".linkedin.com/in/" in r["link"] for r in page["organic_results"])

    # location is where the search originates (Google Search API), not whom it returns:
    # people there come first, people elsewhere follow on the pages after.
    def shown(r: dict[str, Any]) -> str:
        extensions = (r.get("rich_snippet") or {}).get("top", {}).get("extensions", [])
        return " ".join([r["snippet"], *extensions])

    toronto_params = {**params, "q": "nurse", "location": "Toronto, Ontario, Canada"}
    toronto = (await sim.get("/search.json", params=toronto_params)).json()
    assert toronto["organic_results"]
    located = [shown(r) for r in toronto["organic_results"] if "Location:" in shown(r)]
    assert located and all("Toronto" in text for text in located[:3])
    later = [
        shown(r)
        for start in (10, 20, 30, 40)
        for r in (await sim.get("/search.json", params={**toronto_params, "start": start}))
        .json()
        .get("organic_results", [])
    ]
    assert any("Location:" in text and "Toronto" not in text for text in later)
    # The documented empty result.
    empty = (
        await sim.get("/search.json", params={**params, "q": "underwater basket weaving sommelier"})
    ).json()
    assert empty["search_information"]["organic_results_state"] == "Fully empty"
    assert empty["error"] == "Google hasn't returned any results for this query."
    # A cached search (identical, within the hour) is free: the month's usage does not move.
    account = (await sim.get("/account.json", params={"api_key": KEY})).json()
    await sim.get("/search.json", params={**params, "q": "registered nurse", "num": 100})
    again = (await sim.get("/account.json", params={"api_key": KEY})).json()
    assert again["this_month_usage"] == account["this_month_usage"]
    for name in ("plan_searches_left", "total_searches_left", "this_month_usage",
                 "account_rate_limit_per_hour", "this_hour_searches"):  # fmt: skip
        assert name in account


async def test_serpapi_hourly_throughput_and_out_of_searches() -> None:
    params = {"engine": "google", "api_key": KEY}
    async with client(replace(CALM, serpapi_rate_limit_per_hour=2)) as c:
        codes = [
            (await c.get("/search.json", params={**params, "q": f"nurse {i}"})) for i in range(3)
        ]
        assert [r.status_code for r in codes] == [200, 200, 429]
        assert codes[2].json() == {"error": THROUGHPUT}
        assert (await c.get("/account.json", params={"api_key": KEY})).json()[
            "account_rate_limit_per_hour"
        ] == 2
    async with client(replace(CALM, serpapi_search_limit=1)) as c:
        await c.get("/search.json", params={**params, "q": "nurse"})
        out = await c.get("/search.json", params={**params, "q": "teacher"})
        assert out.status_code == 429
        assert out.json() == {"error": "Your account has run out of searches."}


async def test_serpapi_quoted_phrase_is_an_exact_match_and_location_only_an_origin() -> None:
    # Google, "Refine web searches" (support.google.com/websearch/answer/2466433): a phrase in
    # quotes is an exact match, so a page without it is no result; the other words are looked
    # for, and pages holding them all come first. SerpApi's Google Search API: `location` is
    # where the search originates, so it ranks, it does not filter.
    from shortlist.simulator.population import _page_tokens

    app = create_simulator_app(CALM)
    index = app.state.index
    by_slug = {s: p for p in index.people for s in (p.username, *p.old_slugs)}
    params = {"engine": "google", "api_key": KEY, "location": "Aberdeen, Scotland, United Kingdom"}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://sim"
    ) as c:
        people = []
        for start in (0, 10, 20, 30, 40):
            page = (
                await c.get(
                    "/search.json",
                    params={**params, "q": 'site:linkedin.com/in "Marine Geophysicist" Aberdeen',
                            "start": start},
                )
            ).json()  # fmt: skip
            for hit in page.get("organic_results", []):
                people.append(by_slug[hit["link"].split("/in/", 1)[1].split("?")[0]])
    assert people
    texts = [" ".join(_page_tokens(p)) for p in people]
    assert all("marine geophysicist" in t for t in texts)
    in_aberdeen = ["aberdeen" in t.split() for t in texts]
    # Everyone whose page names Aberdeen comes before anyone whose page does not.
    assert in_aberdeen[0] and in_aberdeen == sorted(in_aberdeen, reverse=True)


async def test_serpapi_locations_api_and_unsupported_location(sim: httpx.AsyncClient) -> None:
    # Locations API (serpapi.com/locations-api): free, no key; q keeps the names that contain
    # it, most reach first, at most `limit` (10 at most); `canonical_name` is what `location`
    # takes. Google Search API errors: a location it does not support is a 400.
    found = (await sim.get("/locations.json", params={"q": "Munich", "limit": 5})).json()
    assert 1 <= len(found) <= 5
    assert {"id", "google_id", "name", "canonical_name", "country_code", "target_type",
            "reach"} <= set(found[0])  # fmt: skip
    assert [r["reach"] for r in found] == sorted((r["reach"] for r in found), reverse=True)
    city = next(r for r in found if r["target_type"] == "City")
    assert city["canonical_name"] == "Munich,Bavaria,Germany"
    params = {"engine": "google", "api_key": KEY, "q": "nurse"}
    ok = await sim.get("/search.json", params={**params, "location": city["canonical_name"]})
    assert ok.status_code == 200
    bad = await sim.get("/search.json", params={**params, "location": "Atlantis Deep, Nowhere"})
    assert bad.status_code == 400
    assert bad.json() == {"error": "Unsupported `location` parameter."}


async def test_pdl_location_cleaner_answers_canonical_values(sim: httpx.AsyncClient) -> None:
    # Cleaner APIs reference: GET /v5/location/clean?location=…; PDL's canonical lowercase
    # values (Data Formatting, "Common Location Fields"); 404 for a place it does not know;
    # free of charge.
    found = await sim.get("/v5/location/clean", params={"location": "Munich, Germany"})
    assert found.status_code == 200
    body = found.json()
    assert (body["locality"], body["region"], body["country"]) == ("munich", "bavaria", "germany")
    assert body["name"] == "munich, bavaria, germany" and body["type"] == "locality"
    assert found.headers["x-call-credits-spent"] == "0"
    missing = await sim.get("/v5/location/clean", params={"location": "Atlantis Deep"})
    assert missing.status_code == 404 and missing.json()["error"]["type"] == "not_found"


async def test_person_search_takes_sql_and_the_sdks_wrapped_query(sim: httpx.AsyncClient) -> None:
    # Person Search input parameters: `query` (Elasticsearch) or `sql` ("SELECT * FROM person
    # WHERE …"), one of them; the docs' SDK examples send {"query": {"query": {…}}}.
    plain = await search(sim, GEOPHYSICISTS, size=5)
    wrapped = await search(sim, {"query": GEOPHYSICISTS}, size=5)
    sql = await sim.post(
        "/v5/person/search",
        json={"sql": "SELECT * FROM person WHERE job_title LIKE '%geophysicist%';", "size": 5},
    )
    assert plain.status_code == wrapped.status_code == sql.status_code == 200
    ids = [r["id"] for r in plain.json()["data"]]
    assert ids == [r["id"] for r in wrapped.json()["data"]]
    assert all("geophysicist" in r["job_title"] for r in sql.json()["data"])
    narrowed = await sim.post(
        "/v5/person/search",
        json={
            "sql": "SELECT * FROM person WHERE job_title LIKE '%geophysicist%'"
            " AND location_country IN ('united kingdom', 'norway')"
            " AND NOT inferred_years_experience < 3",
            "size": 10,
        },
    )
    assert narrowed.status_code == 200
    for r in narrowed.json()["data"]:
        assert r["location_country"] in {"united kingdom", "norway"}
        assert r["inferred_years_experience"] >= 3
    both = await sim.post("/v5/person/search", json={"query": GEOPHYSICISTS, "sql": "x"})
    limit = await sim.post(
        "/v5/person/search", json={"sql": "SELECT * FROM person WHERE a = 'b' LIMIT 3"}
    )
    assert both.status_code == limit.status_code == 400


async def test_data_include_and_likelihoods_that_min_likelihood_acts_on(
    sim: httpx.AsyncClient,
) -> None:
    # Input parameters, data_include: the listed fields only ("-" leaves them out).
    some = await search(sim, GEOPHYSICISTS, size=1, data_include="full_name,emails.address")
    record_ = some.json()["data"][0]
    assert set(record_) <= {"full_name", "emails"}
    assert all(set(e) == {"address"} for e in record_.get("emails", []))
    less = await search(sim, GEOPHYSICISTS, size=1, data_include="-skills,profiles")
    assert "skills" not in less.json()["data"][0] and "full_name" in less.json()["data"][0]
    # Person Enrichment: likelihood 1-10; below min_likelihood a 404, not billed. A profile
    # address the person left (kept in profiles[]) is a weaker match than the current one.
    app = create_simulator_app(CALM)
    moved = [p for p in app.state.index.people if p.old_slugs][:40]
    likelihoods = []
    for p in moved:
        hit = await sim.get(
            "/v5/person/enrich",
            params={"profile": f"linkedin.com/in/{p.old_slugs[0]}", "min_likelihood": 0},
        )
        likelihoods.append(hit.json()["likelihood"])
    assert min(likelihoods) < 6 <= max(likelihoods)
    weak = moved[likelihoods.index(min(likelihoods))]
    refused = await sim.get(
        "/v5/person/enrich",
        params={"profile": f"linkedin.com/in/{weak.old_slugs[0]}", "min_likelihood": 6},
    )
    assert refused.status_code == 404 and refused.headers["x-call-credits-spent"] == "0"
