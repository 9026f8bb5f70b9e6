"""The bundled talent-API simulator: population, filters, misbehaviour, admin hooks, stats."""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from shortlist.simulator import (
    ROLE_FAMILIES,
    Person,
    SimulatorConfig,
    SimulatorServer,
    build_population,
    create_simulator_app,
    expand_role_family,
    role_family_of,
)
from shortlist.simulator.app import _index_for
from shortlist.simulator.behaviour import SimulatorState, format_seconds
from tests.helpers import wait_for, wait_for_sync

# No sleeps worth waiting for, and no random errors unless a test asks for them.
CALM = SimulatorConfig(
    time_scale=0.0,
    discovery_hang_rate=0.0,
    error_5xx_rate=0.0,
    serp_error_5xx_rate=0.0,
    rate_limit_rate=0.0,
    serp_rate_limit_rate=0.0,
)


def people() -> tuple[Person, ...]:
    """The default population, as the simulator app has it (its index, from the run's
    derived-data cache: building it again here cost ~8 s of CPU in each test process)."""
    return _index_for(CALM.seed, CALM.population_size, CALM.no_email_rate).people


def client_for(app: FastAPI) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://sim")


@pytest.fixture
async def calm() -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(create_simulator_app(CALM)) as client:
        yield client


async def search(client: httpx.AsyncClient, **params: Any) -> dict[str, Any]:
    response = await client.get("/v1/people/search", params=params)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


async def stats(client: httpx.AsyncClient) -> dict[str, Any]:
    data: dict[str, Any] = (await client.get("/v1/stats")).json()
    return data


# --- population ------------------------------------------------------------------------------


@pytest.mark.slow
def test_population_is_deterministic_and_about_12_percent_have_no_email() -> None:
    sample = build_population.__wrapped__(42, 3000)  # bypass the cache: really rebuild
    assert sample == build_population(42, 3000)
    assert sample != build_population.__wrapped__(7, 3000)
    assert len({p.username for p in sample}) == 3000
    no_email = sum(p.email is None for p in sample) / len(sample)
    assert 0.09 <= no_email <= 0.15
    assert all(0 <= p.years_experience <= 35 for p in sample)
    assert all(p.role_title in ROLE_FAMILIES[p.role_family] for p in sample)
    assert all(p.skills and p.summary and p.headline for p in sample)
    # Canonical places (PDL's lowercase triple, a proper-case label) across >= 40 countries.
    assert len({p.city.country_code for p in sample if p.city}) >= 40
    assert all(p.city and p.location == p.city.label for p in sample)
    munich = next(p.city for p in sample if p.city and p.city.name == "Munich")
    assert munich.location_name == "munich, bavaria, germany"
    assert len(ROLE_FAMILIES) >= 15
    assert sum(len(ts) for ts in ROLE_FAMILIES.values()) >= 500  # Faker's real occupations
    titles = {p.role_title for p in people()}
    for niche in ("Rust Embedded Firmware Engineer", "FPGA Verification Engineer",
                  "Quantitative Developer", "Clinical Data Manager", "Hydrogeologist",
                  "Marine Geophysicist", "Avionics Test Engineer", "Actuary"):  # fmt: skip
        assert niche in titles


def test_niche_skills_fit_their_occupations() -> None:
    everyone = people()

    def with_skill(skill: str) -> set[str]:
        return {p.role_family for p in everyone if skill in p.skills}

    assert with_skill("Pediatric Oncology") == {"healthcare"}
    assert with_skill("Seismic Interpretation") == {"geoscience"}
    assert with_skill("Groundwater Modelling") == {"geoscience"}
    assert with_skill("Pensions Valuation") == {"actuarial"}
    assert with_skill("Kotlin Multiplatform") == {"mobile"}
    assert with_skill("Avionics") == {"aerospace"}


def test_role_families() -> None:
    assert role_family_of("Clinical Data Manager") == "healthcare"
    assert role_family_of("senior backend engineer") == "backend"
    assert role_family_of("zzz qqq") is None
    assert "Firmware Engineer" in expand_role_family("Rust embedded firmware engineer")
    assert "Quantitative Developer" in expand_role_family("quant developer kdb+")
    assert expand_role_family("ML engineer") == list(ROLE_FAMILIES["ml"])
    assert expand_role_family("gibberish words") == []


def test_enrichment_latency_model() -> None:
    cfg = SimulatorConfig(error_5xx_rate=0.0, rate_limit_rate=0.0)
    state = SimulatorState(cfg)
    delays = [state.decide_enrich(f"user{i}").delay_s for i in range(4000)]
    assert 7.0 <= statistics.median(delays) <= 9.0
    assert max(delays) <= cfg.enrich_max_s
    tail = sum(d >= 3 * cfg.enrich_mean_s * 0.99 for d in delays) / len(delays)
    assert 0.03 <= tail <= 0.07
    scaled = SimulatorState(replace(cfg, time_scale=0.01)).decide_enrich("user1").delay_s
    assert scaled == pytest.approx(delays[1] * 0.01)


