"""The external-source adapters: the retry matrix (one retry, only on a timeout or a 5xx), the
per-provider gate (429 → pause, concurrency bound), status/response mapping and parsing.

Two kinds of server: the bundled simulator on loopback (its own misbehaviour, forced through its
admin API, counted by its ``/v1/stats``), and a scripted ``httpx.MockTransport`` for what the
simulator never does on purpose (malformed bodies, a 400, an HTTP-date ``Retry-After``, a
refused connection) and for deterministic pause timing with an injected clock.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections import deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY

from shortlist.config import Settings
from shortlist.errors import PermanentError, TransientError
from shortlist.simulator import PopulationIndex, SimulatorConfig, SimulatorServer
from shortlist.talent.vendors.base import (
    DiscoveryQuery,
    ProviderNotFound,
    ProviderPaused,
    ProviderRateLimited,
    ProviderRejected,
    ProviderTimeout,
    ProviderUnavailable,
    talent_external_id,
)
from shortlist.talent.vendors.factory import Sources, SourcesNotConfigured, make_sources
from shortlist.talent.vendors.provider import Provider
from shortlist.talent.vendors.serp import HttpSerpAPI
from shortlist.talent.vendors.talent_api import HttpTalentAPI, discovery_params
from tests.helpers import wait_for

BASE = "http://talent.test"
_names = itertools.count()


def provider_settings(**overrides: Any) -> Settings:
    """Small timeouts and delays, so a retry costs milliseconds."""
    values: dict[str, Any] = {
        "discovery_timeout": 0.2,
        "enrichment_timeout": 0.2,
        "retry_delay": 0.05,
        "provider_concurrency": 4,
        "talent_api": "generic",
        "serp_api": "generic",
    }
    values.update(overrides)
    return Settings(**values)


def unique_name(prefix: str) -> str:
    """A provider name of its own, so the metric samples a test reads are its own."""
    return f"{prefix}-{next(_names)}"


def calls_metric(provider: str, operation: str, outcome: str) -> float:
    value = REGISTRY.get_sample_value(
        "shortlist_external_calls_total",
        {"provider": provider, "operation": operation, "outcome": outcome},
    )
    return value or 0.0


def latency_count(provider: str, operation: str) -> float:
    value = REGISTRY.get_sample_value(
        "shortlist_external_call_seconds_count", {"provider": provider, "operation": operation}
    )
    return value or 0.0


# --- a scripted provider -------------------------------------------------------------------


def profile_body(username: str, /, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "username": username,
        "full_name": "Ada Lovelace",
        "headline": "Analytical engines",
        "role_title": "Backend Engineer",
        "role_family": "backend",
        "skills": ["python", "postgres"],
        "years_experience": 7,
        "location": "London",
        "email": f"{username}@example.com",
        "summary": "Writes the first programs.",
        "profile_url": f"https://talent.example.com/in/{username}",
    }
    body.update(fields)
    return body


PAGE = {
    "page": 1,
    "per_page": 10,
    "total": 1,
    "has_more": False,
    "results": [{"username": "ada", "full_name": "Ada Lovelace", "headline": "Engines"}],
}


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Any = None
    """JSON-encoded unless ``bytes``; ``None`` with a 2xx: ``PAGE`` or a profile."""
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False
    """Never answer (until the client gives up)."""
    error: Exception | None = None
    """Raise this transport error instead of answering."""


class ScriptedProvider:
    """An in-process provider: each request takes the next scripted ``Reply`` (then 200s).

    ``hold`` makes every answer wait until it is set, to observe calls in flight.
    """

    def __init__(self, *replies: Reply | int) -> None:
        self.replies: deque[Reply] = deque(
            Reply(status=r) if isinstance(r, int) else r for r in replies
        )
        self.requests: list[httpx.Request] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.hold: asyncio.Event | None = None

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        reply = self.replies.popleft() if self.replies else Reply()
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if reply.hang:
                await asyncio.Event().wait()  # cancelled by the client's deadline
            if self.hold is not None:
                await self.hold.wait()
        finally:
            self.in_flight -= 1
        if reply.error is not None:
            raise reply.error
        body = reply.body
        if body is None and reply.status < 300:
            path = request.url.path
            body = profile_body(path.split("/")[-2]) if path.endswith("/enrich") else PAGE
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return httpx.Response(reply.status, content=content, headers=reply.headers)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self))


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Harness:
    server: ScriptedProvider
    api: HttpTalentAPI
    provider: Provider


@pytest.fixture
async def scripted() -> AsyncIterator[Harness]:
    server = ScriptedProvider()
    async with server.client() as client:
        provider = Provider(unique_name("talent"), 4)
        api = HttpTalentAPI(BASE, provider_settings(), client, provider=provider)
        yield Harness(server, api, provider)
        await api.aclose()


# --- the retry matrix (scripted) ------------------------------------------------------------


async def test_timeout_is_retried_once_then_succeeds(scripted: Harness) -> None:
    scripted.server.replies.extend([Reply(hang=True)])
    name = scripted.provider.name

    page = await scripted.api.discover(DiscoveryQuery(role="Backend Engineer"), 1, 10)

    assert [s.username for s in page.stubs] == ["ada"]
    assert len(scripted.server.requests) == 2
    assert calls_metric(name, "discover", "timeout") == 1
    assert calls_metric(name, "discover", "ok") == 1
    assert latency_count(name, "discover") == 2


async def test_two_timeouts_raise_after_exactly_two_attempts(scripted: Harness) -> None:
    scripted.server.replies.extend([Reply(hang=True)] * 3)

    with pytest.raises(ProviderTimeout) as caught:
        await scripted.api.discover(DiscoveryQuery(), 1, 10)

    assert len(scripted.server.requests) == 2
    assert isinstance(caught.value, TransientError)
    assert caught.value.provider == scripted.provider.name
    assert calls_metric(scripted.provider.name, "discover", "timeout") == 2


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_5xx_is_retried_once_then_succeeds(scripted: Harness, status: int) -> None:
    scripted.server.replies.extend([Reply(status, body={"error": "boom"})])

    profile = await scripted.api.enrich("ada")

    assert profile.username == "ada"
    assert len(scripted.server.requests) == 2
    assert calls_metric(scripted.provider.name, "enrich", "unavailable") == 1
    assert calls_metric(scripted.provider.name, "enrich", "ok") == 1


async def test_two_5xx_raise_unavailable_after_two_attempts(scripted: Harness) -> None:
    scripted.server.replies.extend([Reply(503), Reply(500), Reply(200)])

    with pytest.raises(ProviderUnavailable):
        await scripted.api.enrich("ada")

    assert len(scripted.server.requests) == 2


async def test_connection_error_is_retried_once(scripted: Harness) -> None:
    refused = httpx.ConnectError("connection refused")
    scripted.server.replies.extend([Reply(error=refused), Reply(error=refused)])

    with pytest.raises(ProviderUnavailable, match="ConnectError"):
        await scripted.api.discover(DiscoveryQuery(), 1, 10)

    assert len(scripted.server.requests) == 2


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, ProviderRejected),
        (401, ProviderRejected),
        (422, ProviderRejected),
        (404, ProviderNotFound),
    ],
)
async def test_other_4xx_are_never_retried(
    scripted: Harness, status: int, error: type[ProviderRejected]
) -> None:
    scripted.server.replies.extend([Reply(status, body={"detail": "nope"})])

    with pytest.raises(error) as caught:
        await scripted.api.enrich("ada")

    assert type(caught.value) is error
    assert isinstance(caught.value, PermanentError)
    assert len(scripted.server.requests) == 1
    outcome = "not_found" if status == 404 else "rejected"
    assert calls_metric(scripted.provider.name, "enrich", outcome) == 1


async def test_429_is_not_retried_and_pauses_the_provider() -> None:
    clock = FakeClock()
    server = ScriptedProvider(
        Reply(429, body={"error": "slow down"}, headers={"Retry-After": "2.5"})
    )
    provider = Provider(unique_name("talent"), 4, clock=clock)
    async with server.client() as client:
        api = HttpTalentAPI(BASE, provider_settings(), client, provider=provider)

        with pytest.raises(ProviderRateLimited) as limited:
            await api.enrich("ada")
        assert limited.value.retry_after == 2.5
        assert len(server.requests) == 1
        assert provider.paused_for() == 2.5

        # Paused: both operations of the provider fail fast, without a request.
        clock.now += 1.0
        with pytest.raises(ProviderPaused) as paused:
            await api.discover(DiscoveryQuery(), 1, 10)
        assert paused.value.retry_after == pytest.approx(1.5)
        with pytest.raises(ProviderPaused):
            await api.enrich("ada")
        assert len(server.requests) == 1
        assert calls_metric(provider.name, "enrich", "paused") == 1
        assert calls_metric(provider.name, "enrich", "rate_limited") == 1

        clock.now += 1.5
        assert provider.paused_for() == 0.0
        assert (await api.enrich("ada")).username == "ada"
        assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("header", "expected"),
    [({}, 0.05), ({"Retry-After": "7"}, 7.0), ({"Retry-After": "soon"}, 0.05)],
)
async def test_429_pause_length(header: dict[str, str], expected: float) -> None:
    clock = FakeClock()
    server = ScriptedProvider(Reply(429, headers=header))
    provider = Provider(unique_name("talent"), 4, clock=clock)
    async with server.client() as client:
        # Without a usable Retry-After the pause is the retry delay (0.05 s here).
        api = HttpTalentAPI(BASE, provider_settings(), client, provider=provider)
        with pytest.raises(ProviderRateLimited):
            await api.enrich("ada")
    assert provider.paused_for() == pytest.approx(expected)


async def test_429_with_an_http_date_retry_after() -> None:
    when = datetime.now(UTC) + timedelta(seconds=30)
    server = ScriptedProvider(Reply(429, headers={"Retry-After": format_datetime(when, True)}))
    provider = Provider(unique_name("talent"), 4)
    async with server.client() as client:
        api = HttpTalentAPI(BASE, provider_settings(), client, provider=provider)
        with pytest.raises(ProviderRateLimited):
            await api.enrich("ada")
    # HTTP dates have one-second resolution.
    assert 28.0 <= provider.paused_for() <= 30.0


def test_a_shorter_pause_never_cuts_a_longer_one_short() -> None:
    clock = FakeClock()
    provider = Provider("talent", 1, clock=clock)
    provider.pause(10)
    provider.pause(2)
    assert provider.paused_for() == 10
    with pytest.raises(ProviderPaused):
        provider.check_open()


async def test_concurrency_is_bounded_per_provider() -> None:
    server = ScriptedProvider()
    server.hold = asyncio.Event()
    provider = Provider(unique_name("talent"), 2)
    async with server.client() as client:
        api = HttpTalentAPI(
            BASE, provider_settings(enrichment_timeout=30), client, provider=provider
        )
        calls = [asyncio.create_task(api.enrich(f"user{i}")) for i in range(6)]

        async def two_in_flight() -> bool:
            return server.in_flight == 2

        await wait_for(two_in_flight, timeout=5, message="two enrichments in flight")
        # The other four wait for a slot before any request is sent.
        assert len(server.requests) == 2
        assert provider.in_flight == 2
        server.hold.set()
        profiles = await asyncio.gather(*calls)

    assert sorted(p.username for p in profiles) == [f"user{i}" for i in range(6)]
    assert server.max_in_flight == 2
    assert len(server.requests) == 6


async def test_a_pause_during_the_wait_for_a_slot_refuses_the_waiting_call() -> None:
    server = ScriptedProvider(Reply(429, headers={"Retry-After": "60"}))
    server.hold = asyncio.Event()
    provider = Provider(unique_name("talent"), 1)
    async with server.client() as client:
        api = HttpTalentAPI(BASE, provider_settings(), client, provider=provider)
        first = asyncio.create_task(api.enrich("first"))

        async def one_in_flight() -> bool:
            return server.in_flight == 1

        await wait_for(one_in_flight, timeout=5, message="the first call in flight")
        second = asyncio.create_task(api.enrich("second"))
        server.hold.set()
        with pytest.raises(ProviderRateLimited):
            await first
        with pytest.raises(ProviderPaused):
            await second
    assert len(server.requests) == 1


# --- mapping and parsing (scripted) ---------------------------------------------------------


async def test_discovery_filters_are_passed_through(scripted: Harness) -> None:
    query = DiscoveryQuery(
        role="Backend Engineer", location="Berlin", min_years=5, skills=("python", "go")
    )

    page = await scripted.api.discover(query, 3, 25)

    request = scripted.server.requests[0]
    assert request.url.path == "/v1/people/search"
    assert dict(request.url.params) == {
        "role": "Backend Engineer",
        "location": "Berlin",
        "min_years": "5",
        "skills": "python,go",
        "page": "3",
        "per_page": "25",
    }
    assert page.stubs[0].external_id == talent_external_id("ada")
    assert page.stubs[0].display_name == "Ada Lovelace"
    assert page.has_more is False


def test_unset_filters_are_left_out() -> None:
    assert discovery_params(DiscoveryQuery(), 1, 10) == {"page": 1, "per_page": 10}
    assert discovery_params(DiscoveryQuery(min_years=0), 2, 5) == {
        "page": 2,
        "per_page": 5,
        "min_years": 0,
    }


async def test_profile_parsing(scripted: Harness) -> None:
    profile = await scripted.api.enrich("ada")

    assert scripted.server.requests[0].url.path == "/v1/people/ada/enrich"
    assert profile.external_id == "talent:ada"
    assert profile.full_name == "Ada Lovelace"
    assert profile.role_title == "Backend Engineer"
    assert profile.role_family == "backend"
    assert profile.skills == ["python", "postgres"]
    assert profile.years_experience == 7
    assert profile.email == "ada@example.com"
    assert profile.profile_url == "https://talent.example.com/in/ada"


@pytest.mark.parametrize("email", ["missing", None, "", "  "])
async def test_a_profile_without_email_parses_as_none(scripted: Harness, email: Any) -> None:
    body = profile_body("ada", email=email)
    if email == "missing":
        del body["email"]
    scripted.server.replies.append(Reply(body=body))

    assert (await scripted.api.enrich("ada")).email is None


async def test_usernames_are_one_path_segment(scripted: Harness) -> None:
    scripted.server.replies.append(Reply(body=profile_body("a/b c")))

    await scripted.api.enrich("a/b c")

    assert scripted.server.requests[0].url.raw_path == b"/v1/people/a%2Fb%20c/enrich"


@pytest.mark.parametrize(
    "body",
    [
        b"<html>bad gateway</html>",
        {"results": "nope", "has_more": False},
        {"results": [{"full_name": "no username"}], "has_more": False},
        {"results": []},
        [],
    ],
)
async def test_malformed_discovery_responses_are_rejected(scripted: Harness, body: Any) -> None:
    scripted.server.replies.append(Reply(body=body))

    with pytest.raises(ProviderRejected, match=r"discovery|JSON"):
        await scripted.api.discover(DiscoveryQuery(), 1, 10)

    assert len(scripted.server.requests) == 1  # never retried
    assert calls_metric(scripted.provider.name, "discover", "rejected") == 1


@pytest.mark.parametrize(
    "fields",
    [
        {"full_name": None},
        {"skills": "python"},
        {"years_experience": "lots"},
        {"username": "someone-else"},
    ],
)
async def test_malformed_profiles_are_rejected(scripted: Harness, fields: dict[str, Any]) -> None:
    scripted.server.replies.append(Reply(body=profile_body("ada", **fields)))

    with pytest.raises(ProviderRejected):
        await scripted.api.enrich("ada")
    assert len(scripted.server.requests) == 1
    assert calls_metric(scripted.provider.name, "enrich", "rejected") == 1


async def test_serp_results_share_the_talent_external_ids() -> None:
    body = {
        "results": [{"username": "ada", "title": "Ada Lovelace - Engineer", "snippet": "..."}],
        "has_more": True,
    }
    server = ScriptedProvider(Reply(body=body))
    async with server.client() as client:
        serp = HttpSerpAPI(BASE, provider_settings(), client)
        page = await serp.search("python engineer berlin", 2)

    request = server.requests[0]
    assert request.url.path == "/v1/serp/search"
    assert dict(request.url.params) == {"q": "python engineer berlin", "page": "2"}
    assert page.has_more is True
    assert page.stubs[0].external_id == talent_external_id("ada")
    assert page.stubs[0].display_name == "Ada Lovelace - Engineer"


# --- factory ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("talent", "serp", "match"),
    [
        (None, "http://127.0.0.1:1", "SHORTLIST_TALENT_API_URL is not set"),
        ("http://127.0.0.1:1", None, "SHORTLIST_SERP_API_URL is not set"),
        ("ftp://127.0.0.1", "http://127.0.0.1:1", "http"),
        ("127.0.0.1:8001", "http://127.0.0.1:1", "http"),
    ],
)
def test_make_sources_needs_both_urls(talent: str | None, serp: str | None, match: str) -> None:
    with pytest.raises(SourcesNotConfigured, match=match):
        make_sources(provider_settings(talent_api_url=talent, serp_api_url=serp))


async def test_make_sources_builds_both_adapters() -> None:
    sources = make_sources(
        provider_settings(talent_api_url="http://127.0.0.1:1/", serp_api_url="http://127.0.0.1:2")
    )
    try:
        assert isinstance(sources, Sources)
        assert isinstance(sources.talent, HttpTalentAPI)
        assert isinstance(sources.serp, HttpSerpAPI)
        assert sources.talent.provider is not sources.serp.provider
        assert sources.talent.provider.max_concurrency == 4
    finally:
        await sources.aclose()


# --- against the simulator on loopback --------------------------------------------------------

# At this scale the simulator's 90 s discovery hang lasts 1.8 s, past the 1 s discovery
# timeout below, while its normal latencies (discovery 1.5 s → 30 ms, enrichment 8 s → 160 ms,
# capped at 40 s → 0.8 s) and the time it takes to search its 50,000 people stay well inside
# the timeouts.
SIM_SCALE = 0.02


def sim_settings(**overrides: Any) -> Settings:
    return provider_settings(**{"discovery_timeout": 1.0, "enrichment_timeout": 2.0, **overrides})


@pytest.fixture(scope="module")
def simulator_server() -> Iterator[SimulatorServer]:
    # Random misbehaviour off: each test forces exactly what it is about.
    config = SimulatorConfig(
        time_scale=SIM_SCALE,
        discovery_hang_rate=0.0,
        error_5xx_rate=0.0,
        serp_error_5xx_rate=0.0,
        rate_limit_rate=0.0,
        serp_rate_limit_rate=0.0,
        enrich_tail_rate=0.0,
    )
    with SimulatorServer(config) as server:
        yield server


@dataclass
class Sim:
    url: str
    index: PopulationIndex
    admin: httpx.AsyncClient
    """Admin calls go through an async client: the test's event loop never blocks on them."""

    async def behave(self, **patch: Any) -> None:
        (await self.admin.post("/v1/admin/behaviour", json=patch)).raise_for_status()

    async def stats(self) -> dict[str, Any]:
        response = await self.admin.get("/v1/stats")
        response.raise_for_status()
        data: dict[str, Any] = response.json()
        return data

    def usernames(self, n: int) -> list[str]:
        return [p.username for p in self.index.people[:n]]

    def talent(self, **overrides: Any) -> HttpTalentAPI:
        provider = Provider(unique_name("talent"), overrides.pop("provider_concurrency", 4))
        return HttpTalentAPI(self.url, sim_settings(**overrides), provider=provider)


