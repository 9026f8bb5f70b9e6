"""Candidate search that honours the brief (issue 26): the brief's place, minimum years and
must-have skills judged for every hit — internal and backfilled — as met / unknown / not met,
people failing a hard one left out and not counted toward the target, and each result saying
which constraints it meets. Real PostgreSQL, the app over ASGI, the FakeEmbedder."""

from __future__ import annotations

import dataclasses
from typing import Any

import httpx
import pytest

from shortlist.auth import Role
from shortlist.bootstrap import Services
from shortlist.talent.vendors.base import (
    DiscoveryPage,
    DiscoveryQuery,
    Profile,
    ProfileStub,
    ProviderNoEmail,
)
from shortlist.talent.vendors.factory import Sources
from shortlist.talent.vendors.provider import provider_error
from shortlist.talent.why import EMAIL_ON_FILE
from tests.backfill_support import (
    BACKFILL,
    MakeToken,
    Person,
    auth,
    get_results,
    profile,
    running_workers,
    seed_corpus,
    stub_rows,
    wait_complete,
)
from tests.fakes import FakeEmbedder

SUMMARY = "Builds python backend services and APIs with Django and PostgreSQL."


def backend(name: str, location: str, *, years: int | None = 6, summary: str = SUMMARY) -> Person:
    return Person(
        full_name=name,
        role_title="Python Backend Developer",
        skills=("Python", "Django", "PostgreSQL"),
        location=location,
        years=years,  # type: ignore[arg-type]  # Person.years: None is "not stated"
        summary=summary,
    )


# Where each person of the mixed corpus lives, and how a Munich brief should judge them.
MUNICH_MET = {
    "Anna Munich": "Munich, Germany",
    "Bert Canonical": "munich, bavaria, germany",
    "Carla Muenchen": "München",
    "Dora Garching": "Garching, Bavaria, Germany",  # 14 km away: the metro
    "Emil Dachau": "Dachau, Germany",  # 17 km away
}
MUNICH_UNKNOWN = {
    "Fritz Country": "Germany",  # may live in Munich; the profile does not say
    "Gina Nowhere": "",
    "Hans Hamburg": "Hamburg, Germany",  # the same country, another city: a maybe
    "Karl Berlin": "berlin, berlin, germany",
    "Lena Augsburg": "Augsburg, Germany",  # the same region (Bavaria), 60 km away
}
MUNICH_ELSEWHERE = {
    "Ines Lisbon": "Lisbon, Portugal",
    "Jon Newyork": "New York, NY",
}


# The internal-corpus tests run no worker: no provider is ever called.
pytestmark = pytest.mark.settings(BACKFILL)


@pytest.fixture
async def recruiter(make_token: MakeToken) -> str:
    return await make_token("recruiter", Role.recruiter)


async def start(client: httpx.AsyncClient, token: str, body: dict[str, Any]) -> dict[str, Any]:
    response = await client.post("/api/searches", json=body, headers=auth(token))
    assert response.status_code == 202, response.text
    started: dict[str, Any] = response.json()
    return started