def test_format_seconds() -> None:
    assert format_seconds(2.0) == "2"
    assert format_seconds(0.05) == "0.05"
    assert format_seconds(0.002) == "0.002"
    assert "e" not in format_seconds(1e-9)


# --- discovery ----------------------------------------------------------------------------------


async def test_discovery_filters_and_paging(calm: httpx.AsyncClient) -> None:
    niche = await search(calm, role="Rust embedded firmware engineer")
    assert niche["total"] >= 2
    assert {r["username"] for r in niche["results"]}
    for row in niche["results"]:
        profile = (await calm.get(f"/v1/people/{row['username']}/enrich")).json()
        assert profile["role_title"] == "Rust Embedded Firmware Engineer"
        assert set(row) == {"username", "full_name", "headline"}

    data = await search(calm, role="backend", location="berlin", min_years=5, per_page=50)
    assert data["total"] > 0
    for row in data["results"]:
        p = (await calm.get(f"/v1/people/{row['username']}/enrich")).json()
        assert p["role_family"] == "backend"
        assert "Berlin" in p["location"]
        assert p["years_experience"] >= 5

    kdb = await search(calm, skills="kdb+, Q")  # case-insensitive, all skills required
    assert kdb["total"] > 0
    for row in kdb["results"]:
        p = (await calm.get(f"/v1/people/{row['username']}/enrich")).json()
        assert {"KDB+", "q"} <= set(p["skills"])

    assert (await search(calm, location="sao paulo"))["total"] > 0  # accents folded

    # Paging: stable order, disjoint pages, has_more flips at the end.
    first = await search(calm, role="data scientist", per_page=5)
    again = await search(calm, role="data scientist", per_page=5)
    assert first == again
    assert first["has_more"] and first["total"] > 5
    second = await search(calm, role="data scientist", per_page=5, page=2)
    assert not {r["username"] for r in first["results"]} & {
        r["username"] for r in second["results"]
    }
    last_page = -(-first["total"] // 5)
    last = await search(calm, role="data scientist", per_page=5, page=last_page)
    assert last["results"] and not last["has_more"]
    assert (await search(calm, role="nonexistent zzz"))["total"] == 0


async def test_bad_parameters_get_400(calm: httpx.AsyncClient) -> None:
    response = await calm.get("/v1/people/search", params={"per_page": 0})
    assert response.status_code == 400
    assert "error" in response.json()


async def test_first_attempt_hang_rate_is_about_41_percent_and_retry_succeeds() -> None:
    cfg = replace(CALM, time_scale=0.0001, discovery_hang_rate=0.41)  # a hang lasts 9 ms
    app = create_simulator_app(cfg)
    roles = [t for ts in ROLE_FAMILIES.values() for t in ts]
    queries: list[dict[str, str | int]] = [
        {"role": roles[i % len(roles)], "min_years": i // len(roles)} for i in range(100)
    ]
    async with client_for(app) as client:
        responses = await asyncio.gather(
            *(client.get("/v1/people/search", params=q) for q in queries)
        )
        assert all(r.status_code == 200 for r in responses)
        hung = [q for q, r in zip(queries, responses, strict=True)
                if r.headers["x-simulator-outcome"] == "hang"]  # fmt: skip
        assert 0.33 <= len(hung) / len(queries) <= 0.49
        counts = (await stats(client))["calls"]["search"]
        assert counts["hang"] == len(hung) and counts["total"] == len(queries)

        # A client that times out on the hang, then retries the same parameters, succeeds.
        hang_cfg = replace(cfg, time_scale=1.0, discovery_latency_s=0.0)  # a real 90 s hang
        app2 = create_simulator_app(hang_cfg)
        async with client_for(app2) as client2:
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(client2.get("/v1/people/search", params=hung[0]), 0.05)
            retry = await client2.get("/v1/people/search", params=hung[0])
            assert retry.status_code == 200
            assert retry.headers["x-simulator-outcome"] == "ok"
            assert retry.headers["x-simulator-attempt"] == "1"
            assert retry.json()["results"]


async def test_outcomes_are_reproducible_from_the_seed() -> None:
    # Outcomes are drawn from the seed and the request alone, never from the people: a small
    # population (80 searches through 50,000 people took seconds of CPU).
    cfg = SimulatorConfig(
        time_scale=0.0, error_5xx_rate=0.2, rate_limit_rate=0.2, population_size=2_000
    )

    async def outcomes() -> list[str]:
        async with client_for(create_simulator_app(cfg)) as client:
            out = []
            for i in range(40):
                r = await client.get("/v1/people/search", params={"role": "backend", "page": i + 1})
                out.append(f"{r.status_code}/{r.headers['x-simulator-outcome']}")
            return out

    first = await outcomes()
    assert first == await outcomes()
    assert {"200/ok", "200/hang"} <= set(first)
    assert any(o.startswith("429") for o in first) and any(o.startswith("50") for o in first)


async def test_rate_limit_carries_retry_after_and_5xx_happen() -> None:
    cfg = replace(CALM, time_scale=0.001, rate_limit_rate=1.0)
    async with client_for(create_simulator_app(cfg)) as client:
        for path in ("/v1/people/search", f"/v1/people/{people()[0].username}/enrich"):
            response = await client.get(path)
            assert response.status_code == 429
            assert response.headers["retry-after"] == "0.002"
            assert response.json()["retry_after"] == pytest.approx(0.002)
        # SERP has its own (lower) rate, untouched here.
        assert (await client.get("/v1/serp/search", params={"q": "x"})).status_code == 200
    cfg = replace(CALM, error_5xx_rate=1.0)
    async with client_for(create_simulator_app(cfg)) as client:
        response = await client.get("/v1/people/search", params={"role": "qa"})
        assert response.status_code in (500, 502, 503)
        assert "error" in response.json()


# --- enrichment and SERP --------------------------------------------------------------------------


async def test_enrich_returns_full_profile_null_email_and_404(calm: httpx.AsyncClient) -> None:
    with_email = next(p for p in people() if p.email)
    without = next(p for p in people() if p.email is None)
    profile = (await calm.get(f"/v1/people/{with_email.username}/enrich")).json()
    assert profile == with_email.to_dict()
    assert set(profile) == {
        "username", "full_name", "headline", "role_title", "role_family", "skills",
        "years_experience", "location", "email", "summary", "profile_url",
    }  # fmt: skip
    response = await calm.get(f"/v1/people/{without.username}/enrich")
    assert response.status_code == 200 and response.json()["email"] is None
    missing = await calm.get("/v1/people/nobody.here0/enrich")
    assert missing.status_code == 404 and "error" in missing.json()


async def test_serp_is_ranked_and_never_empty(calm: httpx.AsyncClient) -> None:
    niche = (await calm.get("/v1/serp/search", params={"q": "kdb+ quant developer"})).json()
    assert niche["results"]
    top = niche["results"][0]
    assert set(top) == {"username", "title", "snippet", "url"}
    assert "Quantitative Developer" in top["title"]
    for q in ("qwxzv plmkjh", ""):
        page1 = (await calm.get("/v1/serp/search", params={"q": q})).json()
        assert len(page1["results"]) == 10 and page1["has_more"]
    page2 = (await calm.get("/v1/serp/search", params={"q": "qwxzv", "page": 2})).json()
    assert page2["results"] and page2["results"][0] != page1["results"][0]


# --- admin hooks and stats ----------------------------------------------------------------------


async def test_admin_overrides_and_reset(calm: httpx.AsyncClient) -> None:
    async def set_behaviour(body: dict[str, Any]) -> httpx.Response:
        return await calm.post("/v1/admin/behaviour", json=body)

    # Hang rate 1: every first attempt hangs (instantly, at time_scale 0); retries do not.
    assert (await set_behaviour({"discovery_hang_rate": 1})).status_code == 200
    r1 = await calm.get("/v1/people/search", params={"role": "sre"})
    r2 = await calm.get("/v1/people/search", params={"role": "sre"})
    assert [r1.headers["x-simulator-outcome"], r2.headers["x-simulator-outcome"]] == [
        "hang",
        "ok",
    ]
    # Reset forgets attempts (so the first attempt hangs again) and, by default, overrides.
    await calm.post("/v1/admin/reset", params={"keep_behaviour": "true"})
    r3 = await calm.get("/v1/people/search", params={"role": "sre"})
    assert r3.headers["x-simulator-outcome"] == "hang"
    behaviour = (await calm.post("/v1/admin/reset")).json()
    assert behaviour["overrides"] == {} and behaviour["config"]["discovery_hang_rate"] == 0
    assert (await stats(calm))["calls"]["search"]["total"] == 0

    # Invalid values are refused and change nothing.
    assert (await set_behaviour({"error_5xx_rate": 2})).status_code == 400
    assert (await set_behaviour({"seed": 1})).status_code == 400
    assert (await set_behaviour({"force_search": "explode"})).status_code == 400
    assert (await calm.get("/v1/admin/behaviour")).json()["overrides"] == {}

    a, b, c = (p.username for p in people()[:3])
    await set_behaviour({"force_enrich": {a: "5xx", b: "429", c: "no_email"}})
    assert (await calm.get(f"/v1/people/{a}/enrich")).status_code in (500, 502, 503)
    assert (await calm.get(f"/v1/people/{b}/enrich")).status_code == 429
    assert (await calm.get(f"/v1/people/{c}/enrich")).json()["email"] is None
    await set_behaviour({"force_enrich": {a: None}})
    assert (await calm.get(f"/v1/people/{a}/enrich")).status_code == 200
    await set_behaviour({"force_search": "429", "force_serp": "5xx"})
    assert (await calm.get("/v1/people/search")).status_code == 429
    assert (await calm.get("/v1/serp/search", params={"q": "x"})).status_code >= 500
    await set_behaviour({"force_search": None, "force_serp": None, "force_enrich": None})
    assert (await calm.get("/v1/people/search")).status_code == 200
    assert (await calm.get(f"/v1/people/{b}/enrich")).status_code == 200


async def test_forced_enrich_hang_never_returns_until_released(calm: httpx.AsyncClient) -> None:
    username = people()[5].username
    await calm.post("/v1/admin/behaviour", json={"force_enrich": {username: "hang"}})
    pending = asyncio.create_task(calm.get(f"/v1/people/{username}/enrich"))

    async def in_flight() -> bool:
        return bool((await stats(calm))["in_flight"]["enrich"] == 1)

    await wait_for(in_flight, timeout=5, message="enrichment in flight")
    other = await calm.get(f"/v1/people/{people()[6].username}/enrich")
    assert other.status_code == 200  # one stuck profile holds back nobody else
    assert not pending.done()
    await calm.post("/v1/admin/reset")
    released = await asyncio.wait_for(pending, 5)
    assert released.status_code == 503


async def test_stats_count_calls_by_endpoint_and_outcome() -> None:
    cfg = replace(CALM, discovery_hang_rate=1.0)
    async with client_for(create_simulator_app(cfg)) as client:
        first = people()[:4]
        await client.get("/v1/people/search", params={"role": "qa"})  # hang
        await client.get("/v1/people/search", params={"role": "qa"})  # ok
        await asyncio.gather(*(client.get(f"/v1/people/{p.username}/enrich") for p in first))
        await client.get(f"/v1/people/{first[0].username}/enrich")
        await client.get("/v1/people/nobody/enrich")
        await client.get("/v1/serp/search", params={"q": "designer"})
        data = await stats(client)
    calls = data["calls"]
    assert calls["search"] == {"total": 2, "ok": 1, "hang": 1, "5xx": 0, "429": 0, "404": 0,
                               "disconnected": 0}  # fmt: skip
    assert calls["enrich"]["ok"] == 5 and calls["enrich"]["404"] == 1
    assert calls["serp"]["ok"] == 1
    assert data["distinct_requests"] == {"search": 1, "enrich": 4, "serp": 1}
    assert data["enrich_by_username"][first[0].username] == 2
    assert data["in_flight"] == {"search": 0, "enrich": 0, "serp": 0}
    assert 1 <= data["max_in_flight"]["enrich"] <= 4


# --- real server ----------------------------------------------------------------------------


def test_simulator_server_over_loopback_counts_client_timeouts() -> None:
    cfg = replace(CALM, time_scale=0.05, discovery_hang_rate=1.0)  # a hang lasts 4.5 s
    with SimulatorServer(cfg) as sim:
        assert sim.base_url.startswith("http://127.0.0.1:")
        assert httpx.get(f"{sim.base_url}/healthz").json() == {"status": "ok"}
        params = {"role": "devops"}
        with pytest.raises(httpx.TimeoutException):
            httpx.get(f"{sim.base_url}/v1/people/search", params=params, timeout=0.2)
        retry = httpx.get(f"{sim.base_url}/v1/people/search", params=params, timeout=5)
        assert retry.status_code == 200 and retry.json()["total"] > 0
        # The hung handler notices the disconnect instead of sleeping out its 4.5 s.
        wait_for_sync(
            lambda: sim.stats()["calls"]["search"]["disconnected"] == 1,
            timeout=3,
            message="disconnect noticed",
        )
        assert sim.stats()["in_flight"]["search"] == 0
        sim.set_behaviour(discovery_hang_rate=0)
        assert sim.state.config.discovery_hang_rate == 0
        sim.reset()
        assert sim.stats()["calls"]["search"]["total"] == 0
    sim.stop()  # idempotent


def test_apps_on_one_population_share_its_vendor_lookups() -> None:
    """The PDL store and the enrichment keys are built once per population, not per app."""
    from shortlist.simulator.vendors import _lookups

    create_simulator_app()
    before = _lookups.cache_info()
    create_simulator_app()
    after = _lookups.cache_info()
    assert (after.hits, after.misses) == (before.hits + 1, before.misses)