@pytest.fixture
async def sim(simulator_server: SimulatorServer) -> AsyncIterator[Sim]:
    async with httpx.AsyncClient(base_url=simulator_server.base_url, timeout=10) as admin:
        (await admin.post("/v1/admin/reset")).raise_for_status()
        yield Sim(simulator_server.base_url, simulator_server.app.state.index, admin)


async def test_sim_discovery_hang_is_retried_once_then_succeeds(sim: Sim) -> None:
    await sim.behave(discovery_hang_rate=1.0)  # every first attempt hangs, retries never do
    api = sim.talent()
    try:
        page = await api.discover(DiscoveryQuery(role="Backend Engineer"), 1, 10)
    finally:
        await api.aclose()

    assert len(page.stubs) == 10
    calls = (await sim.stats())["calls"]["search"]
    assert (calls["total"], calls["hang"], calls["ok"]) == (2, 1, 1)
    assert calls_metric(api.provider.name, "discover", "timeout") == 1
    assert calls_metric(api.provider.name, "discover", "ok") == 1


async def test_sim_two_hangs_raise_timeout_after_two_attempts(sim: Sim) -> None:
    await sim.behave(force_search="hang")
    api = sim.talent()
    try:
        with pytest.raises(ProviderTimeout):
            await api.discover(DiscoveryQuery(role="Data Engineer"), 1, 10)
    finally:
        await api.aclose()

    assert (await sim.stats())["calls"]["search"]["total"] == 2