def by_name(page: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {r["candidate"]["fullName"]: r for r in page["results"]}


def location_of(result: dict[str, Any]) -> dict[str, Any]:
    [found] = [c for c in result["why"]["constraints"] if c["kind"] == "location"]
    return dict(found)


@pytest.mark.parametrize(
    "brief",
    [
        {"query": "python backend developer in Munich"},
        {"query": "python backend developer", "location": "München"},
    ],
    ids=["free text", "alias"],
)
async def test_a_city_brief_returns_the_people_there_first_and_says_why(
    client: httpx.AsyncClient,
    services: Services,
    embedder: FakeEmbedder,
    recruiter: str,
    brief: dict[str, Any],
) -> None:
    people = {**MUNICH_MET, **MUNICH_UNKNOWN, **MUNICH_ELSEWHERE}
    await seed_corpus(services.pool, embedder, [backend(n, loc) for n, loc in people.items()])

    started = await start(client, recruiter, brief)
    page = await get_results(client, recruiter, started["searchId"], limit=500)
    results = by_name(page)

    # Nobody elsewhere is a result; everybody who may be there is, those there first.
    assert set(results) == set(MUNICH_MET) | set(MUNICH_UNKNOWN)
    ranked = [r["candidate"]["fullName"] for r in page["results"]]
    assert set(ranked[: len(MUNICH_MET)]) == set(MUNICH_MET)
    # Ten people meet the brief or may: fewer than 15, so the backfill looks for more.
    assert page["resultCount"] == len(results) and page["status"] == "running"

    for name in MUNICH_MET:
        place = location_of(results[name])
        assert place["outcome"] == "met", (name, place)
        assert results[name]["why"]["locationMatch"] is True
    assert location_of(results["Dora Garching"])["label"] == "Garching (metro Munich)"
    assert location_of(results["Carla Muenchen"])["label"] == "Munich"
    assert location_of(results["Fritz Country"]) == {
        "kind": "location",
        "label": "Germany (country)",
        "outcome": "unknown",
        "detail": "the profile names only the country, Germany",
    }
    assert location_of(results["Gina Nowhere"])["outcome"] == "unknown"
    assert location_of(results["Hans Hamburg"]) == {
        "kind": "location",
        "label": "Hamburg, Germany (same country)",
        "outcome": "unknown",
        "detail": "in Hamburg, Hamburg, Germany: not Munich, but in Germany",
    }
    assert location_of(results["Lena Augsburg"])["label"] == "Augsburg, Germany (same region)"
    assert results["Anna Munich"]["why"]["summary"].startswith("location: Munich ✓")
    assert "location: Germany (country) ~" in results["Fritz Country"]["why"]["summary"]

    # The score is the fit to the whole brief: the role's probability where the place is met,
    # discounted where it is only possibly met.
    anna, fritz = results["Anna Munich"], results["Fritz Country"]
    assert anna["score"] == pytest.approx(anna["why"]["similarity"], abs=1e-4)
    assert fritz["score"] < fritz["why"]["similarity"]
    assert 0 <= fritz["score"] <= 1

    summary = await client.get(f"/api/searches/{started['searchId']}", headers=auth(recruiter))
    # The brief as understood: the place the free text names; a given location as given.
    assert summary.json()["brief"]["location"] == brief.get("location", "Munich")


async def test_people_elsewhere_do_not_count_toward_the_target(
    client: httpx.AsyncClient, services: Services, embedder: FakeEmbedder, recruiter: str
) -> None:
    target = services.settings.backfill_min_results
    await seed_corpus(
        services.pool,
        embedder,
        [backend(f"Berliner{i} Person", "Berlin, Germany") for i in range(target + 5)]
        + [backend(f"Lisboeta{i} Person", "Lisboa, Portugal") for i in range(3)],
    )

    # Twenty people in Berlin fill a Berlin brief: no backfill.
    berlin = await start(client, recruiter, {"query": "python backend developer in Berlin"})
    assert berlin["status"] == "complete"
    page = await get_results(client, recruiter, berlin["searchId"], limit=500)
    assert page["resultCount"] == target + 5
    assert all(r["candidate"]["location"] == "Berlin, Germany" for r in page["results"])

    # The same twenty are no part of a Lisbon brief (Lisboa is Lisbon): three results, and
    # the backfill starts for the twelve missing.
    lisbon = await start(client, recruiter, {"query": "python backend developer in Lisbon"})
    assert lisbon["status"] == "running"
    page = await get_results(client, recruiter, lisbon["searchId"], limit=500)
    assert sorted(r["candidate"]["fullName"] for r in page["results"]) == [
        f"Lisboeta{i} Person" for i in range(3)
    ]
    assert {location_of(r)["label"] for r in page["results"]} == {"Lisbon"}


async def test_a_weak_maybe_below_the_floor_is_no_result_and_takes_no_place(
    client: httpx.AsyncClient, services: Services, embedder: FakeEmbedder, recruiter: str
) -> None:
    """The floor is on the fit to the whole brief: people elsewhere in the country (a maybe,
    x0.6) whose fit falls under it are no results, so the backfill starts for the places
    they would have taken; the city's own people, as close in role, stay."""
    target = services.settings.backfill_min_results
    await seed_corpus(
        services.pool,
        embedder,
        [backend(f"Hamburger{i} Person", "Hamburg, Germany") for i in range(target + 5)]
        + [backend(f"Munich{i} Person", "Munich, Germany") for i in range(2)],
    )
    brief = {"query": "python backend developer in Munich"}
    services.settings = services.settings.model_copy(update={"internal_min_score": 0.0})
    loose = await start(client, recruiter, brief)
    page = await get_results(client, recruiter, loose["searchId"], limit=500)
    # With no floor, the maybes fill the target: no backfill.
    assert loose["status"] == "complete" and page["resultCount"] == target + 5 + 2
    maybes = [r for r in page["results"] if r["candidate"]["fullName"].startswith("Hamburger")]
    assert {location_of(r)["outcome"] for r in maybes} == {"unknown"}
    # A floor between a maybe's fit and its role probability.
    floor = max(r["why"]["fit"] for r in maybes) + 0.01
    assert floor <= min(r["why"]["similarity"] for r in page["results"])
    services.settings = services.settings.model_copy(update={"internal_min_score": floor})

    strict = await start(client, recruiter, brief)
    assert strict["status"] == "running"  # the backfill looks for people who meet the brief
    page = await get_results(client, recruiter, strict["searchId"], limit=500)
    assert sorted(r["candidate"]["fullName"] for r in page["results"]) == [
        "Munich0 Person",
        "Munich1 Person",
    ]
    assert all(r["why"]["fit"] >= floor for r in page["results"])


async def test_a_remote_brief_puts_remote_people_first_and_excludes_nobody(
    client: httpx.AsyncClient, services: Services, embedder: FakeEmbedder, recruiter: str
) -> None:
    await seed_corpus(
        services.pool,
        embedder,
        [
            backend("Rita Remote", "Remote"),
            backend("Sven Home", "Stockholm, Sweden", summary=SUMMARY + " Works fully remote."),
            backend("Tom Office", "Berlin, Germany"),
        ],
    )
    started = await start(client, recruiter, {"query": "remote python backend developer"})
    page = await get_results(client, recruiter, started["searchId"], limit=500)
    ranked = [r["candidate"]["fullName"] for r in page["results"]]
    assert set(ranked[:2]) == {"Rita Remote", "Sven Home"} and ranked[2] == "Tom Office"
    outcomes = {r["candidate"]["fullName"]: location_of(r)["outcome"] for r in page["results"]}
    assert outcomes == {"Rita Remote": "met", "Sven Home": "met", "Tom Office": "unknown"}


async def test_nobody_under_the_minimum_years_and_unknown_years_rank_last(
    client: httpx.AsyncClient, services: Services, embedder: FakeEmbedder, recruiter: str
) -> None:
    await seed_corpus(
        services.pool,
        embedder,
        [
            backend("Junior Two", "Berlin, Germany", years=2),
            backend("Middle Five", "Berlin, Germany", years=5),
            backend("Veteran Fifteen", "Berlin, Germany", years=15),
            backend("Silent Years", "Berlin, Germany", years=None),
        ],
    )
    started = await start(
        client, recruiter, {"query": "python backend developer, 5+ years, Django"}
    )
    page = await get_results(client, recruiter, started["searchId"], limit=500)
    ranked = [r["candidate"]["fullName"] for r in page["results"]]
    assert "Junior Two" not in ranked
    assert set(ranked[:2]) == {"Middle Five", "Veteran Fifteen"} and ranked[2] == "Silent Years"
    results = by_name(page)
    veteran = results["Veteran Fifteen"]["why"]
    assert "years: 15 ≥ 5 ✓" in veteran["summary"]
    assert {"kind": "years", "label": "15 ≥ 5", "outcome": "met", "detail": "15 years"} in (
        veteran["constraints"]
    )
    assert results["Silent Years"]["why"]["yearsOk"] is None
    assert "years: ? ≥ 5 ~" in results["Silent Years"]["why"]["summary"]


async def test_must_have_skills_are_marked_one_by_one_and_shown_in_the_csv(
    client: httpx.AsyncClient, services: Services, embedder: FakeEmbedder, recruiter: str
) -> None:
    await seed_corpus(services.pool, embedder, [backend("Dana Django", "Munich, Germany")])
    started = await start(
        client,
        recruiter,
        {"query": "python backend developer", "location": "Munich", "skills": ["django", "Kafka"]},
    )
    page = await get_results(client, recruiter, started["searchId"], limit=500)
    [result] = page["results"]
    why = result["why"]
    assert "skills: django ✓, Kafka –" in why["summary"]
    [skills] = [c for c in why["constraints"] if c["kind"] == "skills"]
    assert skills["outcome"] == "unknown" and skills["detail"] == "not listed: Kafka"
    assert result["score"] < why["similarity"]  # one must-have skill not listed

    csv = await client.get(
        f"/api/searches/{started['searchId']}/results.csv", headers=auth(recruiter)
    )
    assert csv.status_code == 200
    assert "location: Munich ✓; skills: django ✓, Kafka –" in csv.text


# --- the backfill -----------------------------------------------------------------------------


@dataclasses.dataclass
class PeopleSources:
    """Every tier finds the same people (page 1 only); enrichment returns their profiles, but
    refuses those in ``refused`` as PDL does a match without the e-mail address required."""

    people: dict[str, Profile]
    refused: frozenset[str] = frozenset()

    async def _page(self, page: int) -> DiscoveryPage:
        if page > 1:
            return DiscoveryPage([], has_more=False)
        stubs = [ProfileStub(p.external_id, p.username, p.full_name) for p in self.people.values()]
        return DiscoveryPage(stubs, has_more=False)

    async def discover(
        self, query: DiscoveryQuery, page: int, per_page: int, cursor: str | None = None
    ) -> DiscoveryPage:
        return await self._page(page)

    async def search(self, text: str, page: int, place: object = None) -> DiscoveryPage:
        return await self._page(page)

    async def enrich(self, external_id: str) -> Profile:
        if external_id in self.refused:
            raise provider_error(ProviderNoEmail, "pdl:enrich", "HTTP 404: no record with emails")
        return self.people[external_id]

    async def aclose(self) -> None:
        pass


def person(username: str, location: str, **changes: Any) -> Profile:
    return dataclasses.replace(profile(username), location=location, **changes)


async def test_backfilled_people_are_judged_and_the_free_plan_rule_keeps_them_contactable(
    client: httpx.AsyncClient, services: Services, recruiter: str
) -> None:
    people = [
        person("mia.munich", "munich, bavaria, germany"),
        person("uwe.unterhaching", "Unterhaching, Bavaria, Germany"),  # 8 km: the metro
        # PDL Free plan: the address exists but is not shown (contact fields are booleans).
        person("fay.freeplan", "Munich, Germany", email=None, email_on_file=True),
        person("lea.lisbon", "lisbon, lisbon, portugal"),
        person("noe.noemail", "Munich, Germany", email=None),
        person("jan.junior", "Munich, Germany", years_experience=2),
        # Enrichment refused for want of an address (PDL: `required` unmet, a 404).
        person("rex.refused", "Munich, Germany"),
    ]
    fake = PeopleSources({p.external_id: p for p in people}, frozenset({"talent:rex.refused"}))
    services.sources = Sources(talent=fake, serp=fake)
    started = await start(
        client, recruiter, {"query": "Rust firmware engineer in Munich, 5+ years"}
    )
    assert started["status"] == "running"
    async with running_workers(services):
        body = await wait_complete(client, recruiter, started["searchId"])

    results = by_name(body)
    assert set(results) == {"Mia Munich", "Uwe Unterhaching", "Fay Freeplan"}
    assert location_of(results["Uwe Unterhaching"])["label"] == "Unterhaching (metro Munich)"
    free = results["Fay Freeplan"]
    assert free["status"] == "succeeded" and free["candidate"]["email"] is None
    assert free["why"]["contact"] == EMAIL_ON_FILE and EMAIL_ON_FILE in free["why"]["summary"]
    assert results["Mia Munich"]["why"]["contact"] is None
    assert "years: 7 ≥ 5 ✓" in results["Mia Munich"]["why"]["summary"]

    stubs = {s["external_id"]: s for s in await stub_rows(services.pool, started["searchId"])}
    lisbon = stubs["talent:lea.lisbon"]
    assert lisbon["status"] == "below_threshold"
    assert lisbon["last_error"] == (
        "outside the brief: in Lisbon, Portugal: not in Munich, Bavaria, Germany"
    )
    junior = stubs["talent:jan.junior"]
    assert junior["status"] == "below_threshold"
    assert junior["last_error"] == "outside the brief: 2 years, fewer than 5"
    assert stubs["talent:noe.noemail"]["status"] == "failed_no_email"
    refused = stubs["talent:rex.refused"]
    assert (refused["status"], refused["last_error"]) == (
        "failed_no_email",
        "pdl:enrich: HTTP 404: no record with emails",
    )
    assert stubs["talent:fay.freeplan"]["status"] == "succeeded"
    # Ingested without an address, the flag persisted.
    async with services.pool.connection() as conn:
        cur = await conn.execute(
            "SELECT external_id, email, email_on_file FROM candidates ORDER BY external_id"
        )
        rows = {r["external_id"]: (r["email"], r["email_on_file"]) for r in await cur.fetchall()}
    assert rows["talent:fay.freeplan"] == (None, True)
    assert rows["talent:noe.noemail"] == (None, False)
    assert rows["talent:mia.munich"][1] is False

    # The free-plan person is an internal hit of a later search, still contactable.
    again = await start(client, recruiter, {"query": "Rust firmware engineer in Munich"})
    page = await get_results(client, recruiter, again["searchId"], limit=500)
    assert "Fay Freeplan" in by_name(page) and "Noe Noemail" not in by_name(page)
    assert "Lea Lisbon" not in by_name(page)