async def test_sim_5xx_is_retried_once(sim: Sim) -> None:
    await sim.behave(force_serp="5xx")
    serp = HttpSerpAPI(sim.url, sim_settings(), provider=Provider(unique_name("serp"), 4))
    try:
        with pytest.raises(ProviderUnavailable, match="HTTP 5"):
            await serp.search("python", 1)
    finally:
        await serp.aclose()

    calls = (await sim.stats())["calls"]["serp"]
    assert (calls["total"], calls["5xx"]) == (2, 2)


async def test_sim_429_pauses_the_provider_until_retry_after(sim: Sim) -> None:
    first, second = sim.usernames(2)
    # Retry-After 25 s at this scale: 0.5 s.
    await sim.behave(retry_after_s=25.0, force_enrich={first: "429"})
    api = sim.talent()
    try:
        with pytest.raises(ProviderRateLimited) as limited:
            await api.enrich(first)
        assert limited.value.retry_after == pytest.approx(25.0 * SIM_SCALE)

        with pytest.raises(ProviderPaused):
            await api.enrich(second)
        with pytest.raises(ProviderPaused):
            await api.discover(DiscoveryQuery(), 1, 10)
        stats = await sim.stats()
        assert stats["calls"]["enrich"]["total"] == 1  # neither the 429 nor the pause retried
        assert stats["calls"]["search"]["total"] == 0

        async def pause_over() -> bool:
            return api.provider.paused_for() == 0.0

        await wait_for(pause_over, timeout=5, message="the pause to end")
        assert (await api.enrich(second)).username == second
    finally:
        await api.aclose()
    assert (await sim.stats())["calls"]["enrich"]["total"] == 2


async def test_sim_unknown_profile_is_not_found_and_not_retried(sim: Sim) -> None:
    api = sim.talent()
    try:
        with pytest.raises(ProviderNotFound):
            await api.enrich("no.such.person")
    finally:
        await api.aclose()

    calls = (await sim.stats())["calls"]["enrich"]
    assert (calls["total"], calls["404"]) == (1, 1)


async def test_sim_400_is_not_retried(sim: Sim) -> None:
    api = sim.talent()
    try:
        with pytest.raises(ProviderRejected, match="HTTP 400"):
            await api.discover(DiscoveryQuery(), 1, 1000)  # per_page above the API's 100
    finally:
        await api.aclose()

    name = api.provider.name
    assert calls_metric(name, "discover", "rejected") == 1
    assert sum(calls_metric(name, "discover", o) for o in ("ok", "timeout", "unavailable")) == 0


async def test_sim_concurrency_is_bounded_per_provider(sim: Sim) -> None:
    # Each enrichment takes ~0.2 s here, so six of them overlap unless something holds them.
    await sim.behave(enrich_mean_s=40.0)
    api = sim.talent(provider_concurrency=2)
    try:
        profiles = await asyncio.gather(*(api.enrich(u) for u in sim.usernames(6)))
    finally:
        await api.aclose()

    assert [p.username for p in profiles] == sim.usernames(6)
    stats = await sim.stats()
    assert stats["calls"]["enrich"]["total"] == 6
    assert stats["max_in_flight"]["enrich"] == 2


async def test_sim_discovery_filters_are_applied_by_the_provider(sim: Sim) -> None:
    person = next(p for p in sim.index.people if p.years_experience >= 3 and p.skills)
    query = DiscoveryQuery(
        role=person.role_title,
        location=person.location,
        min_years=person.years_experience - 2,
        skills=(person.skills[0],),
    )
    expected = sim.index.search(
        role=query.role, location=query.location, min_years=query.min_years, skills=query.skills
    )
    api = sim.talent()
    try:
        page = await api.discover(query, 1, 100)
    finally:
        await api.aclose()

    assert person.username in [s.username for s in page.stubs]
    assert [s.username for s in page.stubs] == [p.username for p in expected[:100]]
    assert page.has_more is (len(expected) > 100)


async def test_sim_profiles_with_and_without_email(sim: Sim) -> None:
    with_email = next(p for p in sim.index.people if p.email)
    silent = next(p for p in sim.index.people if p.email and p is not with_email)
    await sim.behave(force_enrich={silent.username: "no_email"})
    api = sim.talent()
    try:
        full = await api.enrich(with_email.username)
        bare = await api.enrich(silent.username)
    finally:
        await api.aclose()

    assert full.email == with_email.email
    assert full.external_id == talent_external_id(with_email.username)
    assert full.skills == list(with_email.skills)
    assert full.years_experience == with_email.years_experience
    assert (full.role_title, full.role_family) == (with_email.role_title, with_email.role_family)
    assert bare.email is None


async def test_sim_serp_handles_enrich_through_the_talent_api(sim: Sim) -> None:
    # Nothing here is about time: no hang is forced, so the calls get deadlines no loaded
    # machine reaches (the 1 s of sim_settings is a timed assertion under load), and the test
    # waits for the answers themselves.
    sources = make_sources(
        sim_settings(
            talent_api_url=sim.url,
            serp_api_url=sim.url + "/",
            discovery_timeout=60.0,
            enrichment_timeout=60.0,
        )
    )
    try:
        page = await sources.serp.search("machine learning engineer", 1)
        assert page.stubs
        stub = page.stubs[0]
        profile = await sources.talent.enrich(stub.username)
    finally:
        await sources.aclose()

    assert stub.external_id == profile.external_id == talent_external_id(stub.username)
